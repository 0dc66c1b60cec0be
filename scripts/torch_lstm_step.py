"""PyTorch's training step on the shape of acceval's `lstm-load-forecast` workload, for the
candle / PyTorch step ratio (issue 24): nn.LSTM(8, 128, num_layers=2) over 96 steps, the last
hidden state through Linear(128, 24), MSE loss, AdamW, batch 64, on the CPU with the thread
count given (acceval's trainer uses every core; pass the same). Random data of the workload's
shapes: the step time does not depend on the values.

    python scripts/torch_lstm_step.py [--threads 2] [--steps 30] [--warmup 3] [--batch 64]

Prints the step times' P50 and mean, ms (forward, backward and optimizer step; wall clock).
"""

import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 128, num_layers=2, batch_first=True)
    head = torch.nn.Linear(128, 24)
    params = list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    x = torch.randn(a.batch, 96, 8)
    y = torch.randn(a.batch, 24)
    times = []
    for i in range(a.warmup + a.steps):
        t = time.perf_counter()
        opt.zero_grad()
        _, (h, _) = lstm(x)
        loss = torch.nn.functional.mse_loss(head(h[-1]), y)
        loss.backward()
        opt.step()
        if i >= a.warmup:
            times.append((time.perf_counter() - t) * 1e3)
    print(f"torch {torch.__version__}, {a.threads} threads, batch {a.batch}, {a.steps} steps: "
          f"step P50 {statistics.median(times):.1f} ms, mean {statistics.mean(times):.1f} ms")


if __name__ == "__main__":
    main()
