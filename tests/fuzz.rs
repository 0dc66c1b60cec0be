//! Property tests of every reader of user files: mutated ONNX models, `.npy`/`.npz`
//! tensors, images, load series, profiles and report folders. Each reader answers Ok or a
//! clean error; a panic fails the case (proptest shrinks it to the smallest input). Cases
//! are bounded (PROPTEST_CASES raises them) so the suite stays fast on CI's two cores; the
//! campaign script `scripts/hostile_campaign.sh` runs them with more.

mod common;

use std::path::Path;

use acceval::model::build::{Attr, GraphBuilder, attr, node, tensor_f32, tensor_i64};
use acceval::model::onnx::DataType;
use proptest::prelude::*;

const F: DataType = DataType::FLOAT;

/// Small graphs covering the readers' paths: initialisers, attributes, shapes, subgraph-free
/// control of shape arithmetic.
fn seeds() -> Vec<Vec<u8>> {
    let conv = GraphBuilder::new("conv")
        .input("x", F, &[1, 3, 16, 16])
        .init(tensor_f32("w", &[4, 3, 3, 3], 1))
        .node(node(
            "Conv",
            &["x", "w"],
            &["c"],
            vec![attr("pads", Attr::Ints(vec![1, 1, 1, 1]))],
        ))
        .node(node("Relu", &["c"], &["r"], vec![]))
        .node(node("GlobalAveragePool", &["r"], &["y"], vec![]))
        .output("y", F, &[1, 4, 1, 1]);
    let reshape = GraphBuilder::new("reshape")
        .input("x", F, &[2, 6])
        .init(tensor_i64("s", &[2], &[3, 4]))
        .node(node("Reshape", &["x", "s"], &["r"], vec![]))
        .node(node(
            "Transpose",
            &["r"],
            &["t"],
            vec![attr("perm", Attr::Ints(vec![1, 0]))],
        ))
        .node(node("MatMul", &["r", "t"], &["y"], vec![]))
        .output("y", F, &[3, 3]);
    vec![conv.encode(17), reshape.encode(13)]
}

/// A mutation of `base`: byte overwrites, a cut, an insertion, or a varint-sized field
/// set to a huge value.
fn mutated(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let n = base.len();
    prop_oneof![
        prop::collection::vec((0..n, any::<u8>()), 1..8).prop_map({
            let base = base.clone();
            move |edits| {
                let mut b = base.clone();
                for (i, v) in edits {
                    b[i] = v;
                }
                b
            }
        }),
        (0..n).prop_map({
            let base = base.clone();
            move |cut| base[..cut].to_vec()
        }),
        (0..n, prop::collection::vec(any::<u8>(), 1..16)).prop_map({
            let base = base.clone();
            move |(at, ins)| {
                let mut b = base.clone();
                b.splice(at..at, ins);
                b
            }
        }),
        (0..n).prop_map(move |at| {
            let mut b = base.clone();
            // 0xFF… 0x01: a ten-byte varint near u64::MAX where a length or dim stood.
            let huge = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
            let end = (at + 1).min(b.len());
            b.splice(at..end, huge);
            b
        }),
    ]
}

fn any_model() -> impl Strategy<Value = Vec<u8>> {
    let s = seeds();
    prop_oneof![mutated(s[0].clone()), mutated(s[1].clone())]
}

fn file(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn npy(shape: &str, body: &[u8]) -> Vec<u8> {
    common::npy_bytes("<f4", shape, body)
}

fn jpeg_and_png() -> [Vec<u8>; 2] {
    let img = image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8 * 6, y as u8 * 8, 9]));
    [image::ImageFormat::Jpeg, image::ImageFormat::Png].map(|f| {
        let mut b = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut b), f).unwrap();
        b
    })
}

const SERIES: &str = "timestamp,load_mw,temperature_c,humidity_pct\n\
2026-01-05T00:00,500.5,3.1,70\n2026-01-05T00:15,510,3.0,71\n2026-01-05T00:30,505,2.9,72\n";

/// Outcome tallies of one area, printed as a row of the campaign table.
#[derive(Default)]
struct Tally {
    accepted: usize,
    errors: usize,
    /// Panics and broken properties.
    panics: Vec<String>,
}

/// Runs `n` cases of `strat` through `check` (Ok(true): accepted, Ok(false): a clean
/// error, Err: a property broken); a panic is caught and counted. Failing inputs are kept
/// under target/fuzz-failures/ to replay.
fn campaign<S: Strategy>(
    area: &str,
    strat: S,
    default: usize,
    check: impl Fn(&S::Value) -> Result<bool, String>,
) where
    S::Value: AsRef<[u8]>,
{
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let n = cases(default);
    let mut runner = TestRunner::deterministic();
    let mut t = Tally::default();
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    for i in 0..n {
        let v = strat.new_tree(&mut runner).unwrap().current();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&v)));
        let failure = match r {
            Ok(Ok(true)) => {
                t.accepted += 1;
                continue;
            }
            Ok(Ok(false)) => {
                t.errors += 1;
                continue;
            }
            Ok(Err(why)) => why,
            Err(p) => format!(
                "panic: {}",
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            ),
        };
        std::fs::create_dir_all(&keep).unwrap();
        let f = keep.join(format!("{}-{i}.bin", area.replace(' ', "-")));
        std::fs::write(&f, v.as_ref()).unwrap();
        t.panics
            .push(format!("case {i} (kept in {}): {failure}", f.display()));
    }
    eprintln!(
        "| {area} | {n} | {} | {} | {} |",
        t.accepted,
        t.errors,
        t.panics.len()
    );
    assert!(t.panics.is_empty(), "{area}: {:?}", t.panics);
}

fn cases(default: usize) -> usize {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The ONNX reader and the shape/cost analysis on mutated models.
#[test]
fn onnx_analysis_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.onnx");
    campaign("onnx analysis", any_model(), 256, |b| {
        std::fs::write(&p, b).unwrap();
        Ok(acceval::model::analyse(&p, &[]).is_ok())
    });
}

/// The `.npy` reader on mutated headers and bodies.
#[test]
fn npy_reader_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.npy");
    campaign("npy reader", mutated(npy("(2, 3)", &[0u8; 24])), 256, |b| {
        std::fs::write(&p, b).unwrap();
        Ok(acceval::data::io::read_npy(&p).is_ok())
    });
}

/// The image decoder (with the truncation checks) on mutated JPEGs and PNGs.
#[test]
fn image_decoder_never_panics() {
    let [j, p] = jpeg_and_png();
    campaign(
        "image decoder",
        prop_oneof![mutated(j), mutated(p)],
        256,
        |b| Ok(acceval::task::image::decode_bytes(b, "fuzz").is_ok()),
    );
}

/// The series reader on mutated CSV: what it accepts is finite and evenly stepped.
#[test]
fn series_reader_never_panics() {
    campaign(
        "series reader",
        mutated(SERIES.as_bytes().to_vec()),
        256,
        |b| {
            let Ok(rows) = acceval::task::forecast::parse_series(b, "fuzz") else {
                return Ok(false);
            };
            if !rows
                .iter()
                .all(|r| r.load.is_finite() && r.temperature.is_finite() && r.humidity.is_finite())
            {
                return Err("a non-finite value was accepted".into());
            }
            let steps: Vec<i64> = rows.windows(2).map(|w| w[1].minute - w[0].minute).collect();
            if !steps.iter().all(|&d| d > 0 && d == steps[0]) {
                return Err(format!("uneven steps {steps:?} were accepted"));
            }
            Ok(true)
        },
    );
}

/// The profile parser on mutated profiles.
#[test]
fn profile_parser_never_panics() {
    let base = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/profiles/line-inspection-realtime.toml"
    ))
    .unwrap();
    campaign("profile parser", mutated(base), 256, |b| {
        let text = String::from_utf8_lossy(b);
        Ok(acceval::grade::profile::Profile::parse(&text, "fuzz.toml").is_ok())
    });
}

/// Any change to any file of a report folder is found by verify, and never panics it.
#[test]
fn verify_finds_every_edit() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2");
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
    }
    let names = ["report.json", "manifest.json", "samples.csv", "report.md"];
    let originals: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(dir.path().join(n)).unwrap())
        .collect();
    let strat = (0..names.len()).prop_flat_map(move |w| {
        mutated(originals[w].clone()).prop_map(move |b| {
            let mut v = vec![w as u8];
            v.extend(b);
            v
        })
    });
    campaign("report folder (verify)", strat, 48, |v| {
        let (w, b) = (v[0] as usize, &v[1..]);
        let p = dir.path().join(names[w]);
        let orig = std::fs::read(&p).unwrap();
        std::fs::write(&p, b).unwrap();
        let r = acceval::grade::verify::verify(dir.path(), None);
        std::fs::write(&p, &orig).unwrap();
        match r {
            _ if b == orig.as_slice() => Ok(true),
            Ok(v) if v.problems.is_empty() => {
                Err(format!("an edit of {} went unnoticed", names[w]))
            }
            // Found: a problem listed, or an unreadable manifest refused.
            _ => Ok(false),
        }
    });
}

/// Mutated models through the real binary, engine included: exit 0, 1 or 2 with one
/// message, never a panic (101), an abort (134) or a hang (60 s).
#[test]
fn mutated_models_through_the_binary_are_clean() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let n = cases(160) / 4;
    let mut runner = TestRunner::deterministic();
    let strat = any_model();
    let dir = tempfile::tempdir().unwrap();
    let (mut codes, mut bad) = ([0usize; 3], Vec::new());
    for i in 0..n {
        let b = strat.new_tree(&mut runner).unwrap().current();
        let p = file(dir.path(), &format!("m{i}.onnx"), &b);
        let out = common::bin()
            .args(["run", "--model", p.to_str().unwrap(), "--runs", "1"])
            .env("ACCEVAL_MAX_TENSOR_BYTES", (1u64 << 30).to_string())
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(c @ 0..=2) if !err.contains("panicked at") => codes[c as usize] += 1,
            c => bad.push(format!(
                "case {i} ({}): exit {c:?} (None: killed after 60 s)\n{err}",
                p.display()
            )),
        }
    }
    eprintln!(
        "| run (binary, engine included) | {n} | {} ok + {} NaN/Inf | {} | {} |",
        codes[0],
        codes[1],
        codes[2],
        bad.len()
    );
    if !bad.is_empty() {
        // Keep the models that broke it.
        let _ = dir.keep();
        panic!("{bad:#?}");
    }
}
