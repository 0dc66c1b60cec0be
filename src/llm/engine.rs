//! MindIE Benchmark's engine mode: the model runs in this process (candle's quantized llama
//! family from a GGUF file, on the CPU), no HTTP, driven by the same prompts, warm-up and
//! concurrency as client mode and reported with the same statistics and CSVs.
//!
//! How it runs (the report's `engine` line says the same):
//! - **No batching** (the default, `--max-batch-size 1`; with more, static batching: see
//!   [`run_batched`]). Each of the `concurrency` workers holds its own KV cache over the
//!   shared weights and runs one request at a time, batch 1 (so PrefillBatchsize and
//!   DecoderBatchsize are 1: the batch dimension of each forward). In a closed loop a worker
//!   takes the next request as soon as it is free, so there is no queue (QueueWaitTime n/a);
//!   with request rates (open loop) a request starts at its scheduled time or, when every
//!   worker is busy then, when one frees: QueueWaitTime is that wait, μs, and FirstTokenTime
//!   and GenerateTime count from the scheduled time, as in client mode.
//! - **Greedy sampling** (argmax of the logits).
//! - **Output lengths:** a performance run generates exactly each prompt's max_tokens (the
//!   end-of-sequence token ignored, as MindIE's synthetic runs fix output lengths); accuracy
//!   mode stops at the GGUF's end-of-sequence token.
//!
//! Per request (ms, from the moment its worker starts it, after the prompt is encoded):
//! ForwardTime of each token (building the input tensor and the model's forward: the whole
//! prompt for the first token, one token after), PostProcessingTime of each token (the argmax
//! and decoding the token to text), FirstTokenTime (prefill forward + its post-processing),
//! DecodeTime (the gap between successive tokens), GenerateTime (start to the last token).
//! So GenerateTime = Σ ForwardTime + Σ PostProcessingTime + the loop's own bookkeeping,
//! which the tests bound.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::{MAX_SEQ_LEN, ModelWeights};

use super::Error;
use super::settings::{Engine, LlmPlan};
use crate::load::schedule::schedule;
use crate::report::schema::llm::{LlmReport, LlmRun, Record, TokenSource};
use crate::report::schema::qps::FailureKind;
use crate::util::progress::Progress;

/// candle's version, pinned (`=0.11.1`) in Cargo.toml.
const CANDLE_VERSION: &str = "0.11.1";

/// A loaded model: its weights (cloned per worker: the tensors are shared), its
/// end-of-sequence token and its context length.
struct Loaded {
    model: ModelWeights,
    device: Device,
    eos: Option<u32>,
    context: usize,
}

/// The candle device of `e`: a GPU only when acceval was compiled with CUDA for candle.
fn device(e: Engine) -> Result<Device, Error> {
    match e.cuda {
        None => Ok(Device::Cpu),
        Some(_) if !cfg!(feature = "candle-cuda") => Err(Error::Engine(format!(
            "--engine {e}: acceval was not compiled with CUDA for candle; rebuild on a CUDA host with `cargo build --release --features candle-cuda`, or use --engine candle (the CPU)"
        ))),
        Some(n) => Device::new_cuda(n).map_err(|err| Error::Engine(format!("--engine {e}: {err}"))),
    }
}

fn load(path: &str, device: Device) -> Result<Loaded, Error> {
    let bad = |why: String| Error::Engine(format!("{path}: {why}"));
    let mut f = std::fs::File::open(path).map_err(|e| bad(format!("cannot open it: {e}")))?;
    let ct = gguf_file::Content::read(&mut f).map_err(|e| bad(format!("not a GGUF file: {e}")))?;
    let eos = ct
        .metadata
        .get("tokenizer.ggml.eos_token_id")
        .and_then(|v| v.to_u32().ok());
    let context = ct
        .metadata
        .get("llama.context_length")
        .and_then(|v| v.to_u32().ok())
        .map(|c| (c as usize).min(MAX_SEQ_LEN))
        .unwrap_or(MAX_SEQ_LEN);
    let arch = ct
        .metadata
        .get("general.architecture")
        .and_then(|v| v.to_string().ok().cloned())
        .unwrap_or_default();
    if arch != "llama" {
        return Err(bad(format!(
            "architecture '{arch}': the candle engine runs the llama family (general.architecture = llama)"
        )));
    }
    let model = ModelWeights::from_gguf(ct, &mut f, &device)
        .map_err(|e| bad(format!("cannot load the llama weights: {e}")))?;
    Ok(Loaded {
        model,
        device,
        eos,
        context,
    })
}

/// One request's generation, timed.
struct Generated {
    token_at: Vec<Duration>,
    forward: Vec<Duration>,
    post: Vec<Duration>,
    ids: Vec<u32>,
    text: String,
    total: Duration,
}

fn argmax(logits: &Tensor) -> candle_core::Result<u32> {
    let v: Vec<f32> = logits.squeeze(0)?.to_vec1()?;
    Ok(argmax_row(&v))
}

/// The index of the largest logit (the first of equals).
fn argmax_row(v: &[f32]) -> u32 {
    let mut best = (0usize, f32::NEG_INFINITY);
    for (i, &x) in v.iter().enumerate() {
        if x > best.1 {
            best = (i, x);
        }
    }
    best.0 as u32
}

/// Generates up to `max_tokens` after `prompt` on `model` (its KV cache cleared first).
fn generate(
    model: &mut ModelWeights,
    device: &Device,
    tok: &tokenizers::Tokenizer,
    prompt: &[u32],
    max_tokens: usize,
    stop_at: Option<u32>,
    stop: &AtomicBool,
) -> Result<Generated, String> {
    model.clear_kv_cache();
    let mut g = Generated {
        token_at: Vec::with_capacity(max_tokens),
        forward: Vec::with_capacity(max_tokens),
        post: Vec::with_capacity(max_tokens),
        ids: Vec::with_capacity(max_tokens),
        text: String::new(),
        total: Duration::ZERO,
    };
    let start = Instant::now();
    let mut input: Vec<u32> = prompt.to_vec();
    let mut pos = 0;
    for _ in 0..max_tokens {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let f0 = Instant::now();
        // A GPU's forward returns before its kernels finish: the clock stops once they have.
        let logits = Tensor::new(input.as_slice(), device)
            .and_then(|t| t.unsqueeze(0))
            .and_then(|x| model.forward(&x, pos))
            .and_then(|l| device.synchronize().map(|()| l))
            .map_err(|e| format!("the model's forward failed at position {pos}: {e}"))?;
        let p0 = Instant::now();
        let next = argmax(&logits).map_err(|e| format!("cannot read the logits: {e}"))?;
        let piece = tok
            .decode(&[next], true)
            .map_err(|e| format!("cannot decode token {next}: {e}"))?;
        let done = Instant::now();
        g.text.push_str(&piece);
        g.forward.push(p0 - f0);
        g.post.push(done - p0);
        g.token_at.push(done - start);
        g.ids.push(next);
        pos += input.len();
        if Some(next) == stop_at {
            break;
        }
        input.clear();
        input.push(next);
    }
    g.total = start.elapsed();
    Ok(g)
}

/// One static batch: `prompts` (all of one token length) prefilled in one forward of batch
/// dimension `b`, then decoded together, one token per member per forward, until every
/// member has its `max` tokens (or, with `stop_at`, its end-of-sequence token). A member that
/// is done still occupies its row (static batching): its later tokens are computed and
/// dropped. Each member's ForwardTime and PostProcessingTime are those of the batch steps it
/// took part in (the post-processing of a step is every active member's argmax and decoding),
/// so its GenerateTime is the sum of its steps, as without batching.
fn generate_batch(
    model: &mut ModelWeights,
    device: &Device,
    tok: &tokenizers::Tokenizer,
    prompts: &[&[u32]],
    max: &[usize],
    stop_at: Option<u32>,
    stop: &AtomicBool,
) -> Result<Vec<Generated>, String> {
    model.clear_kv_cache();
    let b = prompts.len();
    let mut gs: Vec<Generated> = max
        .iter()
        .map(|&m| Generated {
            token_at: Vec::with_capacity(m),
            forward: Vec::with_capacity(m),
            post: Vec::with_capacity(m),
            ids: Vec::with_capacity(m),
            text: String::new(),
            total: Duration::ZERO,
        })
        .collect();
    let mut done = vec![false; b];
    let start = Instant::now();
    let mut input: Vec<u32> = prompts.concat();
    let (mut width, mut pos) = (prompts.first().map_or(0, |p| p.len()), 0);
    let mut active = Vec::with_capacity(b);
    while done.iter().any(|d| !d) {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let f0 = Instant::now();
        let forward = |model: &mut ModelWeights, x: &[u32], w: usize, at: usize| {
            Tensor::new(x, device)
                .and_then(|t| t.reshape((b, w)))
                .and_then(|x| model.forward(&x, at))
                .map_err(|e| {
                    format!("the model's forward (batch of {b}) failed at position {at}: {e}")
                })
        };
        let logits = if b > 1 && width > 1 {
            // candle 0.11.1's quantized llama cannot run a multi-token forward of batch > 1
            // (its output projection is handed the strided last position, and a quantized
            // matmul refuses a non-contiguous input), so a batch's prompt goes in one
            // position at a time, batch b each: the same KV cache and logits, in `width`
            // forwards (all counted in the first token's ForwardTime).
            let mut column = Vec::with_capacity(b);
            let mut last = None;
            for t in 0..width {
                column.clear();
                column.extend(input.chunks(width).map(|p| p[t]));
                last = Some(forward(model, &column, 1, pos + t)?);
            }
            last.ok_or("an empty prompt")?
        } else {
            forward(model, &input, width, pos)?
        };
        let rows: Vec<Vec<f32>> = logits
            .to_vec2()
            .map_err(|e| format!("cannot read the logits: {e}"))?;
        let p0 = Instant::now();
        input.clear();
        active.clear();
        for (j, row) in rows.iter().enumerate() {
            let next = argmax_row(row);
            input.push(next);
            if done[j] {
                continue;
            }
            let piece = tok
                .decode(&[next], true)
                .map_err(|e| format!("cannot decode token {next}: {e}"))?;
            gs[j].text.push_str(&piece);
            gs[j].ids.push(next);
            active.push(j);
        }
        let t = Instant::now();
        for &j in &active {
            let g = &mut gs[j];
            g.forward.push(p0 - f0);
            g.post.push(t - p0);
            g.token_at.push(t - start);
            if g.ids.len() >= max[j] || (stop_at.is_some() && g.ids.last().copied() == stop_at) {
                done[j] = true;
                g.total = t - start;
            }
        }
        pos += width;
        width = 1;
    }
    Ok(gs)
}

/// Each prompt's token ids, encoded once, and the encoding's time (MindIE's Tokenizer row).
fn encode(plan: &LlmPlan, tok: &tokenizers::Tokenizer) -> Result<Vec<(Vec<u32>, Duration)>, Error> {
    plan.prompts
        .iter()
        .map(|p| {
            let t0 = Instant::now();
            let e = tok
                .encode(p.as_str(), true)
                .map_err(|e| Error::Engine(format!("the tokenizer cannot encode a prompt: {e}")))?;
            Ok((e.get_ids().to_vec(), t0.elapsed()))
        })
        .collect()
}

/// Where the engine runs, in words.
fn place(e: Engine) -> String {
    match e.cuda {
        None => "the CPU".into(),
        Some(n) => format!(
            "CUDA device {n} (candle-cuda; each forward synchronised before its clock stops)"
        ),
    }
}

/// The engine's description for the report.
fn describe(plan: &LlmPlan) -> String {
    let s = &plan.settings;
    let batching = if s.max_batch_size > 1 {
        format!(
            "static batching: one model and KV cache; up to {} requests (--max-batch-size {}, at most --concurrency {}) whose prompts have the same token length are prefilled in one forward and decoded together until each has its tokens (a finished member's row is still computed; candle's quantized llama takes no padding mask, so lengths must match); the others wait in a FIFO queue (QueueWaitTime)",
            s.max_batch_size.min(s.concurrency),
            s.max_batch_size,
            s.concurrency
        )
    } else {
        format!(
            "no batching: each of {} workers runs one request at a time (batch 1) on its own KV cache, the weights shared",
            s.concurrency
        )
    };
    format!(
        "candle {} quantized llama (GGUF) on {}, in-process; {batching}; greedy sampling; {}",
        CANDLE_VERSION,
        place(s.engine.unwrap_or_default()),
        if plan.answers.is_empty() {
            "each request generates exactly its max_tokens (end-of-sequence ignored)"
        } else {
            "generation stops at the end-of-sequence token (accuracy mode)"
        }
    )
}

/// Runs the warm-up, then one measured run per request rate (open loop, at most
/// `concurrency` requests running) or one closed-loop run, in-process.
pub fn measure(
    plan: &LlmPlan,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> Result<LlmReport, Error> {
    let s = &plan.settings;
    let tok = plan
        .tokenizer
        .as_ref()
        .ok_or_else(|| Error::Engine("engine mode needs a tokenizer".into()))?;
    let engine = s.engine.unwrap_or_default();
    progress.note(format!("acceval llm: loading {} ({engine})", s.model));
    let loaded = load(&s.model, device(engine)?)?;
    let encoded = encode(plan, tok)?;
    let stop_at = (!plan.answers.is_empty()).then_some(loaded.eos).flatten();
    let work = Work {
        plan,
        loaded: &loaded,
        tok,
        encoded: &encoded,
        stop_at,
        stop,
        progress,
    };
    // `offsets`: an open loop's scheduled start of each request, s (None: a closed loop).
    let run = |n: usize,
               measured: bool,
               offsets: Option<&[f64]>|
     -> (Vec<Record>, Duration, bool) {
        if s.max_batch_size > 1 {
            return run_batched(&work, n, measured, offsets);
        }
        let next = AtomicUsize::new(0);
        let out = Mutex::new(Vec::with_capacity(n));
        let t0 = Instant::now();
        std::thread::scope(|sc| {
            for _ in 0..s.concurrency.min(n.max(1)) {
                let mut model = loaded.model.clone();
                let (next, out, encoded, device) = (&next, &out, &encoded, &loaded.device);
                sc.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let k = i % encoded.len();
                        let (ids, enc_time) = &encoded[k];
                        let max = plan.max_tokens[k] as usize;
                        // Open loop: wait for the request's scheduled start; a request
                        // whose time passed while every worker was busy waited in the queue.
                        let scheduled = offsets.map(|o| Duration::from_secs_f64(o[i]));
                        if let Some(at) = scheduled {
                            while t0.elapsed() < at && !stop.load(Ordering::Relaxed) {
                                std::thread::sleep((at - t0.elapsed()).min(Duration::from_millis(20)));
                            }
                        }
                        let sent = t0.elapsed();
                        let queued = scheduled.map(|at| sent.saturating_sub(at));
                        let r = if ids.len() + max > loaded.context {
                            Err(format!(
                                "prompt {} + max_tokens {max} tokens exceed the model's context of {}",
                                ids.len(),
                                loaded.context
                            ))
                        } else {
                            generate(&mut model, device, tok, ids, max, stop_at, stop)
                        };
                        let rec =
                            record(plan, tok, i, k, ids.len(), *enc_time, sent, queued, r, 1);
                        if measured {
                            progress.inc(1);
                        }
                        if let Ok(mut o) = out.lock() {
                            o.push(rec);
                        }
                    }
                });
            }
        });
        let mut recs = out.into_inner().unwrap_or_default();
        recs.sort_by_key(|r| r.index);
        (recs, t0.elapsed(), stop.load(Ordering::Relaxed))
    };
    if s.warmup > 0 {
        progress.note(format!(
            "acceval llm: {} warm-up requests (not measured)",
            s.warmup
        ));
        let (w, _, _) = run(s.warmup, false, None);
        if let Some(e) = w.iter().find_map(|r| r.error.as_ref()) {
            progress.note(format!(
                "acceval llm: warning: a warm-up request failed: {e}"
            ));
        }
    }
    let rates: Vec<Option<f64>> = if s.request_rate.is_empty() {
        vec![None]
    } else {
        s.request_rate.iter().map(|&r| Some(r)).collect()
    };
    let mut runs = Vec::new();
    for rate in rates {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        progress.set_length(plan.total as u64);
        progress.set_position(0);
        progress.set_message(match rate {
            Some(r) => format!("engine, rate {r} req/s"),
            None => format!("engine, concurrency {}", s.concurrency),
        });
        let offsets = rate.map(|r| schedule(s.distribution, r, plan.total, s.seed));
        let (records, elapsed, interrupted) = run(plan.total, true, offsets.as_deref());
        let run: LlmRun = super::run::summarise_records(plan, records, elapsed, interrupted, rate);
        progress.note(crate::report::llm::run_line(&run));
        runs.push(run);
    }
    Ok(super::run::report(plan, runs, Some(describe(plan))))
}

/// What a run reads, shared by the unbatched workers and the static batcher.
struct Work<'a> {
    plan: &'a LlmPlan,
    loaded: &'a Loaded,
    tok: &'a tokenizers::Tokenizer,
    /// Each prompt's token ids and its encoding time.
    encoded: &'a [(Vec<u32>, Duration)],
    stop_at: Option<u32>,
    stop: &'a AtomicBool,
    progress: &'a Progress,
}

/// `n` requests under static batching (`--max-batch-size` > 1) on one model: requests wait
/// in a FIFO queue; when the engine is free it takes the oldest and, after it, the next
/// ones with the same prompt length, up to the cap, and runs them as one batch
/// ([`generate_batch`]). In a closed loop `concurrency` clients send at once and each sends
/// its next request when its last token came; in an open loop a request joins the queue at
/// its scheduled time. Each request's QueueWaitTime is its wait from joining the queue to its
/// batch's start, and its times count from joining, as in client mode.
fn run_batched(
    w: &Work<'_>,
    n: usize,
    measured: bool,
    offsets: Option<&[f64]>,
) -> (Vec<Record>, Duration, bool) {
    let s = &w.plan.settings;
    let cap = s.max_batch_size.min(s.concurrency).max(1);
    let len = w.encoded.len().max(1);
    let mut model = w.loaded.model.clone();
    let mut recs = Vec::with_capacity(n);
    // (request index, when it joined the queue since t0), oldest first.
    let mut queue: std::collections::VecDeque<(usize, Duration)> =
        std::collections::VecDeque::with_capacity(n.min(s.concurrency.max(cap)));
    let mut next = 0;
    let t0 = Instant::now();
    if offsets.is_none() {
        while next < n.min(s.concurrency) {
            queue.push_back((next, Duration::ZERO));
            next += 1;
        }
    }
    while !w.stop.load(Ordering::Relaxed) {
        if let Some(o) = offsets {
            let now = t0.elapsed();
            while next < n && Duration::from_secs_f64(o[next]) <= now {
                queue.push_back((next, Duration::from_secs_f64(o[next])));
                next += 1;
            }
            if queue.is_empty() {
                if next >= n {
                    break;
                }
                let at = Duration::from_secs_f64(o[next]);
                std::thread::sleep(
                    at.saturating_sub(t0.elapsed())
                        .min(Duration::from_millis(20)),
                );
                continue;
            }
        } else if queue.is_empty() {
            break;
        }
        let (want, batch) = take_batch(&mut queue, w.encoded, cap);
        let start = t0.elapsed();
        let fits = |i: usize| want + w.plan.max_tokens[i % len] as usize <= w.loaded.context;
        let (fit, unfit): (Vec<_>, Vec<_>) = batch.into_iter().partition(|&(i, _)| fits(i));
        let rec = |i: usize, at: Duration, r: Result<Generated, String>, b: usize| {
            let k = i % len;
            record(
                w.plan,
                w.tok,
                i,
                k,
                want,
                w.encoded[k].1,
                start,
                Some(start.saturating_sub(at)),
                r,
                b,
            )
        };
        // (when the request's last token came, its record)
        let mut finished: Vec<(Duration, Record)> = unfit
            .into_iter()
            .map(|(i, at)| {
                let why = format!(
                    "prompt {want} + max_tokens {} tokens exceed the model's context of {}",
                    w.plan.max_tokens[i % len],
                    w.loaded.context
                );
                (start, rec(i, at, Err(why), 1))
            })
            .collect();
        if !fit.is_empty() {
            let b = fit.len();
            match generate_requests(w, &mut model, &fit) {
                Ok(gs) => {
                    for ((i, at), g) in fit.into_iter().zip(gs) {
                        finished.push((start + g.total, rec(i, at, Ok(g), b)));
                    }
                }
                Err(e) => {
                    let end = t0.elapsed();
                    for (i, at) in fit {
                        finished.push((end, rec(i, at, Err(e.clone()), b)));
                    }
                }
            }
        }
        finished.sort_by_key(|f| f.0);
        for (end, r) in finished {
            if measured {
                w.progress.inc(1);
            }
            if offsets.is_none() && next < n {
                queue.push_back((next, end));
                next += 1;
            }
            recs.push(r);
        }
    }
    recs.sort_by_key(|r| r.index);
    (recs, t0.elapsed(), w.stop.load(Ordering::Relaxed))
}

/// Generates the requests of `batch` ((request index, queue time)) as one static batch.
fn generate_requests(
    w: &Work<'_>,
    model: &mut ModelWeights,
    batch: &[(usize, Duration)],
) -> Result<Vec<Generated>, String> {
    let len = w.encoded.len().max(1);
    let prompts: Vec<&[u32]> = batch
        .iter()
        .map(|&(i, _)| w.encoded[i % len].0.as_slice())
        .collect();
    let max: Vec<usize> = batch
        .iter()
        .map(|&(i, _)| w.plan.max_tokens[i % len] as usize)
        .collect();
    let device = &w.loaded.device;
    generate_batch(model, device, w.tok, &prompts, &max, w.stop_at, w.stop)
}

/// Takes the next static batch out of `queue`: its oldest request and, after it, the next
/// ones whose prompts have its token length, up to `cap`. Returns that length and the batch.
fn take_batch(
    queue: &mut std::collections::VecDeque<(usize, Duration)>,
    encoded: &[(Vec<u32>, Duration)],
    cap: usize,
) -> (usize, Vec<(usize, Duration)>) {
    let len = encoded.len().max(1);
    let want = queue.front().map_or(0, |&(i, _)| encoded[i % len].0.len());
    let mut batch = Vec::with_capacity(cap);
    queue.retain(|&(i, at)| {
        let take = batch.len() < cap && encoded[i % len].0.len() == want;
        if take {
            batch.push((i, at));
        }
        !take
    });
    (want, batch)
}

/// One request's record.
#[allow(clippy::too_many_arguments)]
fn record(
    plan: &LlmPlan,
    tok: &tokenizers::Tokenizer,
    index: usize,
    prompt: usize,
    input_tokens: usize,
    encode: Duration,
    sent: Duration,
    queued: Option<Duration>,
    r: Result<Generated, String>,
    batch: usize,
) -> Record {
    // Open loop: the times count from the scheduled start, as in client mode.
    let lag = queued.unwrap_or_default();
    let ms = crate::load::driver::ms;
    let mut rec = Record {
        input_tokens: Some(input_tokens as u64),
        input_token_source: TokenSource::Tokenizer,
        token_source: TokenSource::Engine,
        tokenizer_ms: Some(ms(encode)),
        queue_wait_us: queued
            .map(|q| vec![q.as_secs_f64() * 1e6])
            .unwrap_or_default(),
        ..Record::new(index, sent.as_secs_f64(), ms(lag))
    };
    let g = match r {
        Ok(g) => g,
        Err(e) => {
            let kind = if e == "interrupted" {
                FailureKind::Interrupted
            } else {
                FailureKind::Other
            };
            rec.failure = Some(kind);
            rec.error = Some(format!("{kind}: {e}"));
            return rec;
        }
    };
    rec.first_token_ms = g.token_at.first().map(|&d| ms(lag + d));
    rec.decode_ms = g.token_at.windows(2).map(|w| ms(w[1] - w[0])).collect();
    rec.generate_ms = ms(lag + g.total);
    rec.generated_tokens = Some(g.ids.len() as u64);
    rec.token_events = g.ids.len() as u64;
    rec.generated_characters = g.text.chars().count() as u64;
    rec.forward_ms = g.forward.iter().map(|&d| ms(d)).collect();
    rec.post_processing_ms = g.post.iter().map(|&d| ms(d)).collect();
    // The batch dimension of the request's forwards (static batching keeps it to the end).
    rec.prefill_batch_size = Some(batch as f64);
    rec.decode_batch_sizes = vec![batch as f64; g.ids.len().saturating_sub(1)];
    let t0 = Instant::now();
    let whole = tok.decode(&g.ids, true);
    rec.detokenizer_ms = whole.is_ok().then(|| ms(t0.elapsed()));
    if let Some(right) = plan.answers.get(prompt) {
        let (answer, ok) = right.score(&g.text);
        (rec.answer, rec.correct) = (answer, Some(ok));
    }
    rec.ok = true;
    rec
}
