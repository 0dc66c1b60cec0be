#!/usr/bin/env bash
# MindIE's two modes side by side on one tiny GGUF: client mode (`acceval llm --url`) against
# llama-cpp-python's OpenAI server, and engine mode (`acceval llm --engine candle`) in-process.
# Same prompts ("A" x 32, max_tokens 16, 20 requests), same tokenizer, same concurrency; the
# server runs on CPU 0 and the client on CPU 1; the engine runs on CPU 0.
#
# Needs: LLAMA_PY (a python with llama-cpp-python[server]==0.3.36, gguf, numpy, tokenizers)
# and VOCAB (ggml-vocab-llama-spm.gguf from the llama-cpp-python 0.3.36 sdist,
# vendor/llama.cpp/models/). Release build in target/release.
# usage: scripts/llm_engine_vs_server.sh [CONCURRENCY...]   (default: 1 2)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LLAMA_PY:?}" "${VOCAB:?}"
A="$PWD/target/release/acceval"
TMP="$(mktemp -d)"
PORT=18101
"$LLAMA_PY" scripts/make_tiny_gguf.py "$VOCAB" "$TMP/tiny.gguf" >/dev/null
# A tokenizer.json from the GGUF's own vocabulary and scores (a SentencePiece-style Unigram
# with byte fallback), so both modes count and decode with the same tokenizer.
"$LLAMA_PY" - "$TMP" <<'PY'
import sys, gguf
from tokenizers import Tokenizer, models, normalizers, decoders
d = sys.argv[1]
r = gguf.GGUFReader(f"{d}/tiny.gguf")
val = lambda n: [r.fields[n].parts[i] for i in r.fields[n].data]
toks = [bytes(p).decode("utf-8", "replace") for p in val("tokenizer.ggml.tokens")]
scores = [float(p[0]) for p in val("tokenizer.ggml.scores")]
t = Tokenizer(models.Unigram(list(zip(toks, scores)), unk_id=0, byte_fallback=True))
t.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
t.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
t.save(f"{d}/tokenizer.json")
open(f"{d}/prompts.jsonl", "w").write(''.join('{"prompt": "%s", "max_tokens": 16}\n' % " ".join(["A"] * 32) for _ in range(20)))
PY
taskset -c 0 "$LLAMA_PY" -m llama_cpp.server --model "$TMP/tiny.gguf" --model_alias tiny-llama --host 127.0.0.1 \
  --port $PORT --n_ctx 512 --n_threads 1 --interrupt_requests False >"$TMP/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 0.2; done
for c in ${@:-1 2}; do
  taskset -c 1 "$A" llm --url "http://127.0.0.1:$PORT" --model tiny-llama --dataset "$TMP/prompts.jsonl" \
    --concurrency "$c" --warmup-requests 2 --tokenizer "$TMP/tokenizer.json" --json >"$TMP/client-$c.json" 2>/dev/null
  taskset -c 0 "$A" llm --engine candle --model "$TMP/tiny.gguf" --dataset "$TMP/prompts.jsonl" \
    --concurrency "$c" --warmup-requests 2 --tokenizer "$TMP/tokenizer.json" --json >"$TMP/engine-$c.json" 2>/dev/null
  python3 - "$TMP" "$c" <<'PY'
import json, sys
d, c = sys.argv[1], sys.argv[2]
for mode in ("client", "engine"):
    r = json.load(open(f"{d}/{mode}-{c}.json"))["runs"][0]; m = r["metrics"]
    a = lambda k: "%.3f" % m[k]["average"] if m.get(k) else "n/a"
    print(f"concurrency {c} {mode:6}: FirstTokenTime {a('FirstTokenTime')} ms, DecodeTime {a('DecodeTime')} ms, "
          f"GenerateTime {a('GenerateTime')} ms, ForwardTime {a('ForwardTime')} ms, GeneratedTokens {a('GeneratedTokens')} "
          f"({', '.join(r['token_sources'])}), Throughput {r['throughput']:.2f} req/s")
PY
done
