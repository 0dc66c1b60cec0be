//! A streaming LLM test server with known delays (tests/llm.rs, tests/grade.rs): the first
//! token after FIRST_MS, then one every GAP_MS, in the wire format of the API the request
//! path names (OpenAI completions or chat, TGI, Triton generate). The model name selects
//! faults: `error-mid`, `cut`, `drop`, `http-500`, `slow`; `huge-line` (an SSE line of
//! HUGE_BYTES that never ends), `huge-error` (HTTP 500 with a HUGE_BYTES body); `fast`
//! (FAST_FIRST_MS, then FAST_GAP_MS); and `mindie-stats` (Triton events carrying MindIE
//! Server's batch_size and queue_wait_time).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

pub const FIRST_MS: u64 = 80;
pub const GAP_MS: u64 = 15;
pub const FAST_FIRST_MS: u64 = 5;
pub const FAST_GAP_MS: u64 = 1;
/// The size of `huge-line`'s line and `huge-error`'s body: 256 MiB.
pub const HUGE_BYTES: usize = 256 << 20;

/// Writes `n` bytes of `x` in 64 KiB pieces (stops quietly when the client hangs up).
fn flood(s: &mut TcpStream, n: usize, chunked: bool) -> std::io::Result<()> {
    let piece = vec![b'x'; 64 << 10];
    let mut left = n;
    while left > 0 {
        let k = left.min(piece.len());
        if chunked {
            write!(s, "{k:x}\r\n")?;
        }
        s.write_all(&piece[..k])?;
        if chunked {
            write!(s, "\r\n")?;
        }
        left -= k;
    }
    s.flush()
}

fn chunk(s: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let b = format!("data: {data}\n\n");
    write!(s, "{:x}\r\n{b}\r\n", b.len())?;
    s.flush()
}

/// Reads one request: its path and its JSON body (Null when not JSON).
fn read_request(s: &TcpStream) -> std::io::Result<(String, Value)> {
    let mut r = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut len = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h)?;
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    Ok((path, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

fn handle(mut s: TcpStream) -> std::io::Result<()> {
    let (path, req) = read_request(&s)?;
    let model = req["model"].as_str().unwrap_or("");
    let prompt = req["prompt"]
        .as_str()
        .or(req["inputs"].as_str())
        .or(req["text_input"].as_str())
        .or(req["messages"][0]["content"].as_str())
        .unwrap_or("");
    let prompt_tokens = prompt.split_whitespace().count();
    let n = req["max_tokens"]
        .as_u64()
        .or(req["parameters"]["max_new_tokens"].as_u64())
        .unwrap_or(5);
    if model == "http-500" {
        let b = r#"{"error":{"message":"model overloaded","type":"server_error"}}"#;
        write!(
            s,
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
            b.len()
        )?;
        return Ok(());
    }
    if model == "huge-error" {
        write!(
            s,
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {HUGE_BYTES}\r\nConnection: close\r\n\r\n"
        )?;
        return flood(&mut s, HUGE_BYTES, false);
    }
    if req["stream"] == false {
        std::thread::sleep(Duration::from_millis(FIRST_MS + (n - 1) * GAP_MS));
        let b = json!({"choices":[{"index":0,"text":" tok".repeat(n as usize),"finish_reason":"length"}],
                       "usage":{"prompt_tokens":prompt_tokens,"completion_tokens":n}})
        .to_string();
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
            b.len()
        )?;
        return Ok(());
    }
    write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    s.flush()?;
    // A keep-alive comment, as sse-starlette servers send: ignored by the client.
    let ping = ": ping - 0\n\n";
    write!(s, "{:x}\r\n{ping}\r\n", ping.len())?;
    if model == "huge-line" {
        write!(s, "6\r\ndata: \r\n")?;
        return flood(&mut s, HUGE_BYTES, true);
    }
    let chat = path.starts_with("/v1/chat");
    if chat {
        chunk(
            &mut s,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}"#,
        )?;
    }
    for k in 0..n {
        let (first, gap) = match model {
            "slow" => (20_000, GAP_MS),
            "fast" => (FAST_FIRST_MS, FAST_GAP_MS),
            _ => (FIRST_MS, GAP_MS),
        };
        std::thread::sleep(Duration::from_millis(if k == 0 { first } else { gap }));
        if k == 2 && model == "error-mid" {
            chunk(&mut s, r#"{"error":{"message":"overloaded mid-stream"}}"#)?;
            break;
        }
        if k == 2 && model == "drop" {
            return Ok(()); // the socket closes without the chunked terminator
        }
        if k == 2 && model == "cut" {
            break;
        }
        let ev = if chat {
            json!({"choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]})
        } else if path.starts_with("/v1/") {
            json!({"choices":[{"index":0,"text":" tok","finish_reason":null}],"usage":null})
        } else if path.starts_with("/generate_stream") {
            let last = k + 1 == n;
            json!({"token":{"id":k,"text":" tok","special":false},"generated_text": if last { json!("tok tok") } else { Value::Null },
                   "details": if last { json!({"finish_reason":"length","generated_tokens":n}) } else { Value::Null }})
        } else if path.contains("/mindie-stats/") {
            // MindIE Server's scheduler figures where its Triton-style generate_stream puts
            // them (under `details`): prefill batch 2, decode batch 4, and a queue wait of
            // 250 us on the first token.
            let mut details = json!({"finish_reason": null, "generated_tokens": k + 1,
                                     "batch_size": if k == 0 { 2 } else { 4 }});
            if k == 0 {
                details["queue_wait_time"] = json!(250);
            }
            json!({"model_name":"m","model_version":"1","text_output":" tok","details":details,
                   "prefill_time": if k == 0 { json!(FIRST_MS) } else { Value::Null },
                   "decode_time": if k == 0 { Value::Null } else { json!(GAP_MS) }})
        } else {
            json!({"model_name":"m","model_version":"1","text_output":" tok"})
        };
        chunk(&mut s, &ev.to_string())?;
    }
    if path.starts_with("/v1/") && model != "cut" && model != "error-mid" {
        let fin = if chat {
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})
        } else {
            json!({"choices":[{"index":0,"text":"","finish_reason":"length"}]})
        };
        chunk(&mut s, &fin.to_string())?;
        let mut usage = json!({"prompt_tokens":prompt_tokens,"completion_tokens":n,"total_tokens":prompt_tokens as u64 + n});
        if model == "mindie-stats" {
            // MindIE Server's OpenAI endpoints (MINDIE_LLM_BENCHMARK_ENABLE): one value per
            // iteration in the final usage: prefill batch 2, then decode batch 4; queue
            // waits 250 us, then 10 us.
            let k = n as usize;
            let mut batch = vec![4; k];
            let mut wait = vec![10; k];
            if k > 0 {
                (batch[0], wait[0]) = (2, 250);
            }
            usage["batch_size"] = json!(batch);
            usage["queue_wait_time"] = json!(wait);
        }
        chunk(&mut s, &json!({"choices":[],"usage":usage}).to_string())?;
        chunk(&mut s, "[DONE]")?;
    }
    write!(s, "0\r\n\r\n")?;
    s.flush()
}

pub fn server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = handle(c);
            });
        }
    });
    format!("http://{addr}")
}

/// An OpenAI completions server that answers from a key: of the `replies` whose question
/// occurs in the prompt, the one occurring last (a few-shot prompt quotes other questions
/// first) gives the reply, streamed a word per event; a prompt matching none gets "unknown".
pub fn oracle_server(replies: Vec<(String, String)>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let replies = std::sync::Arc::new(replies);
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let replies = std::sync::Arc::clone(&replies);
            std::thread::spawn(move || {
                let _ = oracle(c, &replies);
            });
        }
    });
    format!("http://{addr}")
}

fn oracle(mut s: TcpStream, replies: &[(String, String)]) -> std::io::Result<()> {
    let (_, req) = read_request(&s)?;
    let prompt = req["prompt"].as_str().unwrap_or("");
    let reply = replies
        .iter()
        .filter_map(|(q, a)| prompt.rfind(q.as_str()).map(|at| (at, a)))
        .max_by_key(|(at, _)| *at)
        .map(|(_, a)| a.as_str())
        .unwrap_or("unknown");
    write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    let words: Vec<&str> = reply.split_inclusive(' ').collect();
    for w in &words {
        chunk(
            &mut s,
            &json!({"choices":[{"index":0,"text":w,"finish_reason":null}]}).to_string(),
        )?;
    }
    chunk(
        &mut s,
        &json!({"choices":[{"index":0,"text":"","finish_reason":"stop"}]}).to_string(),
    )?;
    chunk(
        &mut s,
        &json!({"choices":[],"usage":{"prompt_tokens":prompt.split_whitespace().count(),"completion_tokens":words.len()}}).to_string(),
    )?;
    chunk(&mut s, "[DONE]")?;
    write!(s, "0\r\n\r\n")?;
    s.flush()
}
