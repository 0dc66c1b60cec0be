//! `inspect` on the patterns real exporters write (issue: "inspect on real exports"), each
//! reproduced in a small graph built here, with its shapes and costs derived by hand in the
//! comments; the same graphs are run through ONNX Runtime (when a Python with onnxruntime
//! is available) and every node's output shape is compared with acceval's. Also: the
//! `--json` output validates against the JSON schema generated from its type, and reads
//! back into it.
//!
//! The patterns come from silero VAD (pads computed by Shape -> ConstantOfShape -> Concat
//! -> Reshape -> Slice(step -1) -> Transpose -> Reshape -> Cast -> Pad; If nodes whose
//! conditions are shape tests; an If whose other branch cannot run for the given shapes)
//! and from RapidOCR's PP-OCR models (inputs declared -1x3x?x?, Resize sizes computed from
//! Shape).

mod common;

use acceval::model::Analysis;
use acceval::model::build::{
    Attr, GraphBuilder, attr, node, tensor_f32, tensor_i64, tensor_raw, value_info_verbatim,
};
use acceval::model::onnx::{DataType, GraphProto};
use acceval::model::shape::Dim;
use common::*;

const F: DataType = DataType::FLOAT;

fn known(a: &Analysis, output: usize) -> Vec<i64> {
    a.outputs[output]
        .resolved_shape
        .as_ref()
        .expect("resolved")
        .iter()
        .map(|d| match d {
            Dim::Known(v) => *v,
            Dim::Sym(s) => panic!("symbolic dim {s}"),
        })
        .collect()
}

/// An int64 Constant node.
fn constant(name: &str, dims: &[i64], values: &[i64]) -> acceval::model::onnx::NodeProto {
    node(
        "Constant",
        &[],
        &[name],
        vec![attr("value", Attr::Tensor(tensor_i64(name, dims, values)))],
    )
}

/// A model pattern: the graph, its opset, and the `--input` shapes it is analysed with.
struct Pattern {
    name: &'static str,
    graph: GraphBuilder,
    opset: i64,
    inputs: &'static [&'static str],
}

/// silero VAD's STFT padding: the pads of a reflect Pad come out of shape arithmetic.
///   ConstantOfShape([2]) = [0,0]; Concat([128,128],[0,0]) = [128,128,0,0];
///   Reshape [-1,2] = [[128,128],[0,0]]; Slice(axis 0, step -1) = [[0,0],[128,128]];
///   Transpose = [[0,128],[0,128]]; Reshape [-1] = [0,128,0,128]; Cast; Pad x [1,512]
///   → [1,768]; Unsqueeze(1) → [1,1,768]; Conv w [258,1,256] stride 128 →
///   [1,258,(768−256)/128+1 = 5]. MACs = 258·5 × 1·256 = 330,240.
fn silero_pads() -> Pattern {
    let graph = GraphBuilder::new("silero_pads")
        .input("x", F, &[1, 512])
        .init(tensor_f32("basis", &[258, 1, 256], 1))
        .node(constant("two", &[1], &[2]))
        .node(constant("lr", &[2], &[128, 128]))
        .node(node(
            "ConstantOfShape",
            &["two"],
            &["zeros"],
            vec![attr("value", Attr::Tensor(tensor_i64("v", &[1], &[0])))],
        ))
        .node(node(
            "Concat",
            &["lr", "zeros"],
            &["cat"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(constant("pairs", &[2], &[-1, 2]))
        .node(node("Reshape", &["cat", "pairs"], &["p2"], vec![]))
        .node(constant("s", &[1], &[-1]))
        .node(constant("e", &[1], &[-9_223_372_036_854_775_807]))
        .node(constant("a", &[1], &[0]))
        .node(constant("st", &[1], &[-1]))
        .node(node(
            "Slice",
            &["p2", "s", "e", "a", "st"],
            &["rev"],
            vec![],
        ))
        .node(node(
            "Transpose",
            &["rev"],
            &["tr"],
            vec![attr("perm", Attr::Ints(vec![1, 0]))],
        ))
        .node(constant("flat", &[1], &[-1]))
        .node(node("Reshape", &["tr", "flat"], &["pads0"], vec![]))
        .node(node(
            "Cast",
            &["pads0"],
            &["pads"],
            vec![attr("to", Attr::Int(7))],
        ))
        .node(node(
            "Pad",
            &["x", "pads"],
            &["xp"],
            vec![attr("mode", Attr::Str("reflect"))],
        ))
        .node(constant("one", &[1], &[1]))
        .node(node("Unsqueeze", &["xp", "one"], &["x3"], vec![]))
        .node(node(
            "Conv",
            &["x3", "basis"],
            &["spec"],
            vec![
                attr("kernel_shape", Attr::Ints(vec![256])),
                attr("strides", Attr::Ints(vec![128])),
            ],
        ))
        .output_unshaped("spec", F);
    Pattern {
        name: "silero_pads",
        graph,
        opset: 17,
        inputs: &[],
    }
}

/// N-dimensional folding: Shape [2,3,5,7] → Reshape [2,2] = [[2,3],[5,7]] → Transpose
/// = [[2,5],[3,7]] → Gather(axis 1, [1]) = [[5],[7]] → Reshape [-1] = [5,7] →
/// ReduceProd = 35 → Concat([6],[35]) → Reshape x → [6,35]; MatMul W [35,2]:
/// MACs = 6·2·35 = 420.
fn nd_folding() -> Pattern {
    let graph = GraphBuilder::new("nd_folding")
        .input("x", F, &[2, 3, 5, 7])
        .init(tensor_f32("w", &[35, 2], 1))
        .node(node("Shape", &["x"], &["s"], vec![]))
        .node(constant("sq", &[2], &[2, 2]))
        .node(node("Reshape", &["s", "sq"], &["s2"], vec![]))
        .node(node("Transpose", &["s2"], &["t"], vec![]))
        .node(constant("i1", &[1], &[1]))
        .node(node(
            "Gather",
            &["t", "i1"],
            &["g"],
            vec![attr("axis", Attr::Int(1))],
        ))
        .node(constant("m1", &[1], &[-1]))
        .node(node("Reshape", &["g", "m1"], &["g1"], vec![]))
        .node(node(
            "ReduceProd",
            &["g1"],
            &["p"],
            vec![attr("keepdims", Attr::Int(1))],
        ))
        .node(constant("six", &[1], &[6]))
        .node(node(
            "Concat",
            &["six", "p"],
            &["target"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node("Reshape", &["x", "target"], &["x2"], vec![]))
        .node(node("MatMul", &["x2", "w"], &["y"], vec![]))
        .output_unshaped("y", F);
    Pattern {
        name: "nd_folding",
        graph,
        opset: 17,
        inputs: &[],
    }
}

/// PP-OCR det's FPN upsampling: Resize sizes = Concat(Shape[0:2], Shape[2:4] × 2):
/// [1,3,16,16] → [1,3,32,32]; linear on 2 axes: 4 other ops × 3,072 outputs = 12,288,
/// plus the Mul of the shape arithmetic (2 elements): 12,290.
fn resize_sizes() -> Pattern {
    let graph = GraphBuilder::new("resize_sizes")
        .input("x", F, &[1, 3, 16, 16])
        .node(node("Shape", &["x"], &["s"], vec![]))
        .node(constant("z", &[1], &[0]))
        .node(constant("two", &[1], &[2]))
        .node(constant("four", &[1], &[4]))
        .node(node("Slice", &["s", "z", "two"], &["nc"], vec![]))
        .node(node("Slice", &["s", "two", "four"], &["hw"], vec![]))
        .node(node("Mul", &["hw", "two"], &["hw2"], vec![]))
        .node(node(
            "Concat",
            &["nc", "hw2"],
            &["sizes"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node(
            "Resize",
            &["x", "", "", "sizes"],
            &["y"],
            vec![attr("mode", Attr::Str("linear"))],
        ))
        .output_unshaped("y", F);
    Pattern {
        name: "resize_sizes",
        graph,
        opset: 13,
        inputs: &[],
    }
}

/// Range, TopK, Split, Expand and Tile fed by computed values, on x [1,10]:
///   n = Gather(Shape(x), 1) = 10; Range(0, n, 2) = [0,2,4,6,8] (5);
///   TopK(x, k = Shape(range) = [5]) → [1,5] (other ops: 10 input elements);
///   Split(x, Concat([3],[7])) → [1,3], [1,7]; Expand(a, Concat([4],[3])) → [4,3];
///   Tile(b, [2,1]) → [2,7].
fn computed_inputs() -> Pattern {
    let graph = GraphBuilder::new("computed_inputs")
        .input("x", F, &[1, 10])
        .node(node("Shape", &["x"], &["s"], vec![]))
        .node(node(
            "Gather",
            &["s", "k1"],
            &["n"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .init(tensor_i64("k1", &[], &[1]))
        .init(tensor_i64("zero", &[], &[0]))
        .init(tensor_i64("step", &[], &[2]))
        .node(node("Range", &["zero", "n", "step"], &["r"], vec![]))
        .node(node("Shape", &["r"], &["k"], vec![]))
        .node(node("TopK", &["x", "k"], &["top", "idx"], vec![]))
        .init(tensor_i64("three", &[1], &[3]))
        .init(tensor_i64("seven", &[1], &[7]))
        .init(tensor_i64("four", &[1], &[4]))
        .node(node(
            "Concat",
            &["three", "seven"],
            &["parts"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node(
            "Split",
            &["x", "parts"],
            &["a", "b"],
            vec![attr("axis", Attr::Int(1))],
        ))
        .node(node(
            "Concat",
            &["four", "three"],
            &["big"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node("Expand", &["a", "big"], &["e"], vec![]))
        .init(tensor_i64("reps", &[2], &[2, 1]))
        .node(node("Tile", &["b", "reps"], &["t"], vec![]))
        .output_unshaped("top", F)
        .output_unshaped("e", F)
        .output_unshaped("t", F);
    Pattern {
        name: "computed_inputs",
        graph,
        opset: 17,
        inputs: &[],
    }
}

fn branch(name: &str, w: &str, k: i64, n: i64) -> GraphProto {
    GraphBuilder::new(name)
        .init(tensor_f32(w, &[k, n], 1))
        .node(node("MatMul", &["x", w], &[&format!("{name}_y")], vec![]))
        .output_unshaped(&format!("{name}_y"), F)
        .graph
}

/// silero's decoder: an If on a shape test. x [1,4]: Equal(Shape(x)[1], 4) is true, so
/// the then branch (x × W[4,8], 32 MACs) runs, not the larger else branch (64 MACs).
fn constant_if() -> Pattern {
    let graph = GraphBuilder::new("constant_if")
        .input("x", F, &[1, 4])
        .init(tensor_i64("one", &[], &[1]))
        .init(tensor_i64("four", &[], &[4]))
        .node(node("Shape", &["x"], &["s"], vec![]))
        .node(node("Gather", &["s", "one"], &["d"], vec![]))
        .node(node("Equal", &["d", "four"], &["c"], vec![]))
        .node(node(
            "If",
            &["c"],
            &["y"],
            vec![
                attr("then_branch", Attr::Graph(branch("then", "wt", 4, 8))),
                attr("else_branch", Attr::Graph(branch("else", "we", 4, 16))),
            ],
        ))
        .output_unshaped("y", F);
    Pattern {
        name: "constant_if",
        graph,
        opset: 17,
        inputs: &[],
    }
}

/// RapidOCR's direction classifier declares its input as -1x3x?x? (dim_value -1): a
/// concrete --input fills the dynamic dims. x [1,3,48,192], w [8,3,3,3], stride 2, pads 1:
/// out [1,8,24,96]; MACs = 8·24·96 × 27 = 497,664.
fn paddle_minus_one() -> Pattern {
    let mut graph = GraphBuilder::new("paddle_minus_one")
        .init(tensor_f32("w", &[8, 3, 3, 3], 1))
        .node(node(
            "Conv",
            &["x", "w"],
            &["y"],
            vec![
                attr("strides", Attr::Ints(vec![2, 2])),
                attr("pads", Attr::Ints(vec![1, 1, 1, 1])),
            ],
        ))
        .output_unshaped("y", F);
    let mut x = value_info_verbatim("x", F, Some(&[-1, 3, -1, -1]));
    if let Some(s) = x
        .r#type
        .as_mut()
        .and_then(|t| t.tensor_type.as_mut())
        .and_then(|t| t.shape.as_mut())
    {
        // The last two as the file has them: named "?".
        for d in &mut s.dim[2..] {
            d.dim_value = None;
            d.dim_param = Some("?".into());
        }
    }
    graph.graph.input.push(x);
    Pattern {
        name: "paddle_minus_one",
        graph,
        opset: 11,
        inputs: &["x:1x3x48x192"],
    }
}

fn analyse_pattern(p: Pattern) -> Analysis {
    analyse_with(p.graph, p.opset, p.inputs)
}

#[test]
fn silero_computed_pads_resolve_the_pad_and_everything_after_it() {
    let a = analyse_pattern(silero_pads());
    assert_eq!(known(&a, 0), vec![1, 258, 5]);
    assert_eq!(a.macs, Some(330_240));
    assert!(!a.lower_bound, "{:?}", a.unresolved_nodes);
    assert!(a.unresolved_nodes.is_empty());
    let pad = a.per_op.iter().find(|c| c.op_type == "Pad").expect("Pad");
    assert_eq!(pad.output_shapes, vec!["1x768"]);
}

#[test]
fn shape_values_fold_along_any_axis() {
    let a = analyse_pattern(nd_folding());
    assert_eq!(known(&a, 0), vec![6, 2]);
    assert_eq!(a.macs, Some(420));
    assert!(!a.lower_bound);
}

#[test]
fn resize_sizes_computed_from_shape_resolve() {
    let a = analyse_pattern(resize_sizes());
    assert_eq!(known(&a, 0), vec![1, 3, 32, 32]);
    assert_eq!(a.other_ops, Some(12_290));
}

#[test]
fn range_topk_split_expand_tile_take_computed_inputs() {
    let a = analyse_pattern(computed_inputs());
    assert_eq!(known(&a, 0), vec![1, 5]);
    assert_eq!(known(&a, 1), vec![4, 3]);
    assert_eq!(known(&a, 2), vec![2, 7]);
    assert_eq!(a.other_ops, Some(10));
    assert!(!a.lower_bound);
}

#[test]
fn if_with_a_constant_condition_counts_the_branch_that_runs() {
    let a = analyse_pattern(constant_if());
    assert_eq!(a.macs, Some(32));
    assert_eq!(known(&a, 0), vec![1, 8]);
    assert!(
        a.notes.iter().any(|n| n.contains("condition is constant")),
        "{:?}",
        a.notes
    );
}

#[test]
fn if_branch_that_contradicts_the_input_shapes_is_not_counted() {
    // silero_vad.onnx branches on the sample rate (an input): with 16 kHz input shapes the
    // 8 kHz branch contradicts them. Here: cond is an input; then: x [1,4] × W[4,8] (32
    // MACs); else: x × W[5,8] (K mismatch). With --input the contradiction was an error;
    // now the else branch is noted as not runnable and the then branch counted.
    let g = || {
        GraphBuilder::new("g")
            .input("x", F, &[-1, 4])
            .input("cond", DataType::BOOL, &[])
            .node(node(
                "If",
                &["cond"],
                &["y"],
                vec![
                    attr("then_branch", Attr::Graph(branch("then", "wt", 4, 8))),
                    attr("else_branch", Attr::Graph(branch("else", "we", 5, 8))),
                ],
            ))
            .output_unshaped("y", F)
    };
    let a = analyse_with(g(), 17, &["x:1x4"]);
    assert_eq!(a.macs, Some(32));
    assert!(!a.lower_bound, "{:?}", a.unresolved_nodes);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("else_branch: 0 MACs, contradicts the input shapes")),
        "{:?}",
        a.notes
    );
    // A contradiction outside an If is still the user's error.
    let bad = GraphBuilder::new("g")
        .input("x", F, &[-1, 4])
        .init(tensor_f32("w", &[5, 8], 1))
        .node(node("MatMul", &["x", "w"], &["y"], vec![]))
        .output_unshaped("y", F);
    let w = write(bad, 17);
    let e = acceval::model::analyse(&w.path, &["x:1x4".parse().unwrap()]).unwrap_err();
    assert!(e.to_string().contains("inner dimension"), "{e}");
}

#[test]
fn dims_declared_minus_one_accept_a_concrete_input() {
    // Before: "--input 'x:1x3x48x192' contradicts the model, which declares x as -1x3x?x?".
    let a = analyse_pattern(paddle_minus_one());
    assert_eq!(known(&a, 0), vec![1, 8, 24, 96]);
    assert_eq!(a.macs, Some(497_664));
    // Without --input the hint names each dynamic dim.
    let p = paddle_minus_one();
    let a = analyse_graph(p.graph, p.opset);
    assert_eq!(a.macs, None);
    let why = a.macs_unavailable.expect("reason");
    assert!(why.contains("as x:<x:0>x3x<?>x<?>"), "{why}");
    // A declared 0 is dynamic too; --input accepts 0 for a really empty dim.
    let g = GraphBuilder::new("g")
        .node(node("Relu", &["x"], &["y"], vec![]))
        .output_unshaped("y", F);
    let mut g = g;
    g.graph
        .input
        .push(value_info_verbatim("x", F, Some(&[0, 4])));
    let a = analyse_with(g, 17, &["x:0x4"]);
    assert_eq!(a.other_ops, Some(0));
}

#[test]
fn inspect_json_matches_its_schema_and_reads_back() {
    let p = silero_pads();
    let w = write(p.graph, p.opset);
    let path = w.path.to_str().unwrap();
    let (code, out, err) = acceval(&["inspect", "--json", path]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let schema = serde_json::to_value(schemars::schema_for!(Analysis)).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let back: Analysis = serde_json::from_str(&out).expect("reads back");
    let direct = acceval::model::analyse(&w.path, &[]).unwrap();
    assert_eq!(back, direct);
    assert_eq!(back.schema, "acceval.inspect/1");
}

#[test]
fn every_node_shape_matches_onnx_runtime() {
    let Some(py) = python() else { return };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/ort_shapes.py");
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for p in [
        silero_pads(),
        nd_folding(),
        resize_sizes(),
        computed_inputs(),
        constant_if(),
        paddle_minus_one(),
    ] {
        let name = p.name;
        let inputs = p.inputs;
        let w = write(p.graph, p.opset);
        let out = std::process::Command::new(&py)
            .arg(&script)
            .arg(&w.path)
            .args(inputs)
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ort: std::collections::BTreeMap<String, Vec<Option<Vec<i64>>>> =
            serde_json::from_slice(&out.stdout).expect("ort json");
        let shapes: Vec<acceval::model::InputShape> =
            inputs.iter().map(|s| s.parse().unwrap()).collect();
        let a = acceval::model::analyse(&w.path, &shapes).unwrap();
        for (node, want) in &ort {
            let Some(c) = a
                .per_op
                .iter()
                .find(|c| &c.node == node && c.graph == "main")
            else {
                continue;
            };
            for (k, w) in want.iter().enumerate() {
                let Some(w) = w else { continue };
                let w = if w.is_empty() {
                    "[] (scalar)".to_string()
                } else {
                    w.iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join("x")
                };
                compared += 1;
                if c.output_shapes.get(k) != Some(&w) {
                    mismatches.push(format!(
                        "{name}: node {node} output {k}: onnxruntime {w}, acceval {:?}",
                        c.output_shapes.get(k)
                    ));
                }
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    assert!(compared > 40, "only {compared} shapes compared");
}

#[test]
fn raw_tensor_builder_still_reads_values() {
    // Float Resize scales stored as raw FP32 still fold (a shape tensor, not a parameter).
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 1, 2, 2])
        .init(tensor_raw(
            "sc",
            F,
            &[4],
            [1f32, 1.0, 3.0, 3.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ))
        .node(node("Resize", &["x", "", "sc"], &["y"], vec![]))
        .output_unshaped("y", F);
    let a = analyse_graph(g, 13);
    assert_eq!(known(&a, 0), vec![1, 1, 6, 6]);
    assert_eq!(a.shape_tensors.tensors, 1);
}

#[test]
fn constant_of_shape_value_reaches_a_reshape() {
    // Shape inputs of int64 constants: ConstantOfShape([3]) filled with 2 = [2,2,2];
    // Reshape x [8] → [2,2,2].
    let g = GraphBuilder::new("g")
        .input("x", F, &[8])
        .init(tensor_i64("n", &[1], &[3]))
        .node(node(
            "ConstantOfShape",
            &["n"],
            &["t"],
            vec![attr("value", Attr::Tensor(tensor_i64("v", &[1], &[2])))],
        ))
        .node(node("Reshape", &["x", "t"], &["y"], vec![]))
        .output_unshaped("y", F);
    let a = analyse_graph(g, 17);
    assert_eq!(known(&a, 0), vec![2, 2, 2]);
}
