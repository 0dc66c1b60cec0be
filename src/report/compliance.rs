//! The compliance report's views, rendered from the typed [`GradeReport`] alone (so
//! `acceval report` reproduces them from report.json): Markdown, one self-contained HTML file
//! with SVG charts (report::chart), the clause table as CSV, and the terminal summary.
//!
//! Both document views are built from one list of [`Block`]s, made by one function per
//! section; a new section is one function and one line in [`blocks`].

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use crate::report::chart;
use crate::report::export::Table as CsvTable;
use crate::report::schema::Verdict;
use crate::report::schema::grade::GradeReport;
use crate::report::schema::stats::Summary;
use crate::standard::Level;

/// A number as the report writes it: 0, 3 decimals, or 4-digit scientific notation below
/// 0.01 and from 10^6; "n/a" for NaN.
fn num(f: f64) -> String {
    if f.is_nan() || f.is_infinite() {
        "n/a".into()
    } else if f == 0.0 {
        "0".into()
    } else if f.abs() < 0.01 || f.abs() >= 1e6 {
        format!("{f:.4e}")
    } else {
        format!("{f:.3}")
    }
}

fn onum(f: Option<f64>) -> String {
    f.map(num).unwrap_or_else(|| "n/a".into())
}

fn oint<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "n/a".into())
}

fn ostr(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "n/a".into())
}

fn level(l: Option<Level>) -> String {
    l.map(|l| l.to_string()).unwrap_or_else(|| "none".into())
}

fn md_escape(x: &str) -> String {
    x.replace('|', "\\|").replace('\n', " ")
}

fn html_escape(x: &str) -> String {
    chart::svg::escape(x)
}

/// A table as (header, rows) of plain strings, rendered by both views.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(h: &[&str]) -> Table {
        Table {
            header: h.iter().map(|x| x.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    fn row(&mut self, r: Vec<String>) {
        self.rows.push(r);
    }
    fn md(&self) -> String {
        let mut o = format!("| {} |\n", self.header.join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(self.header.len()));
        for r in &self.rows {
            let _ = writeln!(
                o,
                "| {} |",
                r.iter()
                    .map(|c| md_escape(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
        o
    }
    fn html(&self) -> String {
        let mut o = String::from("<table><thead><tr>");
        for h in &self.header {
            let _ = write!(o, "<th>{}</th>", html_escape(h));
        }
        o.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            o.push_str("<tr>");
            for c in r {
                let class = match c.as_str() {
                    "PASS" | "ATTESTED" | "VALID" => " class=\"pass\"",
                    "FAIL" | "INVALID" => " class=\"fail\"",
                    "N/A" => " class=\"na\"",
                    _ => "",
                };
                let _ = write!(o, "<td{class}>{}</td>", html_escape(c));
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table>");
        o
    }
}

/// A section: a title, paragraphs, tables and (HTML only) charts.
enum Block {
    Heading(String),
    Para(String),
    Table(Table),
    Chart(String),
}

/// A percentile number as written: 90, 99.9.
fn pct(f: f64) -> String {
    if f.fract() == 0.0 {
        format!("{f:.0}")
    } else {
        format!("{f}")
    }
}

fn summary_row(name: &str, x: &Summary) -> Vec<String> {
    vec![
        name.to_string(),
        num(x.mean),
        num(x.min),
        num(x.max),
        num(x.stddev),
        num(x.p50),
        num(x.p75),
        num(x.p90),
        num(x.p99),
        onum(x.p999),
        x.n.to_string(),
    ]
}

fn blocks(r: &GradeReport) -> Vec<Block> {
    let mut b = Vec::new();
    head(r, &mut b);
    levels(r, &mut b);
    clauses(r, &mut b);
    accuracy(r, &mut b);
    speed(r, &mut b);
    telemetry(r, &mut b);
    qps(r, &mut b);
    llm(r, &mut b);
    train(r, &mut b);
    cluster(r, &mut b);
    environment(r, &mut b);
    decisions(r, &mut b);
    b
}

fn head(r: &GradeReport, b: &mut Vec<Block>) {
    let p = &r.profile;
    b.push(Block::Heading(format!(
        "acceval compliance report — {} on {}",
        p.name, r.backend
    )));
    let mut lead = format!("**Verdict: {}**", r.verdict);
    if !r.verdict_reasons.is_empty() {
        lead.push_str(" — ");
        lead.push_str(&r.verdict_reasons.join("; "));
    }
    b.push(Block::Para(lead));
    b.push(Block::Para(format!(
        "Scenario: {} ({}). Model: {}. Created {} by acceval {} ({}). Command: `{}`.{}",
        p.scenario,
        p.description,
        p.model.name,
        r.created_utc,
        r.tool.version,
        if r.tool.features.is_empty() {
            r.tool.git_commit.clone()
        } else {
            format!("{}; features {}", r.tool.git_commit, r.tool.features.join(","))
        },
        r.command_line.join(" "),
        if r.policy_overridden {
            " **The run policy was overridden on the command line: this report is not a certification result.**"
        } else {
            ""
        }
    )));
    for x in &r.resumed {
        b.push(Block::Para(format!(
            "Resumed {} with `grade --resume` (same binary, profile, model and devices, checked): kept {}{}; the rest was measured then.",
            x.at_utc,
            if x.kept_stages.is_empty() {
                "no stage".to_string()
            } else {
                format!("the stages {}", x.kept_stages.join(", "))
            },
            if x.kept_precisions.is_empty() {
                String::new()
            } else {
                format!(
                    " and the accuracy of {}",
                    x.kept_precisions
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )));
    }
}

/// The verdict of the clause that owns a fact: the clause `id` titled `title` whose
/// requirement starts with `subject`. Views read verdicts from the clause table and never
/// judge again, so no table can say PASS where its clause says INVALID.
fn owned_verdict(r: &GradeReport, id: &str, title: &str, subject: &str) -> String {
    r.clauses
        .iter()
        .find(|c| c.clause == id && c.title == title && c.requirement.starts_with(subject))
        .map(|c| c.verdict.to_string())
        .unwrap_or_else(|| format!("n/a: no {id} clause"))
}

/// Levels at a glance; each verdict is its clause's.
fn levels(r: &GradeReport, b: &mut Vec<Block>) {
    let mut t = Table::new(&["table", "what", "measured", "level", "required", "verdict"]);
    if let Some(m) = &r.model {
        t.row(vec![
            "Table 1".into(),
            "parameter size".into(),
            format!("{} MB ({} parameters)", num(m.params_mb), m.params),
            level(m.table1_level),
            "—".into(),
            "graded".into(),
        ]);
        t.row(vec![
            "Table 2".into(),
            "compute".into(),
            format!("{} GFLOPs ({} MACs)", onum(m.gflops), oint(m.macs)),
            level(m.table2_level),
            "—".into(),
            "graded".into(),
        ]);
    }
    for a in &r.accuracy {
        let precision = a
            .precision
            .map(|p| p.to_string().to_uppercase())
            .unwrap_or_else(|| "?".into());
        t.row(vec![
            "Table 3".into(),
            format!("accuracy, {precision}"),
            format!("MSE {}", num(a.mse)),
            level(a.level),
            format!("{} (Table 4)", r.profile.accuracy.required),
            owned_verdict(r, "§6.2 i", "Accuracy (Table 3)", &format!("{precision}:")),
        ]);
    }
    if let Some(sp) = &r.speed {
        t.row(vec![
            "Table 5".into(),
            "speed (profile thresholds)".into(),
            format!(
                "P{} {} ms, FPS {}, run {}",
                pct(sp.percentile),
                onum(sp.latency_at_percentile_ms),
                onum(sp.fps),
                sp.bench.validity.result
            ),
            level(sp.achieved),
            sp.required.to_string(),
            owned_verdict(r, "Table 5", "Speed level", ""),
        ]);
    }
    b.push(Block::Heading("Levels".into()));
    b.push(Block::Table(t));
}

fn clauses(r: &GradeReport, b: &mut Vec<Block>) {
    b.push(Block::Heading("Clause by clause".into()));
    b.push(Block::Para("Source: standard — the draft's requirement; profile — a threshold this profile sets where the draft gives none.".into()));
    let mut t = Table::new(&[
        "clause",
        "title",
        "requirement",
        "measured",
        "verdict",
        "reason",
        "source",
    ]);
    for c in &r.clauses {
        t.row(vec![
            c.clause.clone(),
            c.title.clone(),
            c.requirement.clone(),
            c.measured.clone(),
            c.verdict.to_string(),
            c.reason.clone().unwrap_or_default(),
            c.source.to_string(),
        ]);
    }
    b.push(Block::Table(t));
}

fn accuracy(r: &GradeReport, b: &mut Vec<Block>) {
    b.push(Block::Heading("Accuracy (Table 3) per output".into()));
    let mut t = Table::new(&[
        "precision",
        "output",
        "elements",
        "MSE",
        "max abs error",
        "rel L2",
        "cosine",
        "NaN/Inf",
        "level",
        "decision",
    ]);
    let mut bars = Vec::new();
    for a in &r.accuracy {
        let prec = a
            .precision
            .map(|p| p.to_string())
            .unwrap_or_else(|| "?".into());
        for o in &a.outputs {
            let m = &o.metrics;
            t.row(vec![
                prec.clone(),
                o.name.clone(),
                m.elements.to_string(),
                num(m.mse),
                num(m.max_abs_error),
                num(m.rel_l2_error),
                num(m.cosine),
                format!("{}/{}", m.nan_count, m.inf_count),
                level(o.level),
                a.agreement_text.clone(),
            ]);
            if m.mse.is_finite() {
                bars.push((format!("{prec} {}", o.name), m.mse));
            }
        }
    }
    for e in &r.accuracy_errors {
        let mut row = vec![
            e.precision.to_string(),
            "—".into(),
            String::new(),
            "not measured".into(),
        ];
        row.extend(std::iter::repeat_n(String::new(), 5));
        row.push(e.error.clone());
        t.row(row);
    }
    b.push(Block::Table(t));
    if !bars.is_empty() {
        b.push(Block::Chart(chart::mse_bars(&bars)));
    }
    if let Some(a) = r.accuracy.first() {
        b.push(Block::Para(format!(
            "Reference: {} — {}; cross-check: {}. {}",
            a.reference.dir,
            ostr(&a.reference.engine),
            ostr(&a.reference.cross_check),
            a.definition
        )));
    }
}

/// Latency and FPS (§7.2.3, §7.2.4).
fn speed(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(sp) = &r.speed else { return };
    let bench = &sp.bench;
    b.push(Block::Heading("Latency (§7.2.3) and FPS (§7.2.4)".into()));
    b.push(Block::Para(format!(
        "{} samples of {} ({}) in {} s after {} warm-up samples; cold start: IR conversion {} ms, graph initialisation {} ms, first inference {} ms (not in the statistics). Harness overhead {} µs per sample. {}",
        bench.samples,
        ostr(&sp.model),
        bench.mode,
        num(bench.wall_s),
        bench.warmup_samples,
        onum(bench.cold_start.convert_ms),
        num(bench.cold_start.init_ms),
        num(bench.cold_start.first_inference_ms),
        num(bench.harness_overhead_us),
        bench.latency_definition
    )));
    let mut t = Table::new(&[
        "metric (ms)",
        "average",
        "min",
        "max",
        "stddev",
        "P50",
        "P75",
        "P90",
        "P99",
        "P99.9",
        "N",
    ]);
    if let Some(l) = &bench.latency_ms {
        t.row(summary_row("end to end", l));
    }
    for name in ["decode", "preprocess", "forward", "postprocess"] {
        if let Some(x) = bench.stages.get(name) {
            match &x.latency_ms {
                Some(l) => t.row(summary_row(name, l)),
                None => t.row(
                    std::iter::once(name.to_string())
                        .chain(std::iter::repeat_n("n/a".to_string(), 10))
                        .collect(),
                ),
            }
        }
    }
    b.push(Block::Table(t));
    let rules: Vec<String> = bench
        .validity
        .rules
        .iter()
        .map(|x| {
            format!(
                "{} {} ({})",
                if x.passed { "✓" } else { "✗" },
                x.rule,
                x.detail
            )
        })
        .collect();
    b.push(Block::Para(format!(
        "FPS = {} 1/s ({}). Throughput = {} 1/s ({}). Copies: {}. Run {}: {}.",
        onum(bench.fps.value),
        bench.fps.definition,
        onum(bench.throughput.value),
        bench.throughput.definition,
        bench.copies,
        bench.validity.result,
        rules.join("; ")
    )));
    if let Some(c) = sp.compute.as_ref().or(bench.compute.as_ref()) {
        b.push(Block::Para(format!(
            "Compute: {}. {}{}.",
            crate::report::bench::compute_line(c),
            c.definition,
            if c.peak.method.is_empty() {
                String::new()
            } else {
                format!("; peak: {}", c.peak.method)
            }
        )));
    }
    let mut t = Table::new(&["level", "max latency (ms)", "min FPS"]);
    for l in [Level::C1, Level::C2, Level::C3, Level::C4] {
        let x = sp.thresholds.get(&l);
        t.row(vec![
            format!("{l} (profile)"),
            onum(x.map(|x| x.max_latency_ms)),
            onum(x.map(|x| x.min_fps)),
        ]);
    }
    b.push(Block::Table(t));
    if !sp.latencies_ms.is_empty() {
        b.push(Block::Chart(chart::histogram(&sp.latencies_ms)));
        b.push(Block::Chart(chart::cdf(&sp.latencies_ms)));
    }
}

/// Utilization and power (§7.2.6, §7.1.4–7.1.7).
fn telemetry(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(sp) = &r.speed else { return };
    b.push(Block::Heading(
        "Utilization, power and energy (§7.2.6, §7.1.4–7.1.7)".into(),
    ));
    let Some(tm) = &sp.bench.telemetry else {
        b.push(Block::Para("No telemetry was recorded.".into()));
        return;
    };
    let mut t = Table::new(&["sensor", "status"]);
    for x in &tm.sensors {
        t.row(vec![x.sensor.clone(), x.status.to_string()]);
    }
    b.push(Block::Table(t));
    let mut t = Table::new(&["channel", "mean", "max", "unit", "samples", "definition"]);
    for c in &tm.channels {
        t.row(vec![
            c.name.clone(),
            onum(c.mean),
            onum(c.max),
            c.unit.clone(),
            c.samples.to_string(),
            match &c.failure {
                Some(f) => format!("{} — {f}", c.definition),
                None => c.definition.clone(),
            },
        ]);
    }
    b.push(Block::Table(t));
    for n in &tm.energy_na {
        b.push(Block::Para(format!("Energy of {}: {}", n.device, n.reason)));
    }
    if tm.energy.is_empty() {
        b.push(Block::Para(format!(
            "Power and energy: {}",
            ostr(&tm.energy_unavailable)
        )));
    } else {
        let mut t = Table::new(&[
            "device",
            "energy (J)",
            "method",
            "integral of power (J)",
            "average power (W)",
            "peak power (W)",
            "inferences/J",
        ]);
        for e in &tm.energy {
            t.row(vec![
                e.device.clone(),
                num(e.joules),
                e.method.to_string(),
                onum(e.power_integral_j),
                num(e.average_power_w),
                onum(e.peak_power_w),
                onum(e.inferences_per_joule),
            ]);
        }
        b.push(Block::Table(t));
    }
    if let Some(tl) = &sp.telemetry_timeline {
        b.push(Block::Chart(chart::timeline(&tl.channels, &tl.ticks)));
    }
}

/// QPS (§7.2.5).
fn qps(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(q) = &r.qps else { return };
    b.push(Block::Heading("QPS (§7.2.5)".into()));
    b.push(Block::Para(format!(
        "`acceval serve` on 127.0.0.1 ({}), measured by `acceval qps`: open loop, Poisson arrivals (seed {}), latency from each request's scheduled send time to its full response, bounds {}, error budget {}; {} requests sent in all. Inputs: {}.",
        q.url,
        q.seed,
        q.slo
            .iter()
            .map(|b| format!("{}<={}ms", b.stat_name, b.limit_ms))
            .collect::<Vec<_>>()
            .join(","),
        q.error_budget,
        q.requests_issued,
        q.inputs
    )));
    let mut t = Table::new(&[
        "offered req/s",
        "achieved req/s",
        "sent",
        "failed",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "verdict",
    ]);
    let f3 = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into());
    let mut pts = Vec::new();
    for st in &q.steps {
        let l = st.latency_ms.as_ref();
        t.row(vec![
            f3(st.offered_rps),
            f3(Some(st.achieved_rps)),
            st.sent.to_string(),
            st.failed.to_string(),
            f3(l.map(|l| l.p50)),
            f3(l.map(|l| l.p90)),
            f3(l.map(|l| l.p99)),
            f3(l.map(|l| l.max)),
            if st.passed {
                "pass".into()
            } else {
                format!("fail: {}", st.why)
            },
        ]);
        if let Some(l) = l {
            pts.push((st.achieved_rps, l.p50, l.p99, st.passed));
        }
    }
    b.push(Block::Table(t));
    b.push(Block::Para(match q.max_qps {
        Some(m) => format!("Max QPS: {m:.1} req/s."),
        None => format!("Max QPS: {}.", ostr(&q.max_qps_na)),
    }));
    let bound = q
        .slo
        .iter()
        .map(|b| b.limit_ms)
        .fold(f64::INFINITY, f64::min);
    if !pts.is_empty() {
        b.push(Block::Chart(chart::latency_vs_throughput(
            &q.model, bound, pts,
        )));
    }
}

/// LLM serving (MindIE Benchmark).
/// §7.1 (optional): the training stage's figures and its epochs.
fn train(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(t) = &r.train else { return };
    b.push(Block::Heading("Training (§7.1, optional)".into()));
    let step = t
        .step_ms
        .as_ref()
        .map(|s| {
            format!(
                "average {:.3}, P90 {:.3}, P99 {:.3} ms over {} steps",
                s.average, s.p90, s.p99, s.n
            )
        })
        .unwrap_or_else(|| "n/a".into());
    b.push(Block::Para(format!(
        "`acceval train --workload {}` on {} ({}), batch {}, precision {}. Single step (T1 − T0, after the device's synchronisation): {step}. Total Te − Ts {:.3} s ({}). Throughput {} samples/s; time to target {}; power {} W average, {} W peak; energy {} J; N/E {} samples/J. {}",
        t.workload, t.device, t.framework, t.batch, t.precision, t.total_s, t.total_definition,
        t.throughput_samples_per_s, t.time_to_target_s, t.power_w.average, t.power_w.peak, t.energy_j,
        t.efficiency_samples_per_j, t.standard_note
    )));
    let mut tb = Table::new(&[
        "Epoch",
        "time s",
        "samples",
        "samples/s",
        "util mean %",
        "util n",
        "energy J",
        "eval",
    ]);
    for e in &t.epochs {
        tb.row(vec![
            e.index.to_string(),
            format!("{:.3}", e.time_s),
            e.samples.to_string(),
            format!("{:.1}", e.throughput_samples_per_s),
            e.utilization.mean.to_string(),
            e.utilization.n.to_string(),
            e.energy_j.to_string(),
            e.eval
                .as_ref()
                .map(|v| format!("{} {:.4}", v.metric, v.value))
                .unwrap_or_default(),
        ]);
    }
    b.push(Block::Table(tb));
}

/// §7.2.4 b: the cluster run the grade merged (`--cluster-run`), node by node.
fn cluster(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(c) = &r.cluster else { return };
    let n = |v: Option<f64>, d: usize| v.map_or("n/a".to_string(), |v| format!("{v:.d$}"));
    let g = |x: &crate::report::schema::bench::Figure| {
        x.value
            .map_or(x.definition.clone(), |v| format!("{v:.2} {}", x.unit))
    };
    let fig = &c.cluster;
    b.push(Block::Heading("Cluster (§7.2.4 b)".into()));
    b.push(Block::Para(format!(
        "`acceval bench --cluster {}` of {} (SHA-256 {}) on {}, {} rank(s), launcher: {}: **{}**. FPS = N / (max Tio − min Tis) on rank 0's clock (each rank's times moved by its measured offset): {} (the offsets allow {}..{}); T = {} s; N = {} of {} expected. Barrier to barrier on rank 0: {}. Imbalance (slowest node / mean) {}. Energy: {}; N/E {}. The rank files are in this folder (`cluster-rank-<r>.json`, hashed in the manifest); `acceval verify` merges them again.{}",
        c.dir,
        c.model,
        c.model_sha256,
        c.backend,
        c.world_size,
        c.launcher,
        if c.valid { "VALID" } else { "INVALID" },
        g(&fig.fps),
        n(fig.fps_low, 2),
        n(fig.fps_high, 2),
        n(fig.t_s, 6),
        fig.samples,
        fig.expected_samples,
        g(&fig.fps_barrier),
        n(fig.imbalance, 3),
        fig.energy_j.map_or_else(
            || fig.energy_na.clone().unwrap_or_else(|| "n/a".into()),
            |j| format!("{j:.1} J")
        ),
        g(&fig.inferences_per_joule),
        c.problems
            .iter()
            .map(|p| format!(" Problem: {p}."))
            .collect::<String>(),
    )));
    let mut tb = Table::new(&[
        "Rank",
        "Host",
        "Shard",
        "Samples",
        "Start s",
        "End s",
        "FPS",
        "Offset s",
        "± s",
        "Node verdict",
    ]);
    for x in &c.nodes {
        tb.row(vec![
            x.rank.to_string(),
            x.host.clone(),
            format!("{}..{}", x.shard.start, x.shard.end),
            x.samples.to_string(),
            n(x.start_s, 6),
            n(x.end_s, 6),
            n(x.fps, 2),
            x.offset_s.map_or("n/a".into(), |v| format!("{v:.2e}")),
            x.offset_error_s
                .map_or("n/a".into(), |v| format!("{v:.2e}")),
            x.node_validity.clone(),
        ]);
    }
    b.push(Block::Table(tb));
}

fn llm(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(l) = &r.llm else { return };
    b.push(Block::Heading("LLM serving (MindIE Benchmark)".into()));
    let f3 = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into());
    for run in &l.runs {
        b.push(Block::Para(format!(
            "`acceval llm` against {} ({}, model {}), {} requests at concurrency {} after {} warm-up requests; data: {}. Statistics as MindIE: P-values pooled over all samples, SLO_P90 = P90 of per-request means; percentiles by linear interpolation.",
            l.url, l.api, l.model, run.total, run.concurrency, l.warmup, l.data_source
        )));
        let mut t = Table::new(&[
            "Metric", "average", "max", "min", "P75", "P90", "SLO_P90", "P99", "N",
        ]);
        for &(name, unit) in crate::report::llm::ORDER {
            let m = run.metrics.get(name).and_then(|m| m.as_ref());
            let g = |f: fn(&crate::report::schema::llm::MindieStat) -> f64| {
                f3(m.map(f).filter(|v| v.is_finite()))
            };
            t.row(vec![
                format!("{name} ({unit})"),
                g(|s| s.average),
                g(|s| s.max),
                g(|s| s.min),
                g(|s| s.P75),
                g(|s| s.P90),
                g(|s| s.SLO_P90),
                g(|s| s.P99),
                m.map(|s| s.N.to_string()).unwrap_or_else(|| "null".into()),
            ]);
        }
        b.push(Block::Table(t));
        let n = |x: Option<f64>, unit: &str| {
            x.map(|v| format!("{v:.3} {unit}"))
                .unwrap_or_else(|| "n/a".into())
        };
        b.push(Block::Para(format!(
            "TimeElapsed {}, Total {}, Returned {}, Failed {}, Throughput {}, GenerateSpeed {}, GenerateSpeedPerClient {}, lpct {}.",
            n(Some(run.time_elapsed_s), "s"),
            run.total,
            run.returned,
            run.failed,
            n(Some(run.throughput), "req/s"),
            n(run.generate_speed, "token/s"),
            n(run.generate_speed_per_client, "token/s"),
            n(run.lpct, "ms")
        )));
    }
}

/// Environment and devices (§6.2 c).
fn environment(r: &GradeReport, b: &mut Vec<Block>) {
    let Some(d) = &r.devices else { return };
    b.push(Block::Heading("Environment and devices (§6.2 c)".into()));
    let h = &d.host;
    let mut t = Table::new(&["item", "value"]);
    for (k, x) in [
        ("architecture", h.arch.clone()),
        ("CPU", h.cpu_model.clone()),
        ("logical CPUs", h.logical_cpus.to_string()),
        ("memory (bytes)", h.memory_bytes.to_string()),
        ("OS", h.os.clone()),
        ("OS version", h.os_version.clone()),
        ("kernel", h.kernel.clone()),
        ("container", h.container.in_container.to_string()),
        ("NVIDIA", ostr(&d.nvidia.not_available)),
        ("Ascend", ostr(&d.ascend.not_available)),
        (
            "ONNX Runtime",
            d.onnxruntime
                .library
                .as_ref()
                .map(|l| l.version.clone())
                .unwrap_or_else(|| "n/a".into()),
        ),
    ] {
        t.row(vec![k.into(), x]);
    }
    for g in &d.nvidia.gpus {
        t.row(vec![
            format!("GPU {}", g.index),
            format!("{} ({} bytes)", g.name, g.memory_bytes),
        ]);
    }
    b.push(Block::Table(t));
    let mut t = Table::new(&["backend", "status"]);
    for x in &d.backends {
        t.row(vec![x.name.clone(), x.availability.to_string()]);
    }
    b.push(Block::Table(t));
}

fn decisions(r: &GradeReport, b: &mut Vec<Block>) {
    b.push(Block::Heading("Decisions the numbers depend on".into()));
    let mut t = Table::new(&["topic", "whose", "decision"]);
    for x in &r.decisions {
        t.row(vec![x.topic.clone(), x.source.clone(), x.text.clone()]);
    }
    b.push(Block::Table(t));
    let mut t = Table::new(&["stage", "status", "seconds", "error"]);
    for x in &r.stages {
        t.row(vec![
            x.name.clone(),
            x.status.to_string(),
            num(x.seconds),
            x.error.clone().unwrap_or_default(),
        ]);
    }
    b.push(Block::Heading("Stages".into()));
    b.push(Block::Table(t));
    b.push(Block::Para("Files: report.json is the source of truth; manifest.json holds the SHA-256 of every file (check with `acceval verify DIR`); `acceval report DIR --format md|html|csv` renders the views again.".into()));
}

/// The report as Markdown.
pub fn markdown(r: &GradeReport) -> String {
    let mut o = String::new();
    let mut first = true;
    for b in blocks(r) {
        match b {
            Block::Heading(h) => {
                let _ = writeln!(o, "{} {h}\n", if first { "#" } else { "##" });
                first = false;
            }
            Block::Para(p) => {
                let _ = writeln!(o, "{p}\n");
            }
            Block::Table(t) => {
                let _ = writeln!(o, "{}", t.md());
            }
            Block::Chart(_) => {}
        }
    }
    o
}

fn inline_md(x: &str) -> String {
    // Only what the report uses: **bold**, *em*, `code`.
    let e = html_escape(x);
    let mut o = String::new();
    let mut bold = false;
    let mut code = false;
    let mut it = e.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '*' if it.peek() == Some(&'*') && !code => {
                it.next();
                o.push_str(if bold { "</strong>" } else { "<strong>" });
                bold = !bold;
            }
            '`' => {
                o.push_str(if code { "</code>" } else { "<code>" });
                code = !code;
            }
            c => o.push(c),
        }
    }
    o
}

/// The report as one self-contained HTML file (inline CSS and SVG, no network).
pub fn html(r: &GradeReport) -> String {
    let verdict = r.verdict.to_string();
    let color = match r.verdict {
        Verdict::Compliant => "#1b7f3b",
        Verdict::NotCompliant => "#b3261e",
        _ => "#8a6d00",
    };
    let mut o = String::from("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        o,
        "<title>acceval — {} on {}: {}</title><style>body{{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1c1c1c}}table{{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em}}th,td{{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}}th{{background:#f0f0f0}}td.pass{{color:#1b7f3b;font-weight:600}}td.fail{{color:#b3261e;font-weight:600}}td.na{{color:#666}}.verdict{{font-size:1.6em;padding:0.4em 0.8em;border-radius:6px;color:#fff;background:{color};display:inline-block}}svg{{margin:0.5em 1em 1em 0;border:1px solid #ddd;background:#fff}}code{{background:#f4f4f4;padding:0 3px}}</style></head><body>",
        html_escape(&r.profile.name),
        html_escape(&r.backend),
        html_escape(&verdict)
    );
    let mut first = true;
    for b in blocks(r) {
        match b {
            Block::Heading(h) => {
                let _ = write!(
                    o,
                    "<h{0}>{1}</h{0}>",
                    if first { 1 } else { 2 },
                    html_escape(&h)
                );
                if first {
                    let _ = write!(
                        o,
                        "<p><span class=\"verdict\">{}</span></p>",
                        html_escape(&verdict)
                    );
                }
                first = false;
            }
            Block::Para(p) => {
                let _ = write!(o, "<p>{}</p>", inline_md(&p));
            }
            Block::Table(t) => o.push_str(&t.html()),
            Block::Chart(svg) => o.push_str(&svg),
        }
    }
    o.push_str("</body></html>\n");
    o
}

/// The clause table (`clauses.csv`).
pub fn clauses_table(r: &GradeReport) -> CsvTable {
    let mut t = CsvTable::new(
        "clauses.csv",
        &[
            "clause",
            "title",
            "requirement",
            "measured",
            "verdict",
            "reason",
            "source",
        ],
    );
    for c in &r.clauses {
        t.push(vec![
            c.clause.clone(),
            c.title.clone(),
            c.requirement.clone(),
            c.measured.clone(),
            c.verdict.to_string(),
            c.reason.clone().unwrap_or_default(),
            c.source.to_string(),
        ]);
    }
    t
}

/// The terminal: the verdict and the clause table.
pub fn terminal(o: &mut dyn Write, r: &GradeReport, dir: &Path) -> std::io::Result<()> {
    let mut t = super::table(&["clause", "title", "measured", "verdict"]);
    for c in &r.clauses {
        let mut m = c.measured.clone();
        if m.chars().count() > 70 {
            m = m.chars().take(67).collect::<String>() + "...";
        }
        t.add_row(vec![
            c.clause.clone(),
            c.title.clone(),
            m,
            c.verdict.to_string(),
        ]);
    }
    writeln!(o, "{t}")?;
    writeln!(o, "Verdict: {}", r.verdict)?;
    for x in &r.verdict_reasons {
        writeln!(o, "  - {x}")?;
    }
    writeln!(
        o,
        "Report:  {}/report.md, report.html, report.json (verify: acceval verify {})",
        dir.display(),
        dir.display()
    )
}

impl crate::report::export::Document for GradeReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        let mut t = super::table(&["clause", "title", "measured", "verdict"]);
        for c in &self.clauses {
            t.add_row(vec![
                c.clause.clone(),
                c.title.clone(),
                c.measured.clone(),
                c.verdict.to_string(),
            ]);
        }
        writeln!(o, "{t}")?;
        writeln!(o, "Verdict: {}", self.verdict)
    }
    fn tables(&self) -> Vec<CsvTable> {
        vec![clauses_table(self)]
    }
}
