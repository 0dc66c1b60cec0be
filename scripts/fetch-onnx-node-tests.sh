#!/usr/bin/env bash
# Fetches ONNX's backend node tests (1,765 cases in the onnx 1.22.0 wheel; 1.23 no longer
# ships them) into DEST/node, for `acceval conformance --suite DEST/node`.
#   scripts/fetch-onnx-node-tests.sh [DEST]   (default: ~/.cache/acceval/onnx-node-tests)
set -euo pipefail
DEST="${1:-$HOME/.cache/acceval/onnx-node-tests}"
if [ -f "$DEST/node/.complete" ]; then
  echo "$DEST/node"
  exit 0
fi
PY="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  "onnx==1.22.0" -d "$tmp" >&2
wheel="$(ls "$tmp"/onnx-1.22.0-*.whl | head -n 1)"
mkdir -p "$DEST"
"$PY" - "$wheel" "$DEST" <<'PY'
import sys, zipfile, os, shutil
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "onnx/backend/test/data/node/"
out = os.path.join(dest, "node")
shutil.rmtree(out, ignore_errors=True)
n = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(out, name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            n += 1
cases = sum(1 for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, "model.onnx")))
open(os.path.join(out, ".complete"), "w").write(f"{cases} cases, {n} files\n")
print(f"{cases} cases ({n} files) in {out}", file=sys.stderr)
PY
echo "$DEST/node"
