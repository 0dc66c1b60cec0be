#!/usr/bin/env bash
# Rewrites tests/fixtures/report-v2, the real report the verify and snapshot tests read:
# `acceval grade --profile bigdata-forecast` on cpu with a short policy. Run it when the
# report's schema or views change, then `INSTA_UPDATE=always cargo test --test snapshots`
# and review the snapshot diffs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
out="$(mktemp -d)/r"
target/release/acceval grade --profile bigdata-forecast --backend cpu --runs 100 --duration 1 --out "$out" || true
rm -rf tests/fixtures/report-v2
cp -r "$out" tests/fixtures/report-v2
target/release/acceval verify tests/fixtures/report-v2
