#!/usr/bin/env python3
"""The actual output shapes of every main-graph node of an ONNX model, as ONNX Runtime
computes them for given input shapes: the reference `tests/inspect.rs` checks acceval's
resolved shapes against.

Usage: ort_shapes.py MODEL.onnx [NAME:SHAPE ...] [--value NAME=V]

  NAME:SHAPE   an input's shape, e.g. x:1x3x224x224 (every input needs one unless its
               declared shape is fully numeric)
  --value N=V  a scalar input's value (e.g. sr=16000); other inputs are filled with
               zeros (floats) or ones (integers), and a declared integer input's value
               given this way overrides that

Prints JSON {node_name: [shape of each output, or null when the output is empty-named or
not a tensor]} on stdout. Every node output of the main graph is exposed as a graph output
(subgraph values are not reachable this way). Nodes without a name are keyed
`op_type#index`, as acceval labels them.
"""
import json
import sys

import numpy as np
import onnx
import onnxruntime as ort

NP = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.BOOL: np.bool_,
}


def main(argv):
    path = argv[0]
    shapes, values = {}, {}
    args = iter(argv[1:])
    for a in args:
        if a == "--value":
            k, v = next(args).split("=", 1)
            values[k] = float(v)
        else:
            k, s = a.rsplit(":", 1)
            shapes[k] = [int(d) for d in s.split("x")] if s else []
    m = onnx.load(path)
    g = m.graph
    labels = []
    existing = {o.name for o in g.output}
    for i, n in enumerate(g.node):
        labels.append(n.name or f"{n.op_type}#{i}")
        for o in n.output:
            if o and o not in existing:
                g.output.append(onnx.ValueInfoProto(name=o))
                existing.add(o)
    init = {t.name for t in g.initializer}
    feeds = {}
    for i in g.input:
        if i.name in init:
            continue
        t = i.type.tensor_type
        dims = shapes.get(i.name)
        if dims is None:
            dims = [d.dim_value for d in t.shape.dim]
        dt = NP.get(t.elem_type, np.float32)
        if i.name in values:
            feeds[i.name] = np.full(dims, values[i.name], dtype=dt)
        elif np.issubdtype(dt, np.integer) or dt == np.bool_:
            feeds[i.name] = np.ones(dims, dtype=dt)
        else:
            feeds[i.name] = np.zeros(dims, dtype=dt)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(names, feeds)))
    res = {}
    for label, n in zip(labels, g.node):
        res[label] = [
            list(outs[o].shape) if o and o in outs and hasattr(outs[o], "shape") else None
            for o in n.output
        ]
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
