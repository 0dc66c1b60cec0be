#!/usr/bin/env bash
# tract (`cpu`) against ONNX Runtime (`ort:cpu`) at equal threads, on the zoo and on the
# corpus of real models: `acceval bench --model-only` forward P50, achieved GFLOP/s and %
# of the CPU's peak (the built-in FMA probe), one Markdown row per model and thread count.
# Runs alternate backend by backend for each model, so a load change on the machine hits
# both alike. The table in docs/corpus.md was made with this script.
#
# usage: scripts/bench_cpu_vs_ort.sh [THREADS...]   (default: 1 2; release build)
#   env: CORPUS=DIR (default ~/.cache/acceval/corpus), ZOO="yolov8n-line ..." (the zoo
#        models), RUNS=30, DURATION=3 (s per bench), ONLY=name (one model)
# Needs ONNX Runtime for acceval (ACCEVAL_PYTHON with onnxruntime, or ORT_DYLIB_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/acceval
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 2; }
THREADS=("${@:-1 2}")
read -r -a THREADS <<<"${THREADS[*]}"
CORPUS="${CORPUS:-$HOME/.cache/acceval/corpus}"
ZOO="${ZOO:-yolov8n-line resnet50-substation mobilenetv2-meter lstm-load-forecast}"
RUNS="${RUNS:-30}"
DURATION="${DURATION:-3}"
PY="${ACCEVAL_PYTHON:-python3}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# "p50 gflops pct" from a bench JSON
fields() {
  "$PY" - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c = r.get("compute") or {}
p50 = r["stages"]["forward"]["latency_ms"]["p50"]
g = c.get("achieved_gflop_per_s")
pct = c.get("share_of_peak_pct")
peak = (c.get("peak") or {}).get("gflop_per_s")
print(f"{p50:.2f}", "n/a" if g is None else f"{g:.1f}", "n/a" if pct is None else f"{pct:.1f}",
      "n/a" if peak is None else f"{peak:.0f}")
EOF
}

models=()
for z in $ZOO; do models+=("zoo:$z"); done
if [ -f "$CORPUS/corpus.json" ]; then
  while read -r name; do models+=("corpus:$name"); done < <("$PY" -c '
import json, sys
for m in json.load(open(sys.argv[1]))["models"]: print(m["name"])' "$CORPUS/corpus.json")
else
  echo "no corpus at $CORPUS (python scripts/fetch-corpus.py): zoo only" >&2
fi

echo "| model | threads | cpu (tract) P50 ms | ort:cpu P50 ms | cpu / ort | tract GFLOP/s | ORT GFLOP/s | tract % of peak | ORT % of peak | peak GFLOP/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in "${models[@]}"; do
  kind="${m%%:*}"; name="${m#*:}"
  [ -n "${ONLY:-}" ] && [ "$name" != "$ONLY" ] && continue
  if [ "$kind" = zoo ]; then
    args=(--model "$name")
  else
    args=(--model "$CORPUS/$name/model.onnx" --inputs "$CORPUS/$name/test_data_set_0")
  fi
  for t in "${THREADS[@]}"; do
    row=()
    for b in cpu ort:cpu; do
      out="$TMP/$name-$t-${b/:/_}.json"
      if "$BIN" bench "${args[@]}" --model-only --backend "$b" --threads "$t" \
          --runs "$RUNS" --duration "$DURATION" --warmup 3 --percentile 50 --allow-invalid \
          --sample-ms 0 --export-json "$out" >/dev/null 2>"$TMP/err"; then
        row+=("$(fields "$out")")
      else
        echo "$name on $b: $(head -c 300 "$TMP/err")" >&2
        row+=("failed n/a n/a n/a")
      fi
    done
    read -r c_ms c_g c_pct peak <<<"${row[0]}"
    read -r o_ms o_g o_pct _ <<<"${row[1]}"
    ratio="$("$PY" -c "import sys; a,b=sys.argv[1:3]; print('n/a' if 'failed' in (a,b) else f'{float(a)/float(b):.2f}')" "$c_ms" "$o_ms")"
    echo "| $name | $t | $c_ms | $o_ms | $ratio | $c_g | $o_g | $c_pct | $o_pct | $peak |"
  done
done
