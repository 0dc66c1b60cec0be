//! Views of a `qps` result: the terminal table, the line noted after each step, the curve
//! as a CSV table, and the latency-against-throughput chart; and [`Document`] for
//! [`QpsReport`], so `qps` emits through `report::export::Outputs`.

use std::io::Write;

use super::export::{Document, Table};
use super::schema::qps::{LoadMode, QpsReport, Step};
use super::{right, table};

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into())
}

pub fn write_text(o: &mut dyn Write, r: &QpsReport) -> std::io::Result<()> {
    let open = r.mode == LoadMode::Open;
    writeln!(
        o,
        "QPS (§7.2.5) of {}/v2/models/{}: {} loop{}, bounds {}, error budget {}",
        r.url,
        r.model,
        if open { "open" } else { "closed" },
        r.distribution
            .map(|d| format!(" ({d} arrivals, seed {})", r.seed))
            .unwrap_or_default(),
        r.slo
            .iter()
            .map(|b| format!("{}<={}ms", b.stat_name, b.limit_ms))
            .collect::<Vec<_>>()
            .join(","),
        r.error_budget
    )?;
    writeln!(o, "Inputs: {}", r.inputs)?;
    steps_table(o, r, open)?;
    max_qps_lines(o, r, open)?;
    if !r.replicas.is_empty() {
        writeln!(
            o,
            "Cluster of {} servers (§7.2.5 b), balanced by the client: each request to the one with the fewest in flight",
            r.replicas.len()
        )?;
    }
    writeln!(
        o,
        "Requests sent in all: {} (warm-ups and probes included; compare with the server's counter)",
        r.requests_issued
    )?;
    if !r.complete {
        writeln!(
            o,
            "INCOMPLETE: interrupted; the steps above are what was measured"
        )?;
    }
    for s in &r.steps {
        for (k, m) in &s.failure_examples {
            writeln!(o, "  {k} at {:.1}: {m}", s.target)?;
        }
    }
    Ok(())
}

/// One row per step: load, achieved rate, failures, latency and the step's verdict.
fn steps_table(o: &mut dyn Write, r: &QpsReport, open: bool) -> std::io::Result<()> {
    let mut t = table(&[
        if open { "offered req/s" } else { "concurrency" },
        "achieved req/s",
        "sent",
        "failed",
        "avg ms",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "send lag p99 ms",
        "verdict",
    ]);
    for s in &r.steps {
        let l = s.latency_ms.as_ref();
        t.add_row(vec![
            if open {
                format!("{:.1}", s.offered_rps.unwrap_or(s.target))
            } else {
                format!("{}", s.target)
            },
            format!("{:.1}", s.achieved_rps),
            s.sent.to_string(),
            if s.failures.is_empty() {
                "0".into()
            } else {
                format!(
                    "{} ({})",
                    s.failed,
                    s.failures
                        .iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            ms(l.map(|l| l.mean)),
            ms(l.map(|l| l.p50)),
            ms(l.map(|l| l.p90)),
            ms(l.map(|l| l.p99)),
            ms(l.map(|l| l.max)),
            ms(s.send_lag_ms.as_ref().map(|l| l.p99)),
            if s.passed {
                "pass".into()
            } else {
                format!("fail: {}", s.why)
            },
        ]);
    }
    right(&mut t, &[0, 1, 2, 4, 5, 6, 7, 8, 9]);
    writeln!(o, "{t}")?;
    Ok(())
}

/// The max QPS and the step that achieved it, with its per-replica split.
fn max_qps_lines(o: &mut dyn Write, r: &QpsReport, open: bool) -> std::io::Result<()> {
    match (r.max_qps, r.best_step) {
        (Some(q), Some(k)) => {
            let s = &r.steps[k];
            let l = s.latency_ms.as_ref();
            writeln!(
                o,
                "Max QPS: {q:.1} req/s (achieved at {}; latency avg {} / p75 {} / p90 {} / p99 {} / max {} ms over N = {})",
                if open {
                    format!(
                        "target rate {:.1} req/s, offered {:.1}",
                        s.target,
                        s.offered_rps.unwrap_or(s.target)
                    )
                } else {
                    format!("concurrency {}", s.target)
                },
                ms(l.map(|l| l.mean)),
                ms(l.map(|l| l.p75)),
                ms(l.map(|l| l.p90)),
                ms(l.map(|l| l.p99)),
                ms(l.map(|l| l.max)),
                s.ok
            )?;
            for x in &s.replicas {
                let l = x.latency_ms.as_ref();
                writeln!(
                    o,
                    "  replica {}: {} sent ({:.1} %), {} ok, {:.1} req/s, latency avg {} / p99 {} ms",
                    x.url,
                    x.sent,
                    x.share * 100.0,
                    x.ok,
                    x.achieved_rps,
                    ms(l.map(|l| l.mean)),
                    ms(l.map(|l| l.p99)),
                )?;
            }
        }
        _ => writeln!(o, "Max QPS: {}", r.max_qps_na.as_deref().unwrap_or("n/a"))?,
    }
    Ok(())
}

/// The line noted after each step.
pub fn step_line(mode: LoadMode, s: &Step) -> String {
    let lat = s.latency_ms.as_ref();
    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into());
    let open = mode == LoadMode::Open;
    format!(
        "acceval qps: {} {:>9} -> achieved {:>9.1} req/s, p50 {} ms, p99 {} ms, {} failed of {}: {}",
        if open { "rate" } else { "concurrency" },
        if open {
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
    )
}

/// One row per step (qps_curve.csv).
pub fn curve(r: &QpsReport) -> Table {
    let mut t = Table::new(
        "qps_curve.csv",
        &[
            "target",
            "offered_rps",
            "achieved_rps",
            "duration_s",
            "sent",
            "ok",
            "failed",
            "error_rate",
            "failures",
            "latency_avg_ms",
            "latency_min_ms",
            "latency_p50_ms",
            "latency_p75_ms",
            "latency_p90_ms",
            "latency_p99_ms",
            "latency_max_ms",
            "send_lag_p50_ms",
            "send_lag_p99_ms",
            "passed",
            "why",
        ],
    );
    let f = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    for s in &r.steps {
        let l = s.latency_ms.as_ref();
        let lag = s.send_lag_ms.as_ref();
        t.push(vec![
            s.target.to_string(),
            f(s.offered_rps),
            format!("{:.3}", s.achieved_rps),
            format!("{:.3}", s.duration_s),
            s.sent.to_string(),
            s.ok.to_string(),
            s.failed.to_string(),
            format!("{:.6}", s.error_rate),
            s.failures
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";"),
            f(l.map(|l| l.mean)),
            f(l.map(|l| l.min)),
            f(l.map(|l| l.p50)),
            f(l.map(|l| l.p75)),
            f(l.map(|l| l.p90)),
            f(l.map(|l| l.p99)),
            f(l.map(|l| l.max)),
            f(lag.map(|l| l.p50)),
            f(lag.map(|l| l.p99)),
            s.passed.to_string(),
            s.why.clone(),
        ]);
    }
    t
}

/// qps_curve.csv as text.
pub fn curve_csv(r: &QpsReport) -> String {
    String::from_utf8_lossy(&curve(r).to_csv()).into_owned()
}

/// Latency (p50, p99) against achieved throughput, with the tightest bound as a line.
pub fn chart(r: &QpsReport) -> String {
    let pts: Vec<(f64, f64, f64, bool)> = r
        .steps
        .iter()
        .filter_map(|s| {
            s.latency_ms
                .as_ref()
                .map(|l| (s.achieved_rps, l.p50, l.p99, s.passed))
        })
        .collect();
    let bound = r
        .slo
        .iter()
        .map(|b| b.limit_ms)
        .fold(f64::INFINITY, f64::min);
    crate::report::chart::latency_vs_throughput(&r.model, bound, pts)
}

impl Document for QpsReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        write_text(o, self)
    }
    fn tables(&self) -> Vec<Table> {
        vec![curve(self)]
    }
    fn json_name(&self) -> &'static str {
        "qps.json"
    }
    fn extra_files(&self) -> Vec<(String, Vec<u8>)> {
        vec![("qps.svg".into(), chart(self).into_bytes())]
    }
}
