//! LLM generation as a load [`Endpoint`]: POST a prepared body to the API's path, then read
//! the stream (server-sent events) or the whole response, timing every token-bearing event.
//!
//! A "token-bearing event" is one whose generated text is not empty (for TGI: every token
//! event); a role-only first chunk or an empty final chunk with `finish_reason` is not one.
//! What the client buffers is capped: one SSE line or event (and a whole non-streamed
//! response) at `--max-event-bytes`, failing as `response_too_large`; an error body at
//! `--max-error-bytes`, kept for the message.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use serde_json::Value;

use crate::load::client;
use crate::load::driver::{Endpoint, Failure};
use crate::protocol::generate::{Api, Piece};
use crate::protocol::sse;
use crate::report::schema::llm::TokenSource;
use crate::report::schema::qps::FailureKind;

/// What one generation returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generation {
    /// When each token-bearing event arrived, from the run's start.
    pub token_at: Vec<Duration>,
    /// Characters of generated text (Unicode scalar values).
    pub generated_characters: u64,
    /// The server's prompt token count, when it gave one.
    pub input_tokens: Option<u64>,
    /// The server's generated token count, when it gave one, and from where.
    pub generated_tokens: Option<(u64, TokenSource)>,
    /// The generated text (kept only for a client tokenizer).
    pub text: String,
    /// The server's prefill batch size for this request, when it reports one.
    pub prefill_batch_size: Option<f64>,
    /// The server's decode batch sizes, one per later token, when it reports them.
    pub decode_batch_sizes: Vec<f64>,
    /// The server's queue wait times, μs, when it reports them.
    pub queue_wait_us: Vec<f64>,
}

/// The caps on what is buffered of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamCaps {
    pub max_event_bytes: usize,
    pub max_error_bytes: usize,
}

/// One model's generation endpoint.
pub struct Generate {
    uri: hyper::Uri,
    api: Api,
    stream: bool,
    /// One body per prompt, sent in turn.
    bodies: Vec<Bytes>,
    caps: StreamCaps,
    /// Keep the generated text (for a tokenizer).
    keep_text: bool,
}

impl Generate {
    pub fn new(
        uri: hyper::Uri,
        api: Api,
        stream: bool,
        bodies: Vec<Bytes>,
        caps: StreamCaps,
        keep_text: bool,
    ) -> Generate {
        Generate {
            uri,
            api,
            stream,
            bodies,
            caps,
            keep_text,
        }
    }

    /// Counts a piece of generated text arriving at `at`.
    fn account(&self, g: &mut Generation, piece: &Piece, at: Duration) {
        let token = !piece.text.is_empty() || piece.token_event;
        if token {
            g.token_at.push(at);
            g.generated_characters += piece.text.chars().count() as u64;
            if self.keep_text {
                g.text.push_str(&piece.text);
            }
        }
        let s = &piece.server;
        if let Some(b) = s.prefill_batch_size {
            g.prefill_batch_size = Some(b);
        }
        if let Some(b) = s.decode_batch_size {
            g.decode_batch_sizes.push(b);
        }
        // A bare batch_size is the batch of the event's token: prefill for the first.
        if let Some(b) = s.batch_size.filter(|_| token) {
            if g.token_at.len() == 1 {
                g.prefill_batch_size.get_or_insert(b);
            } else {
                g.decode_batch_sizes.push(b);
            }
        }
        if let Some(q) = s.queue_wait_us {
            g.queue_wait_us.push(q);
        }
        // Per-iteration arrays in a final usage (MindIE's OpenAI endpoints), unless the
        // events already gave the same figures one by one.
        if let Some((&first, rest)) = piece.iteration_batch_sizes.split_first()
            && g.prefill_batch_size.is_none()
            && g.decode_batch_sizes.is_empty()
        {
            g.prefill_batch_size = Some(first);
            g.decode_batch_sizes.extend_from_slice(rest);
        }
        if g.queue_wait_us.is_empty() {
            g.queue_wait_us
                .extend_from_slice(&piece.iteration_queue_wait_us);
        }
        if let Some(n) = piece.completion_tokens {
            let source = if piece.from_details {
                TokenSource::Details
            } else {
                TokenSource::Usage
            };
            g.generated_tokens = Some((n, source));
        }
        if let Some(n) = piece.prompt_tokens {
            g.input_tokens = Some(n);
        }
    }

    /// One event of a stream.
    fn event(
        &self,
        ev: &[u8],
        at: Duration,
        g: &mut Generation,
        st: &mut Stream,
    ) -> Result<(), Failure> {
        if st.done_marker {
            return Ok(());
        }
        if ev.trim_ascii() == b"[DONE]" {
            st.done_marker = true;
            return Ok(());
        }
        let v: Value = serde_json::from_slice(ev).map_err(|e| {
            let start = String::from_utf8_lossy(&ev[..ev.len().min(200)]).into_owned();
            Failure::new(FailureKind::BadEvent, format!("not JSON ({e}): {start}"))
        })?;
        let piece = self.api.read(&v);
        if let Some(e) = piece.error {
            return Err(Failure::new(
                FailureKind::StreamError,
                format!("the server sent an error event: {e}"),
            ));
        }
        self.account(g, &piece, at);
        st.finished |= piece.finished;
        Ok(())
    }

    /// Reads a stream of server-sent events to its end.
    async fn streamed(&self, mut body: Incoming, origin: Instant) -> Result<Generation, Failure> {
        let mut parser = sse::Parser::with_limit(self.caps.max_event_bytes);
        let mut g = Generation::default();
        let mut st = Stream::default();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                Failure::new(
                    FailureKind::ConnectionClosed,
                    format!("the stream broke: {e}"),
                )
            })?;
            let Some(data) = frame.data_ref() else {
                continue;
            };
            let at = Instant::now().saturating_duration_since(origin);
            let mut failed = Ok(());
            parser
                .feed(data, |ev| {
                    if failed.is_ok() {
                        failed = self.event(ev, at, &mut g, &mut st);
                    }
                })
                .map_err(|e| {
                    Failure::new(
                        FailureKind::ResponseTooLarge,
                        format!("{e} (max_event_bytes)"),
                    )
                })?;
            failed?;
        }
        if let Some(rest) = parser.finish() {
            return Err(Failure::new(
                FailureKind::CutStream,
                format!("the stream ended inside an event ({} bytes)", rest.len()),
            ));
        }
        let events = g.token_at.len();
        if self.api.has_done_marker() && !st.done_marker {
            return Err(Failure::new(
                FailureKind::CutStream,
                format!("the stream ended without [DONE] after {events} token events"),
            ));
        }
        if self.api == Api::Tgi && !st.finished {
            return Err(Failure::new(
                FailureKind::CutStream,
                format!("the stream ended before TGI's final event after {events} token events"),
            ));
        }
        Ok(g)
    }

    /// Reads a whole (not streamed) response.
    async fn whole(&self, body: Incoming, origin: Instant) -> Result<Generation, Failure> {
        let cap = self.caps.max_event_bytes;
        let raw = client::collect(body, cap)
            .await
            .map_err(|e| Failure::new(FailureKind::ConnectionClosed, e.to_string()))?;
        if raw.cut {
            return Err(Failure::new(
                FailureKind::ResponseTooLarge,
                format!("the response is over the max_event_bytes cap of {cap}"),
            ));
        }
        let at = Instant::now().saturating_duration_since(origin);
        let v: Value = serde_json::from_slice(&raw.bytes)
            .map_err(|e| Failure::new(FailureKind::BadResponse, format!("not JSON ({e})")))?;
        let piece = self.api.read(&v);
        if let Some(e) = piece.error {
            return Err(Failure::new(FailureKind::ResponseError, e));
        }
        let mut g = Generation::default();
        self.account(&mut g, &piece, at);
        Ok(g)
    }
}

/// What a stream has said so far.
#[derive(Debug, Default)]
struct Stream {
    done_marker: bool,
    finished: bool,
}

impl Endpoint for Generate {
    type Output = Generation;

    fn request(&self, index: usize) -> Result<hyper::Request<Full<Bytes>>, Failure> {
        let accept = if self.stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        hyper::Request::post(self.uri.clone())
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(Full::new(self.bodies[index % self.bodies.len()].clone()))
            .map_err(|e| {
                Failure::new(
                    FailureKind::Other,
                    format!("invalid request to {}: {e}", self.uri),
                )
            })
    }

    async fn read(
        &self,
        r: hyper::Response<Incoming>,
        origin: Instant,
    ) -> Result<Generation, Failure> {
        let status = r.status();
        if !status.is_success() {
            let body = client::collect(r.into_body(), self.caps.max_error_bytes)
                .await
                .map_err(|e| Failure::new(FailureKind::ConnectionClosed, e.to_string()))?;
            return Err(Failure::new(
                FailureKind::Http(status.as_u16()),
                client::error_text(&body),
            ));
        }
        let g = if self.stream {
            self.streamed(r.into_body(), origin).await?
        } else {
            self.whole(r.into_body(), origin).await?
        };
        if g.token_at.is_empty() {
            return Err(Failure::new(
                FailureKind::Empty,
                "the response carried no generated text",
            ));
        }
        Ok(g)
    }
}
