#!/usr/bin/env python3
"""The baseline acceval's harness is compared with: a plain Python onnxruntime loop.

Times `session.run` on one input with `time.perf_counter_ns`, after a warm-up, with the
same thread settings acceval's `ort:cpu` backend uses for `--threads N`. Prints JSON:
{"median_ms", "mean_ms", "n", "onnxruntime"}.

usage: ort_python_loop.py MODEL.onnx INPUT_0.pb THREADS RUNS
"""
import json
import statistics
import sys
import time

import onnx
import onnxruntime as ort
from onnx import numpy_helper

model, pb, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
x = numpy_helper.to_array(onnx.load_tensor(pb))
feed = {s.get_inputs()[0].name: x}
for _ in range(10):
    s.run(None, feed)
times = []
for _ in range(runs):
    t = time.perf_counter_ns()
    s.run(None, feed)
    times.append((time.perf_counter_ns() - t) / 1e6)
print(json.dumps({
    "median_ms": statistics.median(times),
    "mean_ms": statistics.fmean(times),
    "n": runs,
    "onnxruntime": ort.__version__,
}))
