#!/usr/bin/env bash
# GPU check for issue #3, for a borrowed machine with an NVIDIA GPU, no Rust toolchain and
# no network: it takes a release binary built elsewhere (carry target/release/acceval),
# puts the CUDA 13 libraries of the local torch wheels on LD_LIBRARY_PATH, and shows
#   - `acceval devices` (NVML: GPU, driver, CUDA version; ONNX Runtime found),
#   - `acceval run --backend cuda` (tract's CUDA runtime) with operator placement,
#   - the same model on `cpu` (and `ort:cpu` if a Python onnxruntime is there),
#   - the max difference between the cuda and cpu outputs on identical seeded inputs.
# Usage: scripts/gpu-check.sh [MODEL.onnx ...]   (default: the shipped SqueezeNet 1.1, and
#        ResNet-50 exported on the spot when torchvision is installed)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${ACCEVAL_BIN:-target/release/acceval}"
PY="${PYTHON:-python3}"
OUT="${OUT:-/tmp/acceval-gpu-check}"
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "no acceval binary at $BIN (build it with cargo build --release and carry it)"; exit 2; }

NVLIBS="$("$PY" - <<'PY'
import glob, importlib.util, os
dirs = set()
spec = importlib.util.find_spec("nvidia")
for base in (spec.submodule_search_locations if spec else []) or []:
    for lib in glob.glob(os.path.join(base, "**", "lib"), recursive=True):
        if glob.glob(os.path.join(lib, "*.so*")):
            dirs.add(lib)
try:
    import torch
    dirs.add(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
print(":".join(sorted(dirs)))
PY
)"
export LD_LIBRARY_PATH="${NVLIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ACCEVAL_PYTHON="$PY"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

echo "== nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv || true
echo "== acceval devices"
"$BIN" devices

MODELS=("$@")
if [ ${#MODELS[@]} -eq 0 ]; then
  MODELS=(models/squeezenet1_1.onnx)
  if "$PY" -c "import torchvision" 2>/dev/null; then
    "$PY" - "$OUT/resnet50.onnx" <<'PY' && MODELS+=("$OUT/resnet50.onnx")
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet50(weights=None).eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), sys.argv[1], opset_version=17, dynamo=False,
                  input_names=["input"], output_names=["logits"])
PY
  fi
fi

for M in "${MODELS[@]}"; do
  name="$(basename "$M" .onnx)"
  echo "== $name: cpu (tract)"
  "$BIN" run --backend cpu --model "$M" --output "$OUT/$name.cpu.npz" --runs 10
  echo "== $name: cuda (tract-cuda)"
  "$BIN" run --backend cuda --model "$M" --output "$OUT/$name.cuda.npz" --runs 50 --placement
  echo "== $name: ort:cpu"
  "$BIN" run --backend ort:cpu --model "$M" --output "$OUT/$name.ort.npz" --runs 10 || true
  echo "== $name: ort:cuda (expected to fail without onnxruntime-gpu)"
  "$BIN" run --backend ort:cuda --model "$M" --runs 1 || true
  echo "== $name: compare"
  "$PY" - "$OUT/$name.cpu.npz" "$OUT/$name.cuda.npz" "$OUT/$name.ort.npz" <<'PY'
import os, sys, numpy as np
ref = np.load(sys.argv[1])
for other in sys.argv[2:]:
    if not os.path.exists(other):
        print(f"{other}: missing"); continue
    o = np.load(other)
    for k in ref.files:
        d = float(np.max(np.abs(o[k] - ref[k]))); s = float(np.max(np.abs(ref[k])))
        print(f"{os.path.basename(other)} vs cpu, {k}: max abs diff {d:.3e}, relative {d / max(s, 1e-12):.3e}")
PY
done
