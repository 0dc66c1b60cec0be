#!/usr/bin/env python3
"""Cross-check `acceval inspect --json` against torchvision's documented numbers.

What it does, in order:

1. Exports a fixed list of torchvision classification models to ONNX
   (1x3x224x224 input, opset 17, legacy TorchScript exporter, random weights
   from ``torch.manual_seed(0)``, eval mode, static shapes, constant folding
   on) into an output directory (default ``/tmp/tv-onnx``).  A file that
   already exists is reused unless ``--force`` is given.

2. For every model it gathers, independently of acceval:

   * torchvision's documented figures from the weights enum metadata:
     ``get_model_weights(name).DEFAULT.meta["_ops"]`` (torchvision calls it
     "GFLOPS" but it is really GMACs: one multiply-accumulate counted once)
     and ``meta["num_params"]``;
   * the number of tensor elements stored in the exported ONNX file,
     counted here with the ``onnx`` package: every graph initializer plus
     every ``Constant`` node's tensor (subgraphs included), each tensor
     counted once by name;
   * the set of ONNX op types the graph uses (printed so the Rust side knows
     which ops it has to support).

3. If an acceval binary is available (``--acceval PATH``, default
   ``<repo>/target/release/acceval`` when that file exists) it runs
   ``PATH inspect FILE.onnx --json`` per model, reads ``macs`` and
   ``params.count`` and prints a markdown table comparing them.

Pass criterion per row ("ok" column):

* MACs: ``|acceval GMACs - _ops| / _ops <= 0.5 %``.  torchvision rounds
  ``_ops`` to 3 decimals, which for tiny models (mobilenet_v3_small:
  0.057) is itself worth up to ~0.9 %, so a row also passes when acceval's
  value rounds to the documented figure, i.e. ``|acceval GMACs - _ops| <=
  0.0005``.  ``--tol-pct`` changes the 0.5 %.
* params: ``params.count + shape_tensors.count`` must EQUAL the python-counted
  ONNX tensor elements (acceval sets apart, as shape tensors, the integer
  tensors that only feed shape inputs).  torchvision's ``num_params`` (nn.Parameters only, no
  buffers) is printed for information only: it legitimately differs from
  what ends up in the ONNX file.  Constant folding folds each BatchNorm
  into the preceding Conv, so BN's weight+bias (2*C) become a single conv
  bias (C); with random init every such folded bias is all zeros, and the
  exporter de-duplicates equal initializers, so one zero bias per channel
  count survives and the other uses become ``Identity`` nodes (resnet18:
  -9,600 BN params + 960 bias elements = -8,640).  Non-parameter tensors
  appear instead: Clip bounds (mobilenet_v2) and int64 shape constants
  (shufflenet, vit) as ``Constant`` nodes.

Diagnostics (printed, not part of pass/fail): MACs from torch's
FlopCounterMode on the PyTorch model (reproduces ``_ops`` before rounding)
and Conv/Gemm/MatMul MACs of the ONNX file from onnx shape inference (a
lower bound where shapes are computed at run time, e.g. shufflenet's
channel split), plus an initializer / Constant breakdown.

Exit status: 1 if any row fails (a failed export counts), 0 otherwise (also
0 when no acceval binary is present or ``--no-acceval`` is given: the
acceval columns then read "n/a", so the export part can be used on its
own).  2 for usage errors, e.g. an explicit ``--acceval`` path
that does not exist.

Dependencies: the standard library, torch, torchvision and onnx (no
onnxruntime needed).  Example::

    /work/venv-torch/bin/python scripts/torchvision_check.py
    /work/venv-torch/bin/python scripts/torchvision_check.py \\
        --acceval target/release/acceval --out /tmp/tv-onnx
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import torch
import torchvision

# --------------------------------------------------------------------------
# Fixed settings.  Changing any of these changes the exported files and so
# the numbers acceval is checked against.
# --------------------------------------------------------------------------

#: Models to export and check, in table order (torchvision builder names).
MODELS = [
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
    "efficientnet_b0",
    "vgg16",
    "vit_b_16",
    "squeezenet1_1",
    "shufflenet_v2_x1_0",
]

INPUT_SHAPE = (1, 3, 224, 224)
OPSET = 17
SEED = 0
#: Graph input / output names used for every export.
INPUT_NAME = "input"
OUTPUT_NAME = "logits"

DEFAULT_OUT = Path("/tmp/tv-onnx")
#: Repository root: this file lives in <repo>/scripts/.
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ACCEVAL = REPO_ROOT / "target" / "release" / "acceval"

#: Default relative MAC tolerance, in percent.
DEFAULT_TOL_PCT = 0.5
#: Half a unit in the last place of torchvision's 3-decimal `_ops` (GMACs).
OPS_ROUNDING_GMACS = 0.0005


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


def build_model(name: str) -> torch.nn.Module:
    """Build torchvision model `name` with random weights (seed 0), eval mode."""
    torch.manual_seed(SEED)
    model = torchvision.models.get_model(name, weights=None)
    model.eval()
    return model


def export_model(name: str, path: Path, force: bool = False) -> bool:
    """Export torchvision model `name` to ONNX at `path`.

    Uses the legacy TorchScript exporter (``dynamo=False``), opset 17,
    static 1x3x224x224 input named ``input``, output named ``logits``,
    constant folding on.  Returns True if a file was written, False if an
    existing file was reused (only when `force` is False).

    The file is written to a temporary name first and renamed into place,
    so an interrupted export never leaves a truncated file that a later run
    would mistake for a finished one.
    """
    path = Path(path)
    if path.exists() and not force:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)

    model = build_model(name)
    # The input values do not affect a static trace; seed them anyway so the
    # whole export is reproducible.
    gen = torch.Generator().manual_seed(SEED)
    dummy = torch.randn(*INPUT_SHAPE, generator=gen)

    tmp = path.with_name(path.name + ".tmp")
    # nn.MultiheadAttention (vit_b_16) has an inference "fast path" that
    # calls the fused aten::_native_multi_head_attention, which the legacy
    # exporter cannot translate.  It is taken in eval mode whenever autograd
    # is off, so: no torch.no_grad() here, and the fast path is switched off
    # explicitly for the duration of the export (restored afterwards).  The
    # slow path is mathematically the same and exports as MatMul/Softmax.
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        torch.onnx.export(
            model,
            (dummy,),
            str(tmp),
            dynamo=False,  # legacy TorchScript-based exporter
            opset_version=OPSET,
            do_constant_folding=True,
            input_names=[INPUT_NAME],
            output_names=[OUTPUT_NAME],
            # no dynamic_axes: every shape is static
        )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    os.replace(tmp, path)
    return True


# --------------------------------------------------------------------------
# Independent ONNX-side counting (onnx package only)
# --------------------------------------------------------------------------


def _tensor_elements(t: onnx.TensorProto) -> int:
    """Number of elements of a TensorProto: product of dims (scalar -> 1)."""
    n = 1
    for d in t.dims:
        n *= d
    return n


def _constant_node_elements(node: onnx.NodeProto) -> int:
    """Elements held by a ``Constant`` node, whichever attribute carries them."""
    for attr in node.attribute:
        if attr.name == "value":
            return _tensor_elements(attr.t)
        if attr.name == "sparse_value":
            # Count the stored (non-zero) values, not the dense shape.
            return _tensor_elements(attr.sparse_tensor.values)
        if attr.name in ("value_float", "value_int", "value_string"):
            return 1
        if attr.name == "value_floats":
            return len(attr.floats)
        if attr.name == "value_ints":
            return len(attr.ints)
        if attr.name == "value_strings":
            return len(attr.strings)
    return 0


@dataclass
class OnnxStats:
    """What the python side counts in one ONNX file."""

    initializer_elements: int = 0
    initializer_count: int = 0
    constant_elements: int = 0
    constant_count: int = 0
    #: Elements of floating-point tensors only (initializers + Constants);
    #: the int64 shape constants are the usual difference to num_params.
    float_elements: int = 0
    op_counts: Counter = field(default_factory=Counter)
    #: Diagnostic Conv/Gemm/MatMul MACs (see onnx_reference_macs) and the
    #: number of those ops it could not size (then ref_macs is a lower bound).
    ref_macs: int = 0
    ref_macs_unknown: int = 0

    @property
    def total_elements(self) -> int:
        return self.initializer_elements + self.constant_elements


_FLOAT_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.DOUBLE,
}


def _walk_graph(graph: onnx.GraphProto, stats: OnnxStats, seen: set[str]) -> None:
    """Accumulate tensor elements and op types of `graph` and its subgraphs.

    `seen` holds tensor names already counted, so each tensor counts once.
    """
    for init in graph.initializer:
        if init.name in seen:
            continue
        seen.add(init.name)
        n = _tensor_elements(init)
        stats.initializer_elements += n
        stats.initializer_count += 1
        if init.data_type in _FLOAT_TYPES:
            stats.float_elements += n
    for node in graph.node:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        stats.op_counts[op] += 1
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            name = node.output[0]
            if name not in seen:
                seen.add(name)
                n = _constant_node_elements(node)
                stats.constant_elements += n
                stats.constant_count += 1
                for attr in node.attribute:
                    if attr.name == "value" and attr.t.data_type in _FLOAT_TYPES:
                        stats.float_elements += n
                    elif attr.name in ("value_float", "value_floats"):
                        stats.float_elements += n
        # Control-flow subgraphs (If / Loop / Scan) hold their own tensors.
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _walk_graph(attr.g, stats, seen)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    _walk_graph(g, stats, seen)


def onnx_stats(path: Path) -> OnnxStats:
    """Count initializer / Constant elements, op types and reference MACs."""
    model = onnx.load(str(path))
    stats = OnnxStats()
    _walk_graph(model.graph, stats, set())
    stats.ref_macs, stats.ref_macs_unknown = onnx_reference_macs(model)
    return stats


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Name -> static shape for every tensor onnx shape inference can resolve."""
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    g = inferred.graph
    shapes: dict[str, list[int]] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if all(d is not None for d in dims):
            shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def onnx_reference_macs(model: onnx.ModelProto) -> tuple[int, Counter]:
    """Diagnostic MAC count: Conv, ConvTranspose, Gemm and MatMul only.

    This is the convention torchvision's ``_ops`` appears to follow (the
    weighted layers and attention matmuls; no BatchNorm, activation,
    pooling or elementwise cost).  It is NOT used for pass/fail: it is
    printed so a mismatch between acceval and ``_ops`` can be attributed to
    a counting convention rather than to a bug.  Top-level graph only.
    Returns (total MACs, number of such ops whose shapes were unknown, so
    the total is a lower bound when that number is not 0).
    """
    shapes = _static_shapes(model)
    per_op: Counter = Counter()
    unknown = 0
    for node in model.graph.node:
        op = node.op_type
        try:
            if op == "Conv":
                out = shapes[node.output[0]]
                w = shapes[node.input[1]]
                # each output element: Cin/group * kernel MACs
                per_op[op] += _prod(out) * _prod(w[1:])
            elif op == "ConvTranspose":
                x = shapes[node.input[0]]
                w = shapes[node.input[1]]  # [Cin, Cout/group, *k]
                per_op[op] += _prod(x) * _prod(w[1:])
            elif op == "Gemm":
                a = shapes[node.input[0]]
                trans_a = any(at.name == "transA" and at.i for at in node.attribute)
                out = shapes[node.output[0]]
                k = a[0] if trans_a else a[1]
                per_op[op] += _prod(out) * k
            elif op == "MatMul":
                a = shapes[node.input[0]]
                out = shapes[node.output[0]]
                per_op[op] += _prod(out) * a[-1]
        except (KeyError, IndexError):
            # Shape not statically known to onnx shape inference (e.g. a
            # channel split computed at run time through Shape -> Gather ->
            # Div -> Slice, as in shufflenet): left out, and counted here.
            unknown += 1
    return sum(per_op.values()), unknown


def torch_reference_macs(name: str) -> int:
    """Diagnostic MACs from torch's own FlopCounterMode (FLOPs / 2).

    Runs one forward pass of the PyTorch model (not the ONNX file).  This
    reproduces torchvision's ``_ops`` before rounding (it counts
    convolutions, matmuls/linear layers and attention), so it tells whether
    a difference comes from `_ops` rounding or from the ONNX side.
    """
    from torch.utils.flop_counter import FlopCounterMode

    model = build_model(name)
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)  # same graph as exported
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(torch.zeros(*INPUT_SHAPE))
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return counter.get_total_flops() // 2

# --------------------------------------------------------------------------
# torchvision's documented numbers
# --------------------------------------------------------------------------


def torchvision_meta(name: str) -> tuple[float, int]:
    """Return (`_ops` in GMACs, `num_params`) from the DEFAULT weights' meta."""
    meta = torchvision.models.get_model_weights(name).DEFAULT.meta
    return float(meta["_ops"]), int(meta["num_params"])


# --------------------------------------------------------------------------
# acceval
# --------------------------------------------------------------------------


@dataclass
class AccevalResult:
    macs: int | None = None
    params_count: int | None = None
    shape_count: int | None = None
    error: str | None = None


def _json_int(value) -> int | None:
    """Accept a JSON integer only (not bool, not float)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def run_acceval(binary: Path, onnx_path: Path, timeout_s: float = 600) -> AccevalResult:
    """Run ``binary inspect onnx_path --json`` and pull out macs / params.count."""
    cmd = [str(binary), "inspect", str(onnx_path), "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return AccevalResult(error=f"timed out after {timeout_s:.0f}s")
    except OSError as e:
        return AccevalResult(error=f"could not run: {e}")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return AccevalResult(error=f"exit {proc.returncode}: {last}")
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        return AccevalResult(error=f"bad JSON: {e}")
    res = AccevalResult()
    res.macs = _json_int(doc.get("macs")) if isinstance(doc, dict) else None
    params = doc.get("params") if isinstance(doc, dict) else None
    res.params_count = _json_int(params.get("count")) if isinstance(params, dict) else None
    shapes = doc.get("shape_tensors") if isinstance(doc, dict) else None
    res.shape_count = _json_int(shapes.get("count")) if isinstance(shapes, dict) else None
    missing = [k for k, v in (("macs", res.macs), ("params.count", res.params_count)) if v is None]
    if missing:
        res.error = "missing/non-integer " + ", ".join(missing)
    return res


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def _fmt_int(n: int) -> str:
    return f"{n:,}".replace(",", "_")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"directory for the ONNX files (default {DEFAULT_OUT})")
    p.add_argument("--force", action="store_true", help="re-export even if the ONNX file already exists")
    p.add_argument(
        "--acceval",
        type=Path,
        default=None,
        help=f"acceval binary to check (default {DEFAULT_ACCEVAL} if it exists; otherwise the acceval columns are n/a)",
    )
    p.add_argument("--no-acceval", action="store_true", help="skip acceval even if the default binary exists (export and python counts only)")
    p.add_argument("--tol-pct", type=float, default=DEFAULT_TOL_PCT, help="allowed |MAC diff| in percent (default 0.5)")
    p.add_argument("--models", default=None, help="comma-separated subset of the model list (default: all)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    models = MODELS
    if args.models:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in models if m not in MODELS]
        if unknown:
            print(f"error: unknown model(s) {unknown}; choose from {MODELS}", file=sys.stderr)
            return 2

    # Resolve the acceval binary: explicit path must exist, default is optional.
    acceval: Path | None
    if args.no_acceval:
        acceval = None
    elif args.acceval is not None:
        acceval = args.acceval if args.acceval.is_absolute() else Path.cwd() / args.acceval
        if not acceval.is_file():
            print(f"error: --acceval {args.acceval} does not exist", file=sys.stderr)
            return 2
    else:
        acceval = DEFAULT_ACCEVAL if DEFAULT_ACCEVAL.is_file() else None

    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}")
    print(f"output dir: {args.out}")
    print(f"acceval: {acceval if acceval else 'n/a (skipped or binary not found; acceval columns are n/a)'}")
    print()

    rows, details, ops_lines = [], [], []
    failures = 0
    for name in models:
        path = args.out / f"{name}.onnx"
        t0 = time.perf_counter()
        try:
            written = export_model(name, path, force=args.force)
        except Exception as e:  # keep going: one bad export must not hide the rest
            print(f"EXPORT FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            failures += 1
            rows.append([name, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", f"FAIL (export: {type(e).__name__})"])
            continue
        dt = time.perf_counter() - t0
        print(f"{'exported' if written else 'reused  '} {name:<20} {path}  ({path.stat().st_size / 2**20:.2f} MiB, {dt:.1f}s)", flush=True)

        tv_gmacs, tv_params = torchvision_meta(name)
        st = onnx_stats(path)
        ops_lines.append(f"- {name} ({len(st.op_counts)} op types): " + ", ".join(f"{op}\u00d7{n}" for op, n in sorted(st.op_counts.items())))
        ref_macs = torch_reference_macs(name)
        details.append([
            name,
            _fmt_int(st.initializer_count),
            _fmt_int(st.initializer_elements),
            _fmt_int(st.constant_count),
            _fmt_int(st.constant_elements),
            _fmt_int(st.float_elements),
            _fmt_int(tv_params),
            _fmt_int(st.total_elements - tv_params),
            f"{ref_macs / 1e9:.6f}",
            f"{st.ref_macs / 1e9:.6f}" + (f" (lower bound: {st.ref_macs_unknown} ops unsized)" if st.ref_macs_unknown else ""),
            f"{(st.ref_macs / 1e9 - tv_gmacs) / tv_gmacs * 100:+.2f}",
        ])

        if acceval is None:
            rows.append([name, f"{tv_gmacs:.3f}", "n/a", "n/a", "n/a", _fmt_int(tv_params), _fmt_int(st.total_elements), "n/a", "n/a"])
            continue

        res = run_acceval(acceval, path)
        if res.error:
            failures += 1
            acc_g = "n/a" if res.macs is None else f"{res.macs / 1e9:.4f}"
            acc_p = "n/a" if res.params_count is None else _fmt_int(res.params_count)
            rows.append([name, f"{tv_gmacs:.3f}", acc_g, "n/a", "n/a", _fmt_int(tv_params), _fmt_int(st.total_elements), acc_p, f"FAIL ({res.error})"])
            continue

        acc_gmacs = res.macs / 1e9
        diff_pct = (acc_gmacs - tv_gmacs) / tv_gmacs * 100.0
        macs_ok = abs(diff_pct) <= args.tol_pct or abs(acc_gmacs - tv_gmacs) <= OPS_ROUNDING_GMACS
        # acceval splits the stored tensors into parameters and shape tensors (integer
        # tensors that only feed shape inputs); together they must be every element.
        params_ok = res.params_count + (res.shape_count or 0) == st.total_elements
        reasons = []
        if not macs_ok:
            reasons.append("macs")
        if not params_ok:
            reasons.append("params")
        if reasons:
            ok = "FAIL (" + ", ".join(reasons) + ")"
        elif abs(diff_pct) > args.tol_pct:
            ok = "yes (within _ops rounding)"  # passed only via the 0.0005 GMAC rule
        else:
            ok = "yes"
        failures += bool(reasons)
        rows.append([
            name,
            f"{tv_gmacs:.3f}",
            f"{acc_gmacs:.4f}",
            f"{diff_pct:+.2f}",
            f"{(res.macs - ref_macs) / ref_macs * 100:+.4f}",
            _fmt_int(tv_params),
            _fmt_int(st.total_elements),
            f"{_fmt_int(res.params_count)} + {_fmt_int(res.shape_count or 0)}",
            ok,
        ])

    print()
    print(_markdown_table(
        ["model", "torchvision GMACs (_ops)", "acceval GMACs", "diff %", "diff vs torch FlopCounter %", "torchvision params",
         "ONNX tensor elements (python)", "acceval params.count + shape_tensors.count", "ok"],
        rows,
    ))
    print()
    print("Diagnostics (not part of pass/fail). 'torch FlopCounter GMACs' = torch.utils.flop_counter")
    print("FLOPs / 2 on the PyTorch model (what torchvision's _ops is, before rounding to 3 decimals);")
    print("'ONNX ref GMACs' = Conv/ConvTranspose/Gemm/MatMul MACs of the ONNX file from onnx shape inference:")
    print()
    print(_markdown_table(
        ["model", "initializers", "initializer elements", "Constant nodes", "Constant elements",
         "float elements", "torchvision num_params", "ONNX total - num_params",
         "torch FlopCounter GMACs", "ONNX ref GMACs", "ONNX ref vs _ops %"],
        details,
    ))
    print()
    print("ONNX op types per model (op\u00d7count):")
    print()
    print("\n".join(ops_lines))
    print()
    if acceval is None:
        if failures:
            print(f"result: {failures} export(s) failed, exit 1")
            return 1
        print("result: export only (no acceval run), exit 0")
        return 0
    print(f"result: {len(rows) - failures}/{len(rows)} rows ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
