//! The compliance report's views, rendered from `report.json` alone (so `acceval report`
//! reproduces them): Markdown, one self-contained HTML file with SVG charts, the clause
//! table as CSV, and the terminal summary.
//!
//! The SVG charts are written by hand: four simple charts (histogram, CDF, time series,
//! bars) do not justify a plotting crate and its font/raster dependencies, and the output
//! must stay a single file with no network access.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::report::chart;

fn s(v: &Value) -> String {
    match v {
        Value::Null => "n/a".into(),
        Value::String(x) => x.clone(),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if n.is_u64() || n.is_i64() {
                n.to_string()
            } else if f == 0.0 {
                "0".into()
            } else if f.abs() < 0.01 || f.abs() >= 1e6 {
                format!("{f:.4e}")
            } else {
                format!("{f:.3}")
            }
        }
        other => other.to_string(),
    }
}

fn md_escape(x: &str) -> String {
    x.replace('|', "\\|").replace('\n', " ")
}

fn html_escape(x: &str) -> String {
    x.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
fn pct(v: &Value) -> String {
    let f = v.as_f64().unwrap_or(f64::NAN);
    if f.fract() == 0.0 {
        format!("{f:.0}")
    } else {
        format!("{f}")
    }
}

fn level(v: &Value) -> String {
    v.as_str().unwrap_or("none").to_string()
}

fn summary_row(name: &str, x: &Value) -> Vec<String> {
    let mut r = vec![name.to_string()];
    for k in [
        "mean", "min", "max", "stddev", "p50", "p75", "p90", "p99", "p999", "n",
    ] {
        r.push(match &x[k] {
            Value::Null => "n/a".into(),
            v => s(v),
        });
    }
    r
}

fn blocks(v: &Value) -> Vec<Block> {
    let mut b = Vec::new();
    let p = &v["profile"];
    b.push(Block::Heading(format!(
        "acceval compliance report — {} on {}",
        s(&p["name"]),
        s(&v["backend"])
    )));
    let verdict = s(&v["verdict"]);
    let mut lead = format!("**Verdict: {verdict}**");
    if let Some(rs) = v["verdict_reasons"].as_array().filter(|a| !a.is_empty()) {
        lead.push_str(" — ");
        lead.push_str(&rs.iter().map(s).collect::<Vec<_>>().join("; "));
    }
    b.push(Block::Para(lead));
    b.push(Block::Para(format!(
        "Scenario: {} ({}). Model: {}. Created {} by acceval {} ({}). Command: `{}`.{}",
        s(&p["scenario"]),
        s(&p["description"]),
        s(&p["model"]["name"]),
        s(&v["created_utc"]),
        s(&v["tool"]["version"]),
        s(&v["tool"]["git_commit"]),
        v["command_line"]
            .as_array()
            .map(|a| a.iter().map(s).collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        if v["policy_overridden"] == true {
            " **The run policy was overridden on the command line: this report is not a certification result.**"
        } else {
            ""
        }
    )));
    // Levels at a glance.
    let mut t = Table::new(&["table", "what", "measured", "level", "required", "verdict"]);
    let m = &v["model"];
    if !m.is_null() {
        t.row(vec![
            "Table 1".into(),
            "parameter size".into(),
            format!("{} MB ({} parameters)", s(&m["params_mb"]), s(&m["params"])),
            level(&m["table1_level"]),
            "—".into(),
            "graded".into(),
        ]);
        t.row(vec![
            "Table 2".into(),
            "compute".into(),
            format!("{} GFLOPs ({} MACs)", s(&m["gflops"]), s(&m["macs"])),
            level(&m["table2_level"]),
            "—".into(),
            "graded".into(),
        ]);
    }
    for a in v["accuracy"].as_array().into_iter().flatten() {
        t.row(vec![
            "Table 3".into(),
            format!(
                "accuracy, {}",
                a["precision"].as_str().unwrap_or("?").to_uppercase()
            ),
            format!("MSE {}", s(&a["mse"])),
            level(&a["level"]),
            format!("{} (Table 4)", s(&p["accuracy"]["required"])),
            s(&a["verdict"]),
        ]);
    }
    let sp = &v["speed"];
    if !sp.is_null() {
        t.row(vec![
            "Table 5".into(),
            "speed (profile thresholds)".into(),
            format!(
                "P{} {} ms, FPS {}, run {}",
                pct(&sp["percentile"]),
                s(&sp["latency_at_percentile_ms"]),
                s(&sp["fps"]),
                s(&sp["bench"]["validity"]["result"])
            ),
            level(&sp["achieved"]),
            s(&sp["required"]),
            if sp["meets"] == true { "PASS" } else { "FAIL" }.into(),
        ]);
    }
    b.push(Block::Heading("Levels".into()));
    b.push(Block::Table(t));

    // Clause by clause.
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
    for c in v["clauses"].as_array().into_iter().flatten() {
        t.row(vec![
            s(&c["clause"]),
            s(&c["title"]),
            s(&c["requirement"]),
            s(&c["measured"]),
            s(&c["verdict"]),
            c["reason"].as_str().unwrap_or("").to_string(),
            s(&c["source"]),
        ]);
    }
    b.push(Block::Table(t));

    // Accuracy per output.
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
    for a in v["accuracy"].as_array().into_iter().flatten() {
        let prec = a["precision"].as_str().unwrap_or("?").to_uppercase();
        for o in a["outputs"].as_array().into_iter().flatten() {
            t.row(vec![
                prec.clone(),
                s(&o["name"]),
                s(&o["elements"]),
                s(&o["mse"]),
                s(&o["max_abs_error"]),
                s(&o["rel_l2_error"]),
                s(&o["cosine"]),
                format!("{}/{}", s(&o["nan_count"]), s(&o["inf_count"])),
                level(&o["level"]),
                s(&a["agreement_text"]),
            ]);
            if let Some(x) = o["mse"].as_f64() {
                bars.push((format!("{prec} {}", s(&o["name"])), x));
            }
        }
    }
    for e in v["accuracy_errors"].as_array().into_iter().flatten() {
        t.row(vec![
            s(&e["precision"]).to_uppercase(),
            "—".into(),
            "".into(),
            "not measured".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
            s(&e["error"]),
        ]);
    }
    b.push(Block::Table(t));
    if !bars.is_empty() {
        b.push(Block::Chart(chart::mse_bars(&bars)));
    }
    if let Some(a) = v["accuracy"].as_array().and_then(|a| a.first()) {
        b.push(Block::Para(format!(
            "Reference: {} — {}; cross-check: {}. {}",
            s(&a["reference"]["dir"]),
            s(&a["reference"]["engine"]),
            s(&a["reference"]["cross_check"]),
            s(&a["definition"])
        )));
    }

    // Latency and FPS.
    if !sp.is_null() {
        let bench = &sp["bench"];
        b.push(Block::Heading("Latency (§7.2.3) and FPS (§7.2.4)".into()));
        b.push(Block::Para(format!(
            "{} samples of {} ({}) in {} s after {} warm-up samples; cold start: IR conversion {} ms, graph initialisation {} ms, first inference {} ms (not in the statistics). Harness overhead {} µs per sample. {}",
            s(&bench["samples"]),
            s(&sp["model"]),
            s(&bench["mode"]),
            s(&bench["wall_s"]),
            s(&bench["warmup_samples"]),
            s(&bench["cold_start"]["convert_ms"]),
            s(&bench["cold_start"]["init_ms"]),
            s(&bench["cold_start"]["first_inference_ms"]),
            s(&bench["harness_overhead_us"]),
            s(&bench["latency_definition"])
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
        if !bench["latency_ms"].is_null() {
            t.row(summary_row("end to end", &bench["latency_ms"]));
        }
        if let Some(st) = bench["stages"].as_object() {
            for name in ["decode", "preprocess", "forward", "postprocess"] {
                if let Some(x) = st.get(name) {
                    t.row(summary_row(name, &x["latency_ms"]));
                }
            }
        }
        b.push(Block::Table(t));
        b.push(Block::Para(format!(
            "FPS = {} 1/s ({}). Throughput = {} 1/s ({}). Copies: {}. Run {}: {}.",
            s(&bench["fps"]["value"]),
            s(&bench["fps"]["definition"]),
            s(&bench["throughput"]["value"]),
            s(&bench["throughput"]["definition"]),
            s(&bench["copies"]),
            s(&bench["validity"]["result"]),
            bench["validity"]["rules"]
                .as_array()
                .map(|r| r
                    .iter()
                    .map(|x| format!(
                        "{} {} ({})",
                        if x["passed"] == true { "✓" } else { "✗" },
                        s(&x["rule"]),
                        s(&x["detail"])
                    ))
                    .collect::<Vec<_>>()
                    .join("; "))
                .unwrap_or_default()
        )));
        let mut t = Table::new(&["level", "max latency (ms)", "min FPS"]);
        for l in ["C1", "C2", "C3", "C4"] {
            t.row(vec![
                format!("{l} (profile)"),
                s(&sp["thresholds"][l]["max_latency_ms"]),
                s(&sp["thresholds"][l]["min_fps"]),
            ]);
        }
        b.push(Block::Table(t));
        if let Some(lat) = sp["latencies_ms"].as_array() {
            let xs: Vec<f64> = lat.iter().filter_map(|x| x.as_f64()).collect();
            if !xs.is_empty() {
                b.push(Block::Chart(chart::histogram(&xs)));
                b.push(Block::Chart(chart::cdf(&xs)));
            }
        }

        // Utilization and power.
        let tm = &bench["telemetry"];
        b.push(Block::Heading(
            "Utilization, power and energy (§7.2.6, §7.1.4–7.1.7)".into(),
        ));
        if tm.is_null() {
            b.push(Block::Para("No telemetry was recorded.".into()));
        } else {
            let mut t = Table::new(&["sensor", "status"]);
            for x in tm["sensors"].as_array().into_iter().flatten() {
                t.row(vec![s(&x["sensor"]), s(&x["status"])]);
            }
            b.push(Block::Table(t));
            let mut t = Table::new(&["channel", "mean", "max", "unit", "samples", "definition"]);
            for c in tm["channels"].as_array().into_iter().flatten() {
                t.row(vec![
                    s(&c["name"]),
                    s(&c["mean"]),
                    s(&c["max"]),
                    s(&c["unit"]),
                    s(&c["samples"]),
                    s(&c["definition"]),
                ]);
            }
            b.push(Block::Table(t));
            match tm["energy"].as_array().filter(|e| !e.is_empty()) {
                Some(es) => {
                    let mut t = Table::new(&[
                        "device",
                        "energy (J)",
                        "method",
                        "average power (W)",
                        "peak power (W)",
                        "inferences/J",
                    ]);
                    for e in es {
                        t.row(vec![
                            s(&e["device"]),
                            s(&e["joules"]),
                            s(&e["method"]),
                            s(&e["average_power_w"]),
                            s(&e["peak_power_w"]),
                            s(&e["inferences_per_joule"]),
                        ]);
                    }
                    b.push(Block::Table(t));
                }
                None => b.push(Block::Para(format!(
                    "Power and energy: {}",
                    s(&tm["energy_unavailable"])
                ))),
            }
            if let Some(tl) = sp.get("telemetry_timeline").filter(|x| !x.is_null()) {
                let names: Vec<String> = tl["channels"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(s)
                    .collect();
                let rows: Vec<Vec<f64>> = tl["ticks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| {
                        t.as_array()
                            .into_iter()
                            .flatten()
                            .map(|x| x.as_f64().unwrap_or(f64::NAN))
                            .collect()
                    })
                    .collect();
                b.push(Block::Chart(chart::timeline(&names, &rows)));
            }
        }
    }

    // QPS (§7.2.5).
    let q = &v["qps"];
    if q.is_object() {
        b.push(Block::Heading("QPS (§7.2.5)".into()));
        b.push(Block::Para(format!(
            "`acceval serve` on 127.0.0.1 ({}), measured by `acceval qps`: open loop, Poisson arrivals (seed {}), latency from each request's scheduled send time to its full response, bounds {}, error budget {}; {} requests sent in all. Inputs: {}.",
            s(&q["url"]),
            q["seed"],
            q["slo"].as_array().into_iter().flatten().map(|b| format!("{}<={}ms", s(&b["stat_name"]), b["limit_ms"])).collect::<Vec<_>>().join(","),
            q["error_budget"],
            q["requests_issued"],
            s(&q["inputs"])
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
        let mut pts = Vec::new();
        for st in q["steps"].as_array().into_iter().flatten() {
            let l = &st["latency_ms"];
            let f = |x: &Value| {
                x.as_f64()
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or_else(|| "n/a".into())
            };
            t.row(vec![
                f(&st["offered_rps"]),
                f(&st["achieved_rps"]),
                st["sent"].to_string(),
                st["failed"].to_string(),
                f(&l["p50"]),
                f(&l["p90"]),
                f(&l["p99"]),
                f(&l["max"]),
                if st["passed"] == true {
                    "pass".into()
                } else {
                    format!("fail: {}", s(&st["why"]))
                },
            ]);
            if let (Some(a), Some(p50), Some(p99)) = (
                st["achieved_rps"].as_f64(),
                l["p50"].as_f64(),
                l["p99"].as_f64(),
            ) {
                pts.push((a, p50, p99, st["passed"] == true));
            }
        }
        b.push(Block::Table(t));
        b.push(Block::Para(match q["max_qps"].as_f64() {
            Some(m) => format!("Max QPS: {m:.1} req/s."),
            None => format!("Max QPS: {}.", s(&q["max_qps_na"])),
        }));
        let bound = q["slo"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["limit_ms"].as_f64())
            .fold(f64::INFINITY, f64::min);
        if !pts.is_empty() {
            b.push(Block::Chart(chart::latency_vs_throughput(
                &s(&q["model"]),
                bound,
                pts,
            )));
        }
    }

    // LLM serving (MindIE Benchmark).
    let l = &v["llm"];
    if l.is_object() {
        b.push(Block::Heading("LLM serving (MindIE Benchmark)".into()));
        for run in l["runs"].as_array().into_iter().flatten() {
            b.push(Block::Para(format!(
                "`acceval llm` against {} ({}, model {}), {} requests at concurrency {} after {} warm-up requests; data: {}. Statistics as MindIE: P-values pooled over all samples, SLO_P90 = P90 of per-request means; percentiles by linear interpolation.",
                s(&l["url"]),
                s(&l["api"]),
                s(&l["model"]),
                run["total"],
                run["concurrency"],
                l["warmup"],
                s(&l["data_source"])
            )));
            let mut t = Table::new(&[
                "Metric", "average", "max", "min", "P75", "P90", "SLO_P90", "P99", "N",
            ]);
            for &(name, unit) in crate::report::llm::ORDER {
                let m = &run["metrics"][name];
                let f = |k: &str| {
                    m[k].as_f64()
                        .map(|x| format!("{x:.3}"))
                        .unwrap_or_else(|| "n/a".into())
                };
                t.row(vec![
                    format!("{name} ({unit})"),
                    f("average"),
                    f("max"),
                    f("min"),
                    f("P75"),
                    f("P90"),
                    f("SLO_P90"),
                    f("P99"),
                    m["N"].to_string(),
                ]);
            }
            b.push(Block::Table(t));
            let n = |x: &Value, unit: &str| {
                x.as_f64()
                    .map(|v| format!("{v:.3} {unit}"))
                    .unwrap_or_else(|| "n/a".into())
            };
            b.push(Block::Para(format!(
                "TimeElapsed {}, Total {}, Returned {}, Failed {}, Throughput {}, GenerateSpeed {}, GenerateSpeedPerClient {}, lpct {}.",
                n(&run["time_elapsed_s"], "s"),
                run["total"],
                run["returned"],
                run["failed"],
                n(&run["throughput"], "req/s"),
                n(&run["generate_speed"], "token/s"),
                n(&run["generate_speed_per_client"], "token/s"),
                n(&run["lpct"], "ms")
            )));
        }
    }

    // Environment.
    let d = &v["devices"];
    if !d.is_null() {
        b.push(Block::Heading("Environment and devices (§6.2 c)".into()));
        let h = &d["host"];
        let mut t = Table::new(&["item", "value"]);
        for (k, x) in [
            ("architecture", &h["arch"]),
            ("CPU", &h["cpu_model"]),
            ("logical CPUs", &h["logical_cpus"]),
            ("memory (bytes)", &h["memory_bytes"]),
            ("OS", &h["os"]),
            ("OS version", &h["os_version"]),
            ("kernel", &h["kernel"]),
            ("container", &h["container"]["in_container"]),
            ("NVIDIA", &d["nvidia"]["not_available"]),
            ("Ascend", &d["ascend"]["not_available"]),
            ("ONNX Runtime", &d["onnxruntime"]["library"]["version"]),
        ] {
            t.row(vec![k.into(), s(x)]);
        }
        for g in d["nvidia"]["gpus"].as_array().into_iter().flatten() {
            t.row(vec![
                format!("GPU {}", s(&g["index"])),
                format!("{} ({} bytes)", s(&g["name"]), s(&g["memory_bytes"])),
            ]);
        }
        b.push(Block::Table(t));
        let mut t = Table::new(&["backend", "status"]);
        for x in d["backends"].as_array().into_iter().flatten() {
            t.row(vec![
                s(&x["name"]),
                format!(
                    "{} {}",
                    s(&x["availability"]["status"]),
                    x["availability"]["detail"]
                        .as_str()
                        .or(x["availability"]["reason"].as_str())
                        .unwrap_or("")
                ),
            ]);
        }
        b.push(Block::Table(t));
    }

    // Decisions.
    b.push(Block::Heading("Decisions the numbers depend on".into()));
    let mut t = Table::new(&["topic", "whose", "decision"]);
    for x in v["decisions"].as_array().into_iter().flatten() {
        t.row(vec![s(&x["topic"]), s(&x["source"]), s(&x["text"])]);
    }
    b.push(Block::Table(t));
    let mut t = Table::new(&["stage", "status", "seconds", "error"]);
    for x in v["stages"].as_array().into_iter().flatten() {
        t.row(vec![
            s(&x["name"]),
            s(&x["status"]),
            s(&x["seconds"]),
            x["error"].as_str().unwrap_or("").into(),
        ]);
    }
    b.push(Block::Heading("Stages".into()));
    b.push(Block::Table(t));
    b.push(Block::Para("Files: report.json is the source of truth; manifest.json holds the SHA-256 of every file (check with `acceval verify DIR`); `acceval report DIR --format md|html|csv` renders the views again.".into()));
    b
}

/// The report as Markdown.
pub fn markdown(v: &Value) -> String {
    let mut o = String::new();
    let mut first = true;
    for b in blocks(v) {
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
pub fn html(v: &Value) -> String {
    let verdict = s(&v["verdict"]);
    let color = match verdict.as_str() {
        "COMPLIANT" => "#1b7f3b",
        "NOT COMPLIANT" => "#b3261e",
        _ => "#8a6d00",
    };
    let mut o = String::from("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        o,
        "<title>acceval — {} on {}: {}</title><style>body{{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1c1c1c}}table{{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em}}th,td{{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}}th{{background:#f0f0f0}}td.pass{{color:#1b7f3b;font-weight:600}}td.fail{{color:#b3261e;font-weight:600}}td.na{{color:#666}}.verdict{{font-size:1.6em;padding:0.4em 0.8em;border-radius:6px;color:#fff;background:{color};display:inline-block}}svg{{margin:0.5em 1em 1em 0;border:1px solid #ddd;background:#fff}}code{{background:#f4f4f4;padding:0 3px}}</style></head><body>",
        html_escape(&s(&v["profile"]["name"])),
        html_escape(&s(&v["backend"])),
        html_escape(&verdict)
    );
    let mut first = true;
    for b in blocks(v) {
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

/// The clause table as CSV.
pub fn clauses_csv(v: &Value) -> String {
    let q = |x: &str| format!("\"{}\"", x.replace('"', "\"\""));
    let mut o = String::from("clause,title,requirement,measured,verdict,reason,source\n");
    for c in v["clauses"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "{}",
            [
                "clause",
                "title",
                "requirement",
                "measured",
                "verdict",
                "reason",
                "source"
            ]
            .iter()
            .map(|k| q(c[*k].as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(",")
        );
    }
    o
}

/// The terminal: the verdict and the clause table.
pub fn terminal(o: &mut impl Write, v: &Value, dir: &Path) -> std::io::Result<()> {
    let mut t = super::table(&["clause", "title", "measured", "verdict"]);
    for c in v["clauses"].as_array().into_iter().flatten() {
        let mut m = s(&c["measured"]);
        if m.chars().count() > 70 {
            m = m.chars().take(67).collect::<String>() + "...";
        }
        t.add_row(vec![s(&c["clause"]), s(&c["title"]), m, s(&c["verdict"])]);
    }
    writeln!(o, "{t}")?;
    writeln!(o, "Verdict: {}", s(&v["verdict"]))?;
    for r in v["verdict_reasons"].as_array().into_iter().flatten() {
        writeln!(o, "  - {}", s(r))?;
    }
    writeln!(
        o,
        "Report:  {}/report.md, report.html, report.json (verify: acceval verify {})",
        dir.display(),
        dir.display()
    )
}
