#!/usr/bin/env python3
"""Decode + letterbox of the line-inspection frames: acceval against OpenCV, one thread, side by
side (issue 26, point 4).

Usage: scripts/preprocess_vs_opencv.py [BIN (target/release/acceval)] [RUNS (200)] [ROUNDS (5)]
  env: MODEL (yolov8n-line), SET (line-inspection): the model whose pipeline acceval runs and
       the input set both sides read (every file, JPEG and PNG, in a cycle).

acceval: `bench --backend cpu --model MODEL --runs RUNS --duration 0`, its pipeline's decode
and preprocess stages (P50, ms) from --export-json; the preprocess stage is the letterbox
(triangle resize, pad 114, RGB, float NCHW / 255) written into the model's input tensor.
OpenCV: per sample `cv2.imdecode` (IMREAD_COLOR) from the file's bytes in memory, then
`cv2.resize` INTER_LINEAR to the letterbox size, `cv2.copyMakeBorder` with 114, BGR→RGB, float
/ 255, HWC→NCHW contiguous; `cv2.setNumThreads(1)`; P50 of each step over RUNS samples.
Rounds alternate acceval and OpenCV; the figure is the median of the rounds' P50s, and the
ratio is acceval's decode + preprocess over OpenCV's. Needs opencv-python-headless and numpy.

The floor: on the set's JPEG files only, OpenCV's decode alone at reduced scale
(IMREAD_REDUCED_COLOR_2, _4, _8: libjpeg-turbo's scaled IDCT, at 1/8 the DC coefficients
alone), beside OpenCV's whole path on the same files. Every coefficient is still entropy-
decoded at any scale, so the 1/8 decode bounds from below what any pipeline that decodes
these files costs; where it is above half of OpenCV's whole path, the 0.5 goal is out of
reach of the decode alone."""
import json, os, statistics, subprocess, sys, tempfile, time

import cv2
import numpy as np

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/acceval"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
MODEL = os.environ.get("MODEL", "yolov8n-line")
SET = os.environ.get("SET", "line-inspection")
SIZE = 640


def acceval_round(work):
    out = os.path.join(work, "bench.json")
    subprocess.run([BIN, "bench", "--backend", "cpu", "--model", MODEL, "--runs", str(RUNS),
                    "--duration", "0", "--threads", "1", "--allow-invalid", "--export-json", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    st = json.load(open(out))["stages"]
    return st["decode"]["latency_ms"]["p50"], st["preprocess"]["latency_ms"]["p50"]


def opencv_round(blobs, flag=cv2.IMREAD_COLOR):
    dec, pre = [], []
    for i in range(RUNS):
        buf = blobs[i % len(blobs)]
        t0 = time.perf_counter()
        img = cv2.imdecode(buf, flag)
        t1 = time.perf_counter()
        h, w = img.shape[:2]
        r = min(SIZE / w, SIZE / h)
        nw, nh = min(SIZE, max(1, round(w * r))), min(SIZE, max(1, round(h * r)))
        x = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
        px, py = (SIZE - nw) // 2, (SIZE - nh) // 2
        x = cv2.copyMakeBorder(x, py, SIZE - nh - py, px, SIZE - nw - px, cv2.BORDER_CONSTANT,
                               value=(114, 114, 114))
        x = cv2.cvtColor(x, cv2.COLOR_BGR2RGB)
        x = np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32) / np.float32(255)
        t2 = time.perf_counter()
        dec.append((t1 - t0) * 1e3)
        pre.append((t2 - t1) * 1e3)
    return statistics.median(dec), statistics.median(pre)


REDUCED = [("1/2", cv2.IMREAD_REDUCED_COLOR_2), ("1/4", cv2.IMREAD_REDUCED_COLOR_4),
           ("1/8", cv2.IMREAD_REDUCED_COLOR_8)]


def floor_round(jpegs):
    """OpenCV's whole path on the JPEG files, then its decode alone at each reduced scale."""
    d, p = opencv_round(jpegs)
    out = {"full path": d + p}
    for name, flag in REDUCED:
        ts = []
        for i in range(RUNS):
            t0 = time.perf_counter()
            cv2.imdecode(jpegs[i % len(jpegs)], flag)
            ts.append((time.perf_counter() - t0) * 1e3)
        out[name] = statistics.median(ts)
    return out


def main():
    cv2.setNumThreads(1)
    rounds = {"acceval": [], "opencv": []}
    floors = []
    subprocess.run([BIN, "inputs", "build", SET], check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as work:
        rounds["acceval"].append(acceval_round(work))  # also builds the model
        folder = os.path.join("inputs", SET)
        files = sorted(f for f in os.listdir(folder) if f.endswith((".jpg", ".png")))
        blobs = [np.frombuffer(open(os.path.join(folder, f), "rb").read(), np.uint8) for f in files]
        jpegs = [b for f, b in zip(files, blobs) if f.endswith(".jpg")]
        rounds["opencv"].append(opencv_round(blobs))
        floors.append(floor_round(jpegs))
        for _ in range(ROUNDS - 1):
            rounds["acceval"].append(acceval_round(work))
            rounds["opencv"].append(opencv_round(blobs))
            floors.append(floor_round(jpegs))
    print(f"{MODEL} on '{SET}' ({len(files)} files in a cycle), {RUNS} samples x {ROUNDS} rounds, "
          f"one thread; OpenCV {cv2.__version__}")
    total = {}
    for side, rs in rounds.items():
        d = statistics.median(r[0] for r in rs)
        p = statistics.median(r[1] for r in rs)
        total[side] = d + p
        print(f"  {side:8s} decode P50 {d:7.3f} ms  letterbox P50 {p:7.3f} ms  sum {d + p:7.3f} ms  "
              f"(rounds' P50s, decode: {', '.join(f'{r[0]:.2f}' for r in rs)}; "
              f"letterbox: {', '.join(f'{r[1]:.2f}' for r in rs)})")
    ratio = total["acceval"] / total["opencv"]
    print(f"  ratio acceval / OpenCV: {ratio:.3f} (issue 26's goal: <= 0.5)")
    full = statistics.median(f["full path"] for f in floors)
    print(f"  floor, the {len(jpegs)} JPEG files: OpenCV's whole path {full:.3f} ms; "
          "its decode alone at")
    for name, flag in REDUCED:
        v = statistics.median(f[name] for f in floors)
        h, w = cv2.imdecode(jpegs[0], flag).shape[:2]
        r = min(SIZE / w, SIZE / h)
        keeps = "at least" if r <= 1 else f"{r:.2f}x upscaled to"
        print(f"    {name} scale: {v:7.3f} ms = {v / full:.3f} x the whole path "
              f"({w}x{h}: {keeps} the letterbox's resolution)")


if __name__ == "__main__":
    main()
