//! The one load driver, for `qps` and `llm` alike: it sends requests to an [`Endpoint`]
//! open loop (arrivals at scheduled times, at most N in flight) or closed loop (N workers,
//! each sending its next request when the last returns), and turns every request into
//! exactly one [`Outcome`]: a [`Sample`] or a [`Failure`] with its kind and message.
//! [`Tally`] is the one collector that turns outcomes into a step's (or a run's) counts and
//! latencies.
//!
//! Timing (no coordinated omission, as wrk2 and LoadGen): every request has a *scheduled*
//! time (open loop: its arrival; closed loop: when its worker sent it), and its latency runs
//! from that time to the end of its response, so a server (or a client) that falls behind
//! shows it in the latency rather than slowing the arrivals. The send lag (actual send minus
//! scheduled) is recorded beside it. Open-loop arrivals are released by a plain thread, since
//! tokio's timer ticks in whole milliseconds.
//!
//! The protocol-specific part (which request to send, how to read its response) is the
//! [`Endpoint`]: KServe v2 inference (`load::infer`) and LLM generation (`llm::generate`).
//! Ctrl-C (the stop flag) stops the arrivals, and requests still in flight end at once as
//! `interrupted`. The driver prints nothing.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use tokio::sync::watch;

use super::client::Client;
use crate::report::schema::qps::FailureKind;
use crate::util::progress::Progress;

/// What one kind of request sends and how its response is read.
pub trait Endpoint: Send + Sync + 'static {
    /// What a successful response yields beyond its times (nothing for inference; token
    /// times and counts for a generation).
    type Output: Send + 'static;

    /// The `index`-th request (prepared bodies, cloned as `Bytes`).
    fn request(&self, index: usize) -> Result<hyper::Request<Full<Bytes>>, Failure>;

    /// Reads the response to its end. `origin` is the run's start, for timestamps the
    /// output carries. The driver bounds the whole exchange by its timeout.
    fn read(
        &self,
        response: hyper::Response<Incoming>,
        origin: Instant,
    ) -> impl Future<Output = Result<Self::Output, Failure>> + Send;
}

/// When one request was due, went out and ended, from the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timing {
    pub index: usize,
    /// When it was due (open loop: its arrival; closed loop: when it was sent).
    pub scheduled: Duration,
    /// When it went out; `None` when it never did.
    pub sent: Option<Duration>,
    /// When its response ended, or it failed.
    pub end: Duration,
    /// The replica it went to (an index into the driver's replicas), when there are several.
    pub replica: Option<usize>,
}

impl Timing {
    /// End minus scheduled time.
    pub fn latency(&self) -> Duration {
        self.end.saturating_sub(self.scheduled)
    }
    /// Actual send minus scheduled time (for one never sent: until it was given up).
    pub fn send_lag(&self) -> Duration {
        self.sent.unwrap_or(self.end).saturating_sub(self.scheduled)
    }
}

/// A request that succeeded.
#[derive(Debug, Clone)]
pub struct Sample<O> {
    pub timing: Timing,
    pub output: O,
}

/// A request that failed, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    pub timing: Timing,
}

impl Failure {
    /// A failure; the driver fills in its timing.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            timing: Timing::default(),
        }
    }
}

/// How one request ended.
pub type Outcome<O> = Result<Sample<O>, Failure>;

/// The timing of an outcome, either way.
pub fn timing<O>(o: &Outcome<O>) -> &Timing {
    match o {
        Ok(s) => &s.timing,
        Err(f) => &f.timing,
    }
}

/// When a closed loop stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Until {
    /// After exactly this many requests (MindIE's RequestCount).
    Count(usize),
    /// A measured window: requests sent in the first `warmup` are not measured; after
    /// `warmup + min`, go on only until `need_ok` measured successes, and only while the
    /// error budget can still hold; never past `warmup + 10 × min + 30 s`.
    Window {
        warmup: Duration,
        min: Duration,
        need_ok: usize,
        error_budget: f64,
    },
}

/// The outcomes of one run of the driver, in request order.
#[derive(Debug)]
pub struct Run<O> {
    pub outcomes: Vec<Outcome<O>>,
    /// Ctrl-C came during the run.
    pub interrupted: bool,
    /// From the run's start until its last request ended.
    pub elapsed: Duration,
}

/// Sends requests to one endpoint.
pub struct Driver<E: Endpoint> {
    shared: Arc<Shared<E>>,
}

struct Shared<E> {
    client: Client,
    endpoint: E,
    timeout: Duration,
    stop: Arc<AtomicBool>,
    progress: Option<Progress>,
    replicas: Vec<Replica>,
    /// Where the next tie among the least-outstanding replicas is broken (round robin).
    turn: AtomicUsize,
}

/// One server replica of a cluster (§7.2.5 b) and its requests in flight.
struct Replica {
    scheme: hyper::http::uri::Scheme,
    authority: hyper::http::uri::Authority,
    outstanding: AtomicUsize,
}

/// A replica's request in flight, counted until it ends however it ends.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<E> Shared<E> {
    /// The replica with the fewest requests in flight (ties in turn), or `None` for one
    /// server.
    fn pick(&self) -> Option<usize> {
        let n = self.replicas.len();
        if n < 2 {
            return None;
        }
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|k| (start + k) % n)
            .min_by_key(|&i| self.replicas[i].outstanding.load(Ordering::Relaxed))
    }
}

impl<E: Endpoint> Driver<E> {
    /// A driver whose requests fail as timeouts after `timeout`; `progress`, when given,
    /// advances by one per finished request.
    pub fn new(
        client: Client,
        endpoint: E,
        timeout: Duration,
        stop: Arc<AtomicBool>,
        progress: Option<Progress>,
    ) -> Driver<E> {
        Driver {
            shared: Arc::new(Shared {
                client,
                endpoint,
                timeout,
                stop,
                progress,
                replicas: Vec::new(),
                turn: AtomicUsize::new(0),
            }),
        }
    }

    /// Spreads the requests over several servers of one cluster (§7.2.5 b): each request
    /// goes to the one with the fewest in flight (client-side balancing, least outstanding),
    /// with the endpoint's path. Bases are `scheme://host:port`; call before any run.
    pub fn with_replicas(mut self, bases: &[hyper::Uri]) -> Driver<E> {
        let shared = Arc::get_mut(&mut self.shared).expect("no run has started");
        shared.replicas = bases
            .iter()
            .filter_map(|u| {
                Some(Replica {
                    scheme: u.scheme()?.clone(),
                    authority: u.authority()?.clone(),
                    outstanding: AtomicUsize::new(0),
                })
            })
            .collect();
        self
    }

    pub fn endpoint(&self) -> &E {
        &self.shared.endpoint
    }

    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// Whether Ctrl-C (the stop flag) has come.
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// Open loop: request `i` is due `offsets[i]` seconds after the start; at most
    /// `workers` are in flight. A request that waits past the timeout for a free worker is
    /// not sent: it has already failed (as a timeout), and sending it would only stretch
    /// the run.
    pub async fn open(&self, offsets: Arc<[f64]>, workers: usize) -> Run<E::Output> {
        let n = offsets.len();
        let origin = Instant::now() + Duration::from_millis(20);
        let (watcher, stopped) = watch_stop(Arc::clone(&self.shared.stop));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let workers = workers.min(n).max(1);
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (s, rx, offsets) = (Arc::clone(&self.shared), Arc::clone(&rx), offsets.clone());
            let mut stopped = stopped.clone();
            handles.push(tokio::spawn(async move {
                let mut out = Vec::new();
                loop {
                    let Some(i) = rx.lock().await.recv().await else {
                        break;
                    };
                    let due = origin + Duration::from_secs_f64(offsets[i]);
                    out.push(one(&s, i, due, origin, &mut stopped, workers).await);
                }
                out
            }));
        }
        let pacer = pace(origin, offsets, tx, Arc::clone(&self.shared.stop));
        let _ = tokio::task::spawn_blocking(move || pacer.join()).await;
        self.finish(handles, watcher, origin).await
    }

    /// Closed loop: `workers` clients, each sending its next request when the last returns,
    /// until `until` says stop.
    pub async fn closed(&self, workers: usize, until: Until) -> Run<E::Output> {
        let origin = Instant::now();
        let (watcher, stopped) = watch_stop(Arc::clone(&self.shared.stop));
        let state = Arc::new(Loop {
            next: AtomicUsize::new(0),
            ok: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        });
        let workers = match until {
            Until::Count(n) => workers.min(n),
            Until::Window { .. } => workers,
        }
        .max(1);
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (s, state) = (Arc::clone(&self.shared), Arc::clone(&state));
            let mut stopped = stopped.clone();
            handles.push(tokio::spawn(async move {
                let mut out = Vec::new();
                while let Some(k) = state.next_index(until, origin, &s.stop) {
                    let t = Instant::now();
                    let o = one(&s, k, t, origin, &mut stopped, workers).await;
                    state.count(until, origin, t, o.is_ok());
                    out.push(o);
                }
                out
            }));
        }
        self.finish(handles, watcher, origin).await
    }

    async fn finish(
        &self,
        handles: Vec<tokio::task::JoinHandle<Vec<Outcome<E::Output>>>>,
        watcher: tokio::task::JoinHandle<()>,
        origin: Instant,
    ) -> Run<E::Output> {
        let mut outcomes = Vec::new();
        for h in handles {
            outcomes.extend(h.await.unwrap_or_default());
        }
        watcher.abort();
        outcomes.sort_by_key(|o| timing(o).index);
        Run {
            outcomes,
            interrupted: self.shared.stop.load(Ordering::Relaxed),
            elapsed: Instant::now().saturating_duration_since(origin),
        }
    }
}

/// The closed loop's shared counters.
struct Loop {
    next: AtomicUsize,
    /// Measured successes and failures (Until::Window).
    ok: AtomicUsize,
    failed: AtomicUsize,
}

impl Loop {
    /// The next request's index, or `None` when the loop is done.
    fn next_index(&self, until: Until, origin: Instant, stop: &AtomicBool) -> Option<usize> {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        match until {
            Until::Count(n) => {
                let k = self.next.fetch_add(1, Ordering::Relaxed);
                (k < n).then_some(k)
            }
            Until::Window {
                warmup,
                min,
                need_ok,
                error_budget,
            } => {
                let now = Instant::now();
                if now >= origin + warmup + min {
                    // Past the window, go on only to reach the samples the bounds need,
                    // and only while the error budget can still hold.
                    let hard_end = origin + warmup + min * 10 + Duration::from_secs(30);
                    let ok = self.ok.load(Ordering::Relaxed);
                    let bad = self.failed.load(Ordering::Relaxed);
                    if now >= hard_end
                        || ok >= need_ok
                        || bad as f64 > error_budget * (ok + bad) as f64
                    {
                        return None;
                    }
                }
                Some(self.next.fetch_add(1, Ordering::Relaxed))
            }
        }
    }

    fn count(&self, until: Until, origin: Instant, sent: Instant, ok: bool) {
        if let Until::Window { warmup, .. } = until
            && sent >= origin + warmup
        {
            let c = if ok { &self.ok } else { &self.failed };
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The pacer: releases request `i` at `origin + offsets[i]`; stops at the stop flag.
fn pace(
    origin: Instant,
    offsets: Arc<[f64]>,
    tx: tokio::sync::mpsc::UnboundedSender<usize>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for (i, off) in offsets.iter().enumerate() {
            let at = origin + Duration::from_secs_f64(*off);
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let now = Instant::now();
                if now >= at {
                    break;
                }
                std::thread::sleep((at - now).min(Duration::from_millis(50)));
            }
            if tx.send(i).is_err() {
                return;
            }
        }
    })
}

/// Resolves once the stop flag is set (polled every 20 ms), to race other work against.
pub async fn stop_set(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A receiver that turns true when the stop flag is set (polled every 20 ms).
fn watch_stop(stop: Arc<AtomicBool>) -> (tokio::task::JoinHandle<()>, watch::Receiver<bool>) {
    let (tx, rx) = watch::channel(false);
    let h = tokio::spawn(async move {
        stop_set(&stop).await;
        let _ = tx.send(true);
        // Keep the sender until every receiver is gone, so none sees a closed channel.
        tx.closed().await;
    });
    (h, rx)
}

/// One request, due at `due`.
async fn one<E: Endpoint>(
    s: &Shared<E>,
    index: usize,
    due: Instant,
    origin: Instant,
    stopped: &mut watch::Receiver<bool>,
    workers: usize,
) -> Outcome<E::Output> {
    let at = |t: Instant| t.saturating_duration_since(origin);
    let sent = Instant::now();
    let mut timing = Timing {
        index,
        scheduled: at(due),
        sent: None,
        end: at(sent),
        replica: None,
    };
    let result = if sent.saturating_duration_since(due) > s.timeout {
        Err(Failure::new(
            FailureKind::Timeout,
            format!(
                "not sent: no free connection within {:.1} s of its scheduled time (all {workers} busy)",
                s.timeout.as_secs_f64()
            ),
        ))
    } else {
        timing.sent = Some(at(sent));
        timing.replica = s.pick();
        exchange(s, index, timing.replica, sent, origin, stopped).await
    };
    timing.end = at(Instant::now());
    if let Some(p) = &s.progress {
        p.inc(1);
    }
    match result {
        Ok(output) => Ok(Sample { timing, output }),
        Err(mut f) => {
            f.timing = timing;
            Err(f)
        }
    }
}

/// Sends request `index` and reads its response, within the timeout, unless Ctrl-C comes.
async fn exchange<E: Endpoint>(
    s: &Shared<E>,
    index: usize,
    replica: Option<usize>,
    sent: Instant,
    origin: Instant,
    stopped: &mut watch::Receiver<bool>,
) -> Result<E::Output, Failure> {
    let mut req = s.endpoint.request(index)?;
    let _in_flight = match replica.map(|i| &s.replicas[i]) {
        Some(r) => {
            let mut parts = req.uri().clone().into_parts();
            parts.scheme = Some(r.scheme.clone());
            parts.authority = Some(r.authority.clone());
            *req.uri_mut() = hyper::Uri::from_parts(parts).map_err(|e| {
                Failure::new(FailureKind::Other, format!("invalid replica URI: {e}"))
            })?;
            r.outstanding.fetch_add(1, Ordering::Relaxed);
            Some(InFlight(&r.outstanding))
        }
        None => None,
    };
    let work = async {
        let resp = s
            .client
            .send(req)
            .await
            .map_err(|(k, m)| Failure::new(k, m))?;
        s.endpoint.read(resp, origin).await
    };
    let deadline = tokio::time::Instant::from_std(sent + s.timeout);
    tokio::select! {
        r = tokio::time::timeout_at(deadline, work) => r.unwrap_or_else(|_| {
            Err(Failure::new(
                FailureKind::Timeout,
                format!("no complete response within {:.1} s of sending", s.timeout.as_secs_f64()),
            ))
        }),
        _ = stopped.wait_for(|s| *s) => {
            Err(Failure::new(FailureKind::Interrupted, "Ctrl-C before the response ended"))
        }
    }
}

/// The collector: counts and latencies of the outcomes scheduled at or after `from`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub sent: u64,
    pub ok: u64,
    pub failures: BTreeMap<FailureKind, u64>,
    /// The first message of each failure kind.
    pub examples: BTreeMap<FailureKind, String>,
    /// Successful requests' latencies, ms.
    pub latency_ms: Vec<f64>,
    /// Every request's send lag, ms.
    pub send_lag_ms: Vec<f64>,
    /// The start of the window.
    pub from: Duration,
    pub last_scheduled: Duration,
    pub last_end: Duration,
    /// By replica (several servers only): requests sent, successes, successes' latencies.
    pub by_replica: BTreeMap<usize, ReplicaTally>,
}

/// One replica's share of a window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaTally {
    pub sent: u64,
    pub ok: u64,
    pub latency_ms: Vec<f64>,
}

impl Tally {
    pub fn of<O>(outcomes: &[Outcome<O>], from: Duration) -> Tally {
        let mut t = Tally {
            from,
            ..Tally::default()
        };
        for o in outcomes {
            let tm = timing(o);
            if tm.scheduled < from {
                continue;
            }
            t.sent += 1;
            t.last_scheduled = t.last_scheduled.max(tm.scheduled);
            t.last_end = t.last_end.max(tm.end);
            t.send_lag_ms.push(ms(tm.send_lag()));
            if let Some(r) = tm.replica {
                let e = t.by_replica.entry(r).or_default();
                e.sent += 1;
                if let Ok(s) = o {
                    e.ok += 1;
                    e.latency_ms.push(ms(s.timing.latency()));
                }
            }
            match o {
                Ok(s) => {
                    t.ok += 1;
                    t.latency_ms.push(ms(s.timing.latency()));
                }
                Err(f) => {
                    *t.failures.entry(f.kind).or_insert(0) += 1;
                    t.examples
                        .entry(f.kind)
                        .or_insert_with(|| f.message.clone());
                }
            }
        }
        t
    }

    pub fn failed(&self) -> u64 {
        self.sent - self.ok
    }

    /// From the window's start to its last response, s (at least 1 ns).
    pub fn window_s(&self) -> f64 {
        self.last_end
            .saturating_sub(self.from)
            .as_secs_f64()
            .max(1e-9)
    }
}

/// A duration in ms.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(i: usize, sched: u64, sent: u64, end: u64) -> Outcome<()> {
        Ok(Sample {
            timing: Timing {
                index: i,
                scheduled: Duration::from_millis(sched),
                sent: Some(Duration::from_millis(sent)),
                end: Duration::from_millis(end),
                replica: None,
            },
            output: (),
        })
    }

    #[test]
    fn the_tally_times_from_the_schedule_and_skips_the_warmup() {
        let mut f = Failure::new(FailureKind::Http(500), "boom");
        f.timing = Timing {
            index: 3,
            scheduled: Duration::from_millis(30),
            sent: Some(Duration::from_millis(31)),
            end: Duration::from_millis(40),
            replica: None,
        };
        let outcomes = vec![
            ok(0, 0, 0, 5),
            ok(1, 10, 12, 20),
            ok(2, 20, 25, 45),
            Err(f.clone()),
            Err(Failure {
                kind: FailureKind::Http(500),
                message: "second".into(),
                ..f
            }),
        ];
        let t = Tally::of(&outcomes, Duration::from_millis(10));
        assert_eq!((t.sent, t.ok, t.failed()), (4, 2, 2));
        assert_eq!(t.latency_ms, vec![10.0, 25.0]);
        assert_eq!(t.send_lag_ms, vec![2.0, 5.0, 1.0, 1.0]);
        assert_eq!(t.failures[&FailureKind::Http(500)], 2);
        assert_eq!(t.examples[&FailureKind::Http(500)], "boom");
        assert!((t.window_s() - 0.035).abs() < 1e-12);
        assert_eq!(t.last_scheduled, Duration::from_millis(30));
        let empty = Tally::of::<()>(&[], Duration::ZERO);
        assert_eq!((empty.sent, empty.window_s()), (0, 1e-9));
    }
}
