#!/usr/bin/env bash
# The load generator's own capacity against wrk's (Debian's `wrk`), on the same machine in
# one run: both drive the same trivial v2 endpoint (`acceval serve --backend mock
# --ep-option forward_ms=0` on a 4x3 MatMul: the server does no model work), closed loop with
# the same number of connections, for the same time. The ratio acceval/wrk is what README
# records.
#
# usage: scripts/loadgen_vs_wrk.sh [CONNECTIONS] [SECONDS]   (release build: target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
C="${1:-8}"
D="${2:-5}"
BIN=target/release/acceval
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install wrk" >&2; exit 2; }
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$TMP"' EXIT

# The 4x3 MatMul with a dynamic first dimension, written by acceval's own test helper model.
python3 - "$TMP/mm.onnx" <<'EOF'
import struct, sys
# A minimal ONNX ModelProto by hand (protobuf wire format), so no Python package is needed:
# graph mm: x[1,4] FP32 -> MatMul(W[4,3]) -> y[1,3].
def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out
def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload
def s(num, text):
    return field(num, 2, text.encode())
def dims(shape):
    return b"".join(field(1, 2, field(1, 0, varint(d))) for d in shape)
def value_info(name, shape):
    tensor_type = field(1, 0, varint(1)) + field(2, 2, dims(shape))
    return s(1, name) + field(2, 2, field(1, 2, tensor_type))
w = struct.pack("<12f", *[0.1 * i for i in range(12)])
init = field(1, 0, varint(4)) + field(1, 0, varint(3)) + field(2, 0, varint(1)) + s(8, "W") + field(9, 2, w)
node = s(1, "x") + s(1, "W") + s(2, "y") + s(3, "mm") + s(4, "MatMul")
graph = field(1, 2, node) + s(2, "mm") + field(5, 2, init) + field(11, 2, value_info("x", [1, 4])) + field(12, 2, value_info("y", [1, 3]))
model = field(1, 0, varint(8)) + field(8, 2, s(1, "") + field(2, 0, varint(13))) + field(7, 2, graph)
open(sys.argv[1], "wb").write(model)
EOF

"$BIN" serve --backend mock --ep-option forward_ms=0 --model "$TMP/mm.onnx" --port 0 --max-inflight 10000 >"$TMP/serve.out" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/serve.out" && break; sleep 0.1; done
ADDR="$(grep -o 'http://[0-9.:]*' "$TMP/serve.out" | head -1)"
for _ in $(seq 100); do curl -sf "$ADDR/v2/health/ready" >/dev/null && break; sleep 0.1; done
BODY='{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
echo "$BODY" >"$TMP/body.json"
cat >"$TMP/post.lua" <<EOF
wrk.method = "POST"
wrk.body   = '$BODY'
wrk.headers["Content-Type"] = "application/json"
EOF
echo "== wrk -t2 -c$C -d${D}s (closed loop, $C connections)"
wrk -t2 -c"$C" -d"${D}s" --latency -s "$TMP/post.lua" "$ADDR/v2/models/mm/infer" | tee "$TMP/wrk.txt"
echo "== acceval qps --mode closed --concurrency $C --step-duration $D"
"$BIN" qps --url "$ADDR" --model mm --input-file "$TMP/body.json" --mode closed --concurrency "$C" \
  --step-duration "$D" --warmup-s 0 --slo 'p99<=1s' --json >"$TMP/qps.json"
WRK="$(awk '/Requests\/sec/ {print $2}' "$TMP/wrk.txt")"
ACC="$(python3 -c "import json,sys; v=json.load(open(sys.argv[1])); s=v['steps'][0]; print(f\"{s['achieved_rps']:.1f} {s['sent']} {s['failed']} {s['latency_ms']['p50']:.3f} {s['latency_ms']['p99']:.3f}\")" "$TMP/qps.json")"
read -r ACC_RPS ACC_SENT ACC_FAILED ACC_P50 ACC_P99 <<<"$ACC"
echo "acceval: $ACC_RPS req/s ($ACC_SENT sent, $ACC_FAILED failed, p50 $ACC_P50 ms, p99 $ACC_P99 ms)"
echo "wrk:     $WRK req/s"
python3 -c "import sys; print(f'ratio acceval/wrk: {float(sys.argv[1])/float(sys.argv[2]):.3f}')" "$ACC_RPS" "$WRK"
