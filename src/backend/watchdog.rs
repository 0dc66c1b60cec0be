//! The run budget (`--run-timeout`, issue 27): every inference of a session is watched by
//! one thread that sleeps beside it, and a run still going past its budget is stopped, by
//! the engine where it can be told to stop (ONNX Runtime's `RunOptions::terminate`), or else
//! by ending the process with exit 2 and a message naming the engine (tract and libtorch
//! cannot interrupt a run; the report folders of `grade` are written stage by stage, so what
//! finished before survives as after a `kill -9`).
//!
//! The run path pays two atomic stores and one clock read per inference, outside the timed
//! span: the watcher wakes on its own period (a tenth of the budget, 10 ms to 1 s), never on
//! the runs, so no wake-up costs a system call per inference. std's park/unpark and atomics
//! are all it needs; no crate does a deadline watch this small.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How an engine is told, from another thread, to stop the run in flight.
pub trait Interrupt: Send + Sync {
    /// Asks the run in flight to stop; returns at once.
    fn stop(&self);
    /// Lets the next run go (clears what `stop` set).
    fn resume(&self);
}

/// What the watcher and the running thread share.
struct Shared {
    origin: Instant,
    /// The running inference's deadline, ns after `origin`; [`IDLE`] while no run is in
    /// flight, [`STOPPED`] once the watcher took it (compare-and-swap, so a run that ends
    /// as its budget passes is either finished or stopped, never both).
    deadline_ns: AtomicU64,
    /// The running inference's budget, ns (for the message).
    budget_ns: AtomicU64,
    /// Set once the watcher's `Interrupt::stop` has returned.
    stop_sent: AtomicBool,
    quit: AtomicBool,
}

const IDLE: u64 = 0;
const STOPPED: u64 = u64::MAX;

/// A watcher for one session's runs.
pub struct Watchdog {
    shared: Arc<Shared>,
    limit: Duration,
    /// The first run's budget (an engine may build kernels or engines in it).
    first_limit: Duration,
    ran: bool,
    interrupt: Option<Arc<dyn Interrupt>>,
    thread: Option<JoinHandle<()>>,
}

/// The message for a run the engine could not be told to stop, given its budget.
pub type Fatal = Box<dyn Fn(Duration) -> String + Send>;

impl Watchdog {
    /// Watches runs against `limit` (`first_limit` for the first). `interrupt` stops a run;
    /// without one, a run past its budget ends the process (exit 2) after printing
    /// `fatal(budget)`.
    pub fn start(
        limit: Duration,
        first_limit: Duration,
        interrupt: Option<Arc<dyn Interrupt>>,
        fatal: Fatal,
    ) -> Result<Watchdog, String> {
        let shared = Arc::new(Shared {
            origin: Instant::now(),
            deadline_ns: AtomicU64::new(IDLE),
            budget_ns: AtomicU64::new(0),
            stop_sent: AtomicBool::new(false),
            quit: AtomicBool::new(false),
        });
        let period =
            (limit.min(first_limit) / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let (s, stop) = (Arc::clone(&shared), interrupt.clone());
        let thread = std::thread::Builder::new()
            .name("acceval-run-watch".into())
            .spawn(move || watch(&s, period, stop.as_deref(), &*fatal))
            .map_err(|e| format!("cannot start the run watcher: {e}"))?;
        Ok(Watchdog {
            shared,
            limit,
            first_limit,
            ran: false,
            interrupt,
            thread: Some(thread),
        })
    }

    /// Runs `f` under the next run's budget. `Err((budget, out))` when the watcher stopped
    /// it, whatever `f` returned then (the engine's own words are "terminate flag set" or
    /// the like).
    pub fn run<T>(&mut self, f: impl FnOnce() -> T) -> Result<T, (Duration, T)> {
        let budget = if self.ran {
            self.limit
        } else {
            self.first_limit
        };
        self.ran = true;
        let s = &self.shared;
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(STOPPED - 1);
        s.budget_ns.store(ns(budget), Ordering::Relaxed);
        let deadline = ns(s.origin.elapsed().saturating_add(budget)).clamp(1, STOPPED - 1);
        s.deadline_ns.store(deadline, Ordering::SeqCst);
        let out = f();
        if s.deadline_ns.swap(IDLE, Ordering::SeqCst) == STOPPED {
            // Let the stop land before lifting it, or it would stop the next run.
            while !s.stop_sent.swap(false, Ordering::SeqCst) {
                std::thread::yield_now();
            }
            if let Some(i) = &self.interrupt {
                i.resume();
            }
            return Err((budget, out));
        }
        Ok(out)
    }
}

fn watch(
    s: &Shared,
    period: Duration,
    stop: Option<&dyn Interrupt>,
    fatal: &dyn Fn(Duration) -> String,
) {
    while !s.quit.load(Ordering::SeqCst) {
        std::thread::park_timeout(period);
        let deadline = s.deadline_ns.load(Ordering::SeqCst);
        if deadline == IDLE
            || deadline == STOPPED
            || u128::from(deadline) > s.origin.elapsed().as_nanos()
        {
            continue;
        }
        if s.deadline_ns
            .compare_exchange(deadline, STOPPED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            continue; // that run ended, or another began
        }
        match stop {
            Some(i) => {
                i.stop();
                s.stop_sent.store(true, Ordering::SeqCst);
            }
            None => {
                let budget = Duration::from_nanos(s.budget_ns.load(Ordering::Relaxed));
                eprintln!("acceval: error: {}", fatal(budget));
                // The run's thread is inside the engine and will not return: leave without
                // running destructors (as `backend::bounded`'s abandoned loads do).
                use std::io::Write;
                let _ = std::io::stdout().flush();
                let _ = std::io::stderr().flush();
                // SAFETY: _exit ends the process at once; nothing after it runs.
                unsafe { libc::_exit(2) }
            }
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine that spins until told to stop, as ONNX Runtime's executor checks its flag.
    struct Flag(AtomicBool);
    impl Interrupt for Flag {
        fn stop(&self) {
            self.0.store(true, Ordering::SeqCst);
        }
        fn resume(&self) {
            self.0.store(false, Ordering::SeqCst);
        }
    }

    fn spin_until(flag: &Flag, at_most: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < at_most {
            if flag.0.load(Ordering::SeqCst) {
                return true;
            }
            std::thread::yield_now();
        }
        false
    }

    #[test]
    fn a_run_past_its_budget_is_stopped_and_the_next_runs_free() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let limit = Duration::from_millis(200);
        let mut w = Watchdog::start(
            limit,
            limit,
            Some(flag.clone() as Arc<dyn Interrupt>),
            Box::new(|_| unreachable!("an interruptible engine never ends the process")),
        )
        .unwrap();
        // A quick run is not touched.
        assert_eq!(w.run(|| 7), Ok(7));
        // A run that would last 5 s is stopped near its 200 ms budget.
        let t = Instant::now();
        let r = w.run(|| spin_until(&flag, Duration::from_secs(5)));
        let took = t.elapsed();
        assert_eq!(r, Err((limit, true)));
        assert!(took >= limit && took < Duration::from_secs(1), "{took:?}");
        // The flag was lifted: the next run is not stopped at once.
        assert!(!flag.0.load(Ordering::SeqCst));
        assert_eq!(
            w.run(|| spin_until(&flag, Duration::from_millis(50))),
            Ok(false)
        );
    }

    #[test]
    fn the_first_run_has_its_own_budget() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let mut w = Watchdog::start(
            Duration::from_millis(50),
            Duration::from_secs(5),
            Some(flag.clone() as Arc<dyn Interrupt>),
            Box::new(|_| String::new()),
        )
        .unwrap();
        let first = w.run(|| spin_until(&flag, Duration::from_millis(300)));
        assert_eq!(first, Ok(false), "the first run's 5 s budget held");
        let second = w.run(|| spin_until(&flag, Duration::from_secs(5)));
        assert_eq!(second, Err((Duration::from_millis(50), true)));
    }
}
