#!/usr/bin/env bash
# `acceval llm` beside NVIDIA AIPerf on the same OpenAI-compatible server, same prompts, same
# concurrency, in one run. The server is llama-cpp-python serving a tiny random-weight GGUF
# (scripts/make_tiny_gguf.py); it runs on CPU 0 and each client on CPU 1 (taskset), so a
# client's own CPU use competes less with the server it measures.
#
# Needs: LLAMA_PY (a python with llama-cpp-python[server]==0.3.36), AIPERF (the aiperf
# executable, aiperf==0.13.0), MODEL (the .gguf), TOKDIR (a Hugging Face tokenizer folder for
# the model's vocabulary, with tokenizer.json). Release build in target/release.
# usage: scripts/llm_vs_aiperf.sh [CONCURRENCY...]   (default: 1 2)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LLAMA_PY:?}" "${AIPERF:?}" "${MODEL:?}" "${TOKDIR:?}"
PORT=18100
TMP="$(mktemp -d)"
taskset -c 0 "$LLAMA_PY" -m llama_cpp.server --model "$MODEL" --model_alias tiny-llama --host 127.0.0.1 \
  --port $PORT --n_ctx 512 --n_threads 1 --interrupt_requests False >"$TMP/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 0.2; done
python3 -c "
import json
p = ' '.join(['A'] * 32)
open('$TMP/acc.jsonl', 'w').write(''.join(json.dumps({'prompt': p, 'max_tokens': 16}) + '\n' for _ in range(20)))
open('$TMP/aiperf.jsonl', 'w').write(''.join(json.dumps({'text': p}) + '\n' for _ in range(20)))
"
for C in "${@:-1 2}"; do
  for c in $C; do
    taskset -c 1 "$AIPERF" profile --model tiny-llama --url "http://127.0.0.1:$PORT" --endpoint-type completions \
      --streaming --concurrency "$c" --num-requests 20 --input-file "$TMP/aiperf.jsonl" \
      --custom-dataset-type single_turn --extra-inputs max_tokens:16 --tokenizer "$TOKDIR" \
      --num-warmup-requests 2 --artifact-dir "$TMP/aiperf-$c" --random-seed 1 --ui-type none >"$TMP/aiperf-$c.log" 2>&1
    echo "== AIPerf, concurrency $c"
    grep -E 'Time to First Token \(ms\)|Request Latency \(ms\)|Inter Token Latency|Output Sequence Length|Request Throughput|Output Token Throughput \(tokens/sec\) ' "$TMP/aiperf-$c.log"
    taskset -c 1 target/release/acceval llm --url "http://127.0.0.1:$PORT" --model tiny-llama --dataset "$TMP/acc.jsonl" \
      --concurrency "$c" --warmup-requests 2 --tokenizer "$TOKDIR/tokenizer.json" --json >"$TMP/acc-$c.json" 2>/dev/null
    echo "== acceval llm, concurrency $c"
    python3 -c "
import json
r = json.load(open('$TMP/acc-$c.json'))['runs'][0]; m = r['metrics']
for k in ('FirstTokenTime', 'GenerateTime', 'TPOT', 'DecodeTime', 'GeneratedTokens'):
    print(f\"{k:16s} avg {m[k]['average']:9.3f}  p50-ish P75 {m[k]['P75']:9.3f}  P90 {m[k]['P90']:9.3f}  N {m[k]['N']}\")
print(f\"Throughput {r['throughput']:.2f} req/s, GenerateSpeed {r['generate_speed']:.1f} token/s\")
"
  done
done
echo "== the server's own time per request (llama.cpp 'total time'), in run order: aiperf, acceval, ..."
grep -E 'total time' "$TMP/server.log" | awk '{print $5}' | python3 -c "
import sys
t = [float(x) for x in sys.stdin]
for k in range(len(t) // 22):
    b = t[k * 22 + 2:(k + 1) * 22]
    print(f'block {k}: mean {sum(b) / len(b):.2f} ms over {len(b)} requests')
"
