"""MLPerf's own compliance checker (mlperf-logging, `--usage training --ruleset 6.0.0`) on an
mllog, as shipped or with one rule lifted.

    python mlperf_checker.py shipped MLLOG   # the checker as MLPerf ships it
    python mlperf_checker.py derived MLLOG   # every rule but submission_benchmark's list

MLPerf's ruleset accepts only its own benchmarks as `submission_benchmark` (flux1, llama31_8b,
...) and then loads that benchmark's rule file; acceval's workloads are not among them, so the
shipped checker refuses (and, in 4.1.68, stops on the missing file). `derived` writes, into a
temporary folder, the ruleset's common.yaml and {closed,open}_common.yaml read from the
installed package, changed in two places only: the division's rule file is loaded from that
folder, and submission_benchmark keeps its EXACTLY_ONE requirement but not the list check or
the benchmark's own rule file. Every other rule is MLPerf's, unchanged. Nothing of MLPerf's
is copied into the repository. Prints the checker's output; exits with its status.
"""

import os
import subprocess
import sys
import tempfile

import yaml
import mlperf_logging.compliance_checker as cc

RULESET = "6.0.0"


def derived_config(tmp):
    src = os.path.join(os.path.dirname(cc.__file__), f"training_{RULESET}")
    with open(os.path.join(src, "common.yaml")) as f:
        common = f.read()
    old = f"enqueue_config('training_{RULESET}/{{}}_common.yaml'"
    if old not in common:
        sys.exit(f"mlperf_checker.py: common.yaml no longer enqueues {old!r}; update this script")
    with open(os.path.join(tmp, "common.yaml"), "w") as f:
        f.write(common.replace(old, f"enqueue_config('{tmp}/{{}}_common.yaml'"))
    for division in ("closed", "open"):
        with open(os.path.join(src, f"{division}_common.yaml")) as f:
            rules = yaml.safe_load(f)
        lifted = 0
        for r in rules:
            key = r.get("KEY")
            if key and key.get("NAME") == "submission_benchmark":
                key.pop("CHECK", None)
                key.pop("POST", None)
                lifted += 1
        if lifted != 1:
            sys.exit(f"mlperf_checker.py: {division}_common.yaml has {lifted} submission_benchmark rules")
        with open(os.path.join(tmp, f"{division}_common.yaml"), "w") as f:
            yaml.safe_dump(rules, f)
    return os.path.join(tmp, "common.yaml")


def main():
    mode, mllog = sys.argv[1], sys.argv[2]
    cmd = [sys.executable, "-m", "mlperf_logging.compliance_checker",
           "--usage", "training", "--ruleset", RULESET]
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "derived":
            cmd += ["--config", derived_config(tmp)]
        elif mode != "shipped":
            sys.exit(f"mlperf_checker.py: mode is shipped or derived, not {mode!r}")
        # The checker also writes its output to a file, by default in the working directory.
        cmd += ["--log_output", os.path.join(tmp, "compliance_checker.log")]
        r = subprocess.run(cmd + [mllog], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
