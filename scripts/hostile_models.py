#!/usr/bin/env python3
"""Hostile ONNX files against `acceval inspect` (issue 16), or `run`, `bench` and `accuracy` on a
backend (issue 27): named defects and a mutation
campaign. A certification lab feeds models it did not make; every input must end in a
result (exit 0) or one clean error (exit 2), never a panic (exit 101, or a signal) or a hang.

Usage: hostile_models.py [--bin target/debug/acceval] [--out DIR] [--cases N] [--seed S]
                         [--seeds-from DIR ...] [--keep] [--command C] [--backend B]
                         [--check-against REF]

  --bin         the acceval binary (default target/debug/acceval)
  --out         where the generated files go (default: a temporary folder, removed unless
                --keep)
  --cases       mutated files to generate (default 400), spread over the seed models
  --seed        random seed of the campaign (default 16; the campaign is deterministic)
  --seeds-from  extra folders whose *.onnx files are mutated too (default: models/ and the
                files the named cases build)
  --timeout     seconds after which a run counts as a hang (default 10)
  --command     what each file goes through: inspect (default), run (`run --runs 1`), bench
                (`bench --runs 2`), accuracy (`accuracy --against` itself: the file on tract
                is the reference, the same file on --backend the side graded) or serve (exit 2,
                or ready, one inference of zeros answered, live, exit 0 on SIGTERM)
  --backend     the backend of run, bench and accuracy (default cpu; ort:cpu, ...)
  --check-against  with --command run: every case BACKEND answers (exit 0) runs again on REF
                (e.g. ort:cpu) with the same generated inputs, and the outputs (`--output
                .npz`) are compared: other shapes, NaNs in other places or values apart by more
                than 1e-3 relative (1e-4 of the largest magnitude absolute) are a "mismatch",
                counted as a defect like a panic: exit 0 with a wrong answer. A case REF
                refuses is counted as "ok (REF refused)" and listed, and so is a mismatch on
                a quantized or FP16 model ("ok (quantized: engines differ)"): engines round
                those their own way, and the unmutated int8 zoo models already differ.

Needs the `onnx` and `numpy` packages (the CI venv has them). Prints one line per named case
(what came back), then a table: cases | ok | clean errors | panics | hangs | other (|
mismatches); and every panic, hang or mismatch with the file that caused it (kept under
--out). Exit status 1 when any was seen.

Mutations: random byte flips, truncation, deleted/duplicated nodes, dims set to huge,
negative or zero values, attributes set to extreme integers, initializers whose data no
longer matches their dims, renamed inputs (dangling edges), swapped data types, and
inflated external-data offsets. Each mutated file is parsed back by nothing but acceval.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIG = [2**31, 2**32, 2**62, 2**63 - 1, -1, -2**63, 0, 10**12, -7]


def model(nodes, inputs, outputs, inits=(), opset=17, value_info=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, dims, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, dims)


def write(out, name, m_or_bytes):
    p = os.path.join(out, name)
    data = m_or_bytes if isinstance(m_or_bytes, (bytes, bytearray)) else m_or_bytes.SerializeToString()
    with open(p, "wb") as f:
        f.write(data)
    return p


def named_cases(out):
    """(name, path, what the lab should see) for each defect of issue 16."""
    cases = []

    def add(name, m, want):
        cases.append((name, write(out, name + ".onnx", m), want))

    # 1. A tiny file declaring a 10^12-element initializer (no data behind it).
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10**6, 10**6])
    add("declared_count_without_data",
        model([helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", None)], [t]),
        "error naming 'w'")
    # 2. dims 2^32 x 2^32 x 16 wrap a u64 product to 0.
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**32, 2**32, 16])
    add("dims_product_wraps",
        model([helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", None)], [t]),
        "error naming 'w'")
    # 3. External data whose offset/length wrap the bounds check.
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "w.bin"), ("offset", str(2**64 - 8)), ("length", "16")]:
        e = t.external_data.add()
        e.key, e.value = k, v
    with open(os.path.join(out, "w.bin"), "wb") as f:
        f.write(b"\0" * 16)
    add("external_offset_wraps",
        model([helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", None)], [t]),
        "error naming 'w'")
    # 4. A Conv with huge pads (exact MACs would be ~4.8e24).
    w = numpy_helper.from_array(np.zeros((16, 3, 3, 3), np.float32), "w")
    add("conv_huge_pads",
        model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[10**12, 10**12, 10**12, 10**12])],
              [vi("x", [1, 3, 224, 224])], [vi("y", None)], [w]),
        "error naming the node, or exact MACs")
    # 5. External data outside the model's folder: absolute, ../, and a symlink.
    for name, loc in [("external_absolute", "/etc/passwd"), ("external_dotdot", "../../../etc/passwd"),
                      ("external_symlink", "link.bin")]:
        t = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[1])
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", loc
        add(name, model([helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", None)], [t]),
            "refused without revealing the target")
    link = os.path.join(out, "link.bin")
    if not os.path.lexists(link):
        os.symlink("/etc/passwd", link)
    # 6. External data that is a FIFO (open() would block), and a model that is a FIFO.
    t = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[1])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "fifo.bin"
    fifo = os.path.join(out, "fifo.bin")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    add("external_fifo", model([helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", None)], [t]),
        "error: not a regular file")
    mfifo = os.path.join(out, "model_fifo.onnx")
    if not os.path.exists(mfifo):
        os.mkfifo(mfifo)
    cases.append(("model_is_fifo", mfifo, "error: not a regular file"))
    # 7. 100k-node chain (near-linear analysis).
    n = 100_000
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    add("chain_100k", model(nodes, [vi("t0", [1, 8])], [vi(f"t{n}", None)]), "ok, fast")
    # 8. A graph output that no node produces; a negative and an overflowing declared dim.
    add("output_not_produced",
        model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], [vi("nowhere", [1])]),
        "ok or clean error")
    add("negative_declared_dim",
        model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [-5, 4])], [vi("y", None)]),
        "dynamic dim, not a panic")
    add("overflowing_declared_dims",
        model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2**62, 2**62])], [vi("y", None)]),
        "error naming 'x'")
    # 9. ConstantOfShape / Expand to 10^12 elements.
    shp = numpy_helper.from_array(np.array([10**6, 10**6], np.int64), "shp")
    add("constant_of_shape_1e12",
        model([helper.make_node("ConstantOfShape", ["shp"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
              [], [vi("y", None)], [shp]),
        "ok (10^12 other ops) or clean error")
    add("expand_1e12",
        model([helper.make_node("Expand", ["x", "shp"], ["e"]), helper.make_node("Relu", ["e"], ["y"])],
              [vi("x", [1, 1])], [vi("y", None)], [shp]),
        "ok (10^12 other ops) or clean error")
    # 10. Found by a probe of hand-made defects (2026-12-07): tract spun 15.6 s on a perm that
    # names an axis twice, stopped on caught panics (Range delta 0, Slice step -2^63, an
    # integer divisor of 0, a ScatterElements index past the axis) and ran TopK with k above
    # the axis; ONNX Runtime runs a Loop of 10^12 iterations until it is killed.
    i64 = lambda name, a: numpy_helper.from_array(np.array(a, np.int64), name)
    add("transpose_perm_repeats",
        model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [vi("x", [1, 8])], [vi("y", None)]),
        "error naming the node")
    add("range_delta_0",
        model([helper.make_node("Range", ["s", "l", "d"], ["y"])], [], [vi("y", None, TensorProto.INT64)],
              [i64("s", 0), i64("l", 10), i64("d", 0)]),
        "error naming the node")
    add("slice_step_i64_min",
        model([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [vi("x", [1, 8])], [vi("y", None)],
              [i64("s", [0]), i64("e", [8]), i64("a", [1]), i64("st", [np.iinfo(np.int64).min])]),
        "error naming the node")
    add("integer_divisor_zero",
        model([helper.make_node("Div", ["x", "z"], ["y"])], [vi("x", [4], TensorProto.INT64)],
              [vi("y", None, TensorProto.INT64)], [i64("z", [3, 0, 1, 2])]),
        "error naming the node")
    add("scatter_index_past_axis",
        model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1)], [vi("x", [1, 4])], [vi("y", None)],
              [i64("i", [[9]]), numpy_helper.from_array(np.ones((1, 1), np.float32), "u")]),
        "error naming the node")
    add("topk_k_above_axis",
        model([helper.make_node("TopK", ["x", "k"], ["v", "i"])], [vi("x", [1, 4])],
              [vi("v", None), vi("i", None, TensorProto.INT64)], [i64("k", [9])]),
        "error naming the node")
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Relu", ["v_in"], ["v_out"])], "body",
        [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL), vi("v_in", [1, 4])],
        [vi("c_out", [], TensorProto.BOOL), vi("v_out", [1, 4])])
    add("loop_1e12_iterations",
        model([helper.make_node("Loop", ["M", "c", "x"], ["y"], body=body)], [vi("x", [1, 4])], [vi("y", [1, 4])],
              [i64("M", 10**12), numpy_helper.from_array(np.array(True), "c")]),
        "clean error (ort:cpu: stopped at the 10 s run budget)")
    # 11. Found by two more probes (2026-12-07): tract answered with exit 0 (an Einsum output
    # label in no operand, LRN size 0, MaxPool padded past its kernel, a float Mod without
    # fmod, a reflect Pad past its axis, an output declared with another type) or a caught
    # panic (generated Gather/GatherND indices past the table).
    f32 = lambda name, shape: numpy_helper.from_array(np.ones(shape, np.float32), name)
    add("einsum_label_in_no_operand",
        model([helper.make_node("Einsum", ["x"], ["y"], equation="ij->k")], [vi("x", [2, 3])], [vi("y", None)]),
        "error naming the node")
    add("lrn_size_0",
        model([helper.make_node("LRN", ["x"], ["y"], size=0)], [vi("x", [1, 3, 4, 4])], [vi("y", None)]),
        "error naming the node")
    add("maxpool_pads_past_kernel",
        model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[3, 3, 3, 3])],
              [vi("x", [1, 2, 4, 4])], [vi("y", None)]),
        "error naming the node")
    add("float_mod_without_fmod",
        model([helper.make_node("Mod", ["x", "z"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], [f32("z", [2, 3])]),
        "error naming the node")
    add("reflect_pad_past_axis",
        model([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [vi("x", [1, 2, 4, 4])], [vi("y", None)],
              [i64("p", [0, 0, 9, 9, 0, 0, 9, 9])]),
        "error naming the node")
    add("output_declared_other_type",
        model([helper.make_node("Shape", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2])]),
        "error naming the output")
    add("gather_generated_indices_past_table",
        model([helper.make_node("Gather", ["w", "idx"], ["y"])], [vi("idx", [3], TensorProto.INT64)], [vi("y", None)],
              [f32("w", [4, 2])]),
        "error naming the input (generated integers in [0, 10) on a 4-row table)")
    add("gathernd_generated_indices_past_table",
        model([helper.make_node("GatherND", ["w", "idx"], ["y"])], [vi("idx", [3, 1], TensorProto.INT64)],
              [vi("y", None)], [f32("w", [4, 2])]),
        "error naming the input (generated integers in [0, 10) on a 4-row table)")
    # 12. Found by the sixth campaign round (2026-12-07): a Slice step of 2^62, which tract
    # keeps as a 32-bit 0 and divided by (a caught panic); ONNX Runtime takes one element.
    add("slice_step_past_32_bits",
        model([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [vi("x", [1, 8])], [vi("y", None)],
              [i64("s", [0]), i64("e", [8]), i64("a", [1]), i64("st", [1 << 62])]),
        "tract: error naming the node (32-bit steps); ort:cpu: ok, one element")
    # 13. Found by a probe comparing tract's outputs with ONNX Runtime's (2026-12-07): valid
    # ONNX tract panicked on (cropping pads, descending Squeeze axes, a float Range delta
    # below 1) or ran wrongly (a reverse LSTM ran forward). ONNX Runtime runs each.
    add("pad_negative_crops",
        model([helper.make_node("Pad", ["x", "p"], ["y"])], [vi("x", [4, 6])], [vi("y", None)],
              [i64("p", [-1, 0, 0, -2])]),
        "tract: error naming the node; ort:cpu: ok")
    add("squeeze_axes_descending",
        model([helper.make_node("Squeeze", ["x", "a"], ["y"])], [vi("x", [1, 4, 1])], [vi("y", None)],
              [i64("a", [-1, 0])]),
        "tract: error naming the node; ort:cpu: ok")
    add("range_float_delta_half",
        model([helper.make_node("Range", ["s", "l", "d"], ["y"])], [], [vi("y", None)],
              [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s", 0), ("l", 3), ("d", 0.5))]),
        "tract: error naming the node; ort:cpu: ok")
    add("lstm_reverse",
        model([helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=3, direction="reverse")],
              [vi("x", [4, 1, 2])], [vi("y", None)], [f32("w", [1, 12, 2]), f32("r", [1, 12, 3])]),
        "tract: error naming the node (it ran reverse forward); ort:cpu: ok")
    # 14. Found in review (2026-12-07): a Conv whose `strides` is misspelt `stride`; tract
    # ignored the attribute and ran at stride 1, exit 0. ONNX's checker and ONNX Runtime
    # refuse an attribute the operator does not define.
    add("conv_attribute_misspelt",
        model([helper.make_node("Conv", ["x", "w"], ["y"], stride=[2, 2])], [vi("x", [1, 1, 8, 8])],
              [vi("y", None)], [f32("w", [1, 1, 3, 3])]),
        "error naming the attribute, 'did you mean strides'")
    # 15. Found in review (2026-12-07): an attribute another opset defines. Opset 13 moved
    # Squeeze's `axes` to an input; tract ignored the attribute and squeezed every unit
    # dimension ([3, 5] for [3, 1, 5]), exit 0, where ONNX Runtime refuses the model.
    add("squeeze_axes_attribute_at_opset_13",
        model([helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], [vi("x", [1, 3, 1, 5])],
              [vi("y", None)], opset=13),
        "error naming the attribute and the opsets that define it")
    return cases


MUTATORS = []


def mutator(f):
    MUTATORS.append(f)
    return f


@mutator
def flip_bytes(data, rng):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


@mutator
def truncate(data, rng):
    return data[: rng.randrange(1, max(2, len(data)))]


def proto_mutator(f):
    def wrapped(data, rng):
        m = onnx.ModelProto()
        m.ParseFromString(data)
        if f(m, rng) is False:
            return None
        return m.SerializeToString()
    wrapped.__name__ = f.__name__
    MUTATORS.append(wrapped)
    return wrapped


@proto_mutator
def huge_dims(m, rng):
    vs = list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info)
    if not vs:
        return False
    v = rng.choice(vs)
    dims = v.type.tensor_type.shape.dim
    if not dims:
        return False
    d = rng.choice(dims)
    d.dim_value = rng.choice(BIG)


@proto_mutator
def initializer_dims(m, rng):
    if not m.graph.initializer:
        return False
    t = rng.choice(m.graph.initializer)
    if t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice(BIG + [3, 1])
    else:
        t.dims.append(rng.choice(BIG))


@proto_mutator
def attribute_extreme(m, rng):
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return False
    a = rng.choice(rng.choice(nodes).attribute)
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(BIG)
    elif a.type == onnx.AttributeProto.INTS and len(a.ints):
        a.ints[rng.randrange(len(a.ints))] = rng.choice(BIG)
    elif a.type == onnx.AttributeProto.FLOATS and len(a.floats):
        a.floats[rng.randrange(len(a.floats))] = rng.choice([float("nan"), float("inf"), -1e30, 0.0])
    elif a.type == onnx.AttributeProto.TENSOR:
        a.t.dims.append(rng.choice(BIG))
    else:
        return False


@proto_mutator
def drop_node(m, rng):
    if not m.graph.node:
        return False
    del m.graph.node[rng.randrange(len(m.graph.node))]


@proto_mutator
def duplicate_node(m, rng):
    if not m.graph.node:
        return False
    n = rng.choice(m.graph.node)
    m.graph.node.insert(rng.randrange(len(m.graph.node)), n)


@proto_mutator
def dangle_input(m, rng):
    nodes = [n for n in m.graph.node if n.input]
    if not nodes:
        return False
    n = rng.choice(nodes)
    n.input[rng.randrange(len(n.input))] = rng.choice(["", "missing", n.output[0] if n.output else "x"])


@proto_mutator
def change_dtype(m, rng):
    ts = list(m.graph.initializer)
    if not ts:
        return False
    rng.choice(ts).data_type = rng.choice([0, 1, 2, 7, 8, 10, 16, 21, 22, 25, 99, -3])


@proto_mutator
def shrink_data(m, rng):
    ts = [t for t in m.graph.initializer if t.raw_data]
    if not ts:
        return False
    t = rng.choice(ts)
    t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]


@proto_mutator
def shape_value(m, rng):
    ts = [t for t in m.graph.initializer if t.data_type == TensorProto.INT64 and t.raw_data]
    if not ts:
        return False
    t = rng.choice(ts)
    a = numpy_helper.to_array(t).copy().reshape(-1)
    if a.size == 0:
        return False
    a[rng.randrange(a.size)] = rng.choice(BIG)
    t.raw_data = a.astype(np.int64).tobytes()


@proto_mutator
def opset(m, rng):
    m.opset_import[0].version = rng.choice([0, 1, 7, 10, 11, 13, 23, 99, -1, 2**40])


@proto_mutator
def permute_nodes(m, rng):
    nodes = list(m.graph.node)
    if len(nodes) < 2:
        return False
    rng.shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)


def seed_files(extra_dirs, cases):
    """Regular models (the zoo's, and *.onnx under --seeds-from, recursively) and the
    named hostile cases, each under 16 MB."""
    regular = []
    for d in [os.path.join(ROOT, "models")] + list(extra_dirs):
        for base, _, files in os.walk(d):
            for f in sorted(files):
                p = os.path.join(base, f)
                if f.endswith(".onnx") and os.path.isfile(p) and os.path.getsize(p) < 16 << 20:
                    regular.append(p)
    hostile = [p for (name, p, _) in cases if os.path.isfile(p) and name != "chain_100k"]
    return sorted(regular), hostile


def argv(bin_, command, backend, path):
    """The command line of one case: `inspect`, or a model-running command on BACKEND."""
    if command == "inspect":
        return [bin_, "inspect", "--json", path]
    if command == "run":
        return [bin_, "run", "--backend", backend, "--model", path, "--runs", "1", "--json"]
    if command == "bench":
        return [bin_, "bench", "--backend", backend, "--model", path, "--runs", "2",
                "--warmup-runs", "1", "--duration", "0", "--sample-ms", "0", "--json"]
    if command == "accuracy":
        # A file outside the zoo is graded against a conversion check of itself: the source
        # run on tract is the reference, the same file on BACKEND the converted side.
        return [bin_, "accuracy", "--model", path, "--against", path,
                "--against-backend", backend, "--sets", "1"]
    raise SystemExit(f"unknown --command {command}")


def serve_case(bin_, path, timeout, backend):
    """`serve` on the file: it must exit 2 naming the problem, or turn ready, answer one
    inference (any status) from zeros of its declared inputs, stay live, and exit 0 on
    SIGTERM. "hang": neither within the timeout."""
    import json
    import signal
    import time
    import urllib.error
    import urllib.request
    p = subprocess.Popen([bin_, "serve", "--backend", backend, "--model", path, "--port", "0"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = p.stdout.readline().decode().split("listening on ")[-1].split(" ")[0].strip()
        name = os.path.splitext(os.path.basename(path))[0]
        deadline = time.time() + timeout
        ready = False
        while time.time() < deadline and p.poll() is None and url.startswith("http"):
            try:
                urllib.request.urlopen(f"{url}/v2/health/ready", timeout=2)
                ready = True
                break
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        if not ready:
            try:  # it printed no address (it refused the model) or has not turned ready
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                return "hang", p.stderr.read().decode("utf-8", "replace")
            return None, (p.returncode, p.stderr.read())
        meta = json.load(urllib.request.urlopen(f"{url}/v2/models/{name}", timeout=5))
        inputs = []
        for i in meta.get("inputs", []):
            shape = [d if d > 0 else 1 for d in i["shape"]]
            n = 1
            for d in shape:
                n *= d
            zero = False if i["datatype"] == "BOOL" else 0
            inputs.append({"name": i["name"], "shape": shape, "datatype": i["datatype"],
                           "data": [zero] * min(n, 1 << 22)})
        req = urllib.request.Request(f"{url}/v2/models/{name}/infer",
                                     data=json.dumps({"inputs": inputs}).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError:
            pass  # a 4xx/5xx answer is an answer
        except (urllib.error.URLError, OSError) as e:
            p.kill()
            return "other(no answer)", f"{e}\n{p.stderr.read().decode('utf-8', 'replace')}"
        urllib.request.urlopen(f"{url}/v2/health/live", timeout=5)
        p.send_signal(signal.SIGTERM)
        code = p.wait(timeout=timeout)
        return None, (0 if code == 0 else code, p.stderr.read())
    except Exception as e:  # noqa: BLE001 - any failure of the server is the finding
        if p.poll() is None:
            p.kill()
            p.wait()
        return f"other({type(e).__name__})", f"{e}\n{p.stderr.read().decode('utf-8', 'replace')}"


def outputs(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def compare(bin_, path, timeout, backend, ref, got):
    """`run` of PATH on REF with the same generated inputs, its outputs against GOT's (the
    .npz BACKEND wrote): None when they agree, else (kind, what differs)."""
    want = got + ".ref.npz"
    try:
        r = subprocess.run([bin_, "run", "--backend", ref, "--model", path, "--runs", "1",
                            "--output", want], capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "ok (ref hung)", ""
    if r.returncode not in (0, 1) or not os.path.isfile(want):
        return f"ok ({ref} refused)", r.stderr.decode("utf-8", "replace").strip()
    if not os.path.isfile(got):
        return "mismatch", f"{backend} wrote no outputs"
    a, b = outputs(got), outputs(want)
    if sorted(a) != sorted(b):
        return "mismatch", f"outputs {sorted(a)} on {backend}, {sorted(b)} on {ref}"
    for k in sorted(a):
        x, y = a[k], b[k]
        if x.shape != y.shape:
            return "mismatch", f"output '{k}': shape {x.shape} on {backend}, {y.shape} on {ref}"
        if x.dtype.kind not in "fcbiu" or y.dtype.kind not in "fcbiu":
            continue
        x, y = x.astype(np.float64), y.astype(np.float64)
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            return "mismatch", f"output '{k}': NaN in other places on {backend} and {ref}"
        fin = ~np.isnan(y)
        big = float(np.abs(y[fin & np.isfinite(y)]).max(initial=0.0))
        if not np.allclose(x[fin], y[fin], rtol=1e-3, atol=1e-4 * max(1.0, big), equal_nan=True):
            d = np.abs(x[fin] - y[fin])
            i = int(np.nanargmax(np.where(np.isnan(d), np.inf, d)))
            return "mismatch", (f"output '{k}' {x.shape}: max |difference| {d[i]:.6g} "
                                f"({x[fin][i]:.6g} on {backend}, {y[fin][i]:.6g} on {ref})")
    return None


QUANTIZED = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
             "QLinearMatMul", "MatMulInteger", "ConvInteger"}


def reduced_precision(path):
    """Why two engines may differ on PATH without either being wrong: quantized operators
    (each engine rounds its requantization its own way: the unmutated int8 zoo models
    differ between tract and ONNX Runtime by 0.079 in a logit and 19.9 px in a box) or FP16
    tensors (tract computes FP16 in FP32, ONNX Runtime in FP16, so overflows differ)."""
    try:
        m = onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - an unreadable file has no precision to speak of
        return None
    if any(n.op_type in QUANTIZED for n in m.graph.node):
        return "quantized"
    if any(t.data_type == TensorProto.FLOAT16 for t in m.graph.initializer):
        return "fp16"
    return None


def compare_case(bin_, path, timeout, backend, ref, got):
    """compare(), with a mismatch on a reduced-precision model listed, not counted."""
    res = compare(bin_, path, timeout, backend, ref, got)
    if res and res[0] == "mismatch":
        why = reduced_precision(path)
        if why:
            return f"ok ({why}: engines differ)", res[1]
    return res


def run(bin_, path, timeout, command="inspect", backend="cpu", ref=None):
    if command == "serve":
        kind, res = serve_case(bin_, path, timeout, backend)
        if kind:
            return kind, res
        code, err = res[0], res[1].decode("utf-8", "replace").strip()
        if code == 0:
            return "ok", err
        if code == 2 and "panicked" not in err:
            return "clean error", err
        return ("panic" if "panicked" in err or code in (101, 134) or code < 0
                else f"other({code})"), err
    args = argv(bin_, command, backend, path)
    got = None
    if ref and command == "run":
        got = path + f".{backend.replace(':', '_')}.npz"
        args += ["--output", got]
    try:
        r = subprocess.run(args, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = r.stderr.decode("utf-8", "replace").strip()
    # bench's exit 1 is a finished run judged INVALID (two samples are too few), accuracy's
    # a finished grade that failed: both are results.
    # run's exit 1 is a finished run whose outputs are not finite (NaN, Inf): a result too.
    finished = r.returncode == 0 or (r.returncode == 1 and command == "run" and "not finite" in err)
    if finished and got:
        return compare_case(bin_, path, timeout, backend, ref, got) or ("ok", err)
    if finished:
        return "ok", err
    if r.returncode == 0 or (r.returncode == 1 and command in ("bench", "accuracy")
                             and "panicked" not in err):
        return "ok", err
    if r.returncode == 2 and "panicked" not in err:
        return "clean error", err
    if r.returncode in (101, 134) or r.returncode < 0 or "panicked" in err:
        return "panic", err
    return f"other({r.returncode})", err


def summary(err):
    """The panic message (its location and text), else the last line of stderr."""
    lines = err.splitlines()
    for i, l in enumerate(lines):
        if "panicked at" in l:
            return " ".join(x.strip() for x in lines[i:i + 2])
    return lines[-1] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/debug/acceval"))
    ap.add_argument("--out")
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--seeds-from", nargs="*", default=[])
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--command", default="inspect",
                    help="inspect (default), run, bench, accuracy or serve: what each case goes through")
    ap.add_argument("--backend", default="cpu",
                    help="the backend of run, bench and accuracy (cpu, ort:cpu, ...)")
    ap.add_argument("--check-against", metavar="REF",
                    help="with --command run: compare every answered case's outputs with REF's")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="acceval-hostile-")
    os.makedirs(out, exist_ok=True)
    bad, refused = [], []
    print("named cases:")
    cases = named_cases(out)
    for name, path, want in cases:
        kind, err = run(a.bin, path, a.timeout, a.command, a.backend, a.check_against)
        print(f"  {name:28} {kind:12} (want: {want}) {summary(err)[:160]}")
        if kind in ("panic", "hang", "mismatch") or kind.startswith("other"):
            bad.append((name, path, kind, err))
        elif kind.startswith("ok ("):
            refused.append((name, kind, err))
    rng = random.Random(a.seed)
    regular, hostile = seed_files(a.seeds_from, cases)
    seeds = regular + hostile
    tally = {}
    mdir = os.path.join(out, "mutated")
    os.makedirs(mdir, exist_ok=True)
    blobs = {p: open(p, "rb").read() for p in seeds}
    made = 0
    attempts = 0
    while made < a.cases and attempts < a.cases * 20:
        attempts += 1
        # Three in four cases mutate a regular model; the rest a named hostile one.
        src = rng.choice(hostile if (hostile and made % 4 == 3) else regular)
        mut = rng.choice(MUTATORS)
        try:
            data = mut(blobs[src], rng)
        except Exception:
            data = None
        if not data:
            continue
        # Mutated files live beside their source so external data (and its checks) still apply.
        path = os.path.join(mdir, f"{made:04d}_{mut.__name__}_{os.path.basename(src)}")
        with open(path, "wb") as f:
            f.write(data)
        # External data files travel with their model (mutated files share one folder).
        for side in os.listdir(os.path.dirname(src)):
            s = os.path.join(os.path.dirname(src), side)
            if (side.endswith((".data", ".bin")) and os.path.isfile(s) and not os.path.islink(s)
                    and not os.path.exists(os.path.join(mdir, side))):
                shutil.copy(s, os.path.join(mdir, side))
        kind, err = run(a.bin, path, a.timeout, a.command, a.backend, a.check_against)
        key = ("ok" if kind.startswith("ok") else
               kind if kind in ("clean error", "panic", "hang", "mismatch") else "other")
        tally.setdefault(mut.__name__, {}).setdefault(key, 0)
        tally[mut.__name__][key] += 1
        if key in ("panic", "hang", "other", "mismatch"):
            bad.append((os.path.basename(path), path, kind, err))
        elif kind.startswith("ok ("):
            refused.append((os.path.basename(path), kind, err))
        made += 1
    cols = ["ok", "clean error", "panic", "hang", "other"] + (["mismatch"] if a.check_against else [])
    print(f"\nmutation campaign: {made} cases from {len(regular)} regular and {len(hostile)} hostile seed models (seed {a.seed})")
    print("| mutation | cases | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    total = {c: 0 for c in cols}
    for name in sorted(tally):
        row = tally[name]
        for c in cols:
            total[c] += row.get(c, 0)
        print(f"| {name} | {sum(row.values())} | " + " | ".join(str(row.get(c, 0)) for c in cols) + " |")
    print(f"| **all** | {made} | " + " | ".join(str(total[c]) for c in cols) + " |")
    for name, kind, err in refused:
        print(f"\n{kind}: {name}\n  {summary(err)[:240]}")
    for name, path, kind, err in bad:
        print(f"\n{kind}: {name} ({path})\n  {summary(err)}")
    if not (a.keep or a.out):
        shutil.rmtree(out, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
