//! The module pipelined (§7.2.4 over decode, pre-processing, forward and post-processing):
//! K threads decode and pre-process the next inputs into a bounded queue while M model
//! instances take them, run the model and post-process, as a Triton ensemble with an
//! `instance_group` of M copies, or DALI feeding a framework, overlaps them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use crate::backend::Session;
use crate::report::schema::bench::{Figure, Pipelined};
use crate::task::{Prepared, TaskSpec};
use crate::util::signal::Cut;

/// Opens one more instance of the model under test (its own session, the same options).
pub type Open<'a> = dyn Fn() -> Result<Box<dyn Session>, String> + Sync + 'a;

/// What a pipelined run needs.
pub struct Plan<'a> {
    pub spec: &'a TaskSpec,
    /// The inputs, cycled: input i is `files[i % len]`.
    pub files: &'a [(String, Vec<u8>)],
    /// N: inputs to take.
    pub n: usize,
    /// K: decode and pre-process threads.
    pub workers: usize,
    /// M: model instances, the warm session given to [`run`] included.
    pub instances: usize,
    /// Opens each instance beyond the first, on its own thread, before T starts.
    pub open: &'a Open<'a>,
    pub stop: &'a AtomicBool,
}

type Item = Result<(Instant, Prepared), String>;

/// What the instances share: the queue's receiving end (taken and dropped once they are
/// done, which unblocks workers waiting on a full queue), the count of outputs written and
/// the first failure.
struct Shared<'a> {
    rx: Mutex<Option<Receiver<Item>>>,
    done: AtomicUsize,
    quit: AtomicBool,
    error: Mutex<Option<String>>,
    stop: &'a AtomicBool,
}

impl Shared<'_> {
    fn fail(&self, e: String) {
        self.quit.store(true, Ordering::Relaxed);
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
    }

    /// The next prepared input, or `None` when the queue has closed or the run is ending.
    fn next(&self) -> Option<(Instant, Prepared)> {
        if self.stop.load(Ordering::Relaxed) {
            self.fail(Cut::Interrupted.to_string());
            return None;
        }
        if self.quit.load(Ordering::Relaxed) {
            return None;
        }
        let rx = self.rx.lock().unwrap_or_else(|p| p.into_inner());
        match rx.as_ref()?.recv() {
            Ok(Ok(x)) => Some(x),
            Ok(Err(e)) => {
                drop(rx);
                self.fail(e);
                None
            }
            Err(_) => None,
        }
    }

    /// One instance's loop: returns its outputs written and the sum of its inputs' waits, ms.
    fn serve(&self, session: &mut dyn Session, spec: &TaskSpec) -> (usize, f64) {
        let (mut done, mut wait) = (0usize, 0.0f64);
        while let Some((ready, p)) = self.next() {
            wait += ready.elapsed().as_secs_f64() * 1e3;
            if let Err(e) = crate::task::finish(session, spec, p) {
                self.fail(e.to_string());
                break;
            }
            done += 1;
            self.done.fetch_add(1, Ordering::Relaxed);
        }
        (done, wait)
    }
}

/// A worker: takes input indices until N are taken, decodes and pre-processes each.
fn prepare_loop(plan: &Plan, next: &AtomicUsize, quit: &AtomicBool, tx: SyncSender<Item>) {
    while !quit.load(Ordering::Relaxed) && !plan.stop.load(Ordering::Relaxed) {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= plan.n {
            return;
        }
        let (label, bytes) = &plan.files[i % plan.files.len()];
        let r = crate::task::prepare(plan.spec, label, bytes)
            .map(|p| (Instant::now(), p))
            .map_err(|e| format!("{label}: {e}"));
        if tx.send(r).is_err() {
            return;
        }
    }
}

/// Opens, and warms with one input, an instance beyond the first.
fn open_warm(plan: &Plan, k: usize) -> Result<Box<dyn Session>, String> {
    let mut s = (plan.open)().map_err(|e| format!("model instance {k}: {e}"))?;
    let (label, bytes) = &plan.files[0];
    crate::task::prepare(plan.spec, label, bytes)
        .map_err(|e| e.to_string())
        .and_then(|p| crate::task::finish(s.as_mut(), plan.spec, p).map_err(|e| e.to_string()))
        .map_err(|e| format!("model instance {k}, warm-up on {label}: {e}"))?;
    Ok(s)
}

/// Runs `plan` with `session` (warm, from the one-at-a-time run) as the first instance.
/// The other instances are opened and warmed on their own threads before T starts; T runs
/// from the first input taken to the last output written. A failure anywhere stops every
/// thread and is recorded; what was written until then is counted.
pub fn run(session: &mut dyn Session, plan: &Plan) -> Pipelined {
    let (workers, instances) = (plan.workers.max(1), plan.instances.max(1));
    let depth = 2 * workers;
    let (tx, rx) = sync_channel::<Item>(depth);
    let shared = Shared {
        rx: Mutex::new(Some(rx)),
        done: AtomicUsize::new(0),
        quit: AtomicBool::new(false),
        error: Mutex::new(None),
        stop: plan.stop,
    };
    let next = AtomicUsize::new(0);
    // Every instance thread and this one meet here once the instances are warm (or one
    // failed), so T starts with all of them ready.
    let ready = Barrier::new(instances);
    let mut t0 = Instant::now();
    let mut per_instance = vec![(0usize, 0.0f64); instances];
    std::thread::scope(|sc| {
        let (shared, ready) = (&shared, &ready);
        let others: Vec<_> = (1..instances)
            .map(|k| {
                sc.spawn(move || {
                    let opened = open_warm(plan, k + 1);
                    if let Err(e) = &opened {
                        shared.fail(e.clone());
                    }
                    ready.wait();
                    match opened {
                        Ok(mut s) => shared.serve(s.as_mut(), plan.spec),
                        Err(_) => (0, 0.0),
                    }
                })
            })
            .collect();
        ready.wait();
        t0 = Instant::now();
        if !shared.quit.load(Ordering::Relaxed) {
            for _ in 0..workers {
                let tx = tx.clone();
                let (next, quit) = (&next, &shared.quit);
                sc.spawn(move || prepare_loop(plan, next, quit, tx));
            }
        }
        drop(tx);
        per_instance[0] = shared.serve(session, plan.spec);
        for (k, h) in others.into_iter().enumerate() {
            per_instance[k + 1] = h.join().unwrap_or_else(|_| {
                shared.fail(format!("model instance {} panicked", k + 2));
                (0, 0.0)
            });
        }
        // The instances are done: closing the queue unblocks workers on a full one.
        shared.quit.store(true, Ordering::Relaxed);
        drop(shared.rx.lock().unwrap_or_else(|p| p.into_inner()).take());
    });
    let t_s = t0.elapsed().as_secs_f64();
    let done = shared.done.load(Ordering::Relaxed);
    let error = shared.error.into_inner().unwrap_or_else(|p| p.into_inner());
    let complete = error.is_none() && done == plan.n;
    let wait: f64 = per_instance.iter().map(|x| x.1).sum();
    Pipelined {
        workers,
        instances,
        queue_depth: depth,
        samples: done,
        outputs_per_instance: per_instance.iter().map(|x| x.0).collect(),
        t_s,
        fps: Figure {
            value: (complete && t_s > 0.0).then(|| done as f64 / t_s),
            unit: "1/s".into(),
            definition: format!(
                "N / T over the whole module: {workers} thread(s) decode and pre-process the next inputs (queue depth {depth}) while {instances} model instance(s) each run the model and post-process; T from the first input taken to the last output written"
            ),
        },
        one_at_a_time_fps: None,
        speedup: None,
        mean_wait_ms: (done > 0).then(|| wait / done as f64),
        complete,
        error,
    }
}
