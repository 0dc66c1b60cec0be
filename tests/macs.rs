//! MACs, other ops and output shapes of every supported operator, against values
//! computed by hand (each expected number is derived in the comment above it).

mod common;

use acceval::model::build::{
    Attr, GraphBuilder, attr, node, node_in, tensor_f32, tensor_i64, tensor_zeros,
};
use acceval::model::onnx::DataType;
use acceval::model::shape::Dim;
use common::*;

const F: DataType = DataType::FLOAT;

fn out_shape(a: &acceval::model::Analysis, i: usize) -> Vec<i64> {
    a.outputs[i]
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

#[test]
fn conv_with_bias_and_padding() {
    // out [1,8,32,32]; MACs = 8·32·32 outputs × 3·3·3 = 221,184; bias = 8·32·32 = 8,192.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 3, 32, 32])
        .init(tensor_f32("w", &[8, 3, 3, 3], 1))
        .init(tensor_f32("b", &[8], 2))
        .node(node(
            "Conv",
            &["x", "w", "b"],
            &["y"],
            vec![attr("pads", Attr::Ints(vec![1, 1, 1, 1]))],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 8, 32, 32]);
    assert_eq!(a.macs, Some(221_184));
    assert_eq!(a.flops, Some(442_368));
    assert_eq!(a.other_ops, Some(8_192));
    assert!(!a.lower_bound);
    assert_eq!(a.params.count, 8 * 27 + 8);
    assert_eq!(a.params.bytes, 4 * (8 * 27 + 8));
}

#[test]
fn conv_grouped_strided_dilated() {
    // group 4, Cin/group 2; dilation 2 makes the 3×3 kernel span 5; (17−5)/2+1 = 7.
    // out [2,16,7,7]; MACs = 2·16·7·7 × 2·3·3 = 28,224.
    let g = GraphBuilder::new("g")
        .input("x", F, &[2, 8, 17, 17])
        .init(tensor_f32("w", &[16, 2, 3, 3], 1))
        .node(node(
            "Conv",
            &["x", "w"],
            &["y"],
            vec![
                attr("group", Attr::Int(4)),
                attr("strides", Attr::Ints(vec![2, 2])),
                attr("dilations", Attr::Ints(vec![2, 2])),
            ],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![2, 16, 7, 7]);
    assert_eq!(a.macs, Some(28_224));
    assert_eq!(a.other_ops, Some(0));
}

#[test]
fn depthwise_conv_same_upper() {
    // SAME_UPPER, stride 2: out = ceil(14/2) = 7; MACs = 32·7·7 × 1·3·3 = 14,112.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 32, 14, 14])
        .init(tensor_f32("w", &[32, 1, 3, 3], 1))
        .node(node(
            "Conv",
            &["x", "w"],
            &["y"],
            vec![
                attr("group", Attr::Int(32)),
                attr("strides", Attr::Ints(vec![2, 2])),
                attr("auto_pad", Attr::Str("SAME_UPPER")),
            ],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 32, 7, 7]);
    assert_eq!(a.macs, Some(14_112));
}

#[test]
fn conv1d_and_conv3d() {
    // Conv1d: x [1,4,20], w [6,4,5] → out [1,6,16]; MACs = 6·16 × 4·5 = 1,920.
    // Conv3d: x [1,2,6,6,6], w [3,2,3,3,3] → out [1,3,4,4,4]; MACs = 3·64 × 2·27 = 10,368.
    let g = GraphBuilder::new("g")
        .input("a", F, &[1, 4, 20])
        .input("b", F, &[1, 2, 6, 6, 6])
        .init(tensor_f32("w1", &[6, 4, 5], 1))
        .init(tensor_f32("w3", &[3, 2, 3, 3, 3], 2))
        .node(node("Conv", &["a", "w1"], &["y1"], vec![]))
        .node(node("Conv", &["b", "w3"], &["y3"], vec![]))
        .output("y1", F, &[])
        .output("y3", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 6, 16]);
    assert_eq!(out_shape(&a, 1), vec![1, 3, 4, 4, 4]);
    assert_eq!(a.macs, Some(1_920 + 10_368));
}

#[test]
fn conv_transpose_with_output_padding_and_groups() {
    // out = 2·(5−1) + 1 (output_padding) + 3 − 1 − 1 = 10 → [1,6,10,10].
    // w [4,3,3,3] with group 2: C_out = 3·2 = 6. MACs = x elements 4·25 × 3·3·3 = 2,700.
    // bias: 6·10·10 = 600.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 4, 5, 5])
        .init(tensor_f32("w", &[4, 3, 3, 3], 1))
        .init(tensor_f32("b", &[6], 1))
        .node(node(
            "ConvTranspose",
            &["x", "w", "b"],
            &["y"],
            vec![
                attr("group", Attr::Int(2)),
                attr("strides", Attr::Ints(vec![2, 2])),
                attr("pads", Attr::Ints(vec![1, 1, 1, 1])),
                attr("output_padding", Attr::Ints(vec![1, 1])),
            ],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 6, 10, 10]);
    assert_eq!(a.macs, Some(2_700));
    assert_eq!(a.other_ops, Some(600));
}

#[test]
fn gemm_trans_b_with_bias() {
    // A [4,64], B [10,64]ᵀ → [4,10]; MACs = 4·10·64 = 2,560; bias add 40.
    let g = GraphBuilder::new("g")
        .input("a", F, &[4, 64])
        .init(tensor_f32("b", &[10, 64], 1))
        .init(tensor_f32("c", &[10], 1))
        .node(node(
            "Gemm",
            &["a", "b", "c"],
            &["y"],
            vec![attr("transB", Attr::Int(1))],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![4, 10]);
    assert_eq!(a.macs, Some(2_560));
    assert_eq!(a.other_ops, Some(40));
}

#[test]
fn gemm_trans_a() {
    // A [64,4]ᵀ, B [64,10] → [4,10]; MACs = 4·10·64 = 2,560.
    let g = GraphBuilder::new("g")
        .input("a", F, &[64, 4])
        .init(tensor_f32("b", &[64, 10], 1))
        .node(node(
            "Gemm",
            &["a", "b"],
            &["y"],
            vec![attr("transA", Attr::Int(1))],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![4, 10]);
    assert_eq!(a.macs, Some(2_560));
}

#[test]
fn matmul_batched_broadcast_and_vectors() {
    // [2,1,5,6] × [3,6,7] → [2,3,5,7]; MACs = 2·3·5·7 × 6 = 1,260.
    // [6] × [6,7] → [7]; MACs = 7 × 6 = 42.  [5,6] × [6] → [5]; MACs = 30.
    let g = GraphBuilder::new("g")
        .input("a", F, &[2, 1, 5, 6])
        .input("v", F, &[6])
        .input("m", F, &[5, 6])
        .init(tensor_f32("b", &[3, 6, 7], 1))
        .init(tensor_f32("w", &[6, 7], 1))
        .node(node("MatMul", &["a", "b"], &["y"], vec![]))
        .node(node("MatMul", &["v", "w"], &["z"], vec![]))
        .node(node("MatMul", &["m", "v"], &["u"], vec![]))
        .output("y", F, &[])
        .output("z", F, &[])
        .output("u", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![2, 3, 5, 7]);
    assert_eq!(out_shape(&a, 1), vec![7]);
    assert_eq!(out_shape(&a, 2), vec![5]);
    assert_eq!(a.macs, Some(1_260 + 42 + 30));
}

#[test]
fn einsum_contraction_and_transpose() {
    // "bij,bjk->bik" on [2,3,4],[2,4,5]: labels b2 i3 j4 k5 → MACs = 2·3·4·5 = 120.
    // "ij->ji" is not a contraction: 0 MACs, 12 other ops (output elements).
    let g = GraphBuilder::new("g")
        .input("a", F, &[2, 3, 4])
        .input("b", F, &[2, 4, 5])
        .input("c", F, &[3, 4])
        .node(node(
            "Einsum",
            &["a", "b"],
            &["y"],
            vec![attr("equation", Attr::Str("bij,bjk->bik"))],
        ))
        .node(node(
            "Einsum",
            &["c"],
            &["t"],
            vec![attr("equation", Attr::Str("ij->ji"))],
        ))
        .output("y", F, &[])
        .output("t", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![2, 3, 5]);
    assert_eq!(out_shape(&a, 1), vec![4, 3]);
    assert_eq!(a.macs, Some(120));
    assert_eq!(a.other_ops, Some(12));
}

#[test]
fn einsum_with_ellipsis() {
    // "...ij,...jk->...ik" on [2,3,4,5],[2,3,5,6]: MACs = 2·3·4·5·6 = 720.
    let g = GraphBuilder::new("g")
        .input("a", F, &[2, 3, 4, 5])
        .input("b", F, &[2, 3, 5, 6])
        .node(node(
            "Einsum",
            &["a", "b"],
            &["y"],
            vec![attr("equation", Attr::Str("...ij,...jk->...ik"))],
        ))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![2, 3, 4, 6]);
    assert_eq!(a.macs, Some(720));
}

fn rnn_graph(op: &str, gates: i64, dirs: i64, bias: bool) -> GraphBuilder {
    let (h, i) = (16, 8);
    let mut inputs = vec!["x", "w", "r"];
    let mut g = GraphBuilder::new("g")
        .input("x", F, &[5, 2, i])
        .init(tensor_f32("w", &[dirs, gates * h, i], 1))
        .init(tensor_f32("r", &[dirs, gates * h, h], 2));
    if bias {
        g = g.init(tensor_f32("bias", &[dirs, 2 * gates * h], 3));
        inputs.push("bias");
    }
    let mut attrs = vec![attr("hidden_size", Attr::Int(h))];
    if dirs == 2 {
        attrs.push(attr("direction", Attr::Str("bidirectional")));
    }
    g.node(node(op, &inputs, &["y", "yh"], attrs))
        .output("y", F, &[])
        .output("yh", F, &[])
}

#[test]
fn lstm_all_gates_directions_steps() {
    // seq 5, batch 2, I 8, H 16, one direction:
    // MACs = 5·2 × 4·16·(8+16) = 15,360. Other = 5·2·16·(9 + 8 bias) = 2,720.
    let a = analyse_graph(rnn_graph("LSTM", 4, 1, true), 17);
    assert_eq!(out_shape(&a, 0), vec![5, 1, 2, 16]);
    assert_eq!(out_shape(&a, 1), vec![1, 2, 16]);
    assert_eq!(a.macs, Some(15_360));
    assert_eq!(a.other_ops, Some(2_720));
    // Bidirectional doubles everything: 30,720.
    let a = analyse_graph(rnn_graph("LSTM", 4, 2, false), 17);
    assert_eq!(out_shape(&a, 0), vec![5, 2, 2, 16]);
    assert_eq!(a.macs, Some(30_720));
}

#[test]
fn gru_and_rnn() {
    // GRU bidirectional: 2·5·2 = 20 steps × 3·16·(8+16) = 1,152 → 23,040.
    let a = analyse_graph(rnn_graph("GRU", 3, 2, false), 17);
    assert_eq!(a.macs, Some(23_040));
    // RNN: 5·2 × 16·(8+16) = 3,840.
    let a = analyse_graph(rnn_graph("RNN", 1, 1, false), 17);
    assert_eq!(a.macs, Some(3_840));
}

#[test]
fn onnx_attention_opset23() {
    // Q [1,2,4,8], K/V [1,2,6,8]: scores = 1·2·4·6 = 48; MACs = 48·(8 + 8) = 768;
    // other = 4·48 = 192 (scale + softmax).
    let g = GraphBuilder::new("g")
        .input("q", F, &[1, 2, 4, 8])
        .input("k", F, &[1, 2, 6, 8])
        .input("v", F, &[1, 2, 6, 8])
        .node(node("Attention", &["q", "k", "v"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 23);
    assert_eq!(out_shape(&a, 0), vec![1, 2, 4, 8]);
    assert_eq!(a.macs, Some(768));
    assert_eq!(a.other_ops, Some(192));
}

#[test]
fn ms_attention_ops() {
    // MultiHeadAttention q [1,4,16], k/v [1,6,16], 2 heads of 8:
    // scores = 1·2·4·6 = 48; MACs = 48·(8+8) = 768.
    // Attention: x [1,4,16], W [16,48], 2 heads: projection 1·4·16·48 = 3,072;
    // scores 1·2·4·4 = 32 × (2·16/2) = 512 → 3,584.
    let g = GraphBuilder::new("g")
        .input("q", F, &[1, 4, 16])
        .input("k", F, &[1, 6, 16])
        .input("v", F, &[1, 6, 16])
        .input("x", F, &[1, 4, 16])
        .init(tensor_f32("w", &[16, 48], 1))
        .init(tensor_f32("b", &[48], 1))
        .node(node_in(
            "com.microsoft",
            "MultiHeadAttention",
            &["q", "k", "v"],
            &["y"],
            vec![attr("num_heads", Attr::Int(2))],
        ))
        .node(node_in(
            "com.microsoft",
            "Attention",
            &["x", "w", "b"],
            &["z"],
            vec![attr("num_heads", Attr::Int(2))],
        ))
        .output("y", F, &[])
        .output("z", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 4, 16]);
    assert_eq!(out_shape(&a, 1), vec![1, 4, 16]);
    assert_eq!(node_macs(&a, "MultiHeadAttention"), 768);
    assert_eq!(node_macs(&a, "Attention"), 3_584);
}

#[test]
fn quantized_linear_ops_count_like_float() {
    // QLinearConv x [1,3,8,8] w [4,3,3,3] → [1,4,6,6]: MACs = 4·36 × 27 = 3,888.
    // QLinearMatMul [2,16]×[16,8] → 256; MatMulInteger [2,16]×[16,8] → 256;
    // ConvInteger same as the QLinearConv → 3,888; QGemm [2,16]×[16,8] → 256.
    let u8 = DataType::UINT8;
    let g = GraphBuilder::new("g")
        .input("x", u8, &[1, 3, 8, 8])
        .input("a", u8, &[2, 16])
        .init(tensor_zeros("w", u8, &[4, 3, 3, 3]))
        .init(tensor_zeros("m", u8, &[16, 8]))
        .init(tensor_f32("s", &[], 1))
        .init(tensor_zeros("z", u8, &[]))
        .node(node(
            "QLinearConv",
            &["x", "s", "z", "w", "s", "z", "s", "z"],
            &["y"],
            vec![],
        ))
        .node(node(
            "QLinearMatMul",
            &["a", "s", "z", "m", "s", "z", "s", "z"],
            &["p"],
            vec![],
        ))
        .node(node("MatMulInteger", &["a", "m"], &["q"], vec![]))
        .node(node("ConvInteger", &["x", "w"], &["c"], vec![]))
        .node(node_in(
            "com.microsoft",
            "QGemm",
            &["a", "s", "z", "m", "s", "z"],
            &["g"],
            vec![],
        ))
        .output("y", u8, &[])
        .output("p", u8, &[])
        .output("q", DataType::INT32, &[])
        .output("c", DataType::INT32, &[])
        .output("g", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 4, 6, 6]);
    assert_eq!(out_shape(&a, 1), vec![2, 8]);
    assert_eq!(out_shape(&a, 4), vec![2, 8]);
    // QGemm (com.microsoft) [2,16]×[16,8] without y_scale: 256 MACs, FP32 output.
    assert_eq!(a.outputs[4].elem_type, "FP32");
    assert_eq!(a.macs, Some(3_888 + 256 + 256 + 3_888 + 256));
    assert_eq!(a.outputs[2].elem_type, "INT32");
}

#[test]
fn pooling_norm_activation_other_ops() {
    // x [1,4,8,8] (256 elements)
    // BatchNormalization: 2·256 = 512; Relu: 256;
    // MaxPool 3×3 s2 pad1 → [1,4,4,4] (64): 64·9 = 576;
    // GlobalAveragePool: input 64 → [1,4,1,1];
    // Softmax on [1,4,1,1] → Flatten [1,4]: 3·4 = 12. Total other = 512+256+576+64+12.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 4, 8, 8])
        .init(tensor_f32("sc", &[4], 1))
        .init(tensor_f32("bi", &[4], 2))
        .init(tensor_f32("me", &[4], 3))
        .init(tensor_f32("va", &[4], 4))
        .node(node(
            "BatchNormalization",
            &["x", "sc", "bi", "me", "va"],
            &["bn"],
            vec![],
        ))
        .node(node("Relu", &["bn"], &["r"], vec![]))
        .node(node(
            "MaxPool",
            &["r"],
            &["p"],
            vec![
                attr("kernel_shape", Attr::Ints(vec![3, 3])),
                attr("strides", Attr::Ints(vec![2, 2])),
                attr("pads", Attr::Ints(vec![1, 1, 1, 1])),
            ],
        ))
        .node(node("GlobalAveragePool", &["p"], &["g"], vec![]))
        .node(node("Flatten", &["g"], &["f"], vec![]))
        .node(node("Softmax", &["f"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 4]);
    assert_eq!(a.macs, Some(0));
    assert_eq!(a.other_ops, Some(512 + 256 + 576 + 64 + 12));
    assert!(!a.lower_bound);
}

#[test]
fn maxpool_ceil_mode() {
    // 112, k3, s2, no pad: floor → 55; ceil → 56 (torchvision's ShuffleNet stem shape).
    let pool = |ceil| {
        GraphBuilder::new("g")
            .input("x", F, &[1, 1, 112, 112])
            .node(node(
                "MaxPool",
                &["x"],
                &["y"],
                vec![
                    attr("kernel_shape", Attr::Ints(vec![3, 3])),
                    attr("strides", Attr::Ints(vec![2, 2])),
                    attr("ceil_mode", Attr::Int(ceil)),
                ],
            ))
            .output("y", F, &[])
    };
    assert_eq!(
        out_shape(&analyse_graph(pool(0), 17), 0),
        vec![1, 1, 55, 55]
    );
    assert_eq!(
        out_shape(&analyse_graph(pool(1), 17), 0),
        vec![1, 1, 56, 56]
    );
}

#[test]
fn resize_linear_counts_interpolation() {
    // [1,2,4,4] ×2 bilinear → [1,2,8,8] (128): 2 resized axes → 4 ops each = 512.
    // nearest → 0.
    let resize = |mode| {
        GraphBuilder::new("g")
            .input("x", F, &[1, 2, 4, 4])
            .init(acceval::model::build::tensor_raw(
                "scales",
                F,
                &[4],
                [1f32, 1.0, 2.0, 2.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ))
            .node(node(
                "Resize",
                &["x", "", "scales"],
                &["y"],
                vec![attr("mode", Attr::Str(mode))],
            ))
            .output("y", F, &[])
    };
    let a = analyse_graph(resize("linear"), 17);
    assert_eq!(out_shape(&a, 0), vec![1, 2, 8, 8]);
    assert_eq!(a.other_ops, Some(512));
    // The float scales only feed a shape input: a shape tensor, not a parameter.
    assert_eq!(a.params.count, 0);
    assert_eq!(a.shape_tensors.tensors, 1);
    let a = analyse_graph(resize("nearest"), 17);
    assert_eq!(a.other_ops, Some(0));
}

#[test]
fn shape_arithmetic_chain_resolves_reshape() {
    // x [1,3,8,8] → Shape → Gather(0) → Unsqueeze → Concat([-1]) → Reshape → [1,192]
    // → MatMul W [192,10]: MACs = 1,920. The int64 constants are shape tensors.
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 3, 8, 8])
        .init(tensor_i64("zero", &[], &[0]))
        .init(tensor_i64("axes0", &[1], &[0]))
        .init(tensor_i64("minus1", &[1], &[-1]))
        .init(tensor_f32("w", &[192, 10], 1))
        .node(node("Shape", &["x"], &["s"], vec![]))
        .node(node("Gather", &["s", "zero"], &["n"], vec![]))
        .node(node("Unsqueeze", &["n", "axes0"], &["n1"], vec![]))
        .node(node(
            "Concat",
            &["n1", "minus1"],
            &["target"],
            vec![attr("axis", Attr::Int(0))],
        ))
        .node(node("Reshape", &["x", "target"], &["flat"], vec![]))
        .node(node("MatMul", &["flat", "w"], &["y"], vec![]))
        .output("y", F, &[]);
    let a = analyse_graph(g, 17);
    assert_eq!(out_shape(&a, 0), vec![1, 10]);
    assert_eq!(a.macs, Some(1_920));
    assert_eq!(a.params.count, 1_920);
    assert_eq!(a.shape_tensors.tensors, 3);
    assert_eq!(a.shape_tensors.count, 3);
}

#[test]
fn unknown_op_is_listed_and_totals_are_a_lower_bound() {
    let g = GraphBuilder::new("g")
        .input("x", F, &[1, 16])
        .init(tensor_f32("w", &[16, 4], 1))
        .node(node("MatMul", &["x", "w"], &["h"], vec![]))
        .node(node_in("vendor.custom", "FancyOp", &["h"], &["y"], vec![]))
        .output("y", F, &[1, 4]);
    let a = analyse_graph(g, 17);
    assert_eq!(a.macs, Some(64));
    assert!(a.lower_bound);
    assert_eq!(a.unsupported_ops.len(), 1);
    assert_eq!(a.unsupported_ops[0].op_type, "FancyOp");
    assert_eq!(a.unsupported_ops[0].domain, "vendor.custom");
    // The declared output shape is used past the unknown op.
    assert_eq!(out_shape(&a, 0), vec![1, 4]);
}

#[test]
fn dynamic_input_needs_a_shape() {
    // [N,3,H,W] without --input: MACs are n/a and the reason names the input.
    let g = || {
        GraphBuilder::new("g")
            .input("images", F, &[-1, 3, -1, -1])
            .init(tensor_f32("w", &[4, 3, 3, 3], 1))
            .node(node("Conv", &["images", "w"], &["y"], vec![]))
            .output("y", F, &[])
    };
    let a = analyse_graph(g(), 17);
    assert_eq!(a.macs, None);
    assert_eq!(a.levels.flops, None);
    let why = a.macs_unavailable.expect("reason");
    assert!(why.contains("images"), "{why}");
    assert!(
        why.contains("as images:<images_d0>x3x<images_d2>x<images_d3>"),
        "{why}"
    );
    // With a shape: out [2,4,14,14]; MACs = 2·4·196 × 27 = 42,336.
    let a = analyse_with(g(), 17, &["images:2x3x16x16"]);
    assert_eq!(a.macs, Some(42_336));
    assert_eq!(out_shape(&a, 0), vec![2, 4, 14, 14]);
}
