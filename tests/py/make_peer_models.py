#!/usr/bin/env python3
"""Build small ONNX models with real tools (onnx, onnxruntime's quantizer) for acceval's
"real peer" test (tests/python_peers.rs), and write the ground truth of their parameters.

Usage: make_peer_models.py OUTDIR

Writes into OUTDIR:
  cnn_fp32.onnx              small CNN built with onnx.helper (weights as initializers)
  cnn_qdq_int8.onnx          cnn_fp32 through onnxruntime.quantization.quantize_static, QDQ,
                             per-channel symmetric INT8 weights, INT8 activations
  cnn_qoperator_uint8.onnx   same in QOperator format (QLinearConv, com.microsoft QGemm and
                             QLinearGlobalAveragePool), UINT8 activations, weight_type UINT8:
                             onnxruntime honours it for QGemm (fc.weight is UINT8) but forces
                             per-channel QLinearConv weights to INT8 (operators/conv.py), so
                             this model holds both INT8 and UINT8 weights
  cnn_fp16.onnx              cnn_fp32 with every FP32 initializer (and the I/O) in FP16
  cnn_constants.onnx         cnn_fp32 with each initializer turned into a Constant node
  cnn_external.onnx (+ cnn_external.data)
                             cnn_fp32 with all tensors in one external data file
  if_model.onnx              an If whose branches hold their own initializers and a
                             Constant node, using an outer initializer in one branch
  expected.json              ground truth per file: {"count", "bytes", "tensors",
                             "by_type": {TYPE: {"tensors", "count", "bytes"}},
                             "shape_tensors": {"tensors", "count", "bytes"},
                             "quantized_weights": {TYPE: elements of the INT8/UINT8
                             tensors of rank >= 2, i.e. the quantized Conv/Gemm weights}}
                             with TYPE named as acceval names it (FP32, FP16, INT8, ...)

Everything is deterministic (fixed seeds; the quantizer's MinMax calibration is exact).
Only onnx, onnxruntime and numpy are used. Every model passes onnx.checker (full_check).

Ground truth rule (computed from the ONNX protos with onnx only, independent of acceval):
  * the stored tensors are the initializers and the `value` tensors of Constant nodes, in the
    main graph and in every subgraph (If/Loop/Scan attributes, recursively), each counted
    once by name;
  * an integer tensor (INT*/UINT*) is NOT a parameter when it has at least one consumer and
    every consumer (in any graph, subgraphs included) uses it only as Reshape input 1,
    Slice inputs 1-4, or Unsqueeze/Squeeze input 1: those are "shape tensors";
  * elements = product of dims (1 for a scalar), read from dims only (so external data is
    never read); bytes = elements x element size of the stored type.
This is a subset of acceval's rule (acceval also follows shape arithmetic and more shape
slots); the models here only exercise the cases both rules agree on.
"""

import copy
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
SEED = 1234

ELEM_NAME = {
    TensorProto.FLOAT: "FP32",
    TensorProto.UINT8: "UINT8",
    TensorProto.INT8: "INT8",
    TensorProto.UINT16: "UINT16",
    TensorProto.INT16: "INT16",
    TensorProto.INT32: "INT32",
    TensorProto.INT64: "INT64",
    TensorProto.BOOL: "BOOL",
    TensorProto.FLOAT16: "FP16",
    TensorProto.DOUBLE: "FP64",
    TensorProto.UINT32: "UINT32",
    TensorProto.UINT64: "UINT64",
    TensorProto.BFLOAT16: "BF16",
}
ELEM_SIZE = {
    TensorProto.FLOAT: 4,
    TensorProto.UINT8: 1,
    TensorProto.INT8: 1,
    TensorProto.UINT16: 2,
    TensorProto.INT16: 2,
    TensorProto.INT32: 4,
    TensorProto.INT64: 8,
    TensorProto.BOOL: 1,
    TensorProto.FLOAT16: 2,
    TensorProto.DOUBLE: 8,
    TensorProto.UINT32: 4,
    TensorProto.UINT64: 8,
    TensorProto.BFLOAT16: 2,
}
INTEGER_TYPES = {
    TensorProto.UINT8,
    TensorProto.INT8,
    TensorProto.UINT16,
    TensorProto.INT16,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.UINT32,
    TensorProto.UINT64,
}
# (op_type, input index) slots that make an integer tensor a shape tensor.
SHAPE_SLOTS = {
    ("Reshape", 1),
    ("Slice", 1),
    ("Slice", 2),
    ("Slice", 3),
    ("Slice", 4),
    ("Unsqueeze", 1),
    ("Squeeze", 1),
}

INPUT_SHAPE = [1, 3, 32, 32]


def die(msg):
    print(f"make_peer_models.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------


def make_cnn_fp32():
    """Conv 3->8 3x3 pad 1 + Relu + Conv 8->16 3x3 stride 2 pad 1 + Relu
    + GlobalAveragePool + Flatten + Gemm 16->5 (transB), input [1,3,32,32]."""
    rng = np.random.default_rng(SEED)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    inits = [
        numpy_helper.from_array(w(8, 3, 3, 3), "conv1.weight"),
        numpy_helper.from_array(w(8), "conv1.bias"),
        numpy_helper.from_array(w(16, 8, 3, 3), "conv2.weight"),
        numpy_helper.from_array(w(16), "conv2.bias"),
        numpy_helper.from_array(w(5, 16), "fc.weight"),
        numpy_helper.from_array(w(5), "fc.bias"),
    ]
    nodes = [
        helper.make_node(
            "Conv",
            ["input", "conv1.weight", "conv1.bias"],
            ["c1"],
            name="conv1",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(
            "Conv",
            ["r1", "conv2.weight", "conv2.bias"],
            ["c2"],
            name="conv2",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            strides=[2, 2],
        ),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node(
            "Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="acceval-peer-models",
    )
    model.ir_version = 8
    return model


class RandomReader:
    """CalibrationDataReader over a handful of seeded random inputs."""

    def __init__(self, n=4, seed=SEED + 1):
        rng = np.random.default_rng(seed)
        self.batches = [
            {"input": rng.standard_normal(INPUT_SHAPE).astype(np.float32)}
            for _ in range(n)
        ]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.batches):
            return None
        self.i += 1
        return self.batches[self.i - 1]

    def rewind(self):
        self.i = 0


def quantize(fp32_path, out_path, fmt, act, wt):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        quantize_static,
    )

    class Reader(RandomReader, CalibrationDataReader):
        pass

    quantize_static(
        fp32_path,
        out_path,
        Reader(),
        quant_format=fmt,
        per_channel=True,
        activation_type=act,
        weight_type=wt,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"WeightSymmetric": True},
    )


def make_fp16(fp32):
    m = copy.deepcopy(fp32)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            g.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    return m


def make_constants(fp32):
    m = copy.deepcopy(fp32)
    g = m.graph
    consts = [
        helper.make_node("Constant", [], [t.name], name=f"const_{t.name}", value=t)
        for t in g.initializer
    ]
    del g.initializer[:]
    nodes = consts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    return m


def make_if_model():
    """x [2,4] FP32, cond BOOL scalar.
    main:  gather_idx INT64 [2] (Gather indices: a parameter), W_outer FP32 [4,3]
           xg = Gather(x, gather_idx, axis=0)
           y  = If(cond)
    then:  b_then FP32 [3] (initializer), then_scale FP32 [1] (Constant node)
           y = (xg @ W_outer + b_then) * then_scale          (uses the outer W_outer)
    else:  W_else FP32 [4,3], b_else FP32 [3], shape_else INT64 [2] (Reshape shape:
           a shape tensor, not a parameter)
           y = Reshape(xg @ W_else, shape_else) + b_else
    """
    rng = np.random.default_rng(SEED + 2)

    def f(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    F = TensorProto.FLOAT
    then_g = helper.make_graph(
        [
            helper.make_node(
                "Constant",
                [],
                ["then_scale"],
                name="then_scale_const",
                value=numpy_helper.from_array(np.array([0.5], np.float32), "then_scale"),
            ),
            helper.make_node("MatMul", ["xg", "W_outer"], ["t0"], name="then_mm"),
            helper.make_node("Add", ["t0", "b_then"], ["t1"], name="then_add"),
            helper.make_node("Mul", ["t1", "then_scale"], ["y_then"], name="then_mul"),
        ],
        "then_branch",
        [],
        [helper.make_tensor_value_info("y_then", F, [2, 3])],
        initializer=[numpy_helper.from_array(f(3), "b_then")],
    )
    else_g = helper.make_graph(
        [
            helper.make_node("MatMul", ["xg", "W_else"], ["e0"], name="else_mm"),
            helper.make_node("Reshape", ["e0", "shape_else"], ["e1"], name="else_rs"),
            helper.make_node("Add", ["e1", "b_else"], ["y_else"], name="else_add"),
        ],
        "else_branch",
        [],
        [helper.make_tensor_value_info("y_else", F, [2, 3])],
        initializer=[
            numpy_helper.from_array(f(4, 3), "W_else"),
            numpy_helper.from_array(f(3), "b_else"),
            numpy_helper.from_array(np.array([2, 3], np.int64), "shape_else"),
        ],
    )
    main = helper.make_graph(
        [
            helper.make_node("Gather", ["x", "gather_idx"], ["xg"], name="gather", axis=0),
            helper.make_node(
                "If",
                ["cond"],
                ["y"],
                name="branch",
                then_branch=then_g,
                else_branch=else_g,
            ),
        ],
        "if_model",
        [
            helper.make_tensor_value_info("x", F, [2, 4]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", F, [2, 3])],
        initializer=[
            numpy_helper.from_array(np.array([1, 0], np.int64), "gather_idx"),
            numpy_helper.from_array(f(4, 3), "W_outer"),
        ],
    )
    model = helper.make_model(
        main,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="acceval-peer-models",
    )
    model.ir_version = 8
    return model


# ---------------------------------------------------------------------------------------
# Ground truth
# ---------------------------------------------------------------------------------------


def subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def all_graphs(g):
    yield g
    for n in g.node:
        for sg in subgraphs(n):
            yield from all_graphs(sg)


def ground_truth(model):
    """Parameters of `model` by the rule in the module docstring (dims only: external
    data is never read)."""
    stored = {}  # name -> TensorProto (first occurrence wins)
    uses = {}  # name -> [(op_type, input index)]
    for g in all_graphs(model.graph):
        if len(g.sparse_initializer):
            die(f"graph '{g.name}' has sparse initializers; the ground truth does not handle them")
        tensors = list(g.initializer)
        for n in g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                attrs = {a.name: a for a in n.attribute}
                if set(attrs) != {"value"}:
                    die(f"Constant '{n.name}' uses {sorted(attrs)}; only 'value' is handled")
                t = onnx.TensorProto()
                t.CopyFrom(attrs["value"].t)
                t.name = n.output[0]
                tensors.append(t)
            for i, name in enumerate(n.input):
                if name:
                    uses.setdefault(name, []).append((n.op_type, i))
        for t in tensors:
            stored.setdefault(t.name, t)

    by_type = {}
    params = {"count": 0, "bytes": 0, "tensors": 0}
    shape = {"count": 0, "bytes": 0, "tensors": 0}
    quantized_weights = {}  # elem type -> elements of rank >= 2 8-bit tensors
    for name, t in stored.items():
        if t.data_type not in ELEM_SIZE:
            die(f"tensor '{name}' has element type {t.data_type}, not handled")
        count = int(np.prod(t.dims, dtype=np.int64)) if len(t.dims) else 1
        nbytes = count * ELEM_SIZE[t.data_type]
        u = uses.get(name, [])
        if t.data_type in INTEGER_TYPES and u and all(s in SHAPE_SLOTS for s in u):
            acc = shape
        else:
            acc = params
            e = by_type.setdefault(
                ELEM_NAME[t.data_type], {"tensors": 0, "count": 0, "bytes": 0}
            )
            e["tensors"] += 1
            e["count"] += count
            e["bytes"] += nbytes
            if t.data_type in (TensorProto.INT8, TensorProto.UINT8) and len(t.dims) >= 2:
                # 8-bit tensors of rank >= 2 are quantized Conv/Gemm weights (zero points
                # are scalars or per-channel vectors).
                k = ELEM_NAME[t.data_type]
                quantized_weights[k] = quantized_weights.get(k, 0) + count
        acc["tensors"] += 1
        acc["count"] += count
        acc["bytes"] += nbytes
    return {
        "count": params["count"],
        "bytes": params["bytes"],
        "tensors": params["tensors"],
        "by_type": by_type,
        "shape_tensors": shape,
        "quantized_weights": quantized_weights,
    }


def check(path, full=True):
    try:
        onnx.checker.check_model(path, full_check=full)
    except Exception as e:  # noqa: BLE001 - any checker failure is fatal
        die(f"{path} is not a valid ONNX model: {e}")


def main():
    if len(sys.argv) != 2:
        die("usage: make_peer_models.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    np.random.seed(SEED)

    from onnxruntime.quantization import QuantFormat, QuantType

    def p(name):
        return os.path.join(out, name)

    fp32 = make_cnn_fp32()
    onnx.save_model(fp32, p("cnn_fp32.onnx"))
    quantize(
        p("cnn_fp32.onnx"),
        p("cnn_qdq_int8.onnx"),
        QuantFormat.QDQ,
        QuantType.QInt8,
        QuantType.QInt8,
    )
    quantize(
        p("cnn_fp32.onnx"),
        p("cnn_qoperator_uint8.onnx"),
        QuantFormat.QOperator,
        QuantType.QUInt8,
        QuantType.QUInt8,
    )
    onnx.save_model(make_fp16(fp32), p("cnn_fp16.onnx"))
    onnx.save_model(make_constants(fp32), p("cnn_constants.onnx"))
    ext = copy.deepcopy(fp32)
    onnx.save_model(
        ext,
        p("cnn_external.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="cnn_external.data",
        size_threshold=0,
    )
    onnx.save_model(make_if_model(), p("if_model.onnx"))

    names = [
        "cnn_fp32.onnx",
        "cnn_qdq_int8.onnx",
        "cnn_qoperator_uint8.onnx",
        "cnn_fp16.onnx",
        "cnn_constants.onnx",
        "cnn_external.onnx",
        "if_model.onnx",
    ]
    expected = {}
    for name in names:
        path = p(name)
        # The path form lets the checker find the external data beside the model.
        check(path)
        model = onnx.load_model(path, load_external_data=False)
        if name == "cnn_external.onnx":
            ext_tensors = [
                t
                for t in model.graph.initializer
                if t.data_location == TensorProto.EXTERNAL
            ]
            if len(ext_tensors) != len(model.graph.initializer) or not ext_tensors:
                die("cnn_external.onnx: not every initializer is stored externally")
            if not os.path.exists(p("cnn_external.data")):
                die("cnn_external.data was not written")
        size = os.path.getsize(path)
        if size > 1_000_000:
            die(f"{name} is {size} bytes; keep the peer models under 1 MB")
        expected[name] = ground_truth(model)

    # Same weights, different storage: these must agree.
    base = {k: expected["cnn_fp32.onnx"][k] for k in ("count", "bytes", "by_type")}
    for name in ("cnn_constants.onnx", "cnn_external.onnx"):
        got = {k: expected[name][k] for k in ("count", "bytes", "by_type")}
        if got != base:
            die(f"ground truth of {name} {got} differs from cnn_fp32's {base}")

    with open(p("expected.json"), "w") as fh:
        json.dump(expected, fh, indent=2, sort_keys=True)
        fh.write("\n")
    for name in names:
        e = expected[name]
        types = ", ".join(
            f"{k} {v['tensors']}t/{v['count']}e/{v['bytes']}B" for k, v in e["by_type"].items()
        )
        print(f"{name}: {e['count']} params, {e['bytes']} bytes [{types}]")


if __name__ == "__main__":
    main()
