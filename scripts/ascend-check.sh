#!/usr/bin/env bash
# The Ascend check (issue 23): one prepared command for a lab with an Ascend NPU (310P/910B)
# and the CANN toolkit. It runs what CI runs on acceval's emulators (docs/emulators.md) on the
# real card, and writes one summary, $OUT/ascend-check-summary.md:
#   1. npu-smi info and `acceval devices` (DCMI: chip, driver, CANN, power, AI Core, HBM);
#   2. `run` of a model on `acl` (ATC conversion with --precision_mode_v2=origin, the whole ACL
#      sequence) and on `ort:cann` (ONNX Runtime's CANN provider, when onnxruntime-cann is
#      installed), both compared with `cpu` on the same seeded inputs;
#   3. `bench --model-only` on `acl`: the h2d / forward / d2h stages, DCMI power and energy;
#      and `ais_bench` on the same .om when installed, side by side: its throughput is
#      1000·batch / mean NPU compute time (execute only), not §7.2.4's FPS = N / ΣTi over the
#      whole sample; both are printed;
#   4. `accuracy` on acl at origin precision and at ATC's default fp16, against the CPU
#      reference: the fp16 pitfall, measured;
#   5. a fault: a missing .om and a model for another SoC give exit 2 naming the ACL call.
# The emulators cannot prove any of this; this script is how it is checked.
#
# Usage: source /usr/local/Ascend/ascend-toolkit/set_env.sh; scripts/ascend-check.sh
# Environment: ACCEVAL_BIN (target/release/acceval), MODEL (squeezenet1_1 from models/),
#              PYTHON (python3; for ais_bench and the comparisons), OUT, ORT_CANN (a
#              libonnxruntime.so built with the CANN provider), RUNS (200), DURATION (10).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${ACCEVAL_BIN:-target/release/acceval}"
PY="${PYTHON:-python3}"
OUT="${OUT:-/tmp/acceval-ascend-check}"
MODEL="${MODEL:-models/squeezenet1_1.onnx}"
RUNS="${RUNS:-200}"
DURATION="${DURATION:-10}"
mkdir -p "$OUT"
SUMMARY="$OUT/ascend-check-summary.md"
[ -x "$BIN" ] || { echo "no acceval binary at $BIN (cargo build --release)"; exit 2; }
[ -n "${ASCEND_HOME_PATH:-}" ] || echo "warning: ASCEND_HOME_PATH is not set: source CANN's set_env.sh first"
t0=$(date +%s)
section() { printf '\n## %s\n\n' "$1" >>"$SUMMARY"; echo "== $1"; }
fenced() { { echo '```'; cat; echo '```'; } >>"$SUMMARY"; }
{
  echo "# acceval Ascend check"
  echo
  echo "$(date -u +%FT%TZ) on $(hostname); binary $BIN ($("$BIN" --version 2>&1)); model $MODEL"
  echo "ASCEND_HOME_PATH=${ASCEND_HOME_PATH:-unset}"
} >"$SUMMARY"

section "npu-smi info"
{ npu-smi info 2>&1; npu-smi info -t power -i 0 2>&1; } | head -n 40 | fenced
section "acceval devices"
"$BIN" devices 2>&1 | fenced
"$BIN" devices --json >"$OUT/devices.json" 2>&1

section "run: acl, ort:cann and cpu on the same seeded inputs"
"$BIN" run --backend cpu --model "$MODEL" --output "$OUT/cpu.npz" --runs 10 2>&1 | tail -n 8 | fenced
"$BIN" run --backend acl --model "$MODEL" --output "$OUT/acl.npz" --runs 10 --json >"$OUT/run-acl.json" 2>"$OUT/run-acl.stderr"
echo "acl exit $?" | fenced
tail -n 5 "$OUT/run-acl.stderr" | fenced
if [ -n "${ORT_CANN:-}" ]; then
  ORT_DYLIB_PATH="$ORT_CANN" "$BIN" run --backend ort:cann --model "$MODEL" --output "$OUT/ort-cann.npz" \
    --runs 10 --placement 2>&1 | tail -n 12 | fenced
else
  echo "ort:cann not run: set ORT_CANN to a libonnxruntime.so with the CANN provider (pip install onnxruntime-cann)" >>"$SUMMARY"
fi
"$PY" - "$OUT/cpu.npz" "$OUT/acl.npz" "$OUT/ort-cann.npz" <<'PY' 2>&1 | fenced
import os, sys, numpy as np
ref = np.load(sys.argv[1])
for other in sys.argv[2:]:
    if not os.path.exists(other):
        print(f"{os.path.basename(other)}: not written"); continue
    o = np.load(other)
    for k in ref.files:
        d = o[k].astype(np.float64) - ref[k].astype(np.float64)
        rel = np.linalg.norm(d) / max(np.linalg.norm(ref[k]), 1e-30)
        print(f"{os.path.basename(other)} vs cpu, {k}: rel L2 {rel:.3e}, max abs {np.max(np.abs(d)):.3e} (CI bound on the emulator: 1e-4)")
PY
"$PY" - "$OUT/run-acl.json" <<'PY' 2>&1 | fenced
import json, sys
r = json.load(open(sys.argv[1]))
s = r["session"]
print("engine", s["engine"], "| device", s["device"])
for k, v in sorted(s["options"].items()):
    print(f"  {k}: {v}")
print("timings:", r["timings"])
PY

section "bench --backend acl --model-only (stages, DCMI power, energy)"
"$BIN" bench --backend acl --model "$MODEL" --model-only --runs "$RUNS" --duration "$DURATION" \
  --export-json "$OUT/bench-acl.json" 2>&1 | tail -n 40 | fenced
OM="$("$PY" -c "import json;print(json.load(open('$OUT/run-acl.json'))['session']['options'].get('om',''))" 2>/dev/null)"
if "$PY" -c "import ais_bench" 2>/dev/null && [ -n "$OM" ]; then
  section "ais_bench on the same .om ($OM)"
  "$PY" -m ais_bench --model "$OM" --loop "$RUNS" --output "$OUT/ais" --display_all_summary True 2>&1 \
    | grep -E 'H2D_latency|NPU_compute_time|D2H_latency|throughput' | fenced
  "$PY" - "$OUT/bench-acl.json" <<'PY' 2>&1 | fenced
import json, sys
r = json.load(open(sys.argv[1]))
st = r["stages"]
fwd = st["forward"]["latency_ms"]["mean"]
print(f"acceval: forward (aclmdlExecute + sync) mean {fwd:.3f} ms -> compute-only throughput (ais_bench's definition, batch 1) {1000 / fwd:.2f} /s")
print(f"acceval: h2d mean {st['h2d']['latency_ms']['mean']:.3f} ms, d2h mean {st['d2h']['latency_ms']['mean']:.3f} ms")
print(f"acceval: FPS (T/CES §7.2.4, N / sum of whole samples) {r['fps']['value']:.2f} /s")
PY
else
  echo "ais_bench not run: not installed in $PY (pip install the ait benchmark wheel), or no .om" >>"$SUMMARY"
fi

section "accuracy on acl: origin vs ATC's default fp16"
for mode in origin fp16; do
  "$BIN" accuracy --backend acl --model "$MODEL" --ep-option "precision_mode=$mode" 2>&1 | tail -n 6 | fenced
done

section "faults: a missing .om, an .om for another SoC"
"$BIN" run --backend acl --model "$OUT/missing.om" 2>&1 | tail -n 2 | fenced
echo "exit $? (expected 2)" >>"$SUMMARY"

echo >>"$SUMMARY"
echo "total $(( $(date +%s) - t0 )) s" >>"$SUMMARY"
echo "== summary: $SUMMARY"
cat "$SUMMARY"
