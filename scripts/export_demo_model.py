#!/usr/bin/env python3
"""Produce models/squeezenet1_1.onnx, the small demo / test model of acceval.

The file is torchvision's squeezenet1_1 with RANDOM weights (weights=None,
torch.manual_seed(0)), exported exactly like scripts/torchvision_check.py
exports its models (it reuses that script's export function): legacy
TorchScript exporter (dynamo=False), opset 17, static 1x3x224x224 float
input named "input", output named "logits" (1x1000), eval mode, constant
folding on.  No weights are downloaded.

After writing it checks that the file
  * is under 5 MiB,
  * passes onnx.checker.check_model (full_check=True, which includes
    strict shape inference),
  * runs in onnxruntime on one random input (only if onnxruntime is
    installed; otherwise that step is skipped with a note).

Usage (from the repo root):
    /work/venv-torch/bin/python scripts/export_demo_model.py [--out PATH]

Exit status 0 if every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import onnx

# Reuse the single export routine so the demo model and the torchvision
# cross-check can never drift apart in export settings.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torchvision_check as tvc  # noqa: E402

MODEL_NAME = "squeezenet1_1"
DEFAULT_OUT = tvc.REPO_ROOT / "models" / f"{MODEL_NAME}.onnx"
MAX_BYTES = 5 * 2**20  # 5 MiB


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output file (default {DEFAULT_OUT})")
    args = p.parse_args(argv)

    # Always re-export: the file must be exactly what this script produces.
    tvc.export_model(MODEL_NAME, args.out, force=True)
    data = args.out.read_bytes()
    size = len(data)
    print(f"wrote {args.out}: {size} bytes ({size / 2**20:.2f} MiB), sha256 {hashlib.sha256(data).hexdigest()}")
    ok = True
    if size >= MAX_BYTES:
        print(f"FAIL: {size} bytes is not under 5 MiB ({MAX_BYTES} bytes)")
        ok = False

    model = onnx.load(str(args.out))
    onnx.checker.check_model(model, full_check=True)  # raises on failure
    ins = [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in model.graph.input]
    outs = [(o.name, [d.dim_value for d in o.type.tensor_type.shape.dim]) for o in model.graph.output]
    print(f"onnx.checker.check_model(full_check=True): ok; opset {model.opset_import[0].version}, "
          f"ir_version {model.ir_version}, inputs {ins}, outputs {outs}")
    if ins != [(tvc.INPUT_NAME, list(tvc.INPUT_SHAPE))] or [o[0] for o in outs] != [tvc.OUTPUT_NAME]:
        print("FAIL: unexpected graph input/output names or shapes")
        ok = False

    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime not installed: runtime check skipped")
    else:
        sess = ort.InferenceSession(str(args.out), providers=["CPUExecutionProvider"])
        x = np.random.default_rng(0).standard_normal(tvc.INPUT_SHAPE, dtype=np.float32)
        (y,) = sess.run([tvc.OUTPUT_NAME], {tvc.INPUT_NAME: x})
        finite = bool(np.isfinite(y).all())
        print(f"onnxruntime {ort.__version__}: output '{tvc.OUTPUT_NAME}' shape {list(y.shape)} {y.dtype}, "
              f"all finite: {finite}, mean {float(y.mean()):.6g}")
        if list(y.shape) != [1, 1000] or not finite:
            print("FAIL: unexpected onnxruntime output")
            ok = False

    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
