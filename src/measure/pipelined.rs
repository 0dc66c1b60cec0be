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

/// The most decode/pre-process threads of a pipelined run (`--pipelined`, the profile's
/// `pipeline_workers`): each is an OS thread with a queue slot or two.
pub const MAX_WORKERS: usize = 256;

/// The most model instances of a pipelined run (`--instances`, the profile's
/// `pipeline_instances`): each is a whole session, weights included.
pub const MAX_INSTANCES: usize = 64;

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

/// The share of the available host memory the instances beyond the second may take: the rest
/// is left to their activations, the queue and the rest of the machine.
const INSTANCE_MEMORY_SHARE: f64 = 0.8;

/// Whether `more` instances like one that took `grew` bytes of host memory (the process's
/// resident set across its open and warm-up) fit in `available` bytes; if not, why, and how
/// many would.
fn instances_fit(grew: u64, more: usize, available: u64, instances: usize) -> Result<(), String> {
    let need = grew.saturating_mul(more as u64);
    let budget = (available as f64 * INSTANCE_MEMORY_SHARE) as u64;
    if need <= budget {
        return Ok(());
    }
    let fit = 2 + (budget / grew.max(1)) as usize;
    Err(format!(
        "{instances} model instances would not fit in host memory: opening and warming instance 2 took {:.1} MB (the process's resident set), so the {more} more would need {:.1} MB, above {:.0} % of the {:.1} MB available; give --instances {fit} or fewer",
        grew as f64 / 1e6,
        need as f64 / 1e6,
        INSTANCE_MEMORY_SHARE * 100.0,
        available as f64 / 1e6,
    ))
}

/// Opens instance `k` (2..=M) on the calling thread. Instance 2 opens first, alone, and
/// then says whether the rest fit in host memory (its growth of the resident set since
/// `resident_before`, times M − 2); the others wait for it and open only if nothing failed.
/// A failure is recorded in `shared`; `None` when this instance did not open.
fn open_instance(
    plan: &Plan,
    k: usize,
    shared: &Shared,
    second_opened: &Barrier,
    resident_before: Option<u64>,
) -> Option<Box<dyn Session>> {
    let instances = plan.instances;
    let opened = if k == 2 {
        let opened = open_warm(plan, 2);
        if opened.is_ok()
            && instances > 2
            && let Some(before) = resident_before
            && let (Some(after), Some(available)) = (
                crate::util::limits::resident_bytes(),
                crate::util::limits::available_bytes(),
            )
            && let Err(e) = instances_fit(
                after.saturating_sub(before),
                instances - 2,
                available,
                instances,
            )
        {
            shared.fail(e);
        }
        second_opened.wait();
        opened
    } else {
        second_opened.wait();
        if shared.quit.load(Ordering::Relaxed) {
            return None;
        }
        open_warm(plan, k)
    };
    opened.map_err(|e| shared.fail(e)).ok()
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
    // Instance 2 opens alone, its host memory measured; instances 3.. open only once it is
    // known that they fit (each holds the whole model: 64 copies of a large one would bring
    // the machine to its out-of-memory killer, losing the whole run).
    let second_opened = Barrier::new(instances.saturating_sub(1).max(1));
    let resident_before = crate::util::limits::resident_bytes();
    let mut t0 = Instant::now();
    let mut per_instance = vec![(0usize, 0.0f64); instances];
    std::thread::scope(|sc| {
        let (shared, ready, second_opened) = (&shared, &ready, &second_opened);
        let others: Vec<_> = (1..instances)
            .map(|k| {
                sc.spawn(move || {
                    let opened = open_instance(plan, k + 1, shared, second_opened, resident_before);
                    ready.wait();
                    match opened {
                        Some(mut s) => shared.serve(s.as_mut(), plan.spec),
                        None => (0, 0.0),
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
