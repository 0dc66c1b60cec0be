#!/usr/bin/env python3
"""Finds the first operator where an acceval backend departs from ONNX Runtime: every
float value the graph computes becomes a graph output, both engines run the same inputs,
and the values are compared in graph order by relative L2 error.

    python scripts/bisect_vs_ort.py MODEL.onnx INPUT_SET_DIR [--backend cpu] [--max 1e-4]
                                    [--bin target/release/acceval]

INPUT_SET_DIR is an ONNX test_data_set folder (input_K.pb), e.g. a corpus reference set.
Prints one line per value whose error exceeds --max, first the earliest (the operator to
look at), with the node, its op type and its inputs' errors. Exposing every value keeps
the engine from fusing across them, so a fused kernel's own error may not reproduce: the
script says so when every single value agrees.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--max", type=float, default=1e-4)
    ap.add_argument("--bin", default="target/release/acceval")
    a = ap.parse_args()

    m = onnx.load(a.model)
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {v.name: v.type.tensor_type.elem_type for v in
             list(inferred.graph.value_info) + list(m.graph.output) + list(m.graph.input)}
    existing = {o.name for o in m.graph.output}
    order = []
    for n in m.graph.node:
        for o in n.output:
            if o and types.get(o) == onnx.TensorProto.FLOAT:
                order.append((o, n))
                if o not in existing:
                    m.graph.output.append(onnx.helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None))
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "exposed.onnx")
    onnx.save(m, path)

    feeds = {}
    for f in sorted(os.listdir(a.inputs)):
        if f.startswith("input_") and f.endswith(".pb"):
            t = onnx.TensorProto()
            t.ParseFromString(open(os.path.join(a.inputs, f), "rb").read())
            feeds[t.name] = numpy_helper.to_array(t)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(names, feeds)))

    out = os.path.join(tmp, "out.npz")
    r = subprocess.run([a.bin, "run", "--model", path, "--backend", a.backend, "--inputs", a.inputs,
                        "--runs", "1", "--output", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"acceval run failed: {r.stderr.strip()}")
    got = np.load(out)
    err = {}
    for name, _ in order:
        key = name if name in got.files else None
        if key is None:
            continue
        x, y = got[key].astype(np.float64), ref[name].astype(np.float64)
        if x.shape != y.shape:
            err[name] = float("inf")
            continue
        d = np.linalg.norm((x - y).ravel())
        n = np.linalg.norm(y.ravel())
        err[name] = d / n if n > 0 else d
    bad = [(name, node) for name, node in order if err.get(name, 0) > a.max]
    if not bad:
        print(f"every exposed value agrees within {a.max:g}: the difference is inside a fused kernel"
              " (compare the unexposed model's output)")
        return
    for name, node in bad[:15]:
        ins = ", ".join(f"{i}={err[i]:.2e}" for i in node.input if i in err)
        print(f"{err[name]:.3e}  {node.op_type:<14} {node.name or name}  inputs: {ins or 'graph inputs/constants'}")


if __name__ == "__main__":
    main()
