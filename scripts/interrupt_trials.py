#!/usr/bin/env python3
"""Interruption trials (issue 27, point 3): `acceval grade` and `acceval train` cut by SIGINT,
SIGTERM and SIGKILL at random points, TRIALS times each, and what each leaves behind checked.

Usage: scripts/interrupt_trials.py [BIN (target/release/acceval)] [TRIALS (20)] [SEED (1)]

First one uninterrupted run of each times it (T); each trial then signals at a uniform random
point in [0, 1.1 T] (seeded, so a failing trial can be rerun). After each trial:
  - SIGINT/SIGTERM: the process must exit within 30 s of the signal (no hang);
  - grade: either no report folder (cut before its first write), or `acceval verify DIR` exits 0
    and report.json says COMPLIANT/NOT COMPLIANT with every stage run, or INCOMPLETE with a
    stage marked interrupted (SIGINT/SIGTERM) or not finished (SIGKILL);
  - train: either no train.json, or it parses, names the tables it has written beside it, and
    says complete only when the process exited 0 (a cut run says incomplete or interrupted);
  - no temporary file (`.*.tmp*`) anywhere in the folder or beside it.
Prints one line per trial and a summary per (command, signal); exits 1 when any trial fails."""
import json, os, random, shutil, signal, subprocess, sys, tempfile, time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/acceval")
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 1
GRADE = ["grade", "--profile", "bigdata-forecast", "--backend", "cpu", "--runs", "20", "--duration", "1"]
TRAIN = ["train", "--workload", "lstm-load-forecast", "--epochs", "3", "--samples", "256", "--eval-samples", "64"]


def run(cmd, out, sig=None, at=None):
    """Runs cmd with --out; signals it `at` s in. Returns (exit code, s from signal to exit)."""
    p = subprocess.Popen([BIN, *cmd, "--out", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if sig is None:
        p.wait()
        return p.returncode, None, p.stderr.read()
    t0 = time.time()
    while p.poll() is None and time.time() - t0 < at:
        time.sleep(0.005)
    ts = time.time()
    if p.poll() is None:
        p.send_signal(sig)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None, time.time() - ts, p.stderr.read()
    return p.returncode, time.time() - ts, p.stderr.read()


def temp_files(parent):
    return [os.path.join(d, f) for d, _, fs in os.walk(parent) for f in fs if ".tmp" in f]


def staging_left(parent):
    """A report folder's staging generation left beside it (`.r.next.PID`, `.r.old.PID`)."""
    return [n for n in os.listdir(parent) if n.startswith(".r.next.") or n.startswith(".r.old.")]


def check_grade(out, code, sig):
    if not os.path.exists(out):
        return True, "no folder (cut before the first write)"
    v = subprocess.run([BIN, "verify", out], capture_output=True, text=True)
    if v.returncode != 0:
        return False, f"verify exit {v.returncode}: {v.stdout.strip()[:300]}"
    r = json.load(open(os.path.join(out, "report.json")))
    verdict = r.get("verdict")
    stages = {s["name"]: s["status"] for s in r.get("stages", [])}
    if verdict == "INCOMPLETE":
        cut = [n for n, s in stages.items() if s in ("interrupted", "not run", "failed")]
        if code == 0:
            return False, f"INCOMPLETE but exit 0 ({stages})"
        return True, f"INCOMPLETE, verify OK ({len(cut)} stage(s) not finished)"
    if code not in (0, 1):
        return False, f"{verdict} with every stage done, yet exit {code}"
    return True, f"{verdict}, verify OK"


def check_train(out, code, sig):
    j = os.path.join(out, "train.json")
    if not os.path.exists(j):
        return True, "no train.json (cut before the first write)"
    try:
        r = json.load(open(j))
    except ValueError as e:
        return False, f"train.json does not parse: {e}"
    if r.get("complete") and code != 0:
        return False, f"train.json says complete but the run exited {code}"
    if not r.get("complete") and code == 0:
        return False, "exit 0 but train.json says incomplete"
    return True, 'complete' if r.get('complete') else f"incomplete ({'interrupted' if r.get('interrupted') else r.get('error')})"


def main():
    rng = random.Random(SEED)
    root = tempfile.mkdtemp(prefix="acceval-trials-")
    print(f"{TRIALS} trials per signal, seed {SEED}, folders under {root}", flush=True)
    failures = 0
    for name, cmd, check in [("grade", GRADE, check_grade), ("train", TRAIN, check_train)]:
        out = os.path.join(root, f"{name}-full")
        t = time.time()
        code, _, err = run(cmd, out)
        full = time.time() - t
        ok, what = check(out, code, None)
        print(f"{name}: uninterrupted run {full:.1f} s, exit {code}: {what}", flush=True)
        if not ok or code not in (0, 1):
            print(err[-2000:])
            sys.exit(1)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            kinds = {}
            bad = staged = 0
            for k in range(TRIALS):
                at = rng.uniform(0, 1.1 * full)
                parent = os.path.join(root, f"{name}-{sig.name}-{k}")
                os.makedirs(parent)
                out = os.path.join(parent, "r")
                code, took, err = run(cmd, out, sig, at)
                if code is None:
                    ok, what = False, f"still running 30 s after {sig.name}: killed"
                else:
                    ok, what = check(out, code, sig)
                tmp = temp_files(parent)
                if tmp:
                    ok, what = False, f"{what}; temporary files left: {tmp[:3]}"
                # Only SIGKILL may leave a staging folder (the next write into r removes it).
                left = staging_left(parent)
                if left:
                    staged += 1
                    if sig != signal.SIGKILL:
                        ok, what = False, f"{what}; staging folder left: {left}"
                kinds[what.split(",")[0].split(" (")[0]] = kinds.get(what.split(",")[0].split(" (")[0], 0) + 1
                if not ok:
                    bad += 1
                    print(f"  FAIL {name} {sig.name} trial {k} at {at:.2f} s: exit {code}, {what}\n{err[-1500:]}", flush=True)
            failures += bad
            summary = ", ".join(f"{v}× {k}" for k, v in sorted(kinds.items()))
            print(f"{'PASS' if bad == 0 else 'FAIL'}: {name} × {sig.name}: {TRIALS} trials, {bad} failed; left: {summary}"
                  f"{f'; a staging folder beside the report in {staged}' if staged else ''}", flush=True)
    print(f"{failures} trial(s) failed (folders kept under {root})" if failures else "all trials passed", flush=True)
    if not failures:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
