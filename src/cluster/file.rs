//! A rank's file (`DIR/rank-<r>.json`, `DIR/train-rank-<r>.json`), written whatever stops the
//! rank: its own end, an error, or a signal.
//!
//! The measurement loops look at the stop flag between samples and steps, but a rank also
//! spends time where it cannot look: meeting the others, loading the model, warming up,
//! waiting at a barrier or in an all-reduce. When a launcher ends a job (`mpirun` after one
//! rank failed, `scancel`, Ctrl-C) it sends SIGTERM and, about a second later, SIGKILL, so a
//! rank blocked there would die without a file and `merge` could not tell "killed by the
//! launcher" from "never started". Two things close that gap. A watcher thread: once the
//! stop flag is set it gives the rank [`GRACE`] to write its own file; if the rank has not,
//! it writes what is known (marked incomplete, naming the stage) and ends the process. And a
//! provisional file: at each stage outside the timed window ([`RankFile::stage`]) the record
//! is written as it stands, marked incomplete, so that even SIGKILL leaves the stage the rank
//! had reached. Open MPI 4.1's `mpirun` needs the second: on Ctrl-C it sends SIGCONT, then
//! after a second SIGTERM and, a few milliseconds later, SIGKILL (measured on 4.1.4), too
//! soon for a rank blocked at a barrier to react.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the rank has to write its own file after the stop flag is set.
pub const GRACE: Duration = Duration::from_millis(400);

/// What a rank file records about the way it ended.
pub trait RankRecord: serde::Serialize + Clone + Send + 'static {
    fn rank(&self) -> usize;
    /// Marks the record incomplete because of `why`.
    fn set_error(&mut self, why: String);
}

struct State<T> {
    record: T,
    stage: &'static str,
    written: bool,
}

struct Shared<T> {
    path: PathBuf,
    state: Mutex<State<T>>,
}

impl<T: RankRecord> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic elsewhere leaves the record as it was: still worth writing.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self, record: &T) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(record)?;
        text.push('\n');
        crate::util::fs::write_file(&self.path, text.as_bytes())?;
        Ok(())
    }

    fn mark(&self, s: &'static str, write: bool) {
        let mut st = self.lock();
        st.stage = s;
        if !write || st.written {
            return;
        }
        let mut provisional = st.record.clone();
        provisional.set_error(format!(
            "interrupted or killed while {s}: the rank ended without writing its result (a launcher's SIGKILL after Ctrl-C or a failed rank, the OOM killer, or a crash)"
        ));
        // Best effort: a rank that cannot write here will fail to write its result too, and
        // says so then.
        let _ = self.write(&provisional);
    }
}

/// The record of one rank and the watcher that writes it on a signal.
pub struct RankFile<T: RankRecord> {
    shared: Arc<Shared<T>>,
}

/// Where the rank is, for the watcher's message; cheap to clone into the parts that block.
#[derive(Clone)]
pub struct Stage(Arc<dyn Fn(&'static str, bool) + Send + Sync>);

impl Stage {
    /// Names the stage for a signal's message; writes nothing.
    pub fn set(&self, s: &'static str) {
        (self.0)(s, false)
    }

    /// Names the stage and writes the provisional file.
    pub fn mark(&self, s: &'static str) {
        (self.0)(s, true)
    }
}

impl<T: RankRecord> RankFile<T> {
    /// Starts the watcher on `stop` (the flag SIGINT/SIGTERM set).
    pub fn new(path: PathBuf, record: T, stop: &Arc<AtomicBool>) -> Self {
        let shared = Arc::new(Shared {
            path,
            state: Mutex::new(State {
                record,
                stage: "starting",
                written: false,
            }),
        });
        let (watched, stop) = (Arc::downgrade(&shared), Arc::clone(stop));
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(20));
                if watched.strong_count() == 0 {
                    return;
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            let asked = Instant::now();
            while asked.elapsed() < GRACE {
                std::thread::sleep(Duration::from_millis(20));
                match watched.upgrade() {
                    None => return,
                    Some(s) if s.lock().written => return,
                    Some(_) => {}
                }
            }
            let Some(s) = watched.upgrade() else { return };
            let mut st = s.lock();
            if st.written {
                return;
            }
            let stage = st.stage;
            st.record.set_error(format!(
                "interrupted (Ctrl-C or SIGTERM) while {stage}: the rank could not stop there by itself, so this file holds what was known then"
            ));
            let r = st.record.rank();
            match s.write(&st.record) {
                Ok(()) => eprintln!(
                    "rank {r}: interrupted while {stage}; wrote {} (incomplete)",
                    s.path.display()
                ),
                Err(e) => eprintln!(
                    "rank {r}: interrupted while {stage}; its file {} could not be written: {e}",
                    s.path.display()
                ),
            }
            // The lock stays held: the rank's own thread cannot write over this.
            std::process::exit(130);
        });
        RankFile { shared }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.shared.path
    }

    /// Sets what the rank is doing now and writes the provisional file (never call it inside
    /// a timed window: it writes a file).
    pub fn stage(&self, s: &'static str) {
        self.shared.mark(s, true);
    }

    /// A handle for code that does not own the file: [`Stage::mark`] writes the provisional
    /// file, [`Stage::set`] writes nothing (only the stage a signal's message names), so it
    /// may be called next to a timed window.
    pub fn stage_handle(&self) -> Stage {
        let shared = Arc::downgrade(&self.shared);
        Stage(Arc::new(move |s, write| {
            if let Some(x) = shared.upgrade() {
                x.mark(s, write);
            }
        }))
    }

    /// Changes the record.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.shared.lock().record)
    }

    /// Writes the record as it stands; the watcher then leaves it alone.
    pub fn write(&self) -> anyhow::Result<()> {
        let mut st = self.shared.lock();
        st.written = true;
        self.shared.write(&st.record)
    }

    /// Records `e`, writes the file, and returns the error to end the rank with.
    pub fn fail(&self, e: String) -> anyhow::Error {
        let mut st = self.shared.lock();
        st.record.set_error(e.clone());
        st.written = true;
        let r = st.record.rank();
        match self.shared.write(&st.record) {
            Ok(()) => anyhow::anyhow!("rank {r}: {e} (written: {})", self.shared.path.display()),
            Err(w) => anyhow::anyhow!("rank {r}: {e}; and its file could not be written: {w}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, Clone)]
    struct R {
        rank: usize,
        error: Option<String>,
    }
    impl RankRecord for R {
        fn rank(&self) -> usize {
            self.rank
        }
        fn set_error(&mut self, why: String) {
            self.error = Some(why);
        }
    }

    #[test]
    fn a_rank_that_writes_in_its_grace_keeps_its_own_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rank-3.json");
        let stop = Arc::new(AtomicBool::new(false));
        let f = RankFile::new(
            p.clone(),
            R {
                rank: 3,
                error: None,
            },
            &stop,
        );
        f.stage("running");
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(
            t.contains("interrupted or killed while running"),
            "the provisional file names the stage: {t}"
        );
        stop.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
        f.with(|r| r.error = Some("mine".into()));
        f.write().unwrap();
        std::thread::sleep(GRACE + Duration::from_millis(200));
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(t.contains("\"mine\""), "{t}");
    }
}
