#!/usr/bin/python3
"""A rank of an mpi_exec group that trains through python/coupler_torch.py, for its tests.

A linear classifier on synthetic rows drawn from the step number (so a resumed run sees the
same rows at the same step), SGD with momentum (state the checkpoint must carry), `--steps`
steps of `--rows` rows per rank, a checkpoint every `--save-every` steps and at a stop. Each
rank writes its pid to pids/rank-N (the test kills one) and, at the end, rank-N.json: where it
started, its final micro-batch and accumulation, and a checksum of its weights.
--oom-rank R --oom-above N: rank R raises torch's OutOfMemoryError for a micro-batch of more
than N rows, as a GPU short of memory does.
"""
import argparse
import json
import os
import sys
import time

import torch

import coupler_torch as ct  # on PYTHONPATH: mpi_exec puts coupler's python/ folder there


def rows_of(step, rank, rows, features):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(rows, features, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + 2 * (x[:, 2] > 0.3).long()
    return x, y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--rows", type=int, default=32, help="rows per rank per step")
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--save-every", type=int, default=5)
    p.add_argument("--step-seconds", type=float, default=0.0)
    p.add_argument("--oom-rank", type=int, default=-1)
    p.add_argument("--oom-above", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(1)
    gang = ct.init()
    pids = os.path.join(ct.node_dir(), "pids")
    os.makedirs(pids, exist_ok=True)
    with open(os.path.join(pids, f"rank-{gang.rank}"), "w") as f:
        f.write(str(os.getpid()))

    torch.manual_seed(3)
    features, classes = 8, 4
    model = torch.nn.Sequential(torch.nn.Linear(features, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    backoff = ct.OomBackoff(micro_batch=a.micro_batch)
    step, resumed_from = 0, None
    state = ct.load_latest()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = resumed_from = state["step"]
    loss_fn = torch.nn.CrossEntropyLoss()
    while step < a.steps:
        x, y = rows_of(step, gang.rank, a.rows, features)
        losses = []

        def forward_backward(chunk, weight):
            if gang.rank == a.oom_rank and len(chunk) > a.oom_above:
                raise torch.cuda.OutOfMemoryError(f"simulated: {len(chunk)} rows")
            loss = loss_fn(model(x[chunk]), y[chunk])
            (loss * weight).backward()
            losses.append(loss.item() * weight)

        backoff.step(model, opt, torch.arange(a.rows), forward_backward)
        step += 1
        ct.report(step, loss=sum(losses), micro_batch=backoff.micro_batch)
        stop = ct.should_stop()
        if step % a.save_every == 0 or stop:
            ct.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()},
                    step)
        if stop:
            ct.exit_stopped()
        time.sleep(a.step_seconds)
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    with open(os.path.join(ct.node_dir(), f"rank-{gang.rank}.json"), "w") as f:
        json.dump({"rank": gang.rank, "world": gang.world, "resumed_from": resumed_from,
                   "final_step": step, "micro_batch": backoff.micro_batch,
                   "accumulate": backoff.accumulate, "backoffs": backoff.backoffs,
                   "checksum": checksum,
                   "weights": [p.detach().reshape(-1).tolist() for p in model.parameters()]}, f)
    ct.finish()


if __name__ == "__main__":
    main()
