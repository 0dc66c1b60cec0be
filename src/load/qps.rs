//! `acceval qps` (§7.2.5): the highest rate of queries per second a v2 inference server
//! sustains within a latency bound and an error budget.
//!
//! Open loop (default, as LoadGen's Server scenario and wrk2): a pacer thread releases
//! arrivals at their scheduled times (Poisson with a seed, or uniform) to a pool of
//! connections; latency runs from each request's *scheduled* time to its complete response,
//! so a server (or a client) that falls behind shows it in the latency instead of slowing
//! the arrivals (no coordinated omission). The rate is raised geometrically until a step
//! fails, then bisected. Closed loop (the draft's jmeter method): N clients each send their
//! next request when the last returns, for each N of `--concurrency`.
//!
//! Every request ends in exactly one outcome (ok, an HTTP status, timeout, connection failed,
//! connection closed, other), and every one is counted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hyper::body::Bytes;
use serde::Serialize;

use super::client::{self, Client, Outcome, Target};
use super::slo::{self, Bound};
use crate::cli::{Arrival, LoadMode, QpsArgs};
use crate::measure::stats::Summary;
use crate::model::tensor::{HostTensor, TensorData};
use crate::protocol::kserve;

/// Definitions printed with every result.
pub const DEFINITIONS: &[(&str, &str)] = &[
    (
        "offered_rps",
        "requests scheduled per second of the measured window (open loop), 1/s",
    ),
    (
        "achieved_rps",
        "successful responses / measured window, 1/s; the window runs from the first measured request's scheduled send to the last measured response",
    ),
    (
        "latency_ms",
        "scheduled send time (open loop) or actual send time (closed loop) to the last byte of a successful response, ms; percentiles by linear interpolation (numpy's default)",
    ),
    (
        "send_lag_ms",
        "actual send time minus scheduled send time (open loop): the generator's own delay plus any wait for a free connection, ms",
    ),
    (
        "error_rate",
        "failed requests / requests sent in the measured window",
    ),
    (
        "max_qps",
        "achieved_rps of the highest-rate step (open loop) or highest-throughput level (closed loop) whose latency bounds and error budget all hold, 1/s",
    ),
];

/// One measured step: a rate (open loop) or a concurrency (closed loop).
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Open loop: the target rate, req/s; closed loop: the concurrency.
    pub target: f64,
    pub duration_s: f64,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Failures by kind (http_500, timeout, connection_failed, connection_closed, other).
    pub failures: BTreeMap<String, u64>,
    /// One message per failure kind, as the client saw it.
    pub failure_examples: BTreeMap<String, String>,
    pub offered_rps: Option<f64>,
    pub achieved_rps: f64,
    pub error_rate: f64,
    pub latency_ms: Option<Summary>,
    /// The value of each bounded statistic, ms.
    pub slo_values: Vec<(String, Option<f64>)>,
    pub send_lag_ms: Option<Summary>,
    pub samples_needed: usize,
    pub passed: bool,
    /// Why the step failed (or "all bounds hold").
    pub why: String,
    /// False when Ctrl-C cut the step short.
    pub complete: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct QpsReport {
    pub schema: &'static str,
    pub url: String,
    pub model: String,
    pub mode: LoadMode,
    pub distribution: Option<Arrival>,
    pub seed: u64,
    pub slo: Vec<Bound>,
    pub error_budget: f64,
    pub step_duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub binary: bool,
    pub inputs: String,
    pub max_connections: usize,
    pub steps: Vec<Step>,
    /// The answer: achieved req/s of the best passing step.
    pub max_qps: Option<f64>,
    /// Why there is none.
    pub max_qps_na: Option<String>,
    pub best_step: Option<usize>,
    /// Whether the search ran to its end (false after Ctrl-C).
    pub complete: bool,
    /// Inference requests sent in all, warm-ups, the start-rate probe and the first check
    /// included: what the server's own request counter should have grown by.
    pub requests_issued: u64,
    pub definitions: BTreeMap<&'static str, &'static str>,
}

/// What the load needs to run.
pub struct Plan {
    pub base: String,
    pub model: String,
    pub targets: Vec<Target>,
    pub inputs_text: String,
    pub bounds: Vec<Bound>,
    pub error_budget: f64,
    pub mode: LoadMode,
    pub arrival: Arrival,
    pub seed: u64,
    pub start_rate: Option<f64>,
    pub max_rate: f64,
    pub precision: f64,
    pub concurrency: Vec<usize>,
    pub step: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    pub binary: bool,
    pub max_connections: usize,
    pub tls: client::Tls,
}

/// Checks and resolves `qps`'s flags.
pub fn plan(args: &QpsArgs, rt: &tokio::runtime::Runtime) -> anyhow::Result<(Plan, Client)> {
    let bounds = slo::parse(&args.slo).map_err(anyhow::Error::msg)?;
    if !(0.0..1.0).contains(&args.error_budget) {
        bail!("--error-budget {} must lie in [0, 1)", args.error_budget);
    }
    if args.step_duration <= 0.0 || args.warmup < 0.0 || args.timeout <= 0.0 {
        bail!("--step-duration and --timeout must be positive, --warmup not negative");
    }
    if args.max_connections == 0 {
        bail!("--max-connections must be at least 1");
    }
    if args.mode == LoadMode::Closed
        && (args.concurrency.is_empty() || args.concurrency.contains(&0))
    {
        bail!("--concurrency takes levels of at least 1, e.g. 1,2,4,8");
    }
    if let Some(r) = args.start_rate
        && !(r > 0.0 && r <= args.max_rate)
    {
        bail!(
            "--start-rate {r} must be positive and at most --max-rate {}",
            args.max_rate
        );
    }
    let base = args.url.trim_end_matches('/').to_string();
    let uri_text = format!("{base}/v2/models/{}/infer", args.model);
    let uri: hyper::Uri = uri_text.parse().with_context(|| {
        format!(
            "--url '{}' does not make a valid address ({uri_text})",
            args.url
        )
    })?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => bail!("--url '{}' must start with http:// or https://", args.url),
    }
    let tls = client::Tls {
        cacert: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        crl: args.crl.clone(),
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let client = {
        let _g = rt.enter();
        client::build(&tls, args.max_connections, timeout)?
    };
    let (bodies, inputs_text) = request_bodies(args, &base, &client, rt, timeout)?;
    let targets = bodies
        .into_iter()
        .map(|b| Target {
            uri: uri.clone(),
            body: Bytes::from(b.bytes),
            header_len: b.header_len,
        })
        .collect();
    Ok((
        Plan {
            base,
            model: args.model.clone(),
            targets,
            inputs_text,
            bounds,
            error_budget: args.error_budget,
            mode: args.mode,
            arrival: args.distribution,
            seed: args.seed,
            start_rate: args.start_rate,
            max_rate: args.max_rate,
            precision: args.precision.max(0.001),
            concurrency: args.concurrency.clone(),
            step: Duration::from_secs_f64(args.step_duration),
            warmup: Duration::from_secs_f64(args.warmup),
            timeout,
            binary: args.binary,
            max_connections: args.max_connections,
            tls,
        },
        client,
    ))
}

/// The request bodies: a file as is; the zoo model's input set; or seeded tensors of the
/// shapes the server's model metadata declares.
fn request_bodies(
    args: &QpsArgs,
    base: &str,
    client: &Client,
    rt: &tokio::runtime::Runtime,
    timeout: Duration,
) -> anyhow::Result<(Vec<kserve::Body>, String)> {
    if let Some(f) = &args.input_file {
        let bytes = std::fs::read(f).with_context(|| format!("--input-file '{}'", f.display()))?;
        serde_json::from_slice::<serde_json::Value>(&bytes).with_context(|| {
            format!("--input-file '{}' is not a JSON request body", f.display())
        })?;
        return Ok((
            vec![kserve::Body {
                bytes,
                header_len: None,
            }],
            format!("the request body in {}", f.display()),
        ));
    }
    if let Some((entry, _)) = crate::zoo::parse_name(&crate::zoo::canonical_name(&args.model)) {
        let model = crate::zoo::resolve(std::path::Path::new(&args.model))?;
        let specs = crate::data::inputs::input_specs(&model)?;
        let set = crate::zoo::input_set_tensors(&entry)?;
        let name = specs.first().map(|s| s.name.clone()).unwrap_or_default();
        let bodies = set
            .iter()
            .map(|p| {
                kserve::encode_request(
                    &[HostTensor {
                        name: name.clone(),
                        data: TensorData::F32(p.tensor.clone()),
                    }],
                    args.binary,
                )
            })
            .collect::<Vec<_>>();
        return Ok((
            bodies,
            format!(
                "the input set of zoo model {} ({} requests, pre-processed as its task pipeline does, sent in turn; {})",
                entry.name,
                set.len(),
                if args.binary {
                    "binary tensors"
                } else {
                    "JSON tensors"
                }
            ),
        ));
    }
    // Ask the server what the model takes.
    let url = format!("{base}/v2/models/{}", args.model);
    let meta = rt
        .block_on(get_json(client, &url, timeout))
        .with_context(|| format!("cannot form requests for '{}': it is not a zoo model and its metadata ({url}) could not be read; pass --input-file BODY.json or start the server", args.model))?;
    let inputs = meta["inputs"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("{url}: the metadata has no 'inputs'"))?;
    let mut tensors = Vec::new();
    for (k, i) in inputs.iter().enumerate() {
        let name = i["name"].as_str().unwrap_or_default().to_string();
        let dt = i["datatype"]
            .as_str()
            .and_then(kserve::parse_datatype)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{url}: input '{name}' has an unsupported datatype {}",
                    i["datatype"]
                )
            })?;
        let given = args.shapes.iter().find(|s| s.name == name);
        let shape: Vec<usize> = match given {
            Some(g) => g.dims.iter().map(|&d| d as usize).collect(),
            None => i["shape"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| d.as_i64().filter(|&d| d >= 0).unwrap_or(1) as usize)
                .collect(),
        };
        let data =
            TensorData::seeded(dt, &shape, args.seed.wrapping_add(k as u64)).ok_or_else(|| {
                anyhow::anyhow!(
                    "input '{name}' is {}; pass --input-file BODY.json",
                    kserve::datatype_name(dt)
                )
            })?;
        tensors.push(HostTensor { name, data });
    }
    let text = format!(
        "seeded tensors (seed {}) of the shapes in the server's metadata: {}; {}",
        args.seed,
        tensors
            .iter()
            .map(|t| format!("{} {:?}", t.name, t.data.shape()))
            .collect::<Vec<_>>()
            .join(", "),
        if args.binary {
            "binary tensors"
        } else {
            "JSON tensors"
        }
    );
    Ok((vec![kserve::encode_request(&tensors, args.binary)], text))
}

async fn get_json(
    client: &Client,
    url: &str,
    timeout: Duration,
) -> anyhow::Result<serde_json::Value> {
    use http_body_util::{BodyExt, Full};
    let req = hyper::Request::get(url).body(Full::new(Bytes::new()))?;
    let r = tokio::time::timeout(timeout, client.request(req))
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {:.0} s", timeout.as_secs_f64()))?
        .map_err(|e| anyhow::anyhow!("{}", client::classify(&e).1))?;
    let status = r.status();
    let body = r.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(serde_json::from_slice(&body)?)
}

/// Arrival offsets from the start, seconds.
pub fn schedule(arrival: Arrival, rate: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = crate::util::rng::SplitMix64(seed);
    let mut t = 0.0;
    (0..n)
        .map(|_| {
            let gap = match arrival {
                Arrival::Uniform => 1.0 / rate,
                // Exponential gaps: -ln(U)/rate with U in (0, 1].
                Arrival::Poisson => -(1.0 - rng.unit()).ln() / rate,
            };
            let at = t;
            t += gap;
            at
        })
        .collect()
}

struct Slots {
    /// Latency in ns (0 = not finished).
    latency: Vec<AtomicU64>,
    /// Send lag in ns.
    lag: Vec<AtomicU64>,
    /// Outcome code (0 = not sent).
    outcome: Vec<AtomicU32>,
    /// Completion time, ns after the start.
    done: Vec<AtomicU64>,
}

impl Slots {
    fn new(n: usize) -> Slots {
        let z = |_| AtomicU64::new(0);
        Slots {
            latency: (0..n).map(z).collect(),
            lag: (0..n).map(z).collect(),
            outcome: (0..n).map(|_| AtomicU32::new(0)).collect(),
            done: (0..n).map(z).collect(),
        }
    }
}

/// Shared per-run state: the first message seen for each failure kind.
#[derive(Default)]
struct Examples(std::sync::Mutex<BTreeMap<String, String>>);

impl Examples {
    fn note(&self, o: Outcome, msg: Option<String>) {
        if o == Outcome::Ok {
            return;
        }
        let mut m = self.0.lock().unwrap();
        m.entry(o.label())
            .or_insert_with(|| msg.unwrap_or_default());
    }
}

/// One open-loop step at `rate` req/s.
async fn open_step(
    p: &Plan,
    client: &Client,
    rate: f64,
    seed: u64,
    stop: &Arc<AtomicBool>,
) -> Step {
    let need = slo::samples_needed(&p.bounds);
    let n_warm = (rate * p.warmup.as_secs_f64()).round() as usize;
    let n_meas = ((rate * p.step.as_secs_f64()).ceil() as usize).max(need);
    let n = n_warm + n_meas;
    let offsets = schedule(p.arrival, rate, n, seed);
    let slots = Arc::new(Slots::new(n));
    let examples = Arc::new(Examples::default());
    let start = Instant::now() + Duration::from_millis(20);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let workers = p.max_connections.min(n).max(1);
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let rx = Arc::clone(&rx);
        let slots = Arc::clone(&slots);
        let examples = Arc::clone(&examples);
        let client = client.clone();
        let targets = p.targets.clone();
        let offs: Arc<[f64]> = Arc::from(&offsets[..]);
        let timeout = p.timeout;
        handles.push(tokio::spawn(async move {
            loop {
                let i = match rx.lock().await.recv().await {
                    Some(i) => i,
                    None => break,
                };
                let scheduled = start + Duration::from_secs_f64(offs[i]);
                let sent = Instant::now();
                // A request that waited past the timeout for a free connection is not sent:
                // it has already failed, and sending it would only stretch the step.
                let (o, msg) = if sent.saturating_duration_since(scheduled) > timeout {
                    (
                        Outcome::Timeout,
                        Some(format!(
                            "not sent: no free connection within {:.1} s of its scheduled time (all --max-connections {workers} busy)",
                            timeout.as_secs_f64()
                        )),
                    )
                } else {
                    let (o, _, msg) =
                        client::send(&client, &targets[i % targets.len()], timeout).await;
                    (o, msg)
                };
                let end = Instant::now();
                slots.lag[i].store(
                    sent.saturating_duration_since(scheduled).as_nanos() as u64,
                    Ordering::Relaxed,
                );
                slots.latency[i].store(
                    end.saturating_duration_since(scheduled).as_nanos().max(1) as u64,
                    Ordering::Relaxed,
                );
                slots.done[i].store(
                    end.saturating_duration_since(start).as_nanos() as u64,
                    Ordering::Relaxed,
                );
                slots.outcome[i].store(o.code(), Ordering::Release);
                examples.note(o, msg);
            }
        }));
    }
    // The pacer: a plain thread, since tokio's timer ticks in whole milliseconds.
    let stopped = Arc::new(AtomicBool::new(false));
    let pacer = {
        let offsets = offsets.clone();
        let stopped = Arc::clone(&stopped);
        let stop = Arc::clone(stop);
        std::thread::spawn(move || {
            for (i, off) in offsets.iter().enumerate() {
                let at = start + Duration::from_secs_f64(*off);
                loop {
                    let now = Instant::now();
                    if now >= at {
                        break;
                    }
                    std::thread::sleep((at - now).min(Duration::from_millis(50)));
                    if stop.load(Ordering::Relaxed) {
                        stopped.store(true, Ordering::Relaxed);
                        return;
                    }
                }
                if tx.send(i).is_err() {
                    return;
                }
            }
        })
    };
    let pacer_done = tokio::task::spawn_blocking(move || pacer.join());
    let _ = pacer_done.await;
    for h in handles {
        let _ = h.await;
    }
    let complete = !stopped.load(Ordering::Relaxed);
    summarise_open(p, rate, &offsets, n_warm, &slots, &examples, need, complete)
}

#[allow(clippy::too_many_arguments)]
fn summarise_open(
    p: &Plan,
    rate: f64,
    offsets: &[f64],
    n_warm: usize,
    slots: &Slots,
    examples: &Examples,
    need: usize,
    complete: bool,
) -> Step {
    let mut lat = Vec::new();
    let mut lag = Vec::new();
    let mut failures = BTreeMap::new();
    let (mut sent, mut ok) = (0u64, 0u64);
    let mut last_done = 0f64;
    let mut last_sched = 0f64;
    for (i, &off) in offsets.iter().enumerate().skip(n_warm) {
        let Some(o) = Outcome::from_code(slots.outcome[i].load(Ordering::Acquire)) else {
            continue;
        };
        sent += 1;
        last_sched = off;
        lag.push(slots.lag[i].load(Ordering::Relaxed) as f64 / 1e6);
        last_done = last_done.max(slots.done[i].load(Ordering::Relaxed) as f64 / 1e9);
        if o == Outcome::Ok {
            ok += 1;
            lat.push(slots.latency[i].load(Ordering::Relaxed) as f64 / 1e6);
        } else {
            *failures.entry(o.label()).or_insert(0) += 1;
        }
    }
    let first = offsets.get(n_warm).copied().unwrap_or(0.0);
    let window = (last_done - first).max(1e-9);
    // Arrivals per second over the span of the ones sent (n arrivals span n - 1 gaps).
    let offered = if sent > 1 {
        Some((sent - 1) as f64 / (last_sched - first).max(1e-9))
    } else {
        None
    };
    finish_step(
        p,
        rate,
        window,
        sent,
        ok,
        failures,
        examples,
        lat,
        Some(lag),
        offered,
        need,
        complete,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish_step(
    p: &Plan,
    target: f64,
    window: f64,
    sent: u64,
    ok: u64,
    failures: BTreeMap<String, u64>,
    examples: &Examples,
    mut lat: Vec<f64>,
    lag: Option<Vec<f64>>,
    offered: Option<f64>,
    need: usize,
    complete: bool,
) -> Step {
    let failed = sent - ok;
    let error_rate = if sent == 0 {
        1.0
    } else {
        failed as f64 / sent as f64
    };
    let latency = Summary::of(&lat);
    lat.sort_by(f64::total_cmp);
    let slo_values: Vec<(String, Option<f64>)> = p
        .bounds
        .iter()
        .map(|b| (b.stat_name.clone(), b.value(&lat)))
        .collect();
    let mut why = Vec::new();
    if !complete {
        why.push("interrupted (Ctrl-C) before the step ended".to_string());
    }
    if sent == 0 {
        why.push("no request was sent".into());
    }
    if error_rate > p.error_budget {
        why.push(format!(
            "error rate {:.4} exceeds the budget {} ({})",
            error_rate,
            p.error_budget,
            failures
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (b, (_, v)) in p.bounds.iter().zip(&slo_values) {
        match v {
            Some(v) if *v > b.limit_ms => {
                why.push(format!("{} {:.3} ms > {} ms", b.stat_name, v, b.limit_ms))
            }
            None => why.push(format!(
                "{}: no successful response to measure",
                b.stat_name
            )),
            _ => {}
        }
    }
    if (ok as usize) < need && complete && why.is_empty() {
        why.push(format!("{ok} successful responses; the bounds need {need}"));
    }
    let passed = why.is_empty();
    Step {
        target,
        duration_s: window,
        sent,
        ok,
        failed,
        failures,
        failure_examples: examples.0.lock().unwrap().clone(),
        offered_rps: offered,
        achieved_rps: ok as f64 / window,
        error_rate,
        latency_ms: latency,
        slo_values,
        send_lag_ms: lag.as_deref().and_then(Summary::of),
        samples_needed: need,
        passed,
        why: if passed {
            "all bounds hold".into()
        } else {
            why.join("; ")
        },
        complete,
    }
}

/// One closed-loop level: `c` clients back to back for the step duration (and until the
/// bounds have the samples they need).
async fn closed_step(
    p: &Plan,
    client: &Client,
    c: usize,
    stop: &Arc<AtomicBool>,
    min_duration: Duration,
) -> Step {
    let need = slo::samples_needed(&p.bounds);
    let examples = Arc::new(Examples::default());
    let start = Instant::now();
    let measure_from = start + p.warmup;
    let min_end = measure_from + min_duration;
    let hard_end = measure_from + min_duration * 10 + Duration::from_secs(30);
    let count = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let budget = p.error_budget;
    let next = Arc::new(AtomicUsize::new(0));
    let stop_all = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::with_capacity(c);
    for _ in 0..c {
        let client = client.clone();
        let targets = p.targets.clone();
        let examples = Arc::clone(&examples);
        let count = Arc::clone(&count);
        let failed = Arc::clone(&failed);
        let next = Arc::clone(&next);
        let stop_all = Arc::clone(&stop_all);
        let timeout = p.timeout;
        handles.push(tokio::spawn(async move {
            let mut rec: Vec<(u32, f64, f64)> = Vec::with_capacity(4096);
            loop {
                if stop_all.load(Ordering::Relaxed) {
                    break;
                }
                let now = Instant::now();
                if now >= min_end {
                    // Past the step's time, go on only to reach the samples the bounds
                    // need, and only while the step can still pass its error budget.
                    let (ok, bad) = (
                        count.load(Ordering::Relaxed),
                        failed.load(Ordering::Relaxed),
                    );
                    if now >= hard_end || ok >= need || bad as f64 > budget * (ok + bad) as f64 {
                        break;
                    }
                }
                let k = next.fetch_add(1, Ordering::Relaxed);
                let t0 = Instant::now();
                let (o, _, msg) = client::send(&client, &targets[k % targets.len()], timeout).await;
                let t1 = Instant::now();
                if t0 >= measure_from {
                    if o == Outcome::Ok {
                        count.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    rec.push((
                        o.code(),
                        (t1 - t0).as_secs_f64() * 1e3,
                        (t1 - measure_from).as_secs_f64(),
                    ));
                    examples.note(o, msg);
                }
            }
            rec
        }));
    }
    let watcher = {
        let stop_all = Arc::clone(&stop_all);
        let stop = Arc::clone(stop);
        tokio::spawn(async move {
            loop {
                if stop.load(Ordering::Relaxed) {
                    stop_all.store(true, Ordering::Relaxed);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let mut lat = Vec::new();
    let mut failures = BTreeMap::new();
    let (mut sent, mut ok) = (0u64, 0u64);
    let mut last = 0f64;
    for h in handles {
        for (code, ms, done) in h.await.unwrap_or_default() {
            let o = Outcome::from_code(code).unwrap_or(Outcome::Other);
            sent += 1;
            last = last.max(done);
            if o == Outcome::Ok {
                ok += 1;
                lat.push(ms);
            } else {
                *failures.entry(o.label()).or_insert(0) += 1;
            }
        }
    }
    watcher.abort();
    let complete = !stop_all.load(Ordering::Relaxed);
    finish_step(
        p,
        c as f64,
        last.max(1e-9),
        sent,
        ok,
        failures,
        &examples,
        lat,
        None,
        None,
        need,
        complete,
    )
}

fn print_step(mode: LoadMode, s: &Step) {
    let lat = s.latency_ms.as_ref();
    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into());
    eprintln!(
        "acceval qps: {} {:>9} -> achieved {:>9.1} req/s, p50 {} ms, p99 {} ms, {} failed of {}: {}",
        if mode == LoadMode::Open {
            "rate"
        } else {
            "concurrency"
        },
        if mode == LoadMode::Open {
            format!("{:.1}/s", s.target)
        } else {
            format!("{}", s.target)
        },
        s.achieved_rps,
        f(lat.map(|l| l.p50)),
        f(lat.map(|l| l.p99)),
        s.failed,
        s.sent,
        if s.passed {
            "PASS".to_string()
        } else {
            format!("FAIL ({})", s.why)
        }
    );
}

/// Runs the search (open loop) or the sweep (closed loop).
pub async fn measure(p: &Plan, client: &Client, stop: &Arc<AtomicBool>) -> QpsReport {
    let issued0 = client::ISSUED.load(Ordering::Relaxed);
    let mut steps: Vec<Step> = Vec::new();
    match p.mode {
        LoadMode::Closed => {
            for &c in &p.concurrency {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let s = closed_step(p, client, c, stop, p.step).await;
                print_step(p.mode, &s);
                steps.push(s);
            }
        }
        LoadMode::Open => {
            let start = match p.start_rate {
                Some(r) => r,
                None => {
                    // Half the rate one client reaches back to back, measured for ~1 s.
                    let probe = closed_step(
                        &Plan {
                            warmup: Duration::from_millis(200),
                            bounds: vec![],
                            ..clone_plan(p)
                        },
                        client,
                        1,
                        stop,
                        Duration::from_secs(1),
                    )
                    .await;
                    match probe.latency_ms {
                        Some(l) if probe.ok > 0 => (500.0 / l.mean).clamp(1.0, p.max_rate),
                        _ => 10.0f64.min(p.max_rate),
                    }
                }
            };
            let mut k = 0u64;
            let mut lo: Option<f64> = None;
            let mut hi: Option<f64> = None;
            let mut rate = start;
            // Up while passing; down (at most 6 halvings) while failing.
            for _ in 0..40 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                k += 1;
                let passed =
                    open_run(p, client, rate, p.seed.wrapping_add(k), stop, &mut steps).await;
                if passed {
                    lo = Some(rate);
                    if hi.is_some() || rate >= p.max_rate {
                        break;
                    }
                    rate = (rate * 2.0).min(p.max_rate);
                } else {
                    hi = Some(rate);
                    // Down at most 6 halvings, and not at all once nothing succeeds: a
                    // server that answers no request is down, not slow.
                    let none_ok = steps.last().is_some_and(|s| s.ok == 0);
                    if lo.is_some() || steps.len() > 6 || none_ok {
                        break;
                    }
                    rate /= 2.0;
                }
            }
            if let (Some(mut l), Some(mut h)) = (lo, hi) {
                for _ in 0..12 {
                    if stop.load(Ordering::Relaxed) || h / l - 1.0 <= p.precision {
                        break;
                    }
                    let mid = (l + h) / 2.0;
                    k += 1;
                    if open_run(p, client, mid, p.seed.wrapping_add(k), stop, &mut steps).await {
                        l = mid;
                    } else {
                        h = mid;
                    }
                }
            }
        }
    }
    let best = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.passed)
        .max_by(|a, b| match p.mode {
            LoadMode::Open => a.1.target.total_cmp(&b.1.target),
            LoadMode::Closed => a.1.achieved_rps.total_cmp(&b.1.achieved_rps),
        })
        .map(|(k, _)| k);
    let complete = !stop.load(Ordering::Relaxed);
    let max_qps_na = if best.is_some() {
        None
    } else if steps.is_empty() {
        Some("n/a: no step ran".to_string())
    } else {
        Some(format!(
            "n/a: no step met the bounds and the error budget; the lowest step: {}",
            steps
                .iter()
                .min_by(|a, b| a.target.total_cmp(&b.target))
                .map(|s| s.why.clone())
                .unwrap_or_default()
        ))
    };
    QpsReport {
        schema: "acceval.qps/1",
        url: p.base.clone(),
        model: p.model.clone(),
        mode: p.mode,
        distribution: (p.mode == LoadMode::Open).then_some(p.arrival),
        seed: p.seed,
        slo: p.bounds.clone(),
        error_budget: p.error_budget,
        step_duration_s: p.step.as_secs_f64(),
        warmup_s: p.warmup.as_secs_f64(),
        timeout_s: p.timeout.as_secs_f64(),
        binary: p.binary,
        inputs: p.inputs_text.clone(),
        max_connections: p.max_connections,
        max_qps: best.map(|k| steps[k].achieved_rps),
        max_qps_na,
        best_step: best,
        steps,
        complete,
        requests_issued: client::ISSUED.load(Ordering::Relaxed) - issued0,
        definitions: DEFINITIONS.iter().copied().collect(),
    }
}

async fn open_run(
    p: &Plan,
    client: &Client,
    rate: f64,
    seed: u64,
    stop: &Arc<AtomicBool>,
    steps: &mut Vec<Step>,
) -> bool {
    let s = open_step(p, client, rate, seed, stop).await;
    print_step(p.mode, &s);
    let passed = s.passed;
    steps.push(s);
    passed
}

fn clone_plan(p: &Plan) -> Plan {
    Plan {
        base: p.base.clone(),
        model: p.model.clone(),
        targets: p.targets.clone(),
        inputs_text: p.inputs_text.clone(),
        bounds: p.bounds.clone(),
        error_budget: p.error_budget,
        mode: p.mode,
        arrival: p.arrival,
        seed: p.seed,
        start_rate: p.start_rate,
        max_rate: p.max_rate,
        precision: p.precision,
        concurrency: p.concurrency.clone(),
        step: p.step,
        warmup: p.warmup,
        timeout: p.timeout,
        binary: p.binary,
        max_connections: p.max_connections,
        tls: p.tls.clone(),
    }
}

/// Checks one response of the server decodes as a v2 inference response (a server answering
/// 200 with something else would otherwise count as fast successes).
pub async fn check_first(p: &Plan, client: &Client) -> Result<String, String> {
    let (o, resp, msg) = client::send(client, &p.targets[0], p.timeout).await;
    match (o, resp) {
        (Outcome::Ok, Some((_, hl, body))) => {
            let outs = kserve::decode_response(&body, hl.as_deref()).map_err(|e| {
                format!("the server answered 200 but not with a v2 inference response: {e}")
            })?;
            Ok(outs
                .iter()
                .map(|t| format!("{} {:?}", t.name, t.data.shape()))
                .collect::<Vec<_>>()
                .join(", "))
        }
        (o, _) => Err(format!("{}: {}", o.label(), msg.unwrap_or_default())),
    }
}

/// `acceval qps`.
pub fn run(args: QpsArgs) -> anyhow::Result<crate::Outcome> {
    let stop = crate::util::signal::stop_flag();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (plan, client) = plan(&args, &rt)?;
    let issued0 = client::ISSUED.load(Ordering::Relaxed);
    let mut report = rt.block_on(async {
        match check_first(&plan, &client).await {
            Ok(outs) => eprintln!("acceval qps: {} answers with outputs {outs}", plan.base),
            Err(e) => eprintln!(
                "acceval qps: warning: the first request to {}/v2/models/{}/infer failed ({e}); measuring anyway, failures are counted",
                plan.base, plan.model
            ),
        }
        measure(&plan, &client, &stop).await
    });
    report.requests_issued = client::ISSUED.load(Ordering::Relaxed) - issued0;
    write_outputs(&args, &report)?;
    Ok(if report.max_qps.is_some() && report.complete {
        crate::Outcome::Ok
    } else {
        crate::Outcome::NotCompliant
    })
}

fn write_outputs(args: &QpsArgs, r: &QpsReport) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, r)?;
        writeln!(out)?;
    } else {
        crate::report::qps::write_text(&mut out, r)?;
    }
    if let Some(dir) = &args.out {
        write_files(dir, r)?;
        eprintln!(
            "Written: {}/qps.json, qps_curve.csv, qps.svg",
            dir.display()
        );
    }
    Ok(())
}

/// Writes qps.json, qps_curve.csv and qps.svg into `dir`.
pub fn write_files(dir: &std::path::Path, r: &QpsReport) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let json = serde_json::to_vec_pretty(r)?;
    let files = [
        ("qps.json", json),
        (
            "qps_curve.csv",
            crate::report::qps::curve_csv(r).into_bytes(),
        ),
        ("qps.svg", crate::report::qps::chart(r).into_bytes()),
    ];
    let mut written = Vec::new();
    for (name, bytes) in files {
        let p = dir.join(name);
        crate::util::fs::write_atomic(&p, &bytes)?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_schedule_has_the_rate() {
        let s = schedule(Arrival::Poisson, 200.0, 20_000, 7);
        let mean_gap = s.last().unwrap() / (s.len() - 1) as f64;
        assert!((mean_gap - 0.005).abs() < 0.0002, "{mean_gap}");
        assert_eq!(s, schedule(Arrival::Poisson, 200.0, 20_000, 7));
        let u = schedule(Arrival::Uniform, 100.0, 3, 0);
        assert_eq!(u, vec![0.0, 0.01, 0.02]);
    }
}
