//! `acceval llm` against a streaming test server with known delays, so each metric has an
//! exact expected value: the first token after FIRST ms, then one every GAP ms. Each API's
//! wire format (OpenAI completions and chat, TGI, Triton generate), MindIE's statistics and
//! files, request rates, and failures (an error event mid-stream, a stream cut without its
//! end marker, a connection dropped mid-stream, an HTTP error, a line or an error body over
//! the client's caps); MindIE's sample synthetic configuration when no dataset is given; and
//! flags out of range rejected with their name (issue 16).

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use acceval::report::schema::llm::LlmReport;
use serde_json::{Value, json};

mod common;
use common::sse_server::{FAST_GAP_MS, FIRST_MS, GAP_MS, HUGE_BYTES, server};

fn synthetic(dir: &Path, input: u64, output: u64, count: u64) -> String {
    let p = dir.join("synthetic.json");
    std::fs::write(
        &p,
        json!({"Input":{"Method":"uniform","Params":{"MinValue":input,"MaxValue":input}},
               "Output":{"Method":"uniform","Params":{"MinValue":output,"MaxValue":output}},
               "RequestCount":count})
        .to_string(),
    )
    .unwrap();
    p.display().to_string()
}

fn llm(args: &[&str]) -> (i32, Value, String) {
    let (code, out, err) =
        common::acceval(&[&["llm", "--json", "--warmup-requests", "0"], args].concat());
    let v = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("no JSON ({e}); exit {code}\n{out}\n{err}"));
    (code, v, err)
}

fn stat(run: &Value, m: &str, k: &str) -> f64 {
    run["metrics"][m][k]
        .as_f64()
        .unwrap_or_else(|| panic!("{m}.{k} missing: {}", run["metrics"][m]))
}

#[test]
fn every_api_gives_the_timings_the_server_was_built_with() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 3, 5, 6);
    for (api, source) in [
        ("openai", "usage"),
        ("openai-chat", "usage"),
        ("tgi", "details"),
        ("triton", "events"),
        ("vllm", "usage"),
    ] {
        let out = dir.path().join(api);
        let (code, v, err) = llm(&[
            "--url",
            &url,
            "--model",
            "m",
            "--api",
            api,
            "--synthetic-config",
            &cfg,
            "--concurrency",
            "2",
            "--slo",
            "ttft<=500ms,tpot<=100ms",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(
            code, 0,
            "{api}: {err} {}",
            v["runs"][0]["records"][0]["error"]
        );
        // The JSON matches its schema and reads back into the typed report.
        common::assert_schema_valid("llm.schema.json", &v);
        let typed: LlmReport = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(typed.runs[0].records.len(), 6);
        let run = &v["runs"][0];
        assert_eq!(run["total"], 6, "{api}");
        assert_eq!(run["returned"], 6, "{api}");
        assert_eq!(run["failed"], 0, "{api}: {}", run["failures"]);
        assert_eq!(
            run["token_sources"][source], 6,
            "{api}: {}",
            run["token_sources"]
        );
        assert_eq!(stat(run, "GeneratedTokens", "average"), 5.0, "{api}");
        // Every request's first token after FIRST_MS, then GAP_MS apart.
        let ftt = stat(run, "FirstTokenTime", "average");
        assert!(
            (FIRST_MS as f64 - 1.0..FIRST_MS as f64 + 15.0).contains(&ftt),
            "{api}: FirstTokenTime {ftt}"
        );
        assert_eq!(
            stat(run, "DecodeTime", "N"),
            24.0,
            "{api}: 4 gaps x 6 requests"
        );
        let dt = stat(run, "DecodeTime", "average");
        assert!(
            (GAP_MS as f64 - 1.0..GAP_MS as f64 + 8.0).contains(&dt),
            "{api}: DecodeTime {dt}"
        );
        let tpot = stat(run, "TPOT", "average");
        assert!(
            (GAP_MS as f64 - 1.0..GAP_MS as f64 + 8.0).contains(&tpot),
            "{api}: TPOT {tpot}"
        );
        let gt = stat(run, "GenerateTime", "min");
        assert!(
            gt >= (FIRST_MS + 4 * GAP_MS) as f64 - 1.0,
            "{api}: GenerateTime {gt}"
        );
        assert_eq!(
            stat(run, "GeneratedCharacters", "average"),
            20.0,
            "{api}: 5 x ' tok'"
        );
        if source == "usage" {
            assert_eq!(stat(run, "InputTokens", "average"), 3.0);
            let lpct = run["lpct"].as_f64().unwrap();
            assert!((lpct - ftt / 3.0).abs() < 1e-9, "{api}: lpct {lpct}");
        }
        let thr = run["throughput"].as_f64().unwrap();
        let elapsed = run["time_elapsed_s"].as_f64().unwrap();
        assert!((thr - 6.0 / elapsed).abs() < 1e-9);
        assert_eq!(
            run["goodput"].as_f64().unwrap(),
            thr,
            "{api}: every request meets the bounds"
        );
        let perf = std::fs::read_to_string(out.join("result_perf.csv")).unwrap();
        assert!(perf.starts_with("Metric,average,max,min,P75,P90,SLO_P90,P99,N,unit\n"));
        assert_eq!(perf.lines().count(), 18); // a header and MindIE's 17 metrics
        let common = std::fs::read_to_string(out.join("result_common.csv")).unwrap();
        assert!(
            common.starts_with(
                "CurrentTime,TimeElapsed,DataSource,Failed,Returned,Total,Concurrency"
            )
        );
        assert_eq!(
            std::fs::read_to_string(out.join("requests.csv"))
                .unwrap()
                .lines()
                .count(),
            7
        );
    }
}

#[test]
fn request_rates_run_once_each() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 2, 3, 8);
    let out = dir.path().join("rates");
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--synthetic-config",
        &cfg,
        "--concurrency",
        "8",
        "--request-rate",
        "20,40",
        "--distribution",
        "uniform",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, rate) in runs.iter().zip([20.0, 40.0]) {
        assert_eq!(run["request_rate"], rate);
        assert_eq!(run["failed"], 0);
        // Uniform arrivals: 8 requests over 7 gaps of 1/rate, the last taking ~110 ms.
        let e = run["time_elapsed_s"].as_f64().unwrap();
        assert!(e >= 7.0 / rate, "{rate}: {e}");
        let sent: Vec<f64> = run["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["sent_s"].as_f64().unwrap())
            .collect();
        let last = sent.iter().copied().fold(0.0, f64::max);
        assert!(
            (last - 7.0 / rate).abs() < 0.02,
            "{rate}: last request sent at {last}"
        );
    }
    assert!(out.join("result_perf_rate-20.csv").is_file());
    assert!(out.join("requests_rate-40.csv").is_file());
    // The terminal view: MindIE's two tables.
    let (code, text, err) = common::acceval(&[
        "llm",
        "--url",
        &url,
        "--model",
        "m",
        "--synthetic-config",
        &cfg,
        "--warmup-requests",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "FirstTokenTime",
        "SLO_P90",
        "DecodeTime",
        "GenerateSpeed (token/s)",
        "lpct (ms)",
        "n/a: no SLO given",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn failures_are_counted_with_their_reason() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 2, 5, 2);
    for (model, kind, text) in [
        ("error-mid", "stream_error", "overloaded mid-stream"),
        ("cut", "cut_stream", "without [DONE]"),
        ("drop", "connection_closed", "stream broke"),
        ("http-500", "http_500", "model overloaded"),
    ] {
        let (code, v, err) = llm(&["--url", &url, "--model", model, "--synthetic-config", &cfg]);
        assert_eq!(code, 1, "{model}: {err}");
        let run = &v["runs"][0];
        assert_eq!(run["failed"], 2, "{model}");
        assert_eq!(run["failures"][kind], 2, "{model}: {}", run["failures"]);
        let e = run["records"][0]["error"].as_str().unwrap();
        assert!(e.contains(text), "{model}: {e}");
    }
    // Nobody listening.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (code, v, _) = llm(&[
        "--url",
        &dead,
        "--model",
        "m",
        "--synthetic-config",
        &cfg,
        "--timeout",
        "5",
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        v["runs"][0]["failures"]["connection_failed"], 2,
        "{}",
        v["runs"][0]
    );
    // A bad synthetic config names the key and the range.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"Input":{"Method":"zipf","Params":{"Alpha":11,"MinValue":1,"MaxValue":9}},"Output":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":2}},"RequestCount":3}"#).unwrap();
    let (code, _, err) = common::acceval(&[
        "llm",
        "--url",
        &url,
        "--model",
        "m",
        "--synthetic-config",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Input.Params.Alpha = 11: allowed range (1.0, 10.0]"),
        "{err}"
    );
}

/// A word-level tokenizer.json (whitespace split) for token counting without `usage`.
fn tokenizer(dir: &Path) -> String {
    let p = dir.join("tokenizer.json");
    std::fs::write(
        &p,
        json!({"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
               "pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
               "model":{"type":"WordLevel","vocab":{"tok":0,"A":1,"[UNK]":2},"unk_token":"[UNK]"}})
        .to_string(),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn token_counts_come_from_a_tokenizer_and_non_streaming_works() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 3, 5, 2);
    // Triton's stream has no usage: the tokenizer counts the text (5 x " tok") and the prompt.
    let tok = tokenizer(dir.path());
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--api",
        "triton",
        "--synthetic-config",
        &cfg,
        "--tokenizer",
        &tok,
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    assert_eq!(
        run["token_sources"]["tokenizer"], 2,
        "{}",
        run["token_sources"]
    );
    assert_eq!(stat(run, "GeneratedTokens", "average"), 5.0);
    assert_eq!(stat(run, "InputTokens", "average"), 3.0);
    assert_eq!(run["input_token_sources"]["tokenizer"], 2, "{run}");
    // MindIE's client-side Tokenizer and Detokenizer rows: one timing per request.
    for m in ["Tokenizer", "Detokenizer"] {
        assert_eq!(stat(run, m, "N"), 2.0, "{m}");
        let (lo, hi) = (stat(run, m, "min"), stat(run, m, "max"));
        assert!(lo > 0.0 && hi < 1000.0, "{m}: {lo}..{hi} ms");
    }
    // lpct is over counted input tokens: Σ FirstTokenTime / Σ InputTokens.
    let ftt: f64 = run["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["first_token_ms"].as_f64().unwrap())
        .sum();
    let lpct = run["lpct"].as_f64().unwrap();
    assert!((lpct - ftt / 6.0).abs() < 1e-9, "lpct {lpct}, Σ ftt {ftt}");
    // Without a tokenizer the Triton stream has no input count: only the requested length,
    // which is said, and lpct is n/a.
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--api",
        "triton",
        "--synthetic-config",
        &cfg,
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    assert_eq!(run["input_token_sources"]["requested"], 2, "{run}");
    assert!(run["lpct"].is_null(), "{}", run["lpct"]);
    assert!(run["metrics"]["Tokenizer"].is_null());
    let (code, out, _) = common::acceval(&[
        "llm",
        "--url",
        &url,
        "--model",
        "m",
        "--api",
        "triton",
        "--synthetic-config",
        &cfg,
        "--warmup-requests",
        "0",
    ]);
    assert_eq!(code, 0);
    for want in [
        "lpct (ms)",
        "n/a: no counted input tokens",
        "requested: 2 requests",
        "n/a: no tokenizer given",
        "n/a: the server does not report it",
        "n/a: engine mode only",
    ] {
        assert!(out.contains(want), "no '{want}' in\n{out}");
    }
    // A file that is not a tokenizer is an error naming it.
    let (code, _, err) = common::acceval(&[
        "llm",
        "--url",
        &url,
        "--model",
        "m",
        "--synthetic-config",
        &cfg,
        "--tokenizer",
        &cfg,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("not a Hugging Face tokenizer.json"), "{err}");
    // Not streaming: one response; FirstTokenTime is the whole response time.
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--synthetic-config",
        &cfg,
        "--no-stream",
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    assert_eq!(stat(run, "GeneratedTokens", "average"), 5.0);
    let (f, g) = (
        stat(run, "FirstTokenTime", "average"),
        stat(run, "GenerateTime", "average"),
    );
    assert!(
        f >= (FIRST_MS + 4 * GAP_MS) as f64 - 1.0 && (g - f).abs() < 5.0,
        "first {f}, generate {g}"
    );
    assert!(run["metrics"]["DecodeTime"].is_null());
}

/// Ctrl-C while requests are in flight: they are recorded as interrupted, the files are
/// written, the run is marked incomplete, and the exit code is 1, at once.
#[test]
fn ctrl_c_writes_what_was_measured() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 2, 5, 4);
    let out = dir.path().join("out");
    let child = common::command()
        .args([
            "llm",
            "--json",
            "--warmup-requests",
            "0",
            "--url",
            &url,
            "--model",
            "slow",
            "--synthetic-config",
            &cfg,
        ])
        .args(["--concurrency", "2", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let t = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?} to stop",
        t.elapsed()
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["complete"], false);
    assert_eq!(run["failures"]["interrupted"], 2, "{}", run["failures"]);
    assert_eq!(run["returned"], 0, "an abandoned request did not return");
    let saved: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(saved["runs"][0]["complete"], false);
}

/// `acceval llm` with no dataset flag runs MindIE's sample synthetic_config.json (input
/// uniform 1..200, output gaussian mean 100 var 200 clipped to 1..100, 100 requests), says
/// so on stderr and records it in the report, as MindIE does.
#[test]
fn without_dataset_flags_it_runs_mindies_sample_config() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("llm.json");
    let csv = dir.path().join("common.csv");
    let (code, text, err) = common::acceval(&[
        "llm",
        "--url",
        &url,
        "--model",
        "fast",
        "--concurrency",
        "25",
        "--warmup-requests",
        "2",
        "--export-json",
        json.to_str().unwrap(),
        "--export-csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("FirstTokenTime"), "{text}");
    assert!(
        err.contains("MindIE's sample synthetic_config.json")
            && err.contains(r#""RequestCount":100"#),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let c = &v["synthetic_config"];
    assert_eq!(
        c["Input"],
        json!({"Method":"uniform","Params":{"MinValue":1,"MaxValue":200}})
    );
    assert_eq!(c["Output"]["Method"], "gaussian");
    assert_eq!(c["RequestCount"], 100);
    let run = &v["runs"][0];
    assert_eq!(
        (run["total"].as_u64(), run["failed"].as_u64()),
        (Some(100), Some(0))
    );
    assert!(stat(run, "GeneratedTokens", "max") <= 100.0);
    let input = stat(run, "InputTokens", "average");
    assert!(
        (50.0..150.0).contains(&input),
        "InputTokens average {input}"
    );
    let dt = stat(run, "DecodeTime", "P75");
    assert!(dt < FAST_GAP_MS as f64 + 10.0, "DecodeTime P75 {dt}");
    let common = std::fs::read_to_string(&csv).unwrap();
    assert!(
        common.starts_with("CurrentTime,TimeElapsed,DataSource,"),
        "{common}"
    );
    assert!(common.contains("the default configuration"), "{common}");
}

/// Runs `acceval ARGS` with stdout to a file; returns (exit code, stdout, its peak RSS in KiB).
// The child is reaped by wait4 (for its own rusage), not by Child::wait.
#[allow(clippy::zombie_processes)]
fn run_measuring_rss(args: &[&str]) -> (i32, String, i64) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stdout");
    let child = common::command()
        .args(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (
        code,
        std::fs::read_to_string(&out).unwrap(),
        usage.ru_maxrss,
    )
}

/// Issue 16: a server that sends a 256 MiB SSE line, or a 256 MiB error body, fails the
/// request with the reason, and the client does not buffer it (before, a 300 MB line took it
/// to 631 MB RSS).
#[test]
fn what_the_client_buffers_is_capped() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 2, 5, 2);
    let base = [
        "llm",
        "--json",
        "--warmup-requests",
        "0",
        "--url",
        &url,
        "--synthetic-config",
        &cfg,
    ];
    let (code, out, rss) = run_measuring_rss(&[&base[..], &["--model", "huge-line"]].concat());
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let run = &v["runs"][0];
    assert_eq!(
        run["failures"]["response_too_large"], 2,
        "{}",
        run["failures"]
    );
    let e = run["records"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("over 1048576 bytes") && e.contains("max_event_bytes"),
        "{e}"
    );
    assert!(
        rss < (HUGE_BYTES / 1024 / 2) as i64,
        "peak RSS {rss} KiB against a {HUGE_BYTES}-byte line"
    );
    // A smaller cap, and the same line.
    let (code, out, _) = run_measuring_rss(
        &[
            &base[..],
            &["--model", "huge-line", "--max-event-bytes", "4096"],
        ]
        .concat(),
    );
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let e = v["runs"][0]["records"][0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("response_too_large: ") && e.contains("4096"),
        "{e}"
    );
    // An error body: the status is the failure, the message its start, the rest unread.
    let (code, out, rss) = run_measuring_rss(&[&base[..], &["--model", "huge-error"]].concat());
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["failures"]["http_500"], 2, "{}", run["failures"]);
    assert_eq!(run["returned"], 2);
    let e = run["records"][0]["error"].as_str().unwrap();
    assert!(e.contains("not read further"), "{e}");
    assert!(
        e.len() < 1000,
        "the message holds the start of the body only"
    );
    assert!(rss < (HUGE_BYTES / 1024 / 2) as i64, "peak RSS {rss} KiB");
}

/// Issue 16: durations, counts, rates and sizes out of range (negative, NaN, infinite,
/// absurd) are rejected before anything runs, with one message naming the flag, the value
/// and the range; none panics.
#[test]
fn bad_numbers_are_rejected_naming_the_flag() {
    let cases = [
        ("--timeout=-1", "--timeout -1: seconds in (0, 86400]"),
        ("--timeout=inf", "--timeout inf: seconds in (0, 86400]"),
        ("--timeout=NaN", "--timeout NaN: seconds in (0, 86400]"),
        ("--timeout=1e300", "--timeout 1e300: seconds in (0, 86400]"),
        ("--timeout=0", "--timeout 0: seconds in (0, 86400]"),
        (
            "--concurrency=0",
            "--concurrency 0: requests in flight in [1, 1000]",
        ),
        (
            "--warmup-requests=1001",
            "--warmup-requests 1001: requests in [0, 1000]",
        ),
        ("--request-rate=0", "--request-rate 0: req/s in (0, 10000]"),
        ("--request-rate=NaN", "--request-rate NaN"),
        (
            "--request-count=0",
            "--request-count 0: requests in [1, 1048576]",
        ),
        (
            "--max-event-bytes=10",
            "--max-event-bytes 10: bytes in [1024, 4294967296]",
        ),
        ("--max-error-bytes=0", "--max-error-bytes 0"),
        ("--max-connections=0", "--max-connections 0"),
    ];
    for (flag, want) in cases {
        let (code, _, err) =
            common::acceval(&["llm", "--url", "http://127.0.0.1:9", "--model", "m", flag]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(err.contains(want), "{flag}: {err}");
        assert!(!err.contains("panicked"), "{flag}: {err}");
    }
}

/// A server that reports MindIE Server's batch and queue figures in its stream: they land in
/// the PrefillBatchsize, DecoderBatchsize and QueueWaitTime rows with the values sent.
#[test]
fn server_side_batch_and_queue_figures_are_reported() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic(dir.path(), 3, 5, 3);
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "mindie-stats",
        "--api",
        "triton",
        "--synthetic-config",
        &cfg,
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    assert_eq!(stat(run, "PrefillBatchsize", "N"), 3.0);
    assert_eq!(stat(run, "PrefillBatchsize", "max"), 2.0);
    assert_eq!(stat(run, "PrefillBatchsize", "min"), 2.0);
    assert_eq!(stat(run, "DecoderBatchsize", "N"), 12.0); // 3 requests x 4 later tokens
    assert_eq!(stat(run, "DecoderBatchsize", "average"), 4.0);
    assert_eq!(stat(run, "QueueWaitTime", "N"), 3.0);
    assert_eq!(stat(run, "QueueWaitTime", "average"), 250.0);
    // MindIE's OpenAI endpoints send one value per iteration in the final usage instead.
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "mindie-stats",
        "--api",
        "openai-chat",
        "--synthetic-config",
        &cfg,
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    assert_eq!(stat(run, "PrefillBatchsize", "N"), 3.0);
    assert_eq!(stat(run, "PrefillBatchsize", "max"), 2.0);
    assert_eq!(stat(run, "DecoderBatchsize", "N"), 12.0);
    assert_eq!(stat(run, "DecoderBatchsize", "average"), 4.0);
    assert_eq!(stat(run, "QueueWaitTime", "N"), 15.0); // 3 requests x 5 iterations
    assert_eq!(stat(run, "QueueWaitTime", "max"), 250.0);
    assert_eq!(stat(run, "QueueWaitTime", "min"), 10.0);
    // The same server without the fields: the rows are there, without samples.
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--api",
        "triton",
        "--synthetic-config",
        &cfg,
    ]);
    assert_eq!(code, 0, "{err}");
    for m in ["PrefillBatchsize", "DecoderBatchsize", "QueueWaitTime"] {
        assert!(v["runs"][0]["metrics"][m].is_null(), "{m}");
    }
}

fn fixture(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/llm")
        .join(p)
        .display()
        .to_string()
}

/// Accuracy mode on the GSM8K sample: a server whose answers are right for known items
/// (in the forms models write them: `#### N`, "The answer is N", "$1,195.") and wrong for
/// the others gets exactly the share it earned, and each record says what was read.
#[test]
fn gsm8k_accuracy_scores_a_servers_known_answers_exactly() {
    let path = fixture("gsm8k_sample.jsonl");
    let items: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 6);
    // Right: items 0 (####), 2 ("$1,195."), 5 ("The answer is 42"); wrong: 1, 3, 4.
    let said = [
        "12 + 7 = 19 transformers.\n#### 19",
        "45 * 6 = 260.\n#### 260",
        "1,500 - 305 leaves $1,195.",
        "Each gets 96 / 8 = 11.",
        "I cannot tell.",
        "3 rows of 14, so the answer is 42 turbines.",
    ];
    let replies = items
        .iter()
        .zip(said)
        .map(|(i, a)| (i["question"].as_str().unwrap().to_string(), a.to_string()))
        .collect();
    let url = common::sse_server::oracle_server(replies);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--dataset-type",
        "gsm8k",
        "--dataset",
        &path,
        "--test-accuracy",
        "--concurrency",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    let a = &run["accuracy"];
    assert_eq!(
        (a["correct"].as_u64(), a["n"].as_u64()),
        (Some(3), Some(6)),
        "{a}"
    );
    assert_eq!(a["accuracy"].as_f64(), Some(0.5));
    let mut got: Vec<(u64, String, bool)> = run["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["answer"].as_str().unwrap_or("-").to_string(),
                r["correct"].as_bool().unwrap(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(u64, String, bool)> = [
        ("19", true),
        ("260", false),
        ("1195", true),
        ("11", false),
        ("-", false),
        ("42", true),
    ]
    .iter()
    .enumerate()
    .map(|(k, (a, c))| (k as u64, a.to_string(), *c))
    .collect();
    assert_eq!(got, want);
    let common = std::fs::read_to_string(out.join("result_common.csv")).unwrap();
    let mut rows = common.lines();
    let head: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "accuracy").unwrap();
    let row = rows.next().unwrap();
    assert_eq!(row.rsplit(',').next(), Some("0.5"), "{row}");
    assert_eq!(col, head.len() - 1);
    // Accuracy mode needs answers: a JSONL prompt file or synthetic data is refused.
    let (code, _, err) =
        common::acceval(&["llm", "--url", &url, "--model", "m", "--test-accuracy"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--test-accuracy") && err.contains("GSM8K and MMLU datasets only"),
        "{err}"
    );
}

/// Accuracy mode on the MMLU sample: 5-shot prompts from the dev split (the server sees the
/// five dev questions with their answers before each test question), letters scored.
#[test]
fn mmlu_accuracy_builds_five_shot_prompts_and_scores_letters() {
    let dir = fixture("mmlu_sample");
    // The test questions in subject order (arithmetic, then electric_power), with what the
    // server says: right for 4 of 6.
    let key = [
        ("What is 6 + 6?", " C", true),
        ("What is 9 - 3?", " B", false),
        ("What is the unit of electric charge?", " A", true),
        (
            "Which component stores energy in an electric field?",
            " (B) a capacitor",
            true,
        ),
        (
            "A 2 kW heater runs for 3 hours. How much energy does it use?",
            " D",
            false,
        ),
        (
            "Which protects a circuit by melting when the current is too high?",
            " The answer is D.",
            true,
        ),
    ];
    let mut replies: Vec<(String, String)> = key
        .iter()
        .map(|(q, a, _)| (q.to_string(), a.to_string()))
        .collect();
    // A dev question on its own (never asked alone) would answer "A": the server must see
    // the test question last for the key to hold.
    replies.push(("What is 2 + 3?".into(), " A".into()));
    let url = common::sse_server::oracle_server(replies);
    let (code, v, err) = llm(&[
        "--url",
        &url,
        "--model",
        "m",
        "--dataset-type",
        "mmlu",
        "--dataset",
        &dir,
        "--test-accuracy",
    ]);
    assert_eq!(code, 0, "{err}");
    let run = &v["runs"][0];
    assert_eq!(run["accuracy"]["correct"], 4, "{}", run["accuracy"]);
    assert_eq!(run["accuracy"]["n"], 6);
    let mut recs: Vec<&Value> = run["records"].as_array().unwrap().iter().collect();
    recs.sort_by_key(|r| r["index"].as_u64());
    for (r, (q, _, right)) in recs.iter().zip(key) {
        assert_eq!(r["correct"].as_bool(), Some(right), "{q}: {r}");
    }
    // A dev split with fewer than five rows is refused, naming the file.
    let tmp = tempfile::tempdir().unwrap();
    for d in ["dev", "test"] {
        std::fs::create_dir_all(tmp.path().join(d)).unwrap();
    }
    std::fs::write(tmp.path().join("test/x_test.csv"), "q,1,2,3,4,A\n").unwrap();
    std::fs::write(tmp.path().join("dev/x_dev.csv"), "q,1,2,3,4,A\n").unwrap();
    let (code, _, err) = common::acceval(&[
        "llm",
        "--url",
        &url,
        "--model",
        "m",
        "--dataset-type",
        "mmlu",
        "--dataset",
        tmp.path().to_str().unwrap(),
        "--test-accuracy",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("x_dev.csv") && err.contains("5-shot prompts need 5"),
        "{err}"
    );
}

/// A tiny random-weight llama GGUF (Q8_0 matrices, written with candle's own GGUF writer)
/// and a word-level tokenizer.json over its 64-token vocabulary ("A" is token 1).
fn tiny_gguf(dir: &Path) -> (String, String) {
    use candle_core::quantized::{GgmlDType, QTensor, gguf_file};
    use candle_core::{Device, Tensor};
    let (vocab, embd, heads, layers, ff, ctx) = (64usize, 32usize, 4u32, 2u32, 64usize, 256u32);
    let mut tensors: Vec<(String, QTensor)> = Vec::new();
    let mut add = |name: String, shape: &[usize], q: bool| {
        let t = Tensor::randn(0f32, 0.5, shape, &Device::Cpu).unwrap();
        let t = if q { t } else { t.abs().unwrap() };
        let dt = if q { GgmlDType::Q8_0 } else { GgmlDType::F32 };
        tensors.push((name, QTensor::quantize(&t, dt).unwrap()));
    };
    add("token_embd.weight".into(), &[vocab, embd], true);
    add("output_norm.weight".into(), &[embd], false);
    add("output.weight".into(), &[vocab, embd], true);
    for l in 0..layers {
        let p = format!("blk.{l}");
        for w in ["attn_q", "attn_k", "attn_v", "attn_output"] {
            add(format!("{p}.{w}.weight"), &[embd, embd], true);
        }
        add(format!("{p}.ffn_gate.weight"), &[ff, embd], true);
        add(format!("{p}.ffn_up.weight"), &[ff, embd], true);
        add(format!("{p}.ffn_down.weight"), &[embd, ff], true);
        add(format!("{p}.attn_norm.weight"), &[embd], false);
        add(format!("{p}.ffn_norm.weight"), &[embd], false);
    }
    use gguf_file::Value as V;
    let md = [
        ("general.architecture", V::String("llama".into())),
        ("llama.attention.head_count", V::U32(heads)),
        ("llama.attention.head_count_kv", V::U32(heads)),
        ("llama.block_count", V::U32(layers)),
        ("llama.embedding_length", V::U32(embd as u32)),
        ("llama.rope.dimension_count", V::U32(embd as u32 / heads)),
        ("llama.attention.layer_norm_rms_epsilon", V::F32(1e-5)),
        ("llama.context_length", V::U32(ctx)),
        ("llama.feed_forward_length", V::U32(ff as u32)),
        ("tokenizer.ggml.eos_token_id", V::U32(2)),
    ];
    let path = dir.join("tiny.gguf");
    let mut f = std::fs::File::create(&path).unwrap();
    let md_refs: Vec<(&str, &V)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    gguf_file::write(&mut f, &md_refs, &t_refs).unwrap();
    let mut words = serde_json::Map::new();
    words.insert("[UNK]".into(), json!(0));
    words.insert("A".into(), json!(1));
    for i in 2..vocab {
        words.insert(format!("w{i}"), json!(i));
    }
    let tok = dir.join("tokenizer.json");
    std::fs::write(
        &tok,
        json!({"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
               "pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
               "model":{"type":"WordLevel","vocab":words,"unk_token":"[UNK]"}})
        .to_string(),
    )
    .unwrap();
    (path.display().to_string(), tok.display().to_string())
}

/// Engine mode on a tiny GGUF: every engine-only row is there, and the figures add up:
/// each request's GenerateTime is its forwards and post-processing plus at most 10 % (or
/// 1 ms) of the loop's own bookkeeping; its FirstTokenTime plus its DecodeTimes reach its
/// last token.
#[test]
fn engine_mode_on_a_tiny_gguf_reports_every_engine_row_and_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let (gguf, tok) = tiny_gguf(dir.path());
    let cfg = synthetic(dir.path(), 6, 8, 4);
    let (code, v, err) = common::acceval(&[
        "llm",
        "--engine",
        "candle",
        "--model",
        &gguf,
        "--tokenizer",
        &tok,
        "--synthetic-config",
        &cfg,
        "--concurrency",
        "2",
        "--warmup-requests",
        "1",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&v).unwrap_or(Value::Null);
    assert_eq!(code, 0, "{err}");
    assert!(
        v["engine"].as_str().unwrap().contains("no batching")
            && v["engine"].as_str().unwrap().contains("on the CPU"),
        "{}",
        v["engine"]
    );
    let run = &v["runs"][0];
    assert_eq!(run["returned"], 4);
    assert_eq!(stat(run, "GeneratedTokens", "average"), 8.0);
    assert_eq!(stat(run, "InputTokens", "average"), 6.0);
    assert_eq!(run["token_sources"]["engine"], 4);
    assert_eq!(stat(run, "ForwardTime", "N"), 32.0);
    assert_eq!(stat(run, "PostProcessingTime", "N"), 32.0);
    assert_eq!(stat(run, "DecodeTime", "N"), 28.0);
    assert_eq!(stat(run, "Tokenizer", "N"), 4.0);
    assert_eq!(stat(run, "Detokenizer", "N"), 4.0);
    assert_eq!(stat(run, "PrefillBatchsize", "max"), 1.0);
    assert_eq!(stat(run, "DecoderBatchsize", "N"), 28.0);
    assert!(run["metrics"]["QueueWaitTime"].is_null());
    for r in run["records"].as_array().unwrap() {
        let sum = |k: &str| -> f64 {
            r[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .sum()
        };
        let stages = sum("forward_ms") + sum("post_processing_ms");
        let g = r["generate_ms"].as_f64().unwrap();
        assert!(
            stages <= g + 1e-6 && g - stages <= (0.1 * g).max(1.0),
            "GenerateTime {g} ms against Σ stages {stages} ms: {r}"
        );
        let last = r["first_token_ms"].as_f64().unwrap() + sum("decode_ms");
        assert!(
            last <= g + 1e-6 && g - last <= (0.1 * g).max(1.0),
            "last token at {last}, GenerateTime {g}"
        );
        let f0 =
            r["forward_ms"][0].as_f64().unwrap() + r["post_processing_ms"][0].as_f64().unwrap();
        assert!(r["first_token_ms"].as_f64().unwrap() >= f0 - 1e-6);
    }
    // Bad input: not a GGUF; no tokenizer.
    let (code, _, err) = common::acceval(&[
        "llm",
        "--engine",
        "candle",
        "--model",
        &cfg,
        "--tokenizer",
        &tok,
        "--synthetic-config",
        &cfg,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a GGUF file"), "{err}");
    let (code, _, err) = common::acceval(&["llm", "--engine", "candle", "--model", &gguf]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--tokenizer") && err.contains("engine mode"),
        "{err}"
    );
    // An engine that is not there: a GPU in a build without CUDA for candle, a misspelling.
    let gpu = [
        "llm",
        "--engine",
        "candle:cuda@1",
        "--model",
        &gguf,
        "--tokenizer",
        &tok,
    ];
    let (code, _, err) = common::acceval(&[&gpu[..], &["--synthetic-config", &cfg]].concat());
    if cfg!(feature = "candle-cuda") {
        assert!(code == 0 || err.contains("candle:cuda@1"), "{err}");
    } else {
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("--engine candle:cuda@1: acceval was not compiled with CUDA for candle")
                && err.contains("--features candle-cuda"),
            "{err}"
        );
    }
    let (code, _, err) = common::acceval(&["llm", "--engine", "cuda", "--model", &gguf]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'cuda'") && err.contains("candle:cuda@N"),
        "{err}"
    );
    // Open loop: 4 requests scheduled 0.1 ms apart on one worker queue behind each other; the
    // wait is QueueWaitTime, and FirstTokenTime and GenerateTime count from the schedule.
    let (code, out, err) = common::acceval(&[
        "llm",
        "--engine",
        "candle",
        "--model",
        &gguf,
        "--tokenizer",
        &tok,
        "--synthetic-config",
        &cfg,
        "--request-rate",
        "10000",
        "--distribution",
        "uniform",
        "--warmup-requests",
        "0",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["request_rate"], 10000.0);
    assert_eq!(stat(run, "QueueWaitTime", "N"), 4.0);
    let mut recs: Vec<&Value> = run["records"].as_array().unwrap().iter().collect();
    recs.sort_by_key(|r| r["index"].as_u64());
    let waits: Vec<f64> = recs
        .iter()
        .map(|r| r["queue_wait_us"][0].as_f64().unwrap())
        .collect();
    assert!(
        waits[3] > waits[2] && waits[2] > waits[1] && waits[1] > 0.0,
        "queue waits {waits:?} us"
    );
    for r in recs {
        let lag = r["send_lag_ms"].as_f64().unwrap();
        assert!((lag * 1e3 - r["queue_wait_us"][0].as_f64().unwrap()).abs() < 1e-6);
        let stages: f64 = ["forward_ms", "post_processing_ms"]
            .iter()
            .flat_map(|k| {
                r[*k]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
            })
            .sum();
        let g = r["generate_ms"].as_f64().unwrap() - lag;
        assert!(
            stages <= g + 1e-6 && g - stages <= (0.1 * g).max(1.0),
            "{g} against {stages}"
        );
    }
}

/// Static batching in engine mode: 4 requests of one prompt length in batches of 2 give the
/// same tokens as one at a time, every forward has batch dimension 2, the second batch waits
/// in the queue for the first, and each request's figures still add up.
#[test]
fn engine_static_batching_gives_the_same_tokens_and_reports_its_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (gguf, tok) = tiny_gguf(dir.path());
    let cfg = synthetic(dir.path(), 6, 8, 4);
    let run = |batch: &str| {
        let (code, v, err) = llm(&[
            "--engine",
            "candle",
            "--model",
            &gguf,
            "--tokenizer",
            &tok,
            "--synthetic-config",
            &cfg,
            "--concurrency",
            "4",
            "--max-batch-size",
            batch,
        ]);
        assert_eq!(code, 0, "{err}\n{}", v["runs"][0]["records"][0]["error"]);
        v
    };
    let (one, two) = (run("1"), run("2"));
    assert!(
        two["engine"].as_str().unwrap().contains("static batching"),
        "{}",
        two["engine"]
    );
    let (r1, r2) = (&one["runs"][0], &two["runs"][0]);
    let recs = |r: &Value| {
        let mut v: Vec<Value> = r["records"].as_array().unwrap().clone();
        v.sort_by_key(|x| x["index"].as_u64());
        v
    };
    let (a, b) = (recs(r1), recs(r2));
    assert_eq!(b.len(), 4);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x["generated_tokens"], 8);
        assert_eq!(y["generated_tokens"], 8);
        // The same greedy tokens, so the same text.
        assert_eq!(
            x["generated_characters"], y["generated_characters"],
            "request {}: unbatched {x}\nbatched {y}",
            x["index"]
        );
        assert_eq!(y["prefill_batch_size"], 2.0);
        let d = y["decode_batch_sizes"].as_array().unwrap();
        assert_eq!(d.len(), 7);
        assert!(d.iter().all(|v| v == 2.0), "{y}");
    }
    assert_eq!(stat(r2, "PrefillBatchsize", "min"), 2.0);
    assert_eq!(stat(r2, "DecoderBatchsize", "N"), 28.0);
    assert_eq!(stat(r2, "QueueWaitTime", "N"), 4.0);
    // Requests 2 and 3 waited for the batch of 0 and 1: at least its forwards.
    let busy: f64 = b[0]["forward_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    for y in &b[2..] {
        let wait = y["queue_wait_us"][0].as_f64().unwrap() / 1e3;
        assert!(
            wait >= busy,
            "waited {wait} ms, the first batch ran {busy} ms"
        );
        let lag = y["send_lag_ms"].as_f64().unwrap();
        assert!((lag - wait).abs() < 1e-6);
        let sum = |k: &str| -> f64 {
            y[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .sum()
        };
        let g = y["generate_ms"].as_f64().unwrap() - lag;
        let stages = sum("forward_ms") + sum("post_processing_ms");
        assert!(
            stages <= g + 1e-6 && g - stages <= (0.1 * g).max(1.0),
            "GenerateTime {g} ms (after the wait) against Σ stages {stages} ms"
        );
    }
    // Distinct prompts of one length (GSM8K items, accuracy mode: each stops at its own
    // end-of-sequence token, so members finish apart): batched in fours they give each
    // request the same tokens as one at a time (its token count, its characters and the
    // last number in its text, which the word-level vocabulary "wN" makes its last token).
    let items = dir.path().join("gsm8k.jsonl");
    let mut text = String::new();
    for k in 0..4 {
        let words: Vec<String> = (0..6).map(|i| format!("w{}", 3 + k * 13 + i * 2)).collect();
        text.push_str(&json!({"question": words.join(" "), "answer": "so #### 5"}).to_string());
        text.push('\n');
    }
    std::fs::write(&items, text).unwrap();
    let acc = |batch: &str| {
        let (code, v, err) = llm(&[
            "--engine",
            "candle",
            "--model",
            &gguf,
            "--tokenizer",
            &tok,
            "--dataset-type",
            "gsm8k",
            "--dataset",
            items.to_str().unwrap(),
            "--test-accuracy",
            "--max-output-len",
            "12",
            "--concurrency",
            "4",
            "--max-batch-size",
            batch,
        ]);
        assert!(code == 0 || code == 1, "{err}");
        recs(&v["runs"][0])
    };
    let (a, b) = (acc("1"), acc("4"));
    assert_eq!(b.len(), 4);
    let key = |r: &Value| {
        (
            r["generated_tokens"].clone(),
            r["generated_characters"].clone(),
            r["answer"].clone(),
        )
    };
    assert!(a.iter().all(|r| r["ok"] == true), "{a:?}");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(key(x), key(y), "unbatched {x}\nbatched {y}");
        assert_eq!(y["prefill_batch_size"], 4.0, "{y}");
    }
    // A server batches on its own: the flag is engine mode's.
    let (code, _, err) = common::acceval(&[
        "llm",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--max-batch-size",
        "2",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--max-batch-size") && err.contains("engine mode"),
        "{err}"
    );
}
