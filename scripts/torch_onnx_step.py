"""PyTorch's training step on an ONNX graph (converted by onnx2torch), for the candle / PyTorch
step ratio of acceval's image workloads (issue 24): the same graph acceval's candle trainer
interprets (`acceval train --export-onnx F` writes it), every initializer trained, AdamW, on
seeded random inputs of the given shape, on the CPU with the thread count given.

    pip install torch onnx2torch
    python scripts/torch_onnx_step.py M.onnx --shape 32,3,96,96 --loss ce --classes 10
    python scripts/torch_onnx_step.py M.onnx --shape 8,3,160,160 --loss l2

--loss ce: cross-entropy against random classes (the classification workload's loss);
--loss l2: the mean square of every output, a stand-in for a loss acceval computes itself
(the detection workload's assignment and box losses are not reproduced, so PyTorch's step
here lacks their cost: a ratio from it overstates candle's share). Prints the step times'
P50 and mean, ms (forward, backward and optimizer step; wall clock).
"""

import argparse
import statistics
import time

import onnx
import torch
from onnx2torch import convert


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--shape", required=True, help="input shape, e.g. 32,3,96,96")
    ap.add_argument("--loss", choices=["ce", "l2"], required=True)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = convert(onnx.load(a.model)).train()
    params = [p for p in net.parameters()]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=1e-3)
    shape = [int(d) for d in a.shape.split(",")]
    x = torch.randn(*shape)
    y = torch.randint(0, a.classes, (shape[0],))
    times = []
    for i in range(a.warmup + a.steps):
        t = time.perf_counter()
        opt.zero_grad()
        out = net(x)
        outs = out if isinstance(out, (tuple, list)) else [out]
        if a.loss == "ce":
            loss = torch.nn.functional.cross_entropy(outs[0].reshape(shape[0], -1), y)
        else:
            loss = sum((o.float() ** 2).mean() for o in outs)
        loss.backward()
        opt.step()
        if i >= a.warmup:
            times.append((time.perf_counter() - t) * 1e3)
    n = sum(p.numel() for p in params)
    print(f"torch {torch.__version__}, {a.threads} threads, input {shape}, {n} parameters, "
          f"{a.steps} steps: step P50 {statistics.median(times):.1f} ms, "
          f"mean {statistics.mean(times):.1f} ms")


if __name__ == "__main__":
    main()
