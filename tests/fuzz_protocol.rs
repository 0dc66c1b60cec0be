//! Property tests ("fuzzing" on a stable toolchain: no cargo-fuzz there) of the two parsers
//! that read bytes from the network (issue 16): the KServe v2 request/response decoder that
//! `acceval serve` and `qps` use, and the SSE parser of the `llm` client. Random bytes,
//! mutated valid bodies (JSON and binary tensors, with random `Inference-Header-Content-
//! Length` values) and grammar-made requests go in; each must come out as a value or a clean
//! error, never a panic, and decoded tensors must stay within a bound of the body's size.
//! Case counts are fixed so the whole file runs in seconds (`cargo test --test
//! fuzz_protocol`); `PROPTEST_CASES=N` runs more. Each defect found became a named test in
//! `src/protocol/kserve.rs` (see `sizes_from_the_request_never_overflow_or_allocate`).

use acceval::model::tensor::{HostTensor, TensorData};
use acceval::protocol::kserve::{decode_request, decode_response, encode_request, encode_response};
use acceval::protocol::sse::{Parser, TooLarge};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

fn cases(n: u32) -> ProptestConfig {
    let n = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    ProptestConfig {
        cases: n,
        // Shrinking a failure is worth its time; a pass should not wait on it.
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    }
}

/// Decodes as the server does and checks the outcome is a value or a clean error, with the
/// decoded tensors at most 4 bytes per body byte (8-byte numbers take at least 2 of text).
fn check_decode(body: &[u8], header_len: Option<&str>) {
    match decode_request(body, header_len) {
        Ok(r) => {
            let bound = 4 * body.len() + 8;
            assert!(
                r.tensor_bytes() <= bound,
                "{} tensor bytes from a {}-byte body",
                r.tensor_bytes(),
                body.len()
            );
        }
        Err(e) => assert!(!e.to_string().is_empty(), "an empty error message"),
    }
    if let Err(e) = decode_response(body, header_len) {
        assert!(!e.to_string().is_empty());
    }
}

fn tensor() -> impl Strategy<Value = HostTensor> {
    let shape = prop::collection::vec(0usize..4, 0..4);
    (shape, 0u8..7, "[a-z]{1,3}", any::<u64>()).prop_map(|(shape, kind, name, seed)| {
        let n: usize = shape.iter().product();
        let mut x = seed;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        };
        let dim = IxDyn(&shape);
        macro_rules! arr {
            ($f:expr) => {
                ArrayD::from_shape_vec(dim, (0..n).map(|_| $f(next())).collect()).unwrap()
            };
        }
        let data = match kind {
            0 => TensorData::F32(arr!(|v: u64| (v >> 40) as f32 / 7.0 - 1000.0)),
            1 => TensorData::F64(arr!(|v: u64| f64::from_bits(v >> 2))),
            2 => TensorData::I64(arr!(|v: u64| v as i64)),
            3 => TensorData::I32(arr!(|v: u64| v as i32)),
            4 => TensorData::I8(arr!(|v: u64| v as i8)),
            5 => TensorData::U8(arr!(|v: u64| v as u8)),
            _ => TensorData::Bool(arr!(|v: u64| v & 1 == 1)),
        };
        HostTensor { name, data }
    })
}

fn distinct(ts: Vec<HostTensor>) -> Vec<HostTensor> {
    let mut seen = std::collections::HashSet::new();
    ts.into_iter()
        .filter(|t| seen.insert(t.name.clone()))
        .collect()
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    /// Replace a digit run start with a huge or odd number.
    Number(usize, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            prop::sample::select(vec![
                "1e39",
                "-1e39",
                "1e400",
                "18446744073709551616",
                "-9223372036854775809",
                "[[[[",
                "]]",
                "null",
                "\"x\"",
                "{}",
                "true",
                "0.5",
                "4294967296",
                "-1",
                ",",
                "\"name\":\"x\",",
                "\"binary_data_size\":99999999999,",
            ])
        )
            .prop_map(|(i, s)| Mutation::Number(i, s)),
    ]
}

fn apply(body: &mut Vec<u8>, m: &Mutation) {
    let len = body.len().max(1);
    match m {
        Mutation::Flip(i, b) => {
            if !body.is_empty() {
                body[i % len] ^= b | 1;
            }
        }
        Mutation::Insert(i, b) => {
            let at = i % (body.len() + 1);
            body.splice(at..at, b.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let at = i % len;
            let end = (at + n).min(body.len());
            if at < end {
                body.drain(at..end);
            }
        }
        Mutation::Truncate(i) => body.truncate(i % len),
        Mutation::Number(i, s) => {
            let at = i % (body.len() + 1);
            body.splice(at..at, s.bytes());
        }
    }
}

/// How the `Inference-Header-Content-Length` is given: none, the right one, off by some
/// bytes, any number, or not a number.
fn header_len() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        any::<u64>().prop_map(|n| Some(n.to_string())),
        (0usize..400).prop_map(|n| Some(n.to_string())),
        "[ 0-9a-z+-]{0,6}".prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(cases(3000))]

    /// Random bytes, with random header lengths.
    #[test]
    fn v2_decoder_survives_random_bytes(body in prop::collection::vec(any::<u8>(), 0..512), hl in header_len()) {
        check_decode(&body, hl.as_deref());
    }
}

proptest! {
    #![proptest_config(cases(2000))]

    /// Valid requests round-trip; mutated ones (bytes flipped, inserted, deleted, the body
    /// cut, odd numbers spliced in) decode or fail cleanly, with the right, a shifted or a
    /// random header length.
    #[test]
    fn v2_decoder_survives_mutated_bodies(
        ts in prop::collection::vec(tensor(), 0..4),
        binary in any::<bool>(),
        ms in prop::collection::vec(mutation(), 0..4),
        shift in -8i64..8,
        hl in header_len(),
        use_given in any::<bool>(),
    ) {
        let ts = distinct(ts);
        let body = encode_request(&ts, binary);
        let right = body.header_len.map(|n| n.to_string());
        let r = decode_request(&body.bytes, right.as_deref()).expect("a valid request decodes");
        prop_assert_eq!(r.inputs.len(), ts.len());
        for (a, b) in r.inputs.iter().zip(&ts) {
            // NaN never appears (F32 values are finite), and FP64 from bits may be NaN.
            if !matches!(b.data, TensorData::F64(_)) {
                prop_assert_eq!(&a.data, &b.data);
            }
        }
        let mut bytes = body.bytes.clone();
        for m in &ms {
            apply(&mut bytes, m);
        }
        let shifted = body.header_len.map(|n| (n as i64 + shift).max(0).to_string());
        let given = if use_given { hl } else { shifted };
        check_decode(&bytes, given.as_deref());
        // The same as a response (what `qps` reads).
        let pairs: Vec<_> = ts.iter().map(|t| (t, binary)).collect();
        let resp = encode_response("m", Some("id"), &pairs);
        let mut bytes = resp.bytes;
        for m in &ms {
            apply(&mut bytes, m);
        }
        let hl = resp.header_len.map(|n| (n as i64 + shift).max(0).to_string());
        if let Err(e) = decode_response(&bytes, hl.as_deref()) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

/// A JSON value for a field of a request: what a confused or hostile client may send.
fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        prop::sample::select(vec![
            "1e39",
            "-3.5e38",
            "3.4028235e38",
            "1e-50",
            "-0",
            "1e400"
        ])
        .prop_map(str::to_string),
        "\"[A-Z0-9a-z ]{0,6}\"",
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z_]{1,18}", inner), 0..4).prop_map(|kv| {
                let fields: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

fn field(key: &'static str, value: BoxedStrategy<String>) -> impl Strategy<Value = Option<String>> {
    prop::option::of(value.prop_map(move |v| format!("\"{key}\":{v}")))
}

/// A request object made from the v2 grammar, each field present or not, well-typed or not,
/// in any order.
fn grammar_request() -> impl Strategy<Value = String> {
    let datatype = prop_oneof![
        prop::sample::select(vec![
            "FP32", "FP64", "INT64", "INT32", "INT8", "UINT8", "BOOL", "FP16", "BYTES", "fp32"
        ])
        .prop_map(|s| format!("\"{s}\"")),
        json_value(),
    ]
    .boxed();
    let shape = prop_oneof![
        prop::collection::vec(prop_oneof![0u64..5, any::<u64>()], 0..4).prop_map(|v| format!(
            "[{}]",
            v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        )),
        json_value(),
    ]
    .boxed();
    let params = prop_oneof![
        (0u64..64).prop_map(|n| format!("{{\"binary_data_size\":{n}}}")),
        json_value(),
    ]
    .boxed();
    let input = (
        field("name", prop_oneof!["\"[xy]\"", json_value()].boxed()),
        field("datatype", datatype),
        field("shape", shape),
        field("data", json_value().boxed()),
        field("parameters", params),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e].into_iter().flatten().collect::<Vec<_>>())
        .prop_shuffle()
        .prop_map(|f| format!("{{{}}}", f.join(",")));
    (
        prop::collection::vec(input, 0..3),
        field("id", json_value().boxed()),
        field("outputs", json_value().boxed()),
        field("parameters", json_value().boxed()),
    )
        .prop_map(|(inputs, id, outputs, params)| {
            let mut f = vec![format!("\"inputs\":[{}]", inputs.join(","))];
            f.extend([id, outputs, params].into_iter().flatten());
            format!("{{{}}}", f.join(","))
        })
}

proptest! {
    #![proptest_config(cases(2000))]

    /// Requests from the v2 grammar with wrong types, odd numbers and missing fields, as
    /// JSON and followed by random binary bytes.
    #[test]
    fn v2_decoder_survives_grammar_requests(req in grammar_request(), tail in prop::collection::vec(any::<u8>(), 0..64)) {
        check_decode(req.as_bytes(), None);
        let mut b = req.clone().into_bytes();
        let n = b.len();
        b.extend_from_slice(&tail);
        check_decode(&b, Some(&n.to_string()));
    }
}

/// The events of a stream, and its unfinished last event (reported when the stream is cut).
type Fed = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// All events of `pieces` fed in order through a parser of `limit` bytes.
fn feed_all(pieces: &[&[u8]], limit: usize) -> Result<Fed, TooLarge> {
    let mut p = Parser::with_limit(limit);
    let mut out = Vec::new();
    for piece in pieces {
        p.feed(piece, |d| out.push(d.to_vec()))?;
    }
    Ok((out, p.finish()))
}

fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        "data: [ -~]{0,12}".prop_map(String::into_bytes),
        "data:[ -~]{0,12}".prop_map(String::into_bytes),
        ": ping [0-9]{0,4}".prop_map(String::into_bytes),
        "(event|id|retry): [a-z0-9]{0,6}".prop_map(String::into_bytes),
        Just(b"data".to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
    ];
    let end = prop::sample::select(vec![&b"\n"[..], b"\r\n", b"\r", b"\n\n", b"\r\n\r\n", b""]);
    prop::collection::vec((line, end), 0..16).prop_map(|v| {
        v.into_iter()
            .flat_map(|(mut l, e)| {
                l.extend_from_slice(e);
                l
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(cases(2000))]

    /// The SSE parser gives the same events however the stream is cut into pieces, never
    /// an event over its limit, and fails only with TooLarge.
    #[test]
    fn sse_parser_is_split_invariant_and_bounded(
        stream in sse_stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        limit in prop_oneof![Just(usize::MAX), 1usize..40],
    ) {
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        at.sort_unstable();
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut prev = 0;
        for c in at.into_iter().chain([stream.len()]) {
            pieces.push(&stream[prev..c]);
            prev = c;
        }
        let whole = feed_all(&[&stream], limit);
        let split = feed_all(&pieces, limit);
        prop_assert_eq!(&whole, &split);
        match split {
            Ok((events, rest)) => {
                for e in &events {
                    prop_assert!(e.len() <= limit, "an event of {} bytes passed the limit {limit}", e.len());
                }
                // The unfinished event (only reported as a cut stream) adds at most one line.
                if let Some(r) = rest {
                    prop_assert!(r.len() <= limit.saturating_mul(2).saturating_add(1));
                }
            }
            Err(e) => prop_assert_eq!(e, TooLarge { limit }),
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        prop_assert_eq!(feed_all(&bytes, limit), whole);
    }
}
