//! The QPS of §7.2.5: the highest rate of queries per second a v2 inference server sustains
//! within a latency bound and an error budget.
//!
//! Open loop (default, as LoadGen's Server scenario and wrk2): arrivals at their scheduled
//! times (Poisson with a seed, or uniform), latency from each request's *scheduled* time
//! (see `load::driver`). The rate is raised geometrically until a step fails, then bisected.
//! Closed loop (the draft's jmeter method): N clients each send their next request when the
//! last returns, for each N of the concurrency levels.
//!
//! Every request ends in exactly one outcome, and every one is counted. [`QpsSettings`] is
//! what a caller fills (the CLI from its flags, `grade` from a profile); [`QpsSettings::plan`]
//! checks it once; [`measure`] runs the plan.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::Error;
use super::client::{Client, Tls};
use super::driver::{self, Driver, Tally, Until};
use super::infer::{self, Infer, Inputs, ResponseCaps};
use super::schedule::schedule;
use super::settings::{self, Low, MAX_CONNECTIONS, MAX_SECONDS, Setting, SettingsError};
use super::slo;
use crate::measure::stats::Summary;
pub use crate::report::schema::qps::{
    ALL_BOUNDS_HOLD, Arrival, Bound, FailureKind, LoadMode, QpsReport, ReplicaStep, Step,
    StepFailure,
};
use crate::util::progress::Progress;

/// `slo`.
pub const DEFAULT_SLO: &str = "p99<=100ms";
/// `error_budget`.
pub const DEFAULT_ERROR_BUDGET: f64 = 0.0;
/// `seed`.
pub const DEFAULT_SEED: u64 = 1;
/// `max_rate`, req/s.
pub const DEFAULT_MAX_RATE: f64 = 100_000.0;
/// `precision` (the search's stopping share).
pub const DEFAULT_PRECISION: f64 = 0.05;
/// `concurrency` (closed loop).
pub const DEFAULT_CONCURRENCY: &[usize] = &[1, 2, 4, 8, 16, 32];
/// `step_duration_s`, s.
pub const DEFAULT_STEP_DURATION_S: f64 = 5.0;
/// `warmup_s`, s.
pub const DEFAULT_WARMUP_S: f64 = 1.0;
/// `timeout_s`, s.
pub const DEFAULT_TIMEOUT_S: f64 = 10.0;
/// `max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1000;
/// `max_response_bytes` (64 MiB, as `serve`'s default request limit).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;
/// `max_error_bytes` (64 KiB).
pub const DEFAULT_MAX_ERROR_BYTES: usize = 64 << 10;
/// The highest rate that may be asked for, req/s.
pub const MAX_RATE: f64 = 10_000_000.0;

/// What a QPS measurement is asked to do, as a caller gives it (unchecked).
#[derive(Debug, Clone, PartialEq)]
pub struct QpsSettings {
    /// The server, e.g. `http://127.0.0.1:8000`.
    pub url: String,
    /// More servers of the same cluster, balanced with `url` by the client (§7.2.5 b).
    pub replicas: Vec<String>,
    /// The model name on the server; a zoo name also selects its input set.
    pub model: String,
    /// Latency bounds, e.g. `p99<=50ms,avg<=20ms`.
    pub slo: String,
    pub error_budget: f64,
    pub mode: LoadMode,
    pub distribution: Arrival,
    pub seed: u64,
    /// Open loop: the first rate [default: half the rate one client reaches].
    pub start_rate: Option<f64>,
    pub max_rate: f64,
    pub precision: f64,
    /// Closed loop: the concurrency levels.
    pub concurrency: Vec<usize>,
    pub step_duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub inputs: Inputs,
    pub max_connections: usize,
    pub max_response_bytes: usize,
    pub max_error_bytes: usize,
    pub tls: Tls,
}

impl QpsSettings {
    /// The defaults, for `model` on the server at `url`.
    pub fn new(url: &str, model: &str) -> QpsSettings {
        QpsSettings {
            url: url.to_string(),
            replicas: Vec::new(),
            model: model.to_string(),
            slo: DEFAULT_SLO.to_string(),
            error_budget: DEFAULT_ERROR_BUDGET,
            mode: LoadMode::Open,
            distribution: Arrival::Poisson,
            seed: DEFAULT_SEED,
            start_rate: None,
            max_rate: DEFAULT_MAX_RATE,
            precision: DEFAULT_PRECISION,
            concurrency: DEFAULT_CONCURRENCY.to_vec(),
            step_duration_s: DEFAULT_STEP_DURATION_S,
            warmup_s: DEFAULT_WARMUP_S,
            timeout_s: DEFAULT_TIMEOUT_S,
            inputs: Inputs {
                seed: DEFAULT_SEED,
                ..Inputs::default()
            },
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_error_bytes: DEFAULT_MAX_ERROR_BYTES,
            tls: Tls::default(),
        }
    }

    /// Checks every setting (ranges, the bounds, the address) and resolves it into a plan.
    pub fn plan(&self) -> Result<QpsPlan, SettingsError> {
        let bounds = slo::parse(&self.slo)?;
        let error_budget = settings::real(
            Setting::ErrorBudget,
            self.error_budget,
            Low::Closed,
            0.0,
            1.0,
            "a share of requests",
        )?;
        if error_budget >= 1.0 {
            return Err(SettingsError::range(
                Setting::ErrorBudget,
                error_budget,
                "a share of requests",
                "[0, 1)".into(),
            ));
        }
        let max_rate = settings::real(
            Setting::MaxRate,
            self.max_rate,
            Low::Open,
            0.0,
            MAX_RATE,
            "req/s",
        )?;
        let start_rate = self
            .start_rate
            .map(|r| {
                settings::real(
                    Setting::StartRate,
                    r,
                    Low::Open,
                    0.0,
                    max_rate,
                    "req/s (at most the maximum rate)",
                )
            })
            .transpose()?;
        let precision = settings::real(
            Setting::Precision,
            self.precision,
            Low::Closed,
            0.001,
            1.0,
            "a share",
        )?;
        if self.mode == LoadMode::Closed && self.concurrency.is_empty() {
            return Err(SettingsError::says(
                Setting::Concurrency,
                "takes levels of at least 1, e.g. 1,2,4,8",
            ));
        }
        for &c in &self.concurrency {
            settings::count(Setting::Concurrency, c, 1, MAX_CONNECTIONS, "clients")?;
        }
        let (base, uri) =
            settings::address(&self.url, &format!("/v2/models/{}/infer", self.model))?;
        let mut replicas = Vec::new();
        if !self.replicas.is_empty() {
            for u in std::iter::once(&self.url).chain(&self.replicas) {
                let (b, parsed) = settings::address(u, "/")?;
                if parsed.path() != "/" || parsed.query().is_some() {
                    return Err(SettingsError::bad(
                        Setting::Url,
                        u,
                        "one server of several is scheme://host:port, without a path",
                    ));
                }
                if replicas.iter().any(|(x, _)| *x == b) {
                    return Err(SettingsError::says(
                        Setting::Url,
                        format!("'{u}' is given twice: each address is one replica"),
                    ));
                }
                replicas.push((b, parsed));
            }
        }
        Ok(QpsPlan {
            replicas,
            base,
            model: self.model.clone(),
            uri,
            bounds,
            error_budget,
            mode: self.mode,
            arrival: self.distribution,
            seed: self.seed,
            start_rate,
            max_rate,
            precision,
            concurrency: self.concurrency.clone(),
            step: settings::seconds(
                Setting::StepDuration,
                self.step_duration_s,
                Low::Open,
                MAX_SECONDS,
            )?,
            warmup: settings::seconds(Setting::WarmupS, self.warmup_s, Low::Closed, MAX_SECONDS)?,
            timeout: settings::seconds(Setting::Timeout, self.timeout_s, Low::Open, MAX_SECONDS)?,
            inputs: self.inputs.clone(),
            max_connections: settings::count(
                Setting::MaxConnections,
                self.max_connections,
                1,
                MAX_CONNECTIONS,
                "connections",
            )?,
            caps: ResponseCaps {
                max_response_bytes: settings::cap_bytes(
                    Setting::MaxResponseBytes,
                    self.max_response_bytes,
                )?,
                max_error_bytes: settings::cap_bytes(Setting::MaxErrorBytes, self.max_error_bytes)?,
            },
            tls: self.tls.clone(),
        })
    }
}

/// A checked QPS measurement.
#[derive(Debug, Clone)]
pub struct QpsPlan {
    pub base: String,
    /// The cluster's servers (base URL and its URI), `base` first; empty for one server.
    pub replicas: Vec<(String, hyper::Uri)>,
    pub model: String,
    pub uri: hyper::Uri,
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
    pub inputs: Inputs,
    pub max_connections: usize,
    pub caps: ResponseCaps,
    pub tls: Tls,
}

/// Runs the plan: forms the requests, checks one answer, then searches the max rate (open
/// loop) or sweeps the concurrency levels (closed loop). Ctrl-C (`stop`) ends it early with
/// a report marked incomplete. Each finished step is a note on `progress`.
pub fn measure(
    plan: &QpsPlan,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> Result<QpsReport, Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    rt.block_on(async {
        let client = Client::new(&plan.tls, plan.max_connections, plan.timeout)?;
        let (bodies, inputs_text) = tokio::select! {
            r = infer::bodies(&plan.inputs, &plan.base, &plan.model, &client, plan.timeout) => r?,
            _ = driver::stop_set(stop) => {
                return Err(Error::Stopped(crate::util::signal::Cut::Interrupted));
            }
        };
        let endpoint = Infer::new(plan.uri.clone(), bodies, plan.caps);
        let checked = tokio::select! {
            r = endpoint.check_first(&client, plan.timeout) => r,
            _ = driver::stop_set(stop) => Err(format!("{}: Ctrl-C", FailureKind::Interrupted)),
        };
        match checked {
            Ok(outs) => progress.note(format!(
                "acceval qps: {} answers with outputs {outs}",
                plan.base
            )),
            Err(e) => progress.note(format!(
                "acceval qps: warning: the first request to {} failed ({e}); measuring anyway, failures are counted",
                plan.uri
            )),
        }
        let bases: Vec<hyper::Uri> = plan.replicas.iter().map(|(_, u)| u.clone()).collect();
        let d = Driver::new(client, endpoint, plan.timeout, Arc::clone(stop), None)
            .with_replicas(&bases);
        let steps = match plan.mode {
            LoadMode::Closed => sweep(&d, plan, progress).await,
            LoadMode::Open => search(&d, plan, progress).await,
        };
        let complete = !stop.load(Ordering::Relaxed);
        Ok(report(plan, steps, complete, d.client().issued(), inputs_text))
    })
}

/// The closed-loop sweep over the concurrency levels.
async fn sweep(d: &Driver<Infer>, p: &QpsPlan, progress: &Progress) -> Vec<Step> {
    let mut steps = Vec::new();
    for &c in &p.concurrency {
        if d.stopped() {
            break;
        }
        progress.set_message(format!("concurrency {c}"));
        let s = closed_step(d, p, c, p.warmup, p.step, &p.bounds).await;
        progress.note(crate::report::qps::step_line(p.mode, &s));
        steps.push(s);
    }
    steps
}

/// The open-loop search: up geometrically while passing, down (at most 6 halvings) while
/// failing, then bisection to `precision`.
async fn search(d: &Driver<Infer>, p: &QpsPlan, progress: &Progress) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut rate = match p.start_rate {
        Some(r) => r,
        None => start_rate(d, p).await,
    };
    let mut k = 0u64;
    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
    for _ in 0..40 {
        if d.stopped() {
            break;
        }
        k += 1;
        if run(d, p, progress, rate, k, &mut steps).await {
            lo = Some(rate);
            if hi.is_some() || rate >= p.max_rate {
                break;
            }
            rate = (rate * 2.0).min(p.max_rate);
        } else {
            hi = Some(rate);
            // Not at all once nothing succeeds: a server that answers no request is down,
            // not slow.
            let none_ok = steps.last().is_some_and(|s| s.ok == 0);
            if lo.is_some() || steps.len() > 6 || none_ok {
                break;
            }
            rate /= 2.0;
        }
    }
    if let (Some(mut l), Some(mut h)) = (lo, hi) {
        for _ in 0..12 {
            if d.stopped() || h / l - 1.0 <= p.precision {
                break;
            }
            let mid = (l + h) / 2.0;
            k += 1;
            if run(d, p, progress, mid, k, &mut steps).await {
                l = mid;
            } else {
                h = mid;
            }
        }
    }
    steps
}

/// One open-loop step of the search, noted and kept; whether it passed.
async fn run(
    d: &Driver<Infer>,
    p: &QpsPlan,
    progress: &Progress,
    rate: f64,
    k: u64,
    steps: &mut Vec<Step>,
) -> bool {
    progress.set_message(format!("rate {rate:.1}/s"));
    let s = open_step(d, p, rate, p.seed.wrapping_add(k)).await;
    progress.note(crate::report::qps::step_line(p.mode, &s));
    let passed = s.passed;
    steps.push(s);
    passed
}

/// Half the rate one client reaches back to back, measured for about 1 s.
async fn start_rate(d: &Driver<Infer>, p: &QpsPlan) -> f64 {
    let probe = closed_step(
        d,
        p,
        1,
        Duration::from_millis(200),
        Duration::from_secs(1),
        &[],
    )
    .await;
    match probe.latency_ms {
        Some(l) if probe.ok > 0 => (500.0 / l.mean).clamp(1.0, p.max_rate),
        _ => 10.0f64.min(p.max_rate),
    }
}

/// One open-loop step at `rate` req/s.
async fn open_step(d: &Driver<Infer>, p: &QpsPlan, rate: f64, seed: u64) -> Step {
    let need = slo::samples_needed(&p.bounds);
    let n_warm = (rate * p.warmup.as_secs_f64()).round() as usize;
    let n_meas = ((rate * p.step.as_secs_f64()).ceil() as usize).max(need);
    let offsets = schedule(p.arrival, rate, n_warm + n_meas, seed);
    let from = Duration::from_secs_f64(offsets[n_warm]);
    let run = d.open(offsets.into(), p.max_connections).await;
    let t = Tally::of(&run.outcomes, from);
    // Arrivals per second over the span of the ones sent (n arrivals span n - 1 gaps).
    let offered = (t.sent > 1).then(|| {
        (t.sent - 1) as f64
            / t.last_scheduled
                .saturating_sub(from)
                .as_secs_f64()
                .max(1e-9)
    });
    let lag = Summary::of(&t.send_lag_ms);
    step(p, &p.bounds, rate, &t, offered, lag, !run.interrupted)
}

/// One closed-loop level: `c` clients back to back for `min` after `warmup` (and until the
/// bounds have the samples they need).
async fn closed_step(
    d: &Driver<Infer>,
    p: &QpsPlan,
    c: usize,
    warmup: Duration,
    min: Duration,
    bounds: &[Bound],
) -> Step {
    let until = Until::Window {
        warmup,
        min,
        need_ok: slo::samples_needed(bounds),
        error_budget: p.error_budget,
    };
    let run = d.closed(c, until).await;
    let t = Tally::of(&run.outcomes, warmup);
    step(p, bounds, c as f64, &t, None, None, !run.interrupted)
}

/// A step's figures and verdict from its tally.
fn step(
    p: &QpsPlan,
    bounds: &[Bound],
    target: f64,
    t: &Tally,
    offered_rps: Option<f64>,
    send_lag_ms: Option<Summary>,
    complete: bool,
) -> Step {
    let need = slo::samples_needed(bounds);
    let error_rate = if t.sent == 0 {
        1.0
    } else {
        t.failed() as f64 / t.sent as f64
    };
    let mut sorted = t.latency_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let slo_values: Vec<(String, Option<f64>)> = bounds
        .iter()
        .map(|b| (b.stat_name.clone(), b.value(&sorted)))
        .collect();
    let failed_checks = checks(p, bounds, t, error_rate, &slo_values, need, complete);
    let passed = failed_checks.is_empty();
    let window = t.window_s();
    Step {
        target,
        duration_s: window,
        sent: t.sent,
        ok: t.ok,
        failed: t.failed(),
        failures: t.failures.clone(),
        failure_examples: t.examples.clone(),
        offered_rps,
        achieved_rps: t.ok as f64 / window,
        error_rate,
        latency_ms: Summary::of(&t.latency_ms),
        slo_values,
        send_lag_ms,
        samples_needed: need,
        passed,
        why: if passed {
            ALL_BOUNDS_HOLD.into()
        } else {
            failed_checks
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        },
        failed_checks,
        complete,
        replicas: p
            .replicas
            .iter()
            .enumerate()
            .map(|(i, (url, _))| {
                let r = t.by_replica.get(&i).cloned().unwrap_or_default();
                ReplicaStep {
                    url: url.clone(),
                    sent: r.sent,
                    ok: r.ok,
                    failed: r.sent - r.ok,
                    share: if t.sent == 0 {
                        0.0
                    } else {
                        r.sent as f64 / t.sent as f64
                    },
                    achieved_rps: r.ok as f64 / window,
                    latency_ms: Summary::of(&r.latency_ms),
                }
            })
            .collect(),
    }
}

/// The checks a step fails: interrupted, nothing sent, the error budget, each bound, and
/// the samples the bounds need.
fn checks(
    p: &QpsPlan,
    bounds: &[Bound],
    t: &Tally,
    error_rate: f64,
    values: &[(String, Option<f64>)],
    need: usize,
    complete: bool,
) -> Vec<StepFailure> {
    let mut why = Vec::new();
    if !complete {
        why.push(StepFailure::Interrupted);
    }
    if t.sent == 0 {
        why.push(StepFailure::NothingSent);
    }
    if error_rate > p.error_budget {
        why.push(StepFailure::ErrorBudget {
            error_rate,
            budget: p.error_budget,
            failures: t.failures.clone(),
        });
    }
    for (b, (_, v)) in bounds.iter().zip(values) {
        match v {
            Some(v) if *v > b.limit_ms => why.push(StepFailure::Bound {
                stat_name: b.stat_name.clone(),
                value_ms: *v,
                limit_ms: b.limit_ms,
            }),
            None => why.push(StepFailure::NoSample {
                stat_name: b.stat_name.clone(),
            }),
            _ => {}
        }
    }
    if (t.ok as usize) < need && complete && why.is_empty() {
        why.push(StepFailure::TooFewSamples {
            ok: t.ok,
            needed: need,
        });
    }
    why
}

/// The report: the best passing step (open loop: the highest rate; closed loop: the highest
/// throughput) gives max_qps.
fn report(p: &QpsPlan, steps: Vec<Step>, complete: bool, issued: u64, inputs: String) -> QpsReport {
    let best = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.passed)
        .max_by(|a, b| match p.mode {
            LoadMode::Open => a.1.target.total_cmp(&b.1.target),
            LoadMode::Closed => a.1.achieved_rps.total_cmp(&b.1.achieved_rps),
        })
        .map(|(k, _)| k);
    let max_qps_na = if best.is_some() {
        None
    } else if steps.is_empty() {
        Some("n/a: no step ran".to_string())
    } else {
        let lowest = steps.iter().min_by(|a, b| a.target.total_cmp(&b.target));
        Some(format!(
            "n/a: no step met the bounds and the error budget; the lowest step: {}",
            lowest.map(|s| s.why.clone()).unwrap_or_default()
        ))
    };
    QpsReport {
        schema: crate::report::schema::qps::SCHEMA.into(),
        url: p.base.clone(),
        replicas: p.replicas.iter().map(|(b, _)| b.clone()).collect(),
        model: p.model.clone(),
        mode: p.mode,
        distribution: (p.mode == LoadMode::Open).then_some(p.arrival),
        seed: p.seed,
        slo: p.bounds.clone(),
        error_budget: p.error_budget,
        step_duration_s: p.step.as_secs_f64(),
        warmup_s: p.warmup.as_secs_f64(),
        timeout_s: p.timeout.as_secs_f64(),
        binary: p.inputs.binary,
        inputs,
        max_connections: p.max_connections,
        max_response_bytes: p.caps.max_response_bytes as u64,
        max_qps: best.map(|k| steps[k].achieved_rps),
        max_qps_na,
        best_step: best,
        steps,
        complete,
        requests_issued: issued,
        definitions: crate::report::schema::qps::definitions(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_reject_bad_numbers_naming_the_setting() {
        let ok = QpsSettings::new("http://127.0.0.1:1", "m");
        assert!(ok.plan().is_ok());
        type Case = (fn(&mut QpsSettings), Setting, &'static str);
        let cases: &[Case] = &[
            (
                |s| s.step_duration_s = f64::INFINITY,
                Setting::StepDuration,
                "step_duration_s inf: seconds in (0, 86400]",
            ),
            (
                |s| s.warmup_s = f64::NAN,
                Setting::WarmupS,
                "warmup_s NaN: seconds in [0, 86400]",
            ),
            (
                |s| s.warmup_s = -1.0,
                Setting::WarmupS,
                "warmup_s -1: seconds in [0, 86400]",
            ),
            (
                |s| s.timeout_s = 0.0,
                Setting::Timeout,
                "timeout_s 0: seconds in (0, 86400]",
            ),
            (
                |s| s.timeout_s = 1e300,
                Setting::Timeout,
                "timeout_s 1e300: seconds in (0, 86400]",
            ),
            (
                |s| s.max_rate = f64::NAN,
                Setting::MaxRate,
                "max_rate NaN: req/s in (0, 10000000]",
            ),
            (
                |s| s.start_rate = Some(-5.0),
                Setting::StartRate,
                "start_rate -5: req/s (at most the maximum rate) in (0, 100000]",
            ),
            (
                |s| s.error_budget = 1.0,
                Setting::ErrorBudget,
                "error_budget 1: a share of requests in [0, 1)",
            ),
            (
                |s| s.error_budget = f64::NAN,
                Setting::ErrorBudget,
                "error_budget NaN",
            ),
            (
                |s| s.precision = 0.0,
                Setting::Precision,
                "precision 0: a share in [0.001, 1]",
            ),
            (
                |s| s.max_connections = 0,
                Setting::MaxConnections,
                "max_connections 0: connections in [1, 100000]",
            ),
            (
                |s| s.concurrency = vec![1, 0],
                Setting::Concurrency,
                "concurrency 0: clients in [1, 100000]",
            ),
            (
                |s| s.max_response_bytes = 1,
                Setting::MaxResponseBytes,
                "max_response_bytes 1: bytes in [1024, 4294967296]",
            ),
            (
                |s| s.url = "ftp://x".into(),
                Setting::Url,
                "url 'ftp://x': must start with http:// or https://",
            ),
            (
                |s| s.slo = "p99<50ms".into(),
                Setting::Slo,
                "slo 'p99<50ms'",
            ),
            (
                |s| s.replicas = vec![s.url.clone()],
                Setting::Url,
                "url 'http://127.0.0.1:1' is given twice",
            ),
            (
                |s| s.replicas = vec!["http://127.0.0.1:9/v2".into()],
                Setting::Url,
                "url 'http://127.0.0.1:9/v2': one server of several is scheme://host:port",
            ),
        ];
        for (change, setting, want) in cases {
            let mut s = ok.clone();
            change(&mut s);
            let e = s.plan().unwrap_err();
            assert_eq!(e.setting, *setting, "{e}");
            let text = e.to_string();
            assert!(text.starts_with(want), "{text} does not start with {want}");
            assert!(
                !text.contains("--"),
                "a library message names a flag: {text}"
            );
        }
    }
}
