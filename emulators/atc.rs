//! A stand-in for CANN's `atc` (Ascend Tensor Compiler): `atc --model=M.onnx --framework=5
//! --output=NAME --soc_version=SOC [--input_shape="x:1,3,224,224;..."]
//! [--precision_mode_v2=MODE | --precision_mode=MODE] [--log=LEVEL]` writes `NAME.om`, an
//! emulated `.om` (see om.rs) that the emulated `libascendcl.so` runs on the host CPU.
//!
//! Like the real ATC it needs static input shapes, refuses another framework than ONNX (5)
//! here, refuses both precision flags together, and defaults to `fp16` precision: an FP32
//! model converted without `--precision_mode_v2=origin` has its FP32 weights rounded to
//! FP16 (and, in the fp16 modes, its FP32 inputs and outputs), so the accuracy grade moves
//! as it would on the card. Operators named in `ATC_FAKE_AICPU_OPS` (default
//! NonMaxSuppression, NonZero, Unique, TopK) are reported as placed on the AI CPU.
//! `ATC_FAKE_SLEEP_MS` makes it sleep that long before it starts (a slow compile).
//! It is an emulator: its output says so, and no real device can load what it writes.

#[path = "common.rs"]
mod common;
#[path = "om.rs"]
mod om;

use std::collections::BTreeMap;
use std::path::Path;

use acceval::backend::{BackendSpec, LoadOptions};
use acceval::model::tensor::{HostTensor, TensorData};
use prost::Message;
use sha2::Digest;

fn usage() -> ! {
    eprintln!(
        "ATC (acceval emulator): atc --model=M.onnx --framework=5 --output=NAME --soc_version=SOC \\\n    [--input_shape=\"name:1,3,224,224;...\"] [--precision_mode_v2=origin|fp16|mixed_float16|cube_fp16in_fp32out|mixed_bfloat16 | --precision_mode=force_fp16|allow_fp32_to_fp16|allow_mix_precision|must_keep_origin_dtype|force_fp32] [--log=error]"
    );
    std::process::exit(1)
}

fn die(code: &str, msg: impl std::fmt::Display) -> ! {
    eprintln!("ATC run failed, Please check the detail log, Try 'atc --help' for more information");
    eprintln!("{code}: {msg}");
    std::process::exit(1)
}

/// What a precision mode does to the emulated model: (weights to FP16, FP32 I/O to FP16).
fn precision_effect(mode: &str) -> Option<(bool, bool, &'static str)> {
    Some(match mode {
        "origin" | "must_keep_origin_dtype" | "force_fp32" => {
            (false, false, "none: origin precision kept")
        }
        "fp16" | "force_fp16" | "allow_fp32_to_fp16" => (
            true,
            true,
            "fp16: FP32 weights, inputs and outputs rounded to FP16",
        ),
        "mixed_float16" | "allow_mix_precision" | "cube_fp16in_fp32out" | "mixed_bfloat16" => (
            true,
            false,
            "fp16 weights: FP32 weights rounded to FP16, FP32 inputs and outputs kept",
        ),
        _ => return None,
    })
}

fn round_tensor(t: &mut tract_onnx::pb::TensorProto) -> usize {
    if t.data_type != 1 {
        return 0;
    }
    let r = |v: f32| half::f16::from_f32(v).to_f32();
    if !t.raw_data.is_empty() {
        for c in t.raw_data.chunks_exact_mut(4) {
            let v = r(f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            c.copy_from_slice(&v.to_le_bytes());
        }
        t.raw_data.len() / 4
    } else {
        t.float_data.iter_mut().for_each(|v| *v = r(*v));
        t.float_data.len()
    }
}

/// Rounds every FP32 initializer and Constant of the graph to FP16 precision (the values an
/// FP16 engine holds), keeping FP32 storage so the emulated device runs it as is.
fn fp16_weights(onnx: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let mut m = tract_onnx::pb::ModelProto::decode(onnx).map_err(|e| e.to_string())?;
    let mut n = 0;
    if let Some(g) = m.graph.as_mut() {
        for t in &mut g.initializer {
            n += round_tensor(t);
        }
        for node in &mut g.node {
            for a in &mut node.attribute {
                if let Some(t) = a.t.as_mut() {
                    n += round_tensor(t);
                }
            }
        }
    }
    Ok((m.encode_to_vec(), n))
}

fn external_data(onnx: &[u8]) -> bool {
    tract_onnx::pb::ModelProto::decode(onnx)
        .ok()
        .and_then(|m| m.graph)
        .is_some_and(|g| g.initializer.iter().any(|t| t.data_location == Some(1)))
}

fn parse_shapes(s: &str) -> BTreeMap<String, Vec<i64>> {
    s.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (name, dims) = p.rsplit_once(':').unwrap_or_else(|| {
                die(
                    "E10001",
                    format!("--input_shape entry '{p}' is not name:d1,d2,..."),
                )
            });
            let dims = dims
                .split(',')
                .map(|d| {
                    d.trim().parse::<i64>().unwrap_or_else(|_| {
                        die(
                            "E10001",
                            format!("--input_shape dim '{d}' of '{name}' is not an integer"),
                        )
                    })
                })
                .collect();
            (name.trim().to_string(), dims)
        })
        .collect()
}

fn main() {
    // A slow compile, for acceval's conversion budget: `ATC_FAKE_SLEEP_MS`.
    std::thread::sleep(std::time::Duration::from_millis(common::env_u64(
        "ATC_FAKE_SLEEP_MS",
        0,
    )));
    let mut args = BTreeMap::new();
    for a in std::env::args().skip(1) {
        if a == "--help" || a == "-h" {
            usage();
        }
        let Some((k, v)) = a.strip_prefix("--").and_then(|a| a.split_once('=')) else {
            die("E10001", format!("argument '{a}' is not --key=value"));
        };
        args.insert(k.to_string(), v.trim_matches('"').to_string());
    }
    let get = |k: &str| args.get(k).cloned();
    let need =
        |k: &str| get(k).unwrap_or_else(|| die("E10004", format!("parameter [--{k}] is required")));
    let model = need("model");
    let output = need("output");
    let soc = need("soc_version");
    let framework = need("framework");
    if framework != "5" {
        die(
            "E10001",
            format!(
                "Value [{framework}] for parameter [--framework] is invalid: this emulator converts ONNX (5) only"
            ),
        );
    }
    if args.contains_key("precision_mode") && args.contains_key("precision_mode_v2") {
        die(
            "E10001",
            "--precision_mode and --precision_mode_v2 cannot be used together",
        );
    }
    // ATC's default is fp16: an FP32 model converted without a precision flag loses precision.
    let mode = get("precision_mode_v2")
        .or_else(|| get("precision_mode"))
        .unwrap_or_else(|| "fp16".into());
    let Some((weights16, io16, effect)) = precision_effect(&mode) else {
        die(
            "E10001",
            format!("Value [{mode}] for the precision mode is invalid"),
        );
    };
    let bytes = std::fs::read(&model)
        .unwrap_or_else(|e| die("E10016", format!("cannot read --model '{model}': {e}")));
    if external_data(&bytes) {
        die(
            "E10001",
            format!(
                "'{model}' keeps weights in external data files; the emulated .om holds one file"
            ),
        );
    }
    let sha = format!("{:x}", sha2::Sha256::digest(&bytes));

    // The interface at static shapes, from the model as acceval's CPU engine runs it.
    let specs = acceval::data::inputs::input_specs(Path::new(&model)).unwrap_or_else(|e| {
        die(
            "E19999",
            format!("'{model}' is not a valid ONNX model: {e}"),
        )
    });
    let given = get("input_shape")
        .map(|s| parse_shapes(&s))
        .unwrap_or_default();
    for name in given.keys() {
        if !specs.iter().any(|s| &s.name == name) {
            die(
                "E10001",
                format!("--input_shape names '{name}', which is not an input of the model"),
            );
        }
    }
    let mut inputs = Vec::new();
    let mut tensors = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let dims: Vec<i64> = match given.get(&s.name) {
            Some(d) => d.clone(),
            None => s
                .dims
                .iter()
                .map(|d| match d {
                    acceval::model::shape::Dim::Known(n) => *n,
                    _ => die(
                        "E10001",
                        format!(
                            "input '{}' has a dynamic dimension: give its shape with --input_shape",
                            s.name
                        ),
                    ),
                })
                .collect(),
        };
        if dims.iter().any(|&d| d <= 0) {
            die(
                "E10001",
                format!(
                    "input '{}' shape {dims:?} is not static and positive",
                    s.name
                ),
            );
        }
        let udims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let Some((acl, w)) = om::acl_dtype(s.dtype.name()) else {
            die(
                "E10001",
                format!(
                    "input '{}' is {}, which the emulator does not exchange",
                    s.name,
                    s.dtype.name()
                ),
            );
        };
        let data = TensorData::seeded(s.dtype, &udims, i as u64).unwrap_or_else(|| {
            die(
                "E10001",
                format!("input '{}': type {} not supported", s.name, s.dtype.name()),
            )
        });
        tensors.push(HostTensor {
            name: s.name.clone(),
            data,
        });
        inputs.push(om::Io {
            name: s.name.clone(),
            acl_dtype: acl,
            bytes: w * udims.iter().product::<usize>() as u64,
            dims,
        });
    }
    let (onnx, rounded) = if weights16 {
        fp16_weights(&bytes)
            .unwrap_or_else(|e| die("E19999", format!("cannot rewrite the model: {e}")))
    } else {
        (bytes.clone(), 0)
    };
    let tmp = std::env::temp_dir().join(format!(
        "acceval-atc-{}-{}.onnx",
        std::process::id(),
        &sha[..16]
    ));
    std::fs::write(&tmp, &onnx)
        .unwrap_or_else(|e| die("E19999", format!("cannot stage the model: {e}")));
    let spec: BackendSpec = "cpu".parse().unwrap_or_else(|e: String| die("E19999", e));
    let opts = LoadOptions {
        input_shapes: inputs
            .iter()
            .map(|i| (i.name.clone(), i.dims.iter().map(|&d| d as usize).collect()))
            .collect(),
        ..Default::default()
    };
    let run = acceval::backend::load(&tmp, &spec, &opts).and_then(|mut s| s.run(&tensors));
    let _ = std::fs::remove_file(&tmp);
    let outs = run.unwrap_or_else(|e| {
        die(
            "E19999",
            format!("the model does not compile at these shapes: {e}"),
        )
    });
    let outputs: Vec<om::Io> = outs
        .iter()
        .map(|t| {
            let name = t.data.dtype().name();
            let (acl, w) = om::acl_dtype(name).unwrap_or_else(|| {
                die(
                    "E10001",
                    format!(
                        "output '{}' is {name}, not exchanged by the emulator",
                        t.name
                    ),
                )
            });
            om::Io {
                name: t.name.clone(),
                acl_dtype: acl,
                dims: t.data.shape().iter().map(|&d| d as i64).collect(),
                bytes: w * t.data.len() as u64,
            }
        })
        .collect();

    // The emulated compiler's placement: some operator types run on the AI CPU.
    let aicpu_types: Vec<String> = std::env::var("ATC_FAKE_AICPU_OPS")
        .unwrap_or_else(|_| "NonMaxSuppression,NonZero,Unique,TopK".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut aicpu_ops = Vec::new();
    if let Ok(m) = tract_onnx::pb::ModelProto::decode(bytes.as_slice())
        && let Some(g) = m.graph
    {
        for n in g.node {
            if aicpu_types.contains(&n.op_type) {
                println!(
                    "[WARNING] op[{}] type[{}] is not supported by AI Core, it will be executed on AI CPU [acceval ATC emulator]",
                    n.name, n.op_type
                );
                aicpu_ops.push(format!("{}:{}", n.name, n.op_type));
            }
        }
    }
    let header = om::Header {
        format: om::FORMAT.into(),
        soc_version: soc.clone(),
        precision_mode: mode.clone(),
        precision_effect: effect.to_string(),
        fp16_io: io16,
        source_sha256: sha,
        inputs,
        outputs,
        aicpu_ops,
    };
    let path = format!("{output}.om");
    let tmp = format!("{path}.tmp.{}", std::process::id());
    if let Err(e) =
        std::fs::write(&tmp, om::write(&header, &onnx)).and_then(|_| std::fs::rename(&tmp, &path))
    {
        let _ = std::fs::remove_file(&tmp);
        die("E19999", format!("cannot write '{path}': {e}"));
    }
    println!(
        "ATC (acceval emulator) precision mode {mode}: {effect}{}; soc {soc}",
        if rounded > 0 {
            format!(" ({rounded} weights rounded)")
        } else {
            String::new()
        }
    );
    println!("ATC run success, welcome to the next use.");
}
