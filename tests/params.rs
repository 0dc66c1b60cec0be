//! Parameter counting (Table 1) and subgraph rules (If/Loop/Scan), on models built here.

mod common;

use acceval::model::build::{
    Attr, GraphBuilder, attr, node, tensor_external, tensor_f32, tensor_zeros, value_info,
};
use acceval::model::onnx::{DataType, GraphProto};
use acceval::model::params::TensorSource;
use acceval::standard::Level;
use common::*;

const F: DataType = DataType::FLOAT;

fn by_type(a: &acceval::model::Analysis, t: &str) -> (u64, u64) {
    a.params
        .by_type
        .iter()
        .find(|b| b.elem_type == t)
        .map(|b| (b.count, b.bytes))
        .unwrap_or((0, 0))
}

#[test]
fn constant_node_weights_are_parameters() {
    // The same conv as an initializer model, but its weight [8,3,3,3] (216) and bias [8]
    // come from Constant nodes: 224 parameters, 896 bytes.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 3, 8, 8])
        .node(node(
            "Constant",
            &[],
            &["w"],
            vec![attr(
                "value",
                Attr::Tensor(tensor_f32("w", &[8, 3, 3, 3], 1)),
            )],
        ))
        .node(node(
            "Constant",
            &[],
            &["b"],
            vec![attr("value", Attr::Tensor(tensor_f32("b", &[8], 2)))],
        ))
        .node(node("Conv", &["x", "w", "b"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.params.count, 224);
    assert_eq!(a.params.bytes, 896);
    assert_eq!(
        a.params
            .list
            .iter()
            .filter(|t| t.source == TensorSource::ConstantNode)
            .count(),
        2
    );
    // Shapes flow through Constant outputs: MACs = 8·36 × 27 = 7,776.
    assert_eq!(a.macs, Some(7_776));
}

#[test]
fn shared_weight_is_counted_once() {
    // One initializer used by two MatMuls (and through Identity): 64 parameters, not 128.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 8])
        .init(tensor_f32("w", &[8, 8], 1))
        .node(node("Identity", &["w"], &["w2"], vec![]))
        .node(node("MatMul", &["x", "w"], &["h"], vec![]))
        .node(node("MatMul", &["h", "w2"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.params.count, 64);
    assert_eq!(a.params.tensors, 1);
    assert_eq!(a.macs, Some(128));
}

#[test]
fn ir3_initializers_listed_as_inputs_are_not_inputs() {
    // IR < 4 lists every initializer among the graph inputs too.
    let mut g = GraphBuilder::new("g")
        .input("x", F, &[1, 8])
        .init(tensor_f32("w", &[8, 4], 1))
        .node(node("MatMul", &["x", "w"], &["y"], vec![]))
        .output("y", F, &[]);
    g.graph.input.push(value_info("w", F, &[8, 4]));
    let a = analyse_graph(g, 9);
    assert_eq!(a.inputs.len(), 1);
    assert_eq!(a.inputs[0].name, "x");
    assert_eq!(a.params.count, 32);
}

fn branch(name: &str, w: &str, n: i64, seed: u64) -> GraphProto {
    GraphBuilder::new(name)
        .init(tensor_f32(w, &[16, n], seed))
        .node(node("MatMul", &["x", w], &[&format!("{name}_y")], vec![]))
        .output(&format!("{name}_y"), F, &[1, n])
        .graph
}

#[test]
fn if_subgraph_params_and_larger_branch_macs() {
    // then: W [16,8] (128 params, MACs 128); else: W [16,32] (512 params, MACs 512).
    // Params count both branches: 640; MACs count the larger branch: 512.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 16])
        .input("cond", DataType::BOOL, &[])
        .node(node(
            "If",
            &["cond"],
            &["y"],
            vec![
                attr("then_branch", Attr::Graph(branch("then", "wt", 8, 1))),
                attr("else_branch", Attr::Graph(branch("else", "we", 32, 2))),
            ],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.params.count, 640);
    assert!(
        a.params
            .list
            .iter()
            .any(|t| t.graph.ends_with("then_branch"))
    );
    assert_eq!(a.macs, Some(512));
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("larger branch, else_branch")),
        "{:?}",
        a.notes
    );
    // The branches disagree on the last dim: it is symbolic, not guessed.
    let y = a.outputs[0].resolved_shape.as_ref().expect("shape");
    assert_eq!(y.len(), 2);
    assert!(y[1].known().is_none());
}

#[test]
fn loop_with_static_trip_count_multiplies_body() {
    // Body: h [1,16] × W [16,16] = 256 MACs per iteration; trip count 3 → 768.
    let body = GraphBuilder::new("body")
        .input("i", DataType::INT64, &[])
        .input("c", DataType::BOOL, &[])
        .input("h", F, &[1, 16])
        .node(node("Identity", &["c"], &["c_out"], vec![]))
        .node(node("MatMul", &["h", "wl"], &["h_out"], vec![]))
        .output("c_out", DataType::BOOL, &[])
        .output("h_out", F, &[1, 16])
        .graph;
    let g = with_loop(
        GraphBuilder::new("g")
            .input("x", F, &[1, 16])
            .init(tensor_f32("wl", &[16, 16], 1)),
        3,
        body,
    )
    .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.macs, Some(768));
    assert_eq!(a.per_op[0].multiplier, 3);
    // The trip count and the condition are control data, not parameters.
    assert_eq!(a.params.count, 256);
    assert_eq!(a.shape_tensors.tensors, 2);
    assert_eq!(
        a.outputs[0].resolved_shape.as_ref().map(|s| s.len()),
        Some(2)
    );
}

#[test]
fn scan_counts_body_per_element() {
    // Scan over [5,1,8] along axis 0: body [1,8] × W [8,4] = 32 MACs, 5 times → 160.
    let body = GraphBuilder::new("body")
        .input("s_in", F, &[1, 4])
        .input("xt", F, &[1, 8])
        .node(node("MatMul", &["xt", "ws"], &["p"], vec![]))
        .node(node("Add", &["s_in", "p"], &["s_out"], vec![]))
        .output("s_out", F, &[1, 4])
        .output("p", F, &[1, 4])
        .graph;
    let g = GraphBuilder::new("g")
        .input("s0", F, &[1, 4])
        .input("xs", F, &[5, 1, 8])
        .init(tensor_f32("ws", &[8, 4], 1))
        .node(node(
            "Scan",
            &["s0", "xs"],
            &["s", "ps"],
            vec![
                attr("body", Attr::Graph(body)),
                attr("num_scan_inputs", Attr::Int(1)),
            ],
        ))
        .output("s", F, &[])
        .output("ps", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.macs, Some(160));
    assert_eq!(a.other_ops, Some(20));
    let ps = a.outputs[1].resolved_shape.as_ref().expect("stacked");
    assert_eq!(
        ps.iter().map(|d| d.known().unwrap()).collect::<Vec<_>>(),
        vec![5, 1, 4]
    );
}

#[test]
fn int8_qdq_weights_count_in_stored_type() {
    // Conv weight INT8 [8,3,3,3]: 216 elements, 216 bytes; per-channel scale FP32 [8]
    // (32 bytes); zero point INT8 [8]; bias INT32 [8] (32 bytes).
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 3, 8, 8])
        .init(tensor_zeros("wq", DataType::INT8, &[8, 3, 3, 3]))
        .init(tensor_f32("ws", &[8], 1))
        .init(tensor_zeros("wz", DataType::INT8, &[8]))
        .init(tensor_zeros("bq", DataType::INT32, &[8]))
        .node(node(
            "DequantizeLinear",
            &["wq", "ws", "wz"],
            &["w"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node(
            "DequantizeLinear",
            &["bq", "ws"],
            &["b"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node("Conv", &["x", "w", "b"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(by_type(&a, "INT8"), (224, 224));
    assert_eq!(by_type(&a, "FP32"), (8, 32));
    assert_eq!(by_type(&a, "INT32"), (8, 32));
    assert_eq!(a.params.bytes, 288);
    // The dequantised weight flows into Conv: MACs = 8·36 × 27 = 7,776.
    assert_eq!(a.macs, Some(7_776));
}

#[test]
fn fp16_bf16_and_int4_bytes() {
    // FP16 [10,10] = 200 B, BF16 [3] = 6 B, INT4 [7] packs to 4 B, UINT8 [5] = 5 B.
    let g = GraphBuilder::new("g")
        .input("x", DataType::FLOAT16, &[1, 10])
        .init(tensor_zeros("h", DataType::FLOAT16, &[10, 10]))
        .init(tensor_zeros("bf", DataType::BFLOAT16, &[3]))
        .init(tensor_zeros("q4", DataType(22), &[7]))
        .init(tensor_zeros("u8", DataType::UINT8, &[5]))
        .node(node("MatMul", &["x", "h"], &["y"], vec![]))
        .output("y", DataType::FLOAT16, &[]);
    let a = analyse_graph(g, 21);
    assert_eq!(by_type(&a, "FP16"), (100, 200));
    assert_eq!(by_type(&a, "BF16"), (3, 6));
    assert_eq!(by_type(&a, "INT4"), (7, 4));
    assert_eq!(by_type(&a, "UINT8"), (5, 5));
    assert_eq!(a.params.bytes, 215);
    assert_eq!(a.macs, Some(100));
}

#[test]
fn external_data_is_counted_from_dims_and_checked() {
    // W [64,32] FP32 in an external file: 2,048 parameters, 8,192 bytes.
    let dir = tempfile::tempdir().unwrap();
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 64])
        .init(tensor_external("w", F, &[64, 32], "weights.bin", 0, 8192))
        .node(node("MatMul", &["x", "w"], &["y"], vec![]))
        .output("y", F, &[]);
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, g.encode(17)).unwrap();
    std::fs::write(dir.path().join("weights.bin"), vec![0u8; 8192]).unwrap();
    let a = acceval::model::analyse(&path, &[]).unwrap();
    assert_eq!(a.params.count, 2_048);
    assert_eq!(a.params.bytes, 8_192);
    assert_eq!(a.params.external_tensors, 1);
    assert_eq!(a.macs, Some(2_048));

    // A data file that is too short is an error naming it.
    std::fs::write(dir.path().join("weights.bin"), vec![0u8; 100]).unwrap();
    let e = acceval::model::analyse(&path, &[]).unwrap_err().to_string();
    assert!(e.contains("weights.bin") && e.contains("too short"), "{e}");
}

#[test]
fn levels_of_tables_1_and_2() {
    // W [2500, 1000] FP32 = 10,000,000 bytes = 10 MB → Table 1 C3 (>= 10).
    // x [8,2500] × W: 8·1000·2500 = 20,000,000 MACs = 0.04 GFLOPs → Table 2 C4.
    let g = GraphBuilder::new("g")
        .input("x", F, &[8, 2500])
        .init(tensor_zeros("w", F, &[2500, 1000]))
        .node(node("MatMul", &["x", "w"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.params.bytes, 10_000_000);
    assert_eq!(a.levels.params, Some(Level::C3));
    assert_eq!(a.flops, Some(40_000_000));
    assert_eq!(a.levels.flops, Some(Level::C4));
}
