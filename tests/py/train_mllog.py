"""A lab's own training, as `acceval train --exec -- python tests/py/train_mllog.py` runs it.

A tiny PyTorch MLP on a seeded synthetic task (which of 4 quadrants a 2-D point lies in),
printing MLPerf `:::MLLOG` events on stdout in mlcommons/logging's layout: init, run
start/stop, epochs with their sample counts, a synchronised step time per step
(acceval's `step_time_ms` event), evaluation accuracy per epoch. Arguments:
--epochs N (default 3), --samples N per epoch (default 4096), --batch N (default 64).
"""
import argparse
import json
import sys
import time

import torch


def log(kind, key, value=None, **meta):
    meta = {"file": __file__, "lineno": sys._getframe(1).f_lineno, **meta}
    line = {"namespace": "", "time_ms": int(time.time() * 1e3), "event_type": kind,
            "key": key, "value": value, "metadata": meta}
    print(":::MLLOG " + json.dumps(line), flush=True)


def data(n, gen):
    x = torch.rand(n, 2, generator=gen) * 2 - 1
    y = (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()
    return x, y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    log("INTERVAL_START", "init_start")
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    log("POINT_IN_TIME", "seed", 0)
    log("POINT_IN_TIME", "global_batch_size", a.batch)
    log("POINT_IN_TIME", "opt_name", "sgd")
    log("POINT_IN_TIME", "train_samples", a.samples)
    xt, yt = data(1024, gen)
    log("INTERVAL_END", "init_stop")
    log("INTERVAL_START", "run_start")
    for epoch in range(1, a.epochs + 1):
        log("INTERVAL_START", "epoch_start", epoch_num=epoch)
        x, y = data(a.samples, gen)
        for s in range(0, a.samples, a.batch):
            t0 = time.perf_counter()
            xb, yb = x[s:s + a.batch], y[s:s + a.batch]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            log("POINT_IN_TIME", "step_time_ms", (time.perf_counter() - t0) * 1e3,
                step_num=s // a.batch)
        log("INTERVAL_END", "epoch_stop", epoch_num=epoch, samples_count=a.samples)
        log("INTERVAL_START", "eval_start", epoch_num=epoch)
        with torch.no_grad():
            acc = (model(xt).argmax(1) == yt).float().mean().item()
        log("INTERVAL_END", "eval_stop", epoch_num=epoch)
        log("POINT_IN_TIME", "eval_accuracy", acc, epoch_num=epoch)
    log("INTERVAL_END", "run_stop", status="success")


if __name__ == "__main__":
    main()
