#!/usr/bin/env bash
# The GPU check (issue 14): one prepared command for a machine with an NVIDIA GPU, about
# 10 minutes at most. It takes a release binary built elsewhere (carry target/release/acceval
# and models/), finds the CUDA libraries of local Python wheels (torch's nvidia-* packages,
# onnxruntime-gpu) and runs
#   1. nvidia-smi and `acceval devices` (NVML: GPUs, driver, CUDA; ONNX Runtime found);
#   2. `acceval grade --profile line-inspection-realtime` on ort:cuda (onnxruntime-gpu's
#      library) and on cuda (tract's CUDA runtime), each with NVML utilization and power
#      required by the telemetry clause, placement recorded (§6.2 f);
#   3. with two or more GPUs, `run --backend cuda@1` and `ort:cuda@1` with telemetry, showing
#      the work lands on GPU 1 (its utilization rises, GPU 0's does not);
#   4. NVML energy: the total-energy counter against the integral of the power samples and
#      against nvidia-smi's readings over the same bench (issue 23);
#   5. the module pipelined on ort:cuda (2 decode/pre-process threads, 2 model instances);
#   6. the cuda and ort:cuda outputs against the CPU's on identical seeded inputs;
# and writes one summary file, $OUT/gpu-check-summary.md (verdicts, clause tables,
# placement, speed, telemetry, differences), beside the report folders.
#
# Usage: scripts/gpu-check.sh            (OUT defaults to /tmp/acceval-gpu-check)
# Environment: ACCEVAL_BIN (default target/release/acceval), PYTHON (default python3),
#              OUT, RUNS (speed runs per grade, default 300), DURATION (s, default 20).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${ACCEVAL_BIN:-target/release/acceval}"
PY="${PYTHON:-python3}"
OUT="${OUT:-/tmp/acceval-gpu-check}"
RUNS="${RUNS:-300}"
DURATION="${DURATION:-20}"
PROFILE=line-inspection-realtime
mkdir -p "$OUT"
SUMMARY="$OUT/gpu-check-summary.md"
[ -x "$BIN" ] || { echo "no acceval binary at $BIN (build it with cargo build --release and carry it)"; exit 2; }
t0=$(date +%s)

# CUDA libraries from the local wheels (nvidia-*-cu12/13, torch/lib), and onnxruntime-gpu's
# libonnxruntime for ort:cuda.
eval "$("$PY" - <<'PY'
import glob, importlib.util, os, shlex
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
print("NVLIBS=" + shlex.quote(":".join(sorted(dirs))))
ort = ""
try:
    import onnxruntime as o
    if "CUDAExecutionProvider" in o.get_available_providers():
        libs = glob.glob(os.path.join(os.path.dirname(o.__file__), "capi", "libonnxruntime.so*"))
        ort = sorted(libs)[0] if libs else ""
except Exception:
    pass
print("ORT_GPU=" + shlex.quote(ort))
PY
)"
export LD_LIBRARY_PATH="${NVLIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ACCEVAL_PYTHON="$PY"

section() { printf '\n## %s\n\n' "$1" >>"$SUMMARY"; echo "== $1"; }
fenced() { { echo '```'; cat; echo '```'; } >>"$SUMMARY"; }

{
  echo "# acceval GPU check"
  echo
  echo "$(date -u +%FT%TZ) on $(hostname); binary $BIN ($("$BIN" --version 2>&1))"
  echo "runs $RUNS, duration $DURATION s per speed stage; ONNX Runtime with CUDA: ${ORT_GPU:-none found (pip install onnxruntime-gpu)}"
} >"$SUMMARY"

section "nvidia-smi"
nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,power.limit --format=csv 2>&1 | fenced
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)

section "acceval devices"
"$BIN" devices 2>&1 | fenced

# grade BACKEND LABEL [ORT library]
grade() {
  local backend="$1" label="$2" lib="${3:-}" dir="$OUT/grade-$2"
  section "grade --profile $PROFILE --backend $backend"
  rm -rf "$dir"
  local env=()
  [ -n "$lib" ] && env=(env ORT_DYLIB_PATH="$lib")
  timeout 240 "${env[@]}" "$BIN" grade --profile "$PROFILE" --backend "$backend" \
    --runs "$RUNS" --duration "$DURATION" --out "$dir" >"$OUT/$label.stdout" 2>"$OUT/$label.stderr"
  local rc=$?
  echo "exit $rc (0 COMPLIANT, 1 NOT COMPLIANT, 2 error, 124 timed out after 240 s)" >>"$SUMMARY"
  { tail -n 40 "$OUT/$label.stdout"; tail -n 5 "$OUT/$label.stderr"; } | fenced
  if [ -f "$dir/report.json" ]; then
    "$PY" - "$dir/report.json" <<'PY' | fenced
import json, sys
r = json.load(open(sys.argv[1]))
print("schema", r.get("schema"), "verdict", r.get("verdict"), "complete", r.get("complete"))
for why in r.get("verdict_reasons") or []:
    print("  reason:", why)
print("clauses:")
for c in r.get("clauses") or []:
    print(f"  {c.get('clause')}: {c.get('verdict')} - {c.get('measured')}")
s = r.get("speed") or {}
print("speed:", {k: s.get(k) for k in ("precision", "percentile", "latency_at_percentile_ms", "fps", "achieved", "meets")})
p = r.get("placement") or {}
print("placement:", {k: p.get(k) for k in ("device_class", "route", "nodes", "nodes_on_device", "macs", "macs_on_device", "cpu_fallback")})
t = (s.get("bench") or {}).get("telemetry") or {}
for sn in t.get("sensors") or []:
    print("sensor:", sn)
for ch in t.get("channels") or []:
    print(f"channel {ch.get('name')}: mean {ch.get('mean')} max {ch.get('max')} {ch.get('unit')} ({ch.get('samples')} samples)")
print("energy:", t.get("energy") or t.get("energy_unavailable"))
for a in r.get("accuracy") or []:
    print("accuracy:", {k: a.get(k) for k in ("precision", "mse", "level", "verdict", "meets_required")})
PY
    "$BIN" verify "$dir" 2>&1 | tail -n 3 | fenced
  fi
}

if [ -n "$ORT_GPU" ]; then
  grade ort:cuda ort-cuda "$ORT_GPU"
else
  section "grade --backend ort:cuda"
  echo "not run: no onnxruntime-gpu wheel in $PY (CUDAExecutionProvider absent)" >>"$SUMMARY"
fi
grade cuda cuda

# NVML energy: the total-energy counter against the integral of the 1 s power samples
# (acceval reports both), and against nvidia-smi's own power readings over the same bench.
section "NVML energy: counter vs integral of power vs nvidia-smi (bench --backend cuda, 20 s)"
nvidia-smi --query-gpu=timestamp,power.draw --format=csv,noheader,nounits -lms 500 >"$OUT/nvidia-smi-power.csv" 2>&1 &
SMI=$!
timeout 120 "$BIN" bench --backend cuda --model yolov8n-line --model-only --runs 100 --duration 20 \
  --export-json "$OUT/bench-cuda-energy.json" >/dev/null 2>&1
echo "bench exit $?" >>"$SUMMARY"
kill "$SMI" 2>/dev/null
"$PY" - "$OUT/bench-cuda-energy.json" "$OUT/nvidia-smi-power.csv" <<'PY' 2>&1 | fenced
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("telemetry") or {}
for e in t.get("energy") or []:
    if not e["device"].startswith("gpu"):
        continue
    j, pi = e["joules"], e.get("power_integral_j")
    print(f"{e['device']}: {j:.1f} J ({e['method']}); integral of power samples {pi} J"
          + (f" ({100 * (pi - j) / j:+.2f} %)" if pi else "")
          + f"; average {e['average_power_w']:.1f} W, peak {e.get('peak_power_w')} W")
for n in t.get("energy_na") or []:
    print("n/a:", n)
w = []
for line in open(sys.argv[2]):
    try:
        w.append(float(line.split(",")[1]))
    except (IndexError, ValueError):
        pass
if w:
    print(f"nvidia-smi power.draw over the run: mean {sum(w) / len(w):.1f} W, max {max(w):.1f} W ({len(w)} readings, 2/s, includes load and warm-up)")
PY

# libtorch (issue 24): a binary built here with `TORCH_CUDA=1 scripts/with-torch.sh cargo build
# --release --features tch` and carried as ACCEVAL_TCH_BIN, run against the machine's own torch
# libraries. tch 0.26 is built for libtorch 2.13.0; the lent machine's torch is 2.11, so this
# checks whether the ABI holds (LIBTORCH_BYPASS_VERSION_CHECK only skips torch-sys's build check).
section "tch: tch::Cuda::is_available() and a TorchScript model on tch:cuda"
if [ -n "${ACCEVAL_TCH_BIN:-}" ] && [ -x "$ACCEVAL_TCH_BIN" ]; then
  TLIB="$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)"
  "$PY" - "$OUT/tch-m.pt" <<'PY' 2>&1 | fenced
import sys, torch
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LazyLinear(10))
x = torch.rand(1, 3, 32, 32); m(x)
torch.jit.trace(m.eval(), (x,)).save(sys.argv[1]); print("torch", torch.__version__, "cuda", torch.cuda.is_available())
PY
  LD_LIBRARY_PATH="$TLIB:$LD_LIBRARY_PATH" "$ACCEVAL_TCH_BIN" devices 2>&1 | grep -A2 '^  tch' | fenced
  LD_LIBRARY_PATH="$TLIB:$LD_LIBRARY_PATH" timeout 120 "$ACCEVAL_TCH_BIN" run --backend tch:cuda@0 \
    --model "$OUT/tch-m.pt" --shape input_0:1x3x32x32 --runs 200 2>&1 | tail -n 15 | fenced
  # Training on libtorch's CUDA device (the same workload and batch as on the CPU).
  LD_LIBRARY_PATH="$TLIB:$LD_LIBRARY_PATH" timeout 180 "$ACCEVAL_TCH_BIN" train --backend tch:cuda@0 \
    --workload lstm-load-forecast --epochs 1 --samples 1024 --eval-samples 24 2>&1 | tail -n 12 | fenced
else
  echo "not run: no ACCEVAL_TCH_BIN (a release binary built with --features tch)" >>"$SUMMARY"
fi

# The module pipelined on the GPU (issue 26, point 5): the forward on the device is short, so
# the CPU's decode and letterbox decide one-at-a-time FPS; K workers and M instances overlap them.
section "bench --backend ort:cuda --pipelined 2 --instances 2 (yolov8n-line, 1920x1080 frames)"
if [ -n "$ORT_GPU" ]; then
  ORT_DYLIB_PATH="$ORT_GPU" timeout 120 "$BIN" bench --backend ort:cuda --model yolov8n-line \
    --runs 200 --duration 5 --sample-ms 0 --pipelined 2 --instances 2 2>&1 \
    | grep -E '^FPS|^  FPS|^Pipelined|  (decode|preprocess|forward|postprocess) ' | fenced
else
  echo "not run: no onnxruntime-gpu library" >>"$SUMMARY"
fi

section "outputs against the CPU (seeded inputs, yolov8n-line)"
M=yolov8n-line
"$BIN" run --backend cpu --model "$M" --output "$OUT/cpu.npz" --runs 3 >/dev/null 2>&1
"$BIN" run --backend cuda --model "$M" --output "$OUT/cuda.npz" --runs 3 >/dev/null 2>&1
[ -n "$ORT_GPU" ] && ORT_DYLIB_PATH="$ORT_GPU" "$BIN" run --backend ort:cuda --model "$M" \
  --output "$OUT/ort-cuda.npz" --runs 3 >/dev/null 2>&1
"$PY" - "$OUT/cpu.npz" "$OUT/cuda.npz" "$OUT/ort-cuda.npz" <<'PY' 2>&1 | fenced
import os, sys, numpy as np
ref = np.load(sys.argv[1])
for other in sys.argv[2:]:
    if not os.path.exists(other):
        print(f"{os.path.basename(other)}: not written"); continue
    o = np.load(other)
    for k in ref.files:
        d = float(np.max(np.abs(o[k] - ref[k]))); s = float(np.max(np.abs(ref[k])))
        print(f"{os.path.basename(other)} vs cpu, {k}: max abs diff {d:.3e}, relative {d / max(s, 1e-12):.3e}")
PY

if [ "$NGPU" -ge 2 ]; then
  for b in cuda@1 ${ORT_GPU:+ort:cuda@1}; do
    section "bench --backend $b (the second GPU)"
    j="$OUT/bench-${b/:/-}.json"
    env ${ORT_GPU:+ORT_DYLIB_PATH="$ORT_GPU"} timeout 120 "$BIN" bench --backend "$b" \
      --model yolov8n-line --model-only --runs 500 --duration 10 --sample-ms 200 \
      --export-json "$j" 2>&1 | tail -n 30 | fenced
    # Utilization per GPU: the work must show on gpu1, not on gpu0.
    "$PY" - "$j" <<'PY' 2>&1 | fenced
import json, sys
r = json.load(open(sys.argv[1]))
def find(o):
    if isinstance(o, dict):
        if str(o.get("name", "")).endswith("util_pct"):
            print(o.get("name"), {k: o.get(k) for k in ("mean", "max", "samples")})
        for v in o.values():
            find(v)
    elif isinstance(o, list):
        for v in o:
            find(v)
find(r)
PY
  done
else
  section "cuda@1"
  echo "not run: $NGPU GPU(s) on this machine" >>"$SUMMARY"
fi

echo >>"$SUMMARY"
echo "total $(( $(date +%s) - t0 )) s" >>"$SUMMARY"
echo "== summary: $SUMMARY"
cat "$SUMMARY"
