//! `run` (and the other commands that load a model into an engine) on hostile models and
//! inputs: each case from the bad-input campaign is exit 2 with one message, never a panic
//! (101), an abort (134) or a silent substitution of generated data.

mod common;

use std::io::Write;

use acceval::model::build::{Attr, GraphBuilder, attr, node, tensor_f32, tensor_i64};
use acceval::model::onnx::DataType;
use common::*;

const F: DataType = DataType::FLOAT;

/// Runs `acceval ARGS` with a 1 GiB tensor budget; asserts a clean exit 2 naming `want`.
fn clean(args: &[&str], want: &str) -> String {
    let out = bin()
        .args(args)
        .env("ACCEVAL_MAX_TENSOR_BYTES", (1u64 << 30).to_string())
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(code, 2, "{args:?}: exit {code}\n{err}");
    // An engine's panic is caught and named; the process never prints a panic report.
    assert!(!err.contains("thread '"), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: expected '{want}' in:\n{err}");
    err
}

fn run_model(g: GraphBuilder, extra: &[&str], want: &str) -> String {
    let w = write(g, 17);
    let mut a = vec!["run", "--model", w.path.to_str().unwrap(), "--runs", "1"];
    a.extend_from_slice(extra);
    clean(&a, want)
}

#[test]
fn constant_of_shape_to_1e12_elements_is_refused_before_the_engine_allocates() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1])
        .init(tensor_i64("s", &[2], &[1_000_000, 1_000_000]))
        .node(node("ConstantOfShape", &["s"], &["c"], vec![]))
        .node(node("Add", &["c", "x"], &["y"], vec![]))
        .output("y", F, &[1_000_000, 1_000_000]);
    run_model(g, &[], "more than the 1073741824 bytes");
}

#[test]
fn expand_to_1e12_elements_is_refused() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 1])
        .init(tensor_i64("s", &[2], &[1_000_000, 1_000_000]))
        .node(node("Expand", &["x", "s"], &["y"], vec![]))
        .output("y", F, &[1_000_000, 1_000_000]);
    run_model(g, &[], "would produce");
}

#[test]
fn an_input_of_1e12_elements_is_refused_before_it_is_generated() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1_000_000, 1_000_000])
        .node(node("Relu", &["x"], &["y"], vec![]))
        .output("y", F, &[1_000_000, 1_000_000]);
    run_model(g, &[], "input 'x'");
}

#[test]
fn conv_with_stride_zero_is_a_clean_error() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 1, 8, 8])
        .init(tensor_f32("w", &[1, 1, 3, 3], 1))
        .node(node(
            "Conv",
            &["x", "w"],
            &["y"],
            vec![attr("strides", Attr::Ints(vec![0, 0]))],
        ))
        .output_unshaped("y", F);
    // Refused by the admission check (tract divided by zero before).
    let e = run_model(
        g,
        &[],
        "stride 0 on spatial axis 0 (strides must be positive)",
    );
    assert!(e.contains("the model is malformed"), "{e}");
}

/// An attribute no opset of the operator defines: ONNX's checker and ONNX Runtime refuse it;
/// tract ignored it, and a Conv whose `strides` was misspelt ran at stride 1 (a 6x6 output
/// where the model meant 3x3), exit 0. Refused on every backend before the engine, with the
/// nearest name.
#[test]
fn an_attribute_the_operator_does_not_define_is_refused_on_every_backend() {
    let conv = |name: &str, value: Attr| {
        GraphBuilder::new("g")
            .input("x", F, &[1, 1, 8, 8])
            .init(tensor_f32("w", &[1, 1, 3, 3], 1))
            .node(node("Conv", &["x", "w"], &["y"], vec![attr(name, value)]))
            .output_unshaped("y", F)
    };
    let relu = GraphBuilder::new("g")
        .input("x", F, &[1, 4])
        .node(node(
            "Relu",
            &["x"],
            &["y"],
            vec![attr("alpha", Attr::Float(0.1))],
        ))
        .output_unshaped("y", F);
    let cases = [
        (
            write(conv("stride", Attr::Ints(vec![2, 2])), 17),
            "node 'Conv_y' (Conv) has the attribute 'stride', which no opset of Conv defines: ONNX's checker and ONNX Runtime refuse it, and tract would ignore it; did you mean 'strides'? rename or remove it",
        ),
        (
            write(conv("1ernel_shape", Attr::Ints(vec![3, 3])), 17),
            "did you mean 'kernel_shape'?",
        ),
        (
            write(relu, 17),
            "(Relu) has the attribute 'alpha', which no opset of Relu defines: ONNX's checker and ONNX Runtime refuse it, and tract would ignore it; Relu takes no attributes at opset 17; remove it",
        ),
        // Defined at another opset than the model's: opset 13 moved Squeeze's `axes` to an
        // input, and tract, ignoring the attribute, squeezed every unit dimension ([3, 5]
        // where opset 11 means [3, 1, 5]).
        (
            write(squeeze(), 13),
            "node 'Squeeze_y' (Squeeze) has the attribute 'axes', which Squeeze defines in opsets 1 to 12 but not at the model's opset 13: ONNX's checker and ONNX Runtime refuse it, and tract would ignore it; declare an opset that defines it, or write the node as Squeeze's schema at opset 13 does (see the operator's changelog)",
        ),
        (
            write(relu_consumed(), 17),
            "(Relu) has the attribute 'consumed_inputs', which Relu defines in opsets 1 to 5 but not at the model's opset 17",
        ),
    ];
    let mut backends = vec!["cpu"];
    if ort_available() {
        backends.push("ort:cpu");
    }
    for (w, want) in &cases {
        for b in &backends {
            let m = w.path.to_str().unwrap();
            let e = clean(&["run", "--model", m, "--backend", b], want);
            assert!(e.contains("the model is malformed"), "{e}");
        }
    }
    // The attributes the schema in force defines are taken: opset 1's `consumed_inputs` on
    // Relu, and opset 11's `axes` on Squeeze, which squeezes only axis 1.
    let w = write(relu_consumed(), 1);
    let (code, _, err) = acceval(&["run", "--model", w.path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let w = write(squeeze(), 11);
    for b in &backends {
        let m = w.path.to_str().unwrap();
        let (code, out, err) = acceval(&["run", "--model", m, "--backend", b]);
        assert_eq!(code, 0, "{b}: {err}");
        assert!(out.contains("[3x1x5]"), "{b}: {out}");
    }
}

/// Relu with opset 1's attribute `consumed_inputs` (removed at opset 6).
fn relu_consumed() -> GraphBuilder {
    GraphBuilder::new("g")
        .input("x", F, &[1, 4])
        .node(node(
            "Relu",
            &["x"],
            &["y"],
            vec![attr("consumed_inputs", Attr::Ints(vec![0]))],
        ))
        .output_unshaped("y", F)
}

/// Squeeze of axis 0 by the attribute `axes` (opsets 1 to 12) on a [1, 3, 1, 5] input.
fn squeeze() -> GraphBuilder {
    GraphBuilder::new("g")
        .input("x", F, &[1, 3, 1, 5])
        .node(node(
            "Squeeze",
            &["x"],
            &["y"],
            vec![attr("axes", Attr::Ints(vec![0]))],
        ))
        .output_unshaped("y", F)
}

/// Defects of a graph's wiring that ONNX's checker refuses and that tract met as a panic
/// (an index out of range, a missing key) or, for a name written twice, ran with whichever
/// writer it kept: each is refused before any engine loads the model, naming the node.
#[test]
fn a_graph_miswired_is_refused_before_the_engine_naming_the_node() {
    let relu = |i: &str, o: &str| node("Relu", &[i], &[o], vec![]);
    let w = || tensor_f32("w", &[1, 1, 3, 3], 1);
    let cases: [(&str, GraphBuilder, &str); 4] = [
        (
            "an output nothing produces",
            GraphBuilder::new("g")
                .input("x", F, &[1, 4])
                .node(relu("x", "r"))
                .output("nowhere", F, &[1, 4]),
            "output 'nowhere' is produced by no node, input or initializer",
        ),
        (
            "an input nothing produces",
            GraphBuilder::new("g")
                .input("x", F, &[1, 4])
                .node(relu("missing", "y"))
                .output_unshaped("y", F),
            "node 'Relu_y' (Relu) reads 'missing', which no node",
        ),
        (
            "a required input left empty",
            GraphBuilder::new("g")
                .input("x", F, &[1, 1, 8, 8])
                .init(w())
                .node(node("Conv", &["x", ""], &["y"], vec![]))
                .output_unshaped("y", F),
            "(Conv) leaves its input 1 empty, which Conv requires",
        ),
        (
            "a name written twice",
            GraphBuilder::new("g")
                .input("x", F, &[1, 4])
                .node(relu("x", "y"))
                .node(node("Sigmoid", &["x"], &["y"], vec![]))
                .output_unshaped("y", F),
            "(Sigmoid) writes 'y', which a graph input, an initializer or another node already defines",
        ),
    ];
    let mut backends = vec!["cpu"];
    if ort_available() {
        backends.push("ort:cpu");
    }
    for (what, g, want) in cases {
        let m = write(g, 17);
        for b in &backends {
            let e = clean(
                &[
                    "run",
                    "--backend",
                    b,
                    "--model",
                    m.path.to_str().unwrap(),
                    "--runs",
                    "1",
                ],
                want,
            );
            assert!(e.contains("the model is malformed"), "{what} on {b}: {e}");
        }
    }
}

#[test]
fn a_negative_shape_is_a_clean_error() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 4])
        .node(node("Relu", &["x"], &["y"], vec![]))
        .output_unshaped("y", F);
    run_model(g, &["--shape", "x:1x-3"], "negative");
}

/// Given inputs are used or the run fails: never replaced by generated data.
#[test]
fn given_inputs_that_cannot_be_read_or_matched_are_errors() {
    let g = || {
        GraphBuilder::new("g")
            .input("x", F, &[1, 4])
            .node(node("Relu", &["x"], &["y"], vec![]))
            .output("y", F, &[1, 4])
    };
    let w = write(g(), 17);
    let dir = w.dir.path();
    // A well-formed .npz whose arrays are named after no input.
    let npz = dir.join("other.npz");
    let py = python_with("numpy", "pip install numpy");
    let made = py.as_ref().is_some_and(|py| {
        std::process::Command::new(py)
            .args([
                "-c",
                &format!(
                    "import numpy as np; np.savez('{}', z=np.zeros((1,4), np.float32))",
                    npz.display()
                ),
            ])
            .status()
            .is_ok_and(|s| s.success())
    });
    if made {
        clean(
            &[
                "run",
                "--model",
                w.path.to_str().unwrap(),
                "--input",
                npz.to_str().unwrap(),
            ],
            "none named like the model's inputs",
        );
        // The same archive truncated.
        let b = std::fs::read(&npz).unwrap();
        let cut = dir.join("cut.npz");
        std::fs::write(&cut, &b[..b.len() / 2]).unwrap();
        clean(
            &[
                "run",
                "--model",
                w.path.to_str().unwrap(),
                "--input",
                cut.to_str().unwrap(),
            ],
            "not a readable .npz",
        );
    }
    // An .npy whose header declares a huge shape over a tiny body.
    let npy = dir.join("x.npy");
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }";
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut f = std::fs::File::create(&npy).unwrap();
    f.write_all(b"\x93NUMPY\x01\x00").unwrap();
    f.write_all(&(h.len() as u16).to_le_bytes()).unwrap();
    f.write_all(h.as_bytes()).unwrap();
    f.write_all(&[0u8; 16]).unwrap();
    drop(f);
    clean(
        &[
            "run",
            "--model",
            w.path.to_str().unwrap(),
            "--input",
            &format!("x={}", npy.display()),
        ],
        "x.npy",
    );
    // A second model input left out of the given files.
    let two = GraphBuilder::new("g")
        .input("a", F, &[1, 4])
        .input("b", F, &[1, 4])
        .node(node("Add", &["a", "b"], &["y"], vec![]))
        .output("y", F, &[1, 4]);
    let w2 = write(two, 17);
    let a = w2.dir.path().join("a.npy");
    clean(
        &[
            "run",
            "--model",
            w2.path.to_str().unwrap(),
            "--input",
            &format!("a={}", npy_of_ones(&a)),
        ],
        "input 'b' is in none of the given files",
    );
}

/// Writes a (1, 4) float32 .npy of ones at `p`; returns its path.
fn npy_of_ones(p: &std::path::Path) -> String {
    let body: Vec<u8> = (0..4).flat_map(|_| 1f32.to_le_bytes()).collect();
    std::fs::write(p, npy_bytes("<f4", "(1, 4)", &body)).unwrap();
    p.display().to_string()
}

/// A classifier whose outputs are NaN: 0 / 0, averaged per channel.
fn nan_classifier() -> GraphBuilder {
    GraphBuilder::new("g")
        .input("x", F, &[1, 3, 224, 224])
        .node(node("Sub", &["x", "x"], &["z"], vec![]))
        .node(node("Div", &["z", "z"], &["n"], vec![]))
        .node(node("GlobalAveragePool", &["n"], &["y"], vec![]))
        .output("y", F, &[1, 3, 1, 1])
}

fn png(p: &std::path::Path, w: u32, h: u32) -> String {
    image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 9]))
        .save(p)
        .unwrap();
    p.display().to_string()
}

/// Task runs never turn NaN outputs into a class, a box or a forecast.
#[test]
fn a_task_run_on_nan_outputs_fails_naming_the_output() {
    let w = write(nan_classifier(), 17);
    let img = png(&w.dir.path().join("a.png"), 64, 48);
    let m = w.path.to_str().unwrap();
    clean(
        &[
            "run",
            "--model",
            m,
            "--task",
            "classification",
            "--image",
            &img,
        ],
        "holds 3 NaN and 0 Inf",
    );
}

#[test]
fn truncated_and_elongated_images_are_clean_errors() {
    let w = write(nan_classifier(), 17);
    let dir = w.dir.path();
    let m = w.path.to_str().unwrap();
    let mut jpg = Vec::new();
    image::RgbImage::from_fn(300, 200, |x, y| image::Rgb([x as u8, y as u8, 9]))
        .write_to(
            &mut std::io::Cursor::new(&mut jpg),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    let cut = dir.join("cut.jpg");
    std::fs::write(&cut, &jpg[..jpg.len() * 2 / 3]).unwrap();
    let args = |f: &str| {
        [
            "run",
            "--model",
            m,
            "--task",
            "classification",
            "--image",
            f,
        ]
        .map(String::from)
    };
    let run = |f: &str, want: &str| {
        let a = args(f);
        clean(&a.iter().map(String::as_str).collect::<Vec<_>>(), want)
    };
    run(cut.to_str().unwrap(), "truncated or corrupt JPEG");
    let strip = png(&dir.join("strip.png"), 20_000, 1);
    run(&strip, "no more elongated than 32:1");
}

#[test]
fn a_series_with_a_gap_or_an_impossible_value_is_a_clean_error() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 4, 8])
        .node(node(
            "ReduceMean",
            &["x"],
            &["y"],
            vec![attr("axes", Attr::Ints(vec![1, 2]))],
        ))
        .output("y", F, &[1, 1, 1]);
    let w = write(g, 17);
    let m = w.path.to_str().unwrap();
    let mut rows = String::from("timestamp,load_mw,temperature_c,humidity_pct\n");
    for h in [0, 1, 2, 4, 5] {
        rows.push_str(&format!("2026-01-05T{h:02}:00,500,3,70\n"));
    }
    let gap = w.dir.path().join("gap.csv");
    std::fs::write(&gap, &rows).unwrap();
    let huge = w.dir.path().join("huge.csv");
    std::fs::write(&huge, rows.replacen("500", "1e308", 1)).unwrap();
    for (f, want) in [
        (&gap, "fill the gap"),
        (&huge, "outside its physical range"),
    ] {
        clean(
            &[
                "run",
                "--model",
                m,
                "--task",
                "forecasting",
                "--series",
                f.to_str().unwrap(),
            ],
            want,
        );
    }
}

/// The cases issue 27 found on the run path, each on tract and ONNX Runtime: what `inspect`
/// refuses is refused before an engine sees the model, in well under a second.
#[test]
fn what_inspect_refuses_is_refused_before_any_engine_loads_it() {
    let conv = |attrs: Vec<acceval::model::onnx::AttributeProto>| {
        GraphBuilder::new("g")
            .input("x", F, &[1, 1, 8, 8])
            .init(tensor_f32("w", &[1, 1, 3, 3], 1))
            .node(node("Conv", &["x", "w"], &["y"], attrs))
            .output_unshaped("y", F)
    };
    let relu = GraphBuilder::new("g")
        .input("x", F, &[1, 4])
        .node(node("Relu", &["x"], &["y"], vec![]))
        .output("y", F, &[1, 4]);
    let cases = [
        (
            write(conv(vec![attr("pads", Attr::Ints(vec![1 << 40; 4]))]), 17),
            "more than a 64-bit count holds",
        ),
        (
            // The output would be 8 + 0 − 21 + 1 < 1: tract returned an empty tensor, exit 0.
            write(conv(vec![attr("dilations", Attr::Ints(vec![10, 10]))]), 17),
            "smaller than the kernel (21 after dilation)",
        ),
        (
            // tract ran it with today's semantics, exit 0.
            write(relu, 999),
            "opset 999, which no ONNX release defines",
        ),
    ];
    let mut backends = vec!["cpu"];
    if ort_available() {
        backends.push("ort:cpu");
    }
    for (w, want) in &cases {
        for b in &backends {
            let t = std::time::Instant::now();
            let err = clean(
                &["run", "--model", w.path.to_str().unwrap(), "--backend", b],
                want,
            );
            assert!(err.contains("could not load"), "{err}");
            assert!(t.elapsed().as_secs_f64() < 10.0, "{b}: {:?}", t.elapsed());
        }
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_as_external_data_is_refused_on_the_run_path_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = std::ffi::CString::new(dir.path().join("c.bin").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let g = GraphBuilder::new("g")
        .input("x", F, &[4])
        .init(acceval::model::build::tensor_external(
            "c",
            F,
            &[4],
            "c.bin",
            0,
            16,
        ))
        .node(node("Add", &["x", "c"], &["y"], vec![]))
        .output("y", F, &[4]);
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, g.encode(17)).unwrap();
    // tract blocked on the FIFO for good before.
    clean(
        &["run", "--model", path.to_str().unwrap(), "--backend", "cpu"],
        "not a regular file",
    );
}

/// A graph tract converts too slowly (a 100,000-node Relu chain did not load in 120 s) ends
/// at the load budget with exit 2 naming the stage and the flag, not a hang.
#[test]
fn a_load_past_its_budget_ends_naming_the_stage() {
    let mut g = GraphBuilder::new("g").input("t0", F, &[1, 4]);
    let n = 100_000;
    for i in 0..n {
        g = g.node(node(
            "Relu",
            &[&format!("t{i}")],
            &[&format!("t{}", i + 1)],
            vec![],
        ));
    }
    let w = write(g.output("t100000", F, &[1, 4]), 17);
    let t = std::time::Instant::now();
    let err = clean(
        &[
            "run",
            "--model",
            w.path.to_str().unwrap(),
            "--backend",
            "cpu",
            "--load-timeout",
            "2",
        ],
        "did not finish within 2 s (--load-timeout",
    );
    assert!(err.contains("tract's IR conversion"), "{err}");
    assert!(t.elapsed().as_secs_f64() < 20.0, "{:?}", t.elapsed());
    // ONNX Runtime loads the chain (6.1 s in a release build here): past a 1 s budget its
    // session creation is abandoned the same way.
    if ort_available() {
        let err = clean(
            &[
                "run",
                "--model",
                w.path.to_str().unwrap(),
                "--backend",
                "ort:cpu",
                "--load-timeout",
                "1",
            ],
            "did not finish within 1 s (--load-timeout",
        );
        assert!(err.contains("ONNX Runtime's session creation"), "{err}");
    }
}

/// An optional input omitted by an empty name (`Conv [X, W, ""]`, as exporters write an
/// absent bias) is the same input as one left out: tract indexed the list by its length and
/// panicked; now it runs and gives the outputs of the Conv written without it.
#[test]
fn an_optional_input_given_as_an_empty_name_runs_as_if_omitted() {
    let conv = |inputs: &[&str]| {
        GraphBuilder::new("g")
            .input("x", F, &[1, 1, 8, 8])
            .init(tensor_f32("w", &[2, 1, 3, 3], 1))
            .node(node("Conv", inputs, &["y"], vec![]))
            .output_unshaped("y", F)
    };
    let stats = |g: GraphBuilder| {
        let m = write(g, 17);
        let (code, out, err) = acceval(&[
            "run",
            "--model",
            m.path.to_str().unwrap(),
            "--runs",
            "1",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["outputs"].clone()
    };
    let with_empty = stats(conv(&["x", "w", ""]));
    assert_eq!(with_empty, stats(conv(&["x", "w"])));
    assert_eq!(with_empty[0]["shape"], serde_json::json!([1, 2, 6, 6]));
}

/// A model without inputs is analysed as strictly as one with them: a ConstantOfShape to a
/// negative dim is refused, where tract failed an assertion.
#[test]
fn a_model_without_inputs_is_checked_as_strictly() {
    let g = GraphBuilder::new("g")
        .init(tensor_i64("s", &[2], &[4, -1]))
        .node(node("ConstantOfShape", &["s"], &["c"], vec![]))
        .node(node("Relu", &["c"], &["y"], vec![]))
        .output_unshaped("y", F);
    run_model(g, &[], "has a negative dim -1");
}

/// Flatten's axis must lie in [-rank, rank]; tract sliced the dims with whatever it got
/// (2^32 and i64::MIN came from the mutation campaign) and panicked.
#[test]
fn a_flatten_axis_out_of_range_is_refused() {
    for axis in [4_294_967_296i64, i64::MIN, 5, -5] {
        let g = GraphBuilder::new("g")
            .input("x", F, &[1, 2, 3, 4])
            .node(node(
                "Flatten",
                &["x"],
                &["y"],
                vec![attr("axis", Attr::Int(axis))],
            ))
            .output_unshaped("y", F);
        run_model(g, &[], &format!("axis {axis} is outside [-4, 4]"));
    }
}

/// Found by a probe of 67 hand-made defective models (2026-12-07): tract spun for 15.6 s on a
/// Transpose perm [0, 0], stopped on a caught panic (a Range of delta 0, a Slice step of
/// -2^63, an integer divisor of 0, a ScatterElements index outside the axis), and ran a TopK
/// of k above the axis to exit 0 (ONNX Runtime refuses it). Each is now refused before the
/// engine, naming the node.
#[test]
fn defects_the_engine_panicked_or_spun_on_are_refused_naming_the_node() {
    const I: DataType = DataType::INT64;
    let x = |g: GraphBuilder| g.input("x", F, &[1, 8]);
    let cases: Vec<(GraphBuilder, &str)> = vec![
        (
            x(GraphBuilder::new("g"))
                .node(node(
                    "Transpose",
                    &["x"],
                    &["y"],
                    vec![attr("perm", Attr::Ints(vec![0, 0]))],
                ))
                .output_unshaped("y", F),
            "node 'Transpose_y' (Transpose): perm names axis 0 twice",
        ),
        (
            GraphBuilder::new("g")
                .init(tensor_i64("s", &[], &[0]))
                .init(tensor_i64("l", &[], &[10]))
                .init(tensor_i64("d", &[], &[0]))
                .node(node("Range", &["s", "l", "d"], &["y"], vec![]))
                .output_unshaped("y", I),
            "node 'Range_y' (Range): delta is 0",
        ),
        (
            x(GraphBuilder::new("g"))
                .init(tensor_i64("s", &[1], &[0]))
                .init(tensor_i64("e", &[1], &[8]))
                .init(tensor_i64("a", &[1], &[1]))
                .init(tensor_i64("st", &[1], &[i64::MIN]))
                .node(node("Slice", &["x", "s", "e", "a", "st"], &["y"], vec![]))
                .output_unshaped("y", F),
            "node 'Slice_y' (Slice): step -2^63",
        ),
        (
            GraphBuilder::new("g")
                .input("x", I, &[4])
                .init(tensor_i64("z", &[4], &[3, 0, 1, 2]))
                .node(node("Div", &["x", "z"], &["y"], vec![]))
                .output_unshaped("y", I),
            "node 'Div_y' (Div): the integer divisor holds 0",
        ),
        (
            x(GraphBuilder::new("g"))
                .init(tensor_i64("i", &[1, 1], &[9]))
                .init(tensor_f32("u", &[1, 1], 1))
                .node(node(
                    "ScatterElements",
                    &["x", "i", "u"],
                    &["y"],
                    vec![attr("axis", Attr::Int(1))],
                ))
                .output_unshaped("y", F),
            "node 'ScatterElements_y' (ScatterElements): index 9 is outside the 8 elements of axis 1",
        ),
        (
            x(GraphBuilder::new("g"))
                .init(tensor_i64("k", &[1], &[9]))
                .node(node("TopK", &["x", "k"], &["v", "i"], vec![]))
                .output_unshaped("v", F)
                .output_unshaped("i", I),
            "node 'TopK_v' (TopK): k = 9 is more than the 8 elements of axis 1",
        ),
    ];
    for (g, want) in cases {
        let err = run_model(g, &[], want);
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `x` (FP32, `dims`) through one `op` node with `attrs` to an unshaped output `y`.
fn one_node(
    dims: &[i64],
    op: &str,
    attrs: Vec<acceval::model::onnx::AttributeProto>,
) -> GraphBuilder {
    GraphBuilder::new("g")
        .input("x", F, dims)
        .node(node(op, &["x"], &["y"], attrs))
        .output_unshaped("y", F)
}

/// What tract answered with exit 0 or a caught panic where ONNX Runtime refuses: an Einsum
/// output label in no operand (tract returned a tensor of 3.69), an LRN of size 0, generated
/// indices (integers in [0, 10)) past a 4-row Gather table (tract's caught panic, "range
/// start index 16 out of range"), a MaxPool padded past its kernel, a float Mod without
/// fmod, an output declared with another element type than the graph's, a reflect Pad
/// longer than its axis (tract's values differed from ONNX's reference by up to 0.97), a 2-D
/// Conv with one stride (a byte flip in the campaign; tract panicked on it). Each is exit 2
/// naming the node or output, on every backend.
#[test]
fn defects_tract_answered_or_panicked_on_are_refused_naming_the_node() {
    let x = |g: GraphBuilder| g.input("x", F, &[2, 3]);
    let mut backends = vec!["cpu"];
    if ort_available() {
        backends.push("ort:cpu");
    }
    let cases: Vec<(GraphBuilder, &str)> = vec![
        (
            one_node(
                &[2, 3],
                "Einsum",
                vec![attr("equation", Attr::Str("ij->k"))],
            ),
            "node 'Einsum_y' (Einsum): output label 'k' of equation 'ij->k' appears in no operand",
        ),
        (
            one_node(&[1, 3, 4, 4], "LRN", vec![attr("size", Attr::Int(0))]),
            "node 'LRN_y' (LRN): size = 0: it must be at least 1",
        ),
        (
            GraphBuilder::new("g")
                .input("idx", DataType::INT64, &[3])
                .init(tensor_f32("table", &[4, 2], 1))
                .node(node("Gather", &["table", "idx"], &["y"], vec![]))
                .output_unshaped("y", F),
            "outside -4..=3: node 'Gather_y' (Gather) takes one of the 4 entries along axis 0",
        ),
        (
            one_node(
                &[1, 2, 4, 4],
                "MaxPool",
                vec![
                    attr("kernel_shape", Attr::Ints(vec![2, 2])),
                    attr("pads", Attr::Ints(vec![3, 3, 3, 3])),
                ],
            ),
            "node 'MaxPool_y' (MaxPool): pads[0] = 3 is not smaller than the kernel (2)",
        ),
        (
            x(GraphBuilder::new("g"))
                .init(tensor_f32("z", &[2, 3], 1))
                .node(node("Mod", &["x", "z"], &["y"], vec![]))
                .output_unshaped("y", F),
            "node 'Mod_y' (Mod): fmod = 0 on floating-point inputs",
        ),
        (
            x(GraphBuilder::new("g"))
                .node(node("Shape", &["x"], &["y"], vec![]))
                .output("y", F, &[2]),
            "output 'y' is declared FP32 but the graph produces INT64 there",
        ),
        (
            GraphBuilder::new("g")
                .input("x", F, &[1, 2, 4, 4])
                .init(tensor_i64("p", &[8], &[0, 0, 9, 9, 0, 0, 9, 9]))
                .node(node(
                    "Pad",
                    &["x", "p"],
                    &["y"],
                    vec![attr("mode", Attr::Str("reflect"))],
                ))
                .output_unshaped("y", F),
            "node 'Pad_y' (Pad): reflect pads 9 and 9 on axis 2 of input 1x2x4x4, more than its 4 elements less one",
        ),
        (
            GraphBuilder::new("g")
                .input("x", F, &[1, 2, 4, 4])
                .init(tensor_f32("w", &[2, 2, 1, 1], 1))
                .node(node(
                    "Conv",
                    &["x", "w"],
                    &["y"],
                    vec![attr("strides", Attr::Ints(vec![216]))],
                ))
                .output_unshaped("y", F),
            "node 'Conv_y' (Conv): strides has 1 value; 2 are needed for 2 spatial axes",
        ),
    ];
    for (g, want) in cases {
        let w = write(g, 17);
        let m = w.path.to_str().unwrap();
        for b in &backends {
            let err = clean(&["run", "--model", m, "--backend", b, "--seed", "3"], want);
            assert!(!err.contains("panicked"), "{b}: {err}");
        }
    }
}

/// A Loop of 10^12 iterations over a Relu: valid ONNX that no run finishes.
fn endless_loop() -> GraphBuilder {
    let body = GraphBuilder::new("body")
        .input("i", DataType::INT64, &[])
        .input("c", DataType::BOOL, &[])
        .input("h", F, &[1, 4])
        .node(node("Identity", &["c"], &["c_out"], vec![]))
        .node(node("Relu", &["h"], &["h_out"], vec![]))
        .output("c_out", DataType::BOOL, &[])
        .output("h_out", F, &[1, 4])
        .graph;
    with_loop(
        GraphBuilder::new("g").input("x", F, &[1, 4]),
        1_000_000_000_000,
        body,
    )
    .output("y", F, &[1, 4])
}

/// Forty 512×512 self-products, each squashed by a Sigmoid: 5.4 G multiply-accumulates, a
/// run tract takes well over 50 ms on.
fn matmul_chain() -> GraphBuilder {
    let mut g = GraphBuilder::new("g").input("m0", F, &[512, 512]);
    for i in 0..40 {
        let (a, p, b) = (format!("m{i}"), format!("p{i}"), format!("m{}", i + 1));
        g = g.node(node("MatMul", &[&a, &a], &[&p], vec![])).node(node(
            "Sigmoid",
            &[&p],
            &[&b],
            vec![],
        ));
    }
    g.output("m40", F, &[512, 512])
}

/// The run budget (issue 27): a Loop of 10^12 iterations ran on ONNX Runtime until killed.
/// Past `--run-timeout` ONNX Runtime is told to stop the run (its terminate flag), and a
/// run tract cannot interrupt ends the process; both exit 2 naming the budget.
#[test]
fn a_run_past_its_budget_ends_with_exit_2_naming_it() {
    let w = write(matmul_chain(), 17);
    let m = w.path.to_str().unwrap();
    let t = std::time::Instant::now();
    let budget = ["--runs", "3", "--run-timeout", "0.05"];
    let err = clean(
        &[&["run", "--model", m, "--backend", "cpu"][..], &budget].concat(),
        "did not finish within 0.05 s (--run-timeout)",
    );
    assert!(
        err.contains("tract 0.23.9 cannot interrupt a run, so acceval ended the process"),
        "{err}"
    );
    assert!(t.elapsed().as_secs_f64() < 10.0, "{:?}", t.elapsed());
    // The same model within a budget it fits runs, exit 0.
    let (code, _, err) = acceval(&["run", "--model", m, "--runs", "1", "--run-timeout", "60"]);
    assert_eq!(code, 0, "{err}");
    if !ort_available() {
        return;
    }
    let w = write(endless_loop(), 17);
    let m = w.path.to_str().unwrap();
    for command in ["run", "bench"] {
        let t = std::time::Instant::now();
        let err = clean(
            &[
                command,
                "--model",
                m,
                "--backend",
                "ort:cpu",
                "--run-timeout",
                "1",
            ],
            "stopped the run at acceval's request: one inference did not finish within 1 s (--run-timeout)",
        );
        let took = t.elapsed().as_secs_f64();
        assert!((1.0..8.0).contains(&took), "{command}: {took} s\n{err}");
    }
    // The default budget is sized from one pass through the graph (the body counted once,
    // not 10^12 times): 10 s here, so the case ends well inside 20 s.
    let t = std::time::Instant::now();
    clean(
        &["run", "--model", m, "--backend", "ort:cpu"],
        "did not finish within 10 s (the default",
    );
    let took = t.elapsed().as_secs_f64();
    assert!((10.0..18.0).contains(&took), "{took} s");
}

/// An `.npy` of int64 `values` in `shape`.
fn npy_i64(p: &std::path::Path, shape: &[usize], values: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
    let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let shape = format!("({})", dims.join(" "));
    std::fs::write(p, npy_bytes("<i8", &shape, &body)).unwrap();
    p.display().to_string()
}

/// Indices given as inputs are data: each run checks those a node takes straight from the
/// graph's inputs. tract returned five values from TopK of a 4-wide axis (exit 0) and
/// panicked on GatherND indices past their axis and on OneHot indices past the depth (an
/// all-off row in ONNX, which ONNX Runtime computes: refused on tract only).
#[test]
fn index_inputs_past_what_the_node_indexes_are_refused_before_the_run() {
    const I: DataType = DataType::INT64;
    let dir = tempfile::tempdir().unwrap();
    let mut backends = vec!["cpu"];
    if ort_available() {
        backends.push("ort:cpu");
    }
    let topk = GraphBuilder::new("g")
        .input("x", F, &[1, 4])
        .input("k", I, &[1])
        .node(node("TopK", &["x", "k"], &["v", "i"], vec![]))
        .output_unshaped("v", F)
        .output_unshaped("i", I);
    let gather_nd = GraphBuilder::new("g")
        .input("i", I, &[3, 1])
        .init(tensor_f32("w", &[4, 2], 1))
        .node(node("GatherND", &["w", "i"], &["y"], vec![]))
        .output_unshaped("y", F);
    let k = npy_i64(&dir.path().join("k.npy"), &[1], &[5]);
    let i = npy_i64(&dir.path().join("i.npy"), &[3, 1], &[0, 9, 1]);
    let x = npy_of_ones(&dir.path().join("x.npy"));
    let cases = [
        (
            topk,
            format!("k={k}"),
            "input 'k' holds 5 (element 0), outside 0..=4: node 'TopK_v' (TopK) takes a k of at most the 4 elements along axis -1",
        ),
        (
            gather_nd,
            format!("i={i}"),
            // outside -4..=3 on ONNX Runtime, 0..=3 on tract (which stops on negative ones)
            "..=3: node 'GatherND_y' (GatherND) takes at position 0 of each index tuple one of the 4 entries of axis 0",
        ),
    ];
    for (g, input, want) in cases {
        let w = write(g, 17);
        for b in &backends {
            let m = w.path.to_str().unwrap();
            let xs = format!("x={x}");
            let mut args = vec!["run", "--model", m, "--backend", b, "--input", &input];
            if input.starts_with("k=") {
                args.extend(["--input", &xs]);
            }
            let err = clean(&args, want);
            assert!(!err.contains("panicked"), "{b}: {err}");
        }
    }
    let one_hot = GraphBuilder::new("g")
        .input("i", I, &[3])
        .init(tensor_i64("d", &[], &[4]))
        .init(tensor_f32("v", &[2], 1))
        .node(node("OneHot", &["i", "d", "v"], &["y"], vec![]))
        .output_unshaped("y", F);
    let w = write(one_hot, 17);
    let m = w.path.to_str().unwrap();
    let idx = npy_i64(&dir.path().join("o.npy"), &[3], &[0, 7, 1]);
    let input = format!("i={idx}");
    refused_on_tract_run_on_ort(
        m,
        &input,
        "outside -4..=3: node 'OneHot_y' (OneHot) takes an index within its depth of 4 on tract, which stops on others",
    );
}

/// A scalar FP32 initializer.
fn scalar_f32(name: &str, v: f32) -> acceval::model::onnx::TensorProto {
    acceval::model::onnx::TensorProto {
        name: name.into(),
        data_type: F.0,
        float_data: vec![v],
        ..Default::default()
    }
}

/// `x` ([1, 8] FP32) sliced along axis 1 from 0 to 8 by `step`.
fn slice_by(step: i64) -> GraphBuilder {
    GraphBuilder::new("g")
        .input("x", F, &[1, 8])
        .init(tensor_i64("s", &[1], &[0]))
        .init(tensor_i64("e", &[1], &[8]))
        .init(tensor_i64("a", &[1], &[1]))
        .init(tensor_i64("st", &[1], &[step]))
        .node(node("Slice", &["x", "s", "e", "a", "st"], &["y"], vec![]))
        .output_unshaped("y", F)
}

/// Valid ONNX that tract 0.23.9 panicked on or answered wrongly, found by the sixth campaign
/// round and by a probe comparing tract's outputs with ONNX Runtime's: a Slice step of 2^62
/// (tract keeps steps as 32 bits: 0, a division by zero) or 2^32 + 2 (2: four elements where
/// ONNX takes one), a Mod of a shape by 2^32 + 3 (a [1, 1] shape for [4, 6]), a float Range
/// of delta 0.5 (a division by zero), Squeeze axes [-1, 0] (an index panic), a negative
/// (cropping) pad and a negative GatherND index (panics at run time), a reverse LSTM (run
/// forward: outputs off by up to 0.19). Each is exit 2 on tract naming the node and the
/// limit; ONNX Runtime runs each, exit 0.
#[test]
fn valid_onnx_tract_gets_wrong_is_refused_on_tract_and_runs_on_ort() {
    let x = || GraphBuilder::new("g").input("x", F, &[4, 6]);
    let cases: Vec<(GraphBuilder, &str)> = vec![
        (
            slice_by(1 << 62),
            "node 'Slice_y' (Slice): step 4611686018427387904 is past what tract takes: tract keeps a Slice's steps as 32-bit integers (at most 2147483647 in magnitude) and would wrap this one (to a step of 0)",
        ),
        (
            slice_by((1 << 32) + 2),
            "step 4294967298 is past what tract takes: tract keeps a Slice's steps as 32-bit integers (at most 2147483647 in magnitude) and would wrap this one (to a step of 2)",
        ),
        (
            x().init(tensor_i64("c", &[2], &[(1 << 32) + 3, (1 << 32) + 5]))
                .node(node("Shape", &["x"], &["s"], vec![]))
                .node(node("Mod", &["s", "c"], &["y"], vec![]))
                .output_unshaped("y", DataType::INT64),
            "node 'Mod_y' (Mod): the constant 4294967299 is past 32 bits, and tract's shape arithmetic casts it to 32 bits (to 3)",
        ),
        (
            GraphBuilder::new("g")
                .init(scalar_f32("a", 0.0))
                .init(scalar_f32("l", 3.0))
                .init(scalar_f32("d", 0.5))
                .node(node("Range", &["a", "l", "d"], &["y"], vec![]))
                .output_unshaped("y", F),
            "node 'Range_y' (Range): a floating-point delta of 0.5: tract sizes a Range by its delta cast to an integer (0 here) and divides by it",
        ),
        (
            GraphBuilder::new("g")
                .input("x", F, &[1, 4, 1])
                .init(tensor_i64("a", &[2], &[-1, 0]))
                .node(node("Squeeze", &["x", "a"], &["y"], vec![]))
                .output_unshaped("y", F),
            "node 'Squeeze_y' (Squeeze): axes [-1, 0] out of ascending order: tract removes the axes in reverse of the order given and stops",
        ),
        (
            x().init(tensor_i64("p", &[4], &[-1, 0, 0, -2]))
                .node(node("Pad", &["x", "p"], &["y"], vec![]))
                .output_unshaped("y", F),
            "node 'Pad_y' (Pad): a negative pad (-1): tract pads but does not crop, and its run stops; crop with a Slice instead, or use --backend ort:cpu, which runs it",
        ),
        (
            x().init(tensor_i64("i", &[2, 2], &[-1, -1, 0, -6]))
                .node(node("GatherND", &["x", "i"], &["y"], vec![]))
                .output_unshaped("y", F),
            "node 'GatherND_y' (GatherND): a negative index (-1): ONNX counts it from the end of its axis, and tract stops on it",
        ),
        (
            GraphBuilder::new("g")
                .input("x", F, &[4, 1, 2])
                .init(tensor_f32("w", &[1, 12, 2], 1))
                .init(tensor_f32("r", &[1, 12, 3], 2))
                .node(node(
                    "LSTM",
                    &["x", "w", "r"],
                    &["y"],
                    vec![
                        attr("hidden_size", Attr::Int(3)),
                        attr("direction", Attr::Str("reverse")),
                    ],
                ))
                .output_unshaped("y", F),
            "node 'LSTM_y' (LSTM): direction = reverse: tract 0.23.9 runs it forward",
        ),
    ];
    for (g, want) in cases {
        let w = write(g, 17);
        let m = w.path.to_str().unwrap();
        let err = clean(&["run", "--model", m, "--backend", "cpu"], want);
        assert!(!err.contains("panicked"), "{err}");
        if ort_available() {
            let (code, _, err) = acceval(&["run", "--model", m, "--backend", "ort:cpu"]);
            assert_eq!(code, 0, "{want}: {err}");
        }
    }
}

/// GatherND index tuples given as an input with a negative entry: ONNX counts it from the
/// end (ONNX Runtime runs it); tract stopped on it (a caught panic), so on tract the run-time
/// index check takes only 0..d.
#[test]
fn negative_gathernd_input_indices_are_refused_on_tract_only() {
    let dir = tempfile::tempdir().unwrap();
    let g = GraphBuilder::new("g")
        .input("i", DataType::INT64, &[2, 2])
        .init(tensor_f32("w", &[4, 6], 1))
        .node(node("GatherND", &["w", "i"], &["y"], vec![]))
        .output_unshaped("y", F);
    let w = write(g, 17);
    let m = w.path.to_str().unwrap();
    let idx = npy_i64(&dir.path().join("i.npy"), &[2, 2], &[0, 1, 3, -2]);
    let input = format!("i={idx}");
    refused_on_tract_run_on_ort(
        m,
        &input,
        "input 'i' holds -2 (element 3), outside 0..=5: node 'GatherND_y' (GatherND) takes at position 1 of each index tuple one of the 6 entries of axis 1 on tract, which stops on negative ones",
    );
}

/// A malformed model whose declared inputs take 3 GiB to generate (three of just under 1 GiB,
/// each within the test's tensor budget): the admission refuses it before acceval generates
/// them, on `run` and `bench` (campaign round 7: a [1, 2^31] input took 27.7 s to generate,
/// then the refusal).
#[test]
fn a_malformed_model_with_huge_inputs_is_refused_before_they_are_generated() {
    let n = (1 << 28) - 1024;
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, n])
        .input("a", F, &[1, n])
        .input("b", F, &[1, n])
        .init(tensor_i64("s", &[1], &[0]))
        .init(tensor_i64("e", &[1], &[8]))
        .init(tensor_i64("ax", &[1], &[1]))
        .init(tensor_i64("st", &[1], &[i64::MIN]))
        .node(node("Slice", &["x", "s", "e", "ax", "st"], &["y"], vec![]))
        .node(node("Add", &["a", "b"], &["z"], vec![]))
        .output_unshaped("y", F)
        .output_unshaped("z", F);
    let w = write(g, 17);
    let m = w.path.to_str().unwrap();
    for cmd in ["run", "bench"] {
        let t0 = std::time::Instant::now();
        clean(
            &[cmd, "--model", m, "--runs", "1"],
            "node 'Slice_y' (Slice): step -2^63 (its magnitude does not fit a 64-bit integer)",
        );
        let secs = t0.elapsed().as_secs_f64();
        assert!(secs < 3.0, "{cmd}: refused after {secs:.1} s");
    }
    // The conversion check generates its seeded sets (4 by default: 12 GiB here) first.
    let t0 = std::time::Instant::now();
    clean(
        &["accuracy", "--model", m, "--against", m],
        "node 'Slice_y' (Slice): step -2^63 (its magnitude does not fit a 64-bit integer)",
    );
    let secs = t0.elapsed().as_secs_f64();
    assert!(secs < 3.0, "accuracy --against: refused after {secs:.1} s");
}

/// Integer arithmetic past 32 bits is refused on tract only where tract does it on its
/// 32-bit shape integers (a Shape upstream, here through a Gather): an int64 input times
/// 2^32 + 1 is data, which tract computes in 64 bits, so it runs and its answer is exact.
#[test]
fn wide_integer_arithmetic_is_refused_on_tract_only_on_shapes() {
    let shape_times = GraphBuilder::new("g")
        .input("x", F, &[4, 6])
        .init(tensor_i64("i", &[1], &[1]))
        .init(tensor_i64("c", &[1], &[(1 << 32) + 1]))
        .node(node("Shape", &["x"], &["s"], vec![]))
        .node(node("Gather", &["s", "i"], &["d"], vec![]))
        .node(node("Mul", &["d", "c"], &["y"], vec![]))
        .output_unshaped("y", DataType::INT64);
    let w = write(shape_times, 17);
    clean(
        &[
            "run",
            "--model",
            w.path.to_str().unwrap(),
            "--backend",
            "cpu",
        ],
        "node 'Mul_y' (Mul): the constant 4294967297 is past 32 bits, and tract's shape arithmetic casts it to 32 bits (to 1)",
    );
    let dir = tempfile::tempdir().unwrap();
    let data_times = GraphBuilder::new("g")
        .input("x", DataType::INT64, &[3])
        .init(tensor_i64("c", &[1], &[(1 << 32) + 1]))
        .node(node("Mul", &["x", "c"], &["y"], vec![]))
        .output_unshaped("y", DataType::INT64);
    let w = write(data_times, 17);
    let x = npy_i64(&dir.path().join("x.npy"), &[3], &[1, -2, 3]);
    let out = dir.path().join("y.npz");
    let (code, _, err) = acceval(&[
        "run",
        "--model",
        w.path.to_str().unwrap(),
        "--backend",
        "cpu",
        "--input",
        &format!("x={x}"),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut r = ndarray_npy::NpzReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let y: ndarray::ArrayD<i64> = r.by_name("y").unwrap();
    let c = (1i64 << 32) + 1;
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        vec![c, -2 * c, 3 * c]
    );
}

/// `run` of `model` with `input`: exit 2 naming `want` on tract, exit 0 on ONNX Runtime.
fn refused_on_tract_run_on_ort(model: &str, input: &str, want: &str) {
    let err = clean(
        &[
            "run",
            "--model",
            model,
            "--backend",
            "cpu",
            "--input",
            input,
        ],
        want,
    );
    assert!(!err.contains("panicked"), "{err}");
    if ort_available() {
        let args = [
            "run",
            "--model",
            model,
            "--backend",
            "ort:cpu",
            "--input",
            input,
        ];
        let (code, _, err) = acceval(&args);
        assert_eq!(code, 0, "{err}");
    }
}
