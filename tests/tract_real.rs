//! The `cpu` backend (tract) on what real exporters write, through the real binary:
//! value_info in the exporter's own symbols that conflicts with the concrete shapes given
//! (ultralytics' dynamic YOLOv8 export: "Impossible to unify Sym(batch) with Val(1)"), an
//! FP16 graph (FP16 storage, FP32 compute where tract has no FP16 arithmetic), and
//! `--threads` recorded in the session options. Each output is checked against values
//! computed here.

use std::path::Path;

use acceval::model::build::{GraphBuilder, node, tensor_raw};
use acceval::model::onnx::{
    DataType, DimensionProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};
use ndarray::{Array2, ArrayD};
use ndarray_npy::{NpzReader, WriteNpyExt};
use serde_json::Value;

mod common;
use common::acceval;

/// A value whose dims are numbers or exporter symbols ("batch").
fn vi(name: &str, dt: DataType, dims: &[&str]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: dt.0,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| match d.parse::<i64>() {
                            Ok(v) => DimensionProto {
                                dim_value: Some(v),
                                dim_param: None,
                            },
                            Err(_) => DimensionProto {
                                dim_value: None,
                                dim_param: Some(d.to_string()),
                            },
                        })
                        .collect(),
                }),
            }),
            ..Default::default()
        }),
    }
}

/// W[8,4] with w[i][j] = (i·4 + j − 16) / 8.
fn weights() -> Vec<f32> {
    (0..32).map(|k| (k as f32 - 16.0) / 8.0).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// x[batch, 8] → MatMul W → Relu → y[batch, 4], in `dt` (FP16 casts at the edges), with
/// value_info and output in the exporter's symbols.
fn model(dt: DataType) -> Vec<u8> {
    let w = weights();
    let w_bytes = if dt == DataType::FLOAT16 {
        w.iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect()
    } else {
        f32_bytes(&w)
    };
    let mut g = GraphBuilder::new("exported").init(tensor_raw("W", dt, &[8, 4], w_bytes));
    let x = if dt == DataType::FLOAT16 {
        g = g.node(node(
            "Cast",
            &["x"],
            &["xh"],
            vec![acceval::model::build::attr(
                "to",
                acceval::model::build::Attr::Int(10),
            )],
        ));
        "xh"
    } else {
        "x"
    };
    g = g.node(node("MatMul", &[x, "W"], &["m"], vec![])).node(node(
        "Relu",
        &["m"],
        &["r"],
        vec![],
    ));
    let out = if dt == DataType::FLOAT16 {
        g = g.node(node(
            "Cast",
            &["r"],
            &["y"],
            vec![acceval::model::build::attr(
                "to",
                acceval::model::build::Attr::Int(1),
            )],
        ));
        "y"
    } else {
        g = g.node(node("Identity", &["r"], &["y"], vec![]));
        "y"
    };
    let mut m = g.model(17);
    let graph = m.graph.as_mut().unwrap();
    graph.input.push(vi("x", DataType::FLOAT, &["batch", "8"]));
    graph.output.push(vi(out, DataType::FLOAT, &["batch", "4"]));
    graph.value_info.push(vi("m", dt, &["batch", "4"]));
    graph.value_info.push(vi("r", dt, &["batch", "4"]));
    prost::Message::encode_to_vec(&m)
}

/// x[1, 8] = 0.1·(k + 1).
fn input(dir: &Path) -> (std::path::PathBuf, Array2<f32>) {
    let x = Array2::from_shape_fn((1, 8), |(_, k)| 0.1 * (k as f32 + 1.0));
    let p = dir.join("x.npy");
    x.write_npy(std::fs::File::create(&p).unwrap()).unwrap();
    (p, x)
}

fn expected(x: &Array2<f32>) -> Vec<f32> {
    let w = Array2::from_shape_vec((8, 4), weights()).unwrap();
    x.dot(&w).iter().map(|v| v.max(0.0)).collect()
}

/// `acceval run` on the cpu backend: the session options and the output y.
fn run_cpu(model: &[u8], extra: &[&str]) -> (Value, Vec<f32>, Array2<f32>) {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("model.onnx");
    std::fs::write(&m, model).unwrap();
    let (xp, x) = input(dir.path());
    let out = dir.path().join("out.npz");
    let mut args = vec![
        "run".to_string(),
        "--model".into(),
        m.display().to_string(),
        "--input".into(),
        format!("x={}", xp.display()),
        "--output".into(),
        out.display().to_string(),
        "--runs".into(),
        "1".into(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = acceval(&a);
    assert_eq!(code, 0, "run failed: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let mut npz = NpzReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let y: ArrayD<f32> = npz.by_name("y").unwrap();
    (
        v["session"]["options"].clone(),
        y.iter().copied().collect(),
        x,
    )
}

#[test]
fn symbolic_value_info_does_not_stop_concrete_shapes() {
    let (opts, y, x) = run_cpu(&model(DataType::FLOAT), &[]);
    let want = expected(&x);
    for (a, b) in y.iter().zip(&want) {
        assert!((a - b).abs() < 1e-5, "{y:?} vs {want:?}");
    }
    let vi = opts["value_info"].as_str().unwrap_or_default();
    assert!(vi.contains("2 entries ignored"), "{opts}");
    assert_eq!(opts["input_shape.x"], "[1, 8]", "{opts}");
}

#[test]
fn fp16_runs_as_fp16_storage_fp32_compute() {
    let (opts, y, x) = run_cpu(&model(DataType::FLOAT16), &["--threads", "2"]);
    // The weights are exact in FP16 (multiples of 1/8). Computed in FP32, y is x·W to FP32
    // precision; computed in FP16 (the model's casts honoured), x and every partial sum
    // would be rounded to FP16 (relative 4.9e-4), far outside 1e-5.
    let want = expected(&x);
    let tol = if cfg!(target_arch = "aarch64") {
        2e-3
    } else {
        1e-5
    };
    for (a, b) in y.iter().zip(&want) {
        assert!((a - b).abs() <= tol * b.abs().max(1.0), "{y:?} vs {want:?}");
    }
    let note = opts["fp16"].as_str().unwrap_or_default();
    if cfg!(target_arch = "aarch64") {
        assert!(!note.is_empty(), "{opts}");
    } else {
        assert!(note.starts_with("FP16 storage, FP32 compute"), "{opts}");
    }
    assert!(
        opts["threads"]
            .as_str()
            .is_some_and(|t| t.starts_with("2 (--threads")),
        "{opts}"
    );
}

#[test]
fn threads_default_to_every_core() {
    let (opts, _, _) = run_cpu(&model(DataType::FLOAT), &[]);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t = opts["threads"].as_str().unwrap_or_default();
    assert!(
        t.starts_with(&format!("{cores} (default: all {cores} cores")),
        "{opts}"
    );
}

/// An ONNX LSTM whose initial state is a graph input (silero-vad's h and c): every run
/// starts from the state given. tract builds it as a streaming Scan that carries its hidden
/// state over to the next run unless told not to, so the second of two identical runs
/// came out different (relative L2 0.5 on silero-vad v6 before the fix).
#[test]
fn recurrent_state_does_not_leak_between_runs() {
    use acceval::backend::{self, BackendSpec, LoadOptions};
    use acceval::model::build::tensor_f32;
    use acceval::model::tensor::{HostTensor, TensorData};
    let g = GraphBuilder::new("lstm")
        .input("x", DataType::FLOAT, &[3, 1, 2])
        .input("h0", DataType::FLOAT, &[1, 1, 4])
        .input("c0", DataType::FLOAT, &[1, 1, 4])
        .init(tensor_f32("W", &[1, 16, 2], 1))
        .init(tensor_f32("R", &[1, 16, 4], 2))
        .node(node(
            "LSTM",
            &["x", "W", "R", "", "", "h0", "c0"],
            &["y", "hn", "cn"],
            vec![acceval::model::build::attr(
                "hidden_size",
                acceval::model::build::Attr::Int(4),
            )],
        ))
        .output("y", DataType::FLOAT, &[3, 1, 1, 4])
        .output("hn", DataType::FLOAT, &[1, 1, 4])
        .output("cn", DataType::FLOAT, &[1, 1, 4]);
    let w = common::write(g, 14);
    let spec: BackendSpec = "cpu".parse().unwrap();
    let mut s = backend::load(&w.path, &spec, &LoadOptions::default()).expect("load");
    let t = |name: &str, shape: &[usize], v: f32| HostTensor {
        name: name.into(),
        data: TensorData::F32(ndarray::ArrayD::from_elem(shape, v)),
    };
    let inputs = [
        t("x", &[3, 1, 2], 0.5),
        t("h0", &[1, 1, 4], 0.2),
        t("c0", &[1, 1, 4], -0.1),
    ];
    let first = s.run(&inputs).expect("run 1");
    let second = s.run(&inputs).expect("run 2");
    for (a, b) in first.iter().zip(&second) {
        let (TensorData::F32(a), TensorData::F32(b)) = (&a.data, &b.data) else {
            panic!("FP32 outputs")
        };
        assert_eq!(
            a, b,
            "output '{}' changed between identical runs",
            first[0].name
        );
    }
    let opts = &s.info().options;
    assert!(opts.contains_key("recurrent_state"), "{opts:?}");
}
