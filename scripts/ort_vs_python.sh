#!/usr/bin/env bash
# acceval's `ort:cpu` forward against a plain Python onnxruntime loop (issue 26, point 6):
# the same model, input and thread count, alternating ROUNDS rounds of RUNS samples each;
# prints each round's two medians and the median of each side's medians, and their ratio.
#
# usage: scripts/ort_vs_python.sh MODEL.onnx SET_DIR [THREADS] [RUNS] [ROUNDS]
#   SET_DIR holds input_0.pb (an ONNX test_data_set_* folder); ORT_DYLIB_PATH and PYTHON
#   (a python with onnx and onnxruntime of the same version) as for the rest of acceval.
set -euo pipefail
model=$1 set=$2 threads=${3:-1} runs=${4:-300} rounds=${5:-5}
py=${PYTHON:-python3}
bin=${ACCEVAL_BIN:-target/release/acceval}
here=$(dirname "$0")
ours=() theirs=()
for r in $(seq 1 "$rounds"); do
  a=$("$bin" bench --model "$model" --backend ort:cpu --threads "$threads" --model-only \
      --inputs "$set" --runs "$runs" --duration 0 --sample-ms 0 --allow-invalid --json |
      "$py" -c 'import json,sys; print(json.load(sys.stdin)["latency_ms"]["p50"])')
  b=$("$py" "$here/ort_python_loop.py" "$model" "$set/input_0.pb" "$threads" "$runs" |
      "$py" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
  echo "round $r: acceval $a ms, python $b ms"
  ours+=("$a") theirs+=("$b")
done
"$py" - "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"median of medians: acceval {ma:.4f} ms, python {mb:.4f} ms, ratio {ma / mb:.4f}")
PY
