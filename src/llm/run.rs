//! `acceval llm`: MindIE Benchmark's client mode. Sends prompts to an LLM serving endpoint,
//! streams the answers, and times every token-bearing event.
//!
//! Per request (MindIE's names, SPEC.md §7):
//! - FirstTokenTime: from sending the request to the first event that carries generated text;
//! - DecodeTime: each gap between successive token-bearing events;
//! - LastDecodeTime, MaxDecodeTime: the last and the largest of those gaps;
//! - GenerateTime: sending to the end of the response;
//! - TPOT = (GenerateTime − FirstTokenTime) / (GeneratedTokens − 1);
//! - GeneratedTokens: the server's `usage` (or TGI's `details`) when given, else the number
//!   of token-bearing events, and the report says which.
//!
//! A "token-bearing event" is one whose generated text is not empty (for TGI: every token
//! event). A role-only first chunk or an empty final chunk with `finish_reason` is not one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

use super::dataset::{self, Prompt};
use super::stats::{MindieStat, mindie};
use crate::cli::{Arrival, LlmArgs};
use crate::load::client::{self, Client};
use crate::protocol::generate::Api;
use crate::protocol::sse;

/// One request's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub index: usize,
    pub ok: bool,
    pub error: Option<String>,
    /// When it was sent, s after the run started.
    pub sent_s: f64,
    pub first_token_ms: Option<f64>,
    pub decode_ms: Vec<f64>,
    pub generate_ms: f64,
    pub input_tokens: Option<u64>,
    pub generated_tokens: Option<u64>,
    /// usage, details, events, or none.
    pub token_source: &'static str,
    pub generated_characters: u64,
    /// Token-bearing events received.
    pub token_events: u64,
}

impl Record {
    fn new(index: usize) -> Record {
        Record {
            index,
            ok: false,
            error: None,
            sent_s: 0.0,
            first_token_ms: None,
            decode_ms: Vec::new(),
            generate_ms: 0.0,
            input_tokens: None,
            generated_tokens: None,
            token_source: "none",
            generated_characters: 0,
            token_events: 0,
        }
    }
    pub fn tpot_ms(&self) -> Option<f64> {
        let (f, n) = (self.first_token_ms?, self.generated_tokens?);
        (n > 1).then(|| (self.generate_ms - f) / (n - 1) as f64)
    }
    fn speed(&self) -> Option<f64> {
        Some(self.generated_tokens? as f64 / (self.generate_ms / 1e3))
    }
}

/// One run (one concurrency, or one request rate).
#[derive(Debug, Clone, Serialize)]
pub struct LlmRun {
    pub current_time: String,
    pub concurrency: usize,
    pub request_rate: Option<f64>,
    pub distribution: Option<Arrival>,
    pub time_elapsed_s: f64,
    pub total: usize,
    /// Requests that came back with a response (complete or not).
    pub returned: usize,
    pub failed: usize,
    pub failures: BTreeMap<String, u64>,
    /// Successful requests / TimeElapsed, req/s.
    pub throughput: f64,
    /// Generated tokens of successful requests / TimeElapsed, token/s.
    pub generate_speed: Option<f64>,
    pub generate_speed_per_client: Option<f64>,
    /// Σ FirstTokenTime / Σ InputTokens, ms per input token.
    pub lpct: Option<f64>,
    /// Requests meeting every --slo bound / TimeElapsed, req/s.
    pub goodput: Option<f64>,
    pub token_sources: BTreeMap<&'static str, u64>,
    pub metrics: BTreeMap<&'static str, Option<MindieStat>>,
    pub characters_per_token: Option<f64>,
    pub complete: bool,
    pub records: Vec<Record>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LlmReport {
    pub schema: &'static str,
    pub url: String,
    pub model: String,
    pub api: Api,
    pub stream: bool,
    pub data_source: String,
    pub warmup: usize,
    pub slo: Vec<(String, f64)>,
    pub runs: Vec<LlmRun>,
    pub definitions: BTreeMap<&'static str, &'static str>,
}

pub const DEFINITIONS: &[(&str, &str)] = &[
    (
        "FirstTokenTime",
        "request sent to the first event carrying generated text, ms",
    ),
    (
        "DecodeTime",
        "gap between successive token-bearing events, ms; pooled over all requests (SLO_P90: P90 of each request's mean)",
    ),
    ("LastDecodeTime", "the last decode gap of a request, ms"),
    ("MaxDecodeTime", "the largest decode gap of a request, ms"),
    (
        "GenerateTime",
        "request sent to the end of its response, ms",
    ),
    (
        "TPOT",
        "(GenerateTime - FirstTokenTime) / (GeneratedTokens - 1), ms per output token",
    ),
    (
        "InputTokens",
        "prompt tokens: the server's usage when given, else the synthetic length asked for",
    ),
    (
        "GeneratedTokens",
        "the server's usage (or TGI details) when given, else token-bearing events",
    ),
    (
        "GeneratedTokenSpeed",
        "GeneratedTokens / GenerateTime, token/s",
    ),
    (
        "GeneratedCharacters",
        "characters of generated text (Unicode scalar values)",
    ),
    ("Throughput", "successful requests / TimeElapsed, req/s"),
    (
        "GenerateSpeed",
        "generated tokens of successful requests / TimeElapsed, token/s",
    ),
    (
        "GenerateSpeedPerClient",
        "GenerateSpeed / Concurrency, token/s",
    ),
    ("lpct", "sum of FirstTokenTime / sum of InputTokens, ms"),
    (
        "goodput",
        "requests meeting every --slo bound / TimeElapsed, req/s",
    ),
    (
        "percentiles",
        "linear interpolation between order statistics (numpy's default)",
    ),
];

struct Ctx {
    client: Client,
    base: String,
    api: Api,
    model: String,
    stream: bool,
    sampling: Map<String, Value>,
    timeout: Duration,
    tokenizer: Option<tokenizers::Tokenizer>,
    /// Set by Ctrl-C: in-flight requests are abandoned and recorded as interrupted.
    stop: Arc<AtomicBool>,
}

/// Parses `--slo ttft<=500ms,tpot<=50ms,e2el<=10s`.
pub fn parse_slo(s: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once("<=")
            .ok_or_else(|| anyhow::anyhow!("--slo '{part}': write METRIC<=TIME with METRIC ttft, tpot or e2el, e.g. ttft<=500ms"))?;
        let k = k.trim().to_ascii_lowercase();
        if !matches!(k.as_str(), "ttft" | "tpot" | "e2el") {
            bail!("--slo '{part}': unknown metric '{k}'; use ttft, tpot or e2el");
        }
        let b = crate::load::slo::parse(&format!("max<={}", v.trim()))
            .map_err(|e| anyhow::anyhow!("--slo '{part}': {e}"))?;
        out.push((k, b[0].limit_ms));
    }
    Ok(out)
}

/// One request, abandoned (and recorded as interrupted) when Ctrl-C comes first.
async fn guarded(ctx: &Ctx, index: usize, p: &Prompt, run_start: Instant) -> Record {
    let t = Instant::now();
    let stopped = async {
        while !ctx.stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        r = one(ctx, index, p, run_start) => r,
        _ = stopped => {
            let mut r = Record::new(index);
            r.sent_s = (t - run_start).as_secs_f64();
            r.generate_ms = t.elapsed().as_secs_f64() * 1e3;
            r.error = Some("interrupted: Ctrl-C before the response ended".into());
            r
        }
    }
}

async fn one(ctx: &Ctx, index: usize, p: &Prompt, run_start: Instant) -> Record {
    let body = ctx
        .api
        .body(&ctx.model, &p.text, p.max_tokens, ctx.stream, &ctx.sampling);
    let uri = format!("{}{}", ctx.base, ctx.api.path(&ctx.model, ctx.stream));
    let mut rec = Record::new(index);
    let req = hyper::Request::post(&uri)
        .header("content-type", "application/json")
        .header(
            "accept",
            if ctx.stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .body(Full::new(Bytes::from(
            serde_json::to_vec(&body).expect("JSON"),
        )));
    let req = match req {
        Ok(r) => r,
        Err(e) => {
            rec.error = Some(format!("invalid request to {uri}: {e}"));
            return rec;
        }
    };
    let t0 = Instant::now();
    rec.sent_s = (t0 - run_start).as_secs_f64();
    let deadline = tokio::time::Instant::from_std(t0 + ctx.timeout);
    let resp = match tokio::time::timeout_at(deadline, ctx.client.request(req)).await {
        Err(_) => {
            rec.error = Some(format!(
                "timeout: no response within {:.0} s",
                ctx.timeout.as_secs_f64()
            ));
            rec.generate_ms = t0.elapsed().as_secs_f64() * 1e3;
            return rec;
        }
        Ok(Err(e)) => {
            let (kind, msg) = client::classify(&e);
            rec.error = Some(format!("{}: {msg}", kind.label()));
            rec.generate_ms = t0.elapsed().as_secs_f64() * 1e3;
            return rec;
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    let mut body = resp.into_body();
    let mut parser = sse::Parser::new();
    let mut raw = Vec::new();
    let mut events: Vec<(Instant, Vec<u8>)> = Vec::new();
    let mut last_token_at: Option<Instant> = None;
    let mut text = String::new();
    let mut done_marker = false;
    let mut finished = false;
    let mut failure: Option<String> = None;
    loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => {
                failure = Some(format!(
                    "timeout: the response did not end within {:.0} s",
                    ctx.timeout.as_secs_f64()
                ));
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                failure = Some(format!("connection_closed: the stream broke: {e}"));
                break;
            }
            Ok(Some(Ok(frame))) => {
                let now = Instant::now();
                let Some(data) = frame.data_ref() else {
                    continue;
                };
                if !status.is_success() || !ctx.stream {
                    raw.extend_from_slice(data);
                    continue;
                }
                parser.feed(data, |ev| events.push((now, ev.to_vec())));
                for (at, ev) in events.drain(..) {
                    if failure.is_some() || done_marker {
                        continue;
                    }
                    if ev.trim_ascii() == b"[DONE]" {
                        done_marker = true;
                        continue;
                    }
                    let v: Value = match serde_json::from_slice(&ev) {
                        Ok(v) => v,
                        Err(e) => {
                            failure = Some(format!(
                                "bad_event: not JSON ({e}): {}",
                                String::from_utf8_lossy(&ev[..ev.len().min(200)])
                            ));
                            continue;
                        }
                    };
                    let piece = ctx.api.read(&v);
                    if let Some(e) = piece.error {
                        failure =
                            Some(format!("stream_error: the server sent an error event: {e}"));
                        continue;
                    }
                    if ctx.tokenizer.is_some() {
                        text.push_str(&piece.text);
                    }
                    account(&mut rec, &piece, at, t0, &mut last_token_at);
                    finished |= piece.finished;
                }
            }
        }
    }
    let end = Instant::now();
    rec.generate_ms = (end - t0).as_secs_f64() * 1e3;
    if !status.is_success() {
        rec.error = Some(format!(
            "http_{}: {}",
            status.as_u16(),
            String::from_utf8_lossy(&raw[..raw.len().min(300)])
        ));
        return rec;
    }
    if let Some(f) = failure {
        rec.error = Some(f);
        return rec;
    }
    if !ctx.stream {
        match serde_json::from_slice::<Value>(&raw) {
            Ok(v) => {
                let piece = ctx.api.read(&v);
                if let Some(e) = piece.error {
                    rec.error = Some(format!("response_error: {e}"));
                    return rec;
                }
                let mut last = None;
                text.push_str(&piece.text);
                account(&mut rec, &piece, end, t0, &mut last);
            }
            Err(e) => {
                rec.error = Some(format!("bad_response: not JSON ({e})"));
                return rec;
            }
        }
    } else {
        if let Some(rest) = parser.finish() {
            rec.error = Some(format!(
                "cut_stream: the stream ended inside an event ({} bytes)",
                rest.len()
            ));
            return rec;
        }
        if ctx.api.has_done_marker() && !done_marker {
            rec.error = Some(format!(
                "cut_stream: the stream ended without [DONE] after {} token events",
                rec.token_events
            ));
            return rec;
        }
        if ctx.api == Api::Tgi && !finished {
            rec.error = Some(format!(
                "cut_stream: the stream ended before TGI's final event after {} token events",
                rec.token_events
            ));
            return rec;
        }
    }
    // Token counts: the server's usage, else the tokenizer, else the events.
    if let Some(tok) = &ctx.tokenizer {
        if rec.generated_tokens.is_none() && !text.is_empty() {
            match tok.encode(text.as_str(), false) {
                Ok(e) => {
                    rec.generated_tokens = Some(e.len() as u64);
                    rec.token_source = "tokenizer";
                }
                Err(e) => rec.error = Some(format!("tokenizer: cannot encode the output: {e}")),
            }
        }
        if rec.input_tokens.is_none()
            && let Ok(e) = tok.encode(p.text.as_str(), true)
        {
            rec.input_tokens = Some(e.len() as u64);
        }
    }
    if rec.generated_tokens.is_none() && rec.token_events > 0 {
        rec.generated_tokens = Some(rec.token_events);
        rec.token_source = "events";
    }
    if rec.input_tokens.is_none() {
        rec.input_tokens = p.requested_input_tokens;
    }
    if rec.error.is_some() {
        return rec;
    }
    if rec.token_events == 0 {
        rec.error = Some("empty: the response carried no generated text".into());
        return rec;
    }
    rec.ok = true;
    rec
}

fn account(
    rec: &mut Record,
    piece: &crate::protocol::generate::Piece,
    at: Instant,
    t0: Instant,
    last: &mut Option<Instant>,
) {
    if !piece.text.is_empty() || piece.token_event {
        rec.token_events += 1;
        rec.generated_characters += piece.text.chars().count() as u64;
        match *last {
            None => rec.first_token_ms = Some((at - t0).as_secs_f64() * 1e3),
            Some(l) => rec.decode_ms.push((at - l).as_secs_f64() * 1e3),
        }
        *last = Some(at);
    }
    if let Some(n) = piece.completion_tokens {
        rec.generated_tokens = Some(n);
        rec.token_source = if piece.from_details {
            "details"
        } else {
            "usage"
        };
    }
    if let Some(n) = piece.prompt_tokens {
        rec.input_tokens = Some(n);
    }
}

/// Closed loop: `concurrency` clients over `prompts` (indices `range`), each sending its next
/// request when the last returns.
async fn closed(
    ctx: &Arc<Ctx>,
    prompts: &Arc<Vec<Prompt>>,
    n: usize,
    concurrency: usize,
    stop: &Arc<AtomicBool>,
    run_start: Instant,
) -> Vec<Record> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for _ in 0..concurrency.min(n).max(1) {
        let (ctx, prompts, next, stop) = (
            Arc::clone(ctx),
            Arc::clone(prompts),
            Arc::clone(&next),
            Arc::clone(stop),
        );
        handles.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                out.push(guarded(&ctx, i, &prompts[i % prompts.len()], run_start).await);
            }
            out
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap_or_default());
    }
    all.sort_by_key(|r| r.index);
    all
}

/// Open loop: arrivals at `rate` req/s, at most `concurrency` in flight.
#[allow(clippy::too_many_arguments)]
async fn open(
    ctx: &Arc<Ctx>,
    prompts: &Arc<Vec<Prompt>>,
    n: usize,
    concurrency: usize,
    rate: f64,
    arrival: Arrival,
    seed: u64,
    stop: &Arc<AtomicBool>,
    run_start: Instant,
) -> Vec<Record> {
    let offsets = crate::load::qps::schedule(arrival, rate, n, seed);
    let sem = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut handles = Vec::with_capacity(n);
    let start = tokio::time::Instant::now();
    for (i, off) in offsets.iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_secs_f64(*off)).await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let permit = Arc::clone(&sem)
            .acquire_owned()
            .await
            .expect("semaphore open");
        let (ctx, prompts) = (Arc::clone(ctx), Arc::clone(prompts));
        handles.push(tokio::spawn(async move {
            let r = guarded(&ctx, i, &prompts[i % prompts.len()], run_start).await;
            drop(permit);
            r
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        if let Ok(r) = h.await {
            all.push(r);
        }
    }
    all
}

#[allow(clippy::too_many_arguments)]
fn summarise(
    records: Vec<Record>,
    concurrency: usize,
    rate: Option<f64>,
    arrival: Option<Arrival>,
    elapsed: f64,
    total: usize,
    slo: &[(String, f64)],
    complete: bool,
) -> LlmRun {
    let ok: Vec<&Record> = records.iter().filter(|r| r.ok).collect();
    let mut failures = BTreeMap::new();
    for r in records.iter().filter(|r| !r.ok) {
        let kind = r
            .error
            .as_deref()
            .and_then(|e| e.split(':').next())
            .unwrap_or("other")
            .to_string();
        *failures.entry(kind).or_insert(0) += 1;
    }
    // MindIE's Returned: requests that got a response, empty or not (not the ones that never
    // got one: no connection, a timeout before any answer, abandoned at Ctrl-C).
    let returned = records
        .iter()
        .filter(|r| {
            r.ok || r.error.as_deref().is_some_and(|e| {
                !["timeout", "connection_failed", "interrupted"]
                    .iter()
                    .any(|k| e.starts_with(k))
            })
        })
        .count();
    let per = |f: &dyn Fn(&Record) -> Option<f64>| -> Vec<f64> {
        ok.iter().filter_map(|r| f(r)).collect()
    };
    let mut metrics: BTreeMap<&'static str, Option<MindieStat>> = BTreeMap::new();
    let ftt = per(&|r| r.first_token_ms);
    metrics.insert("FirstTokenTime", mindie(&ftt, &ftt));
    let pooled: Vec<f64> = ok
        .iter()
        .flat_map(|r| r.decode_ms.iter().copied())
        .collect();
    let means = per(&|r| {
        (!r.decode_ms.is_empty())
            .then(|| r.decode_ms.iter().sum::<f64>() / r.decode_ms.len() as f64)
    });
    metrics.insert("DecodeTime", mindie(&pooled, &means));
    let last = per(&|r| r.decode_ms.last().copied());
    metrics.insert("LastDecodeTime", mindie(&last, &last));
    let maxd = per(&|r| r.decode_ms.iter().copied().reduce(f64::max));
    metrics.insert("MaxDecodeTime", mindie(&maxd, &maxd));
    let gen_t = per(&|r| Some(r.generate_ms));
    metrics.insert("GenerateTime", mindie(&gen_t, &gen_t));
    let tpot = per(&|r| r.tpot_ms());
    metrics.insert("TPOT", mindie(&tpot, &tpot));
    let inp = per(&|r| r.input_tokens.map(|x| x as f64));
    metrics.insert("InputTokens", mindie(&inp, &inp));
    let gen_tok = per(&|r| r.generated_tokens.map(|x| x as f64));
    metrics.insert("GeneratedTokens", mindie(&gen_tok, &gen_tok));
    let speed = per(&|r| r.speed());
    metrics.insert("GeneratedTokenSpeed", mindie(&speed, &speed));
    let chars = per(&|r| Some(r.generated_characters as f64));
    metrics.insert("GeneratedCharacters", mindie(&chars, &chars));
    let total_tokens: f64 = gen_tok.iter().sum();
    let total_chars: f64 = chars.iter().sum();
    let mut token_sources = BTreeMap::new();
    for r in &ok {
        *token_sources.entry(r.token_source).or_insert(0) += 1;
    }
    let elapsed = elapsed.max(1e-9);
    let gs = (gen_tok.len() == ok.len() && !ok.is_empty()).then(|| total_tokens / elapsed);
    let lpct = {
        let (f, i): (f64, f64) = ok
            .iter()
            .filter_map(|r| Some((r.first_token_ms?, r.input_tokens? as f64)))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        (i > 0.0).then(|| f / i)
    };
    let goodput = (!slo.is_empty()).then(|| {
        let good = ok
            .iter()
            .filter(|r| {
                slo.iter().all(|(k, lim)| {
                    let v = match k.as_str() {
                        "ttft" => r.first_token_ms,
                        "tpot" => r.tpot_ms(),
                        _ => Some(r.generate_ms),
                    };
                    v.is_some_and(|v| v <= *lim)
                })
            })
            .count();
        good as f64 / elapsed
    });
    LlmRun {
        current_time: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        concurrency,
        request_rate: rate,
        distribution: arrival,
        time_elapsed_s: elapsed,
        total,
        returned,
        failed: records.len() - ok.len() + (total - records.len()),
        failures,
        throughput: ok.len() as f64 / elapsed,
        generate_speed: gs,
        generate_speed_per_client: gs.map(|g| g / concurrency as f64),
        lpct,
        goodput,
        token_sources,
        metrics,
        characters_per_token: (total_tokens > 0.0).then(|| total_chars / total_tokens),
        complete,
        records,
    }
}

/// `acceval llm`.
/// `acceval llm`.
pub fn run(args: LlmArgs) -> anyhow::Result<crate::Outcome> {
    let stop = crate::util::signal::stop_flag();
    let report = measure(&args, &stop)?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        } else {
            crate::report::llm::write_text(&mut out, &report)?;
        }
    }
    if let Some(dir) = &args.out {
        let files = write_files(dir, &report)?;
        eprintln!(
            "Written: {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let bad = report.runs.iter().any(|r| r.failed > 0 || !r.complete) || report.runs.is_empty();
    Ok(if bad {
        crate::Outcome::NotCompliant
    } else {
        crate::Outcome::Ok
    })
}

/// Runs the benchmark `args` describes (also `grade`'s LLM stage).
pub fn measure(args: &LlmArgs, stop: &Arc<AtomicBool>) -> anyhow::Result<LlmReport> {
    if !(1..=1000).contains(&args.concurrency) {
        bail!("--concurrency {} must lie in [1, 1000]", args.concurrency);
    }
    if args.warmup > 1000 {
        bail!("--warmup {} must lie in [0, 1000]", args.warmup);
    }
    if args
        .request_rate
        .iter()
        .any(|r| !(*r > 0.0 && r.is_finite()))
    {
        bail!("--request-rate takes positive rates, e.g. 2,4,6,8");
    }
    let sampling: Map<String, Value> = match &args.sampling_params {
        None => Map::new(),
        Some(s) => serde_json::from_str::<Value>(s)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--sampling-params must be a JSON object, e.g. '{{\"temperature\": 0.0}}'"
                )
            })?,
    };
    let slo = args
        .slo
        .as_deref()
        .map(parse_slo)
        .transpose()?
        .unwrap_or_default();
    let (prompts, source) = match args.dataset.as_str() {
        "synthetic" => {
            let cfg = args.synthetic_config.as_ref().ok_or_else(|| anyhow::anyhow!("--dataset synthetic needs --synthetic-config FILE (MindIE's synthetic_config.json format)"))?;
            (
                dataset::synthetic(cfg, args.seed)?,
                format!("synthetic: {}", cfg.display()),
            )
        }
        path => (
            dataset::jsonl(std::path::Path::new(path), args.max_output_len)?,
            path.to_string(),
        ),
    };
    let total = args.request_count.unwrap_or(prompts.len());
    if total == 0 {
        bail!("--request-count must be at least 1");
    }
    let base = args.url.trim_end_matches('/').to_string();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("--url '{}' must start with http:// or https://", args.url);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let timeout = Duration::from_secs_f64(args.timeout);
    let tls = client::Tls {
        cacert: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        crl: args.crl.clone(),
    };
    let client = {
        let _g = rt.enter();
        client::build(&tls, args.max_connections, timeout)?
    };
    let tokenizer = match &args.tokenizer {
        None => None,
        Some(p) => Some(tokenizers::Tokenizer::from_file(p).map_err(|e| {
            anyhow::anyhow!(
                "--tokenizer '{}': not a Hugging Face tokenizer.json: {e}",
                p.display()
            )
        })?),
    };
    let ctx = Arc::new(Ctx {
        client,
        base: base.clone(),
        api: args.api,
        model: args.model.clone(),
        stream: !args.no_stream,
        sampling,
        timeout,
        tokenizer,
        stop: Arc::clone(stop),
    });
    let prompts = Arc::new(prompts);
    let runs = rt.block_on(async {
        if args.warmup > 0 {
            eprintln!(
                "acceval llm: {} warm-up requests (not measured)",
                args.warmup
            );
            let w = closed(
                &ctx,
                &prompts,
                args.warmup,
                args.concurrency,
                stop,
                Instant::now(),
            )
            .await;
            let bad = w.iter().filter(|r| !r.ok).count();
            if bad > 0 {
                eprintln!(
                    "acceval llm: warning: {bad} of {} warm-up requests failed: {}",
                    w.len(),
                    w.iter().find_map(|r| r.error.clone()).unwrap_or_default()
                );
            }
        }
        let mut runs = Vec::new();
        let rates: Vec<Option<f64>> = if args.request_rate.is_empty() {
            vec![None]
        } else {
            args.request_rate.iter().map(|&r| Some(r)).collect()
        };
        for rate in rates {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let t = Instant::now();
            let recs = match rate {
                None => closed(&ctx, &prompts, total, args.concurrency, stop, t).await,
                Some(r) => {
                    open(
                        &ctx,
                        &prompts,
                        total,
                        args.concurrency,
                        r,
                        args.distribution,
                        args.seed,
                        stop,
                        t,
                    )
                    .await
                }
            };
            let run = summarise(
                recs,
                args.concurrency,
                rate,
                rate.map(|_| args.distribution),
                t.elapsed().as_secs_f64(),
                total,
                &slo,
                !stop.load(Ordering::Relaxed),
            );
            eprintln!(
                "acceval llm: {}: {} of {} returned, {} failed, {:.2} req/s",
                rate.map(|r| format!("rate {r} req/s"))
                    .unwrap_or_else(|| format!("concurrency {}", args.concurrency)),
                run.returned,
                run.total,
                run.failed,
                run.throughput
            );
            runs.push(run);
        }
        runs
    });
    Ok(LlmReport {
        schema: "acceval.llm/1",
        url: base,
        model: args.model.clone(),
        api: args.api,
        stream: !args.no_stream,
        data_source: source,
        warmup: args.warmup,
        slo,
        runs,
        definitions: DEFINITIONS.iter().copied().collect(),
    })
}

/// result_perf.csv, result_common.csv (MindIE's), requests.csv, report.json; one folder per
/// run when there are several (`rate-2`, `rate-4`, ...).
pub fn write_files(dir: &std::path::Path, r: &LlmReport) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let mut written = Vec::new();
    let mut put = |p: PathBuf, bytes: &[u8]| -> anyhow::Result<()> {
        crate::util::fs::write_atomic(&p, bytes)?;
        written.push(p);
        Ok(())
    };
    put(dir.join("report.json"), &serde_json::to_vec_pretty(r)?)?;
    put(
        dir.join("result_common.csv"),
        crate::report::llm::common_csv(r).as_bytes(),
    )?;
    for (k, run) in r.runs.iter().enumerate() {
        let sub = if r.runs.len() == 1 {
            dir.to_path_buf()
        } else {
            dir.join(match run.request_rate {
                Some(rate) => format!("rate-{rate}"),
                None => format!("run-{k}"),
            })
        };
        std::fs::create_dir_all(&sub)?;
        put(
            sub.join("result_perf.csv"),
            crate::report::llm::perf_csv(run).as_bytes(),
        )?;
        put(
            sub.join("requests.csv"),
            crate::report::llm::requests_csv(run).as_bytes(),
        )?;
    }
    Ok(written)
}
