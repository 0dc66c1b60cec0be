#!/usr/bin/env bash
# The bad-input campaign of issue 16, in one table: every reader of user files fed mutated
# inputs (tests/fuzz.rs, PROPTEST_CASES each), hostile ONNX models through `inspect`
# (scripts/hostile_models.py), and the named hostile cases of tests/hostile*.rs.
#
# Usage: scripts/hostile_campaign.sh [CASES]   (default 2000 per area; CI runs 256)
# Needs: cargo; for the model campaign, a Python with onnx and numpy ($ACCEVAL_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-2000}"
echo "| area | cases | accepted | clean errors | panics or broken properties |"
echo "|---|---|---|---|---|"
PROPTEST_CASES="$cases" cargo test -q --test fuzz -- --nocapture --test-threads 1 2>&1 \
  | grep -oE '\| [a-z][^|]* \| [0-9]+ \|.*' || { echo "tests/fuzz.rs failed: run it alone to see why" >&2; exit 1; }
py="${ACCEVAL_PYTHON:-python3}"
if "$py" -c 'import onnx, numpy' 2>/dev/null; then
  cargo build -q
  echo
  echo "inspect on hostile ONNX models (scripts/hostile_models.py --cases $((cases / 5))):"
  "$py" scripts/hostile_models.py --bin target/debug/acceval --cases "$((cases / 5))" | tail -n 8
else
  echo "SKIPPED: scripts/hostile_models.py needs onnx and numpy in \$ACCEVAL_PYTHON" >&2
fi
echo
echo "named hostile cases (tests/hostile.rs, tests/hostile_run.rs):"
cargo test -q --test hostile --test hostile_run 2>&1 | grep -E '^test result'
