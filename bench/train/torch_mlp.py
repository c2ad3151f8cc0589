#!/usr/bin/python3
"""The PyTorch side of compare_torch.py: the same MLP, optimizer, batch and initial weights as
the `coupler train` run it is compared with, one thread per process; under mpirun -np 2 it is
DDP over gloo (rank and world from Open MPI's environment). Prints one JSON line from rank 0:
samples_per_s over the training loop (as coupler's metrics.json counts it) and test accuracy."""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)      # .npz: x (rows x features), y
    p.add_argument("--test", required=True)      # .npz: the held-out rows
    p.add_argument("--init", required=True)      # coupler's initial weights (.npy, flat)
    p.add_argument("--layers", required=True)    # "200,512,512,20"
    p.add_argument("--precision", default="fp32")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--global-batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(1)
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)

    widths = [int(w) for w in a.layers.split(",")]
    mods = []
    for i in range(len(widths) - 1):
        mods.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            mods.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*mods)
    # coupler's layout: per layer the weight (out x in, row-major), then its bias.
    flat = torch.from_numpy(np.load(a.init).astype(np.float32))
    at = 0
    with torch.no_grad():
        for m in model:
            if isinstance(m, torch.nn.Linear):
                n = m.weight.numel()
                m.weight.copy_(flat[at:at + n].view_as(m.weight)); at += n
                n = m.bias.numel()
                m.bias.copy_(flat[at:at + n]); at += n
    assert at == flat.numel(), (at, flat.numel())
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    loss_fn = torch.nn.CrossEntropyLoss()

    d = np.load(a.data)
    x = torch.from_numpy(d["x"])
    y = torch.from_numpy(d["y"].astype(np.int64))
    per_rank = a.global_batch // world
    steps = x.shape[0] // a.global_batch
    g = torch.Generator().manual_seed(a.seed)
    bf16 = a.precision == "bf16"
    start = time.perf_counter()
    for _ in range(a.epochs):
        order = torch.randperm(x.shape[0], generator=g)
        for s in range(steps):
            rows = order[s * a.global_batch + rank * per_rank: s * a.global_batch + (rank + 1) * per_rank]
            xb, yb = x[rows], y[rows]
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
    elapsed = time.perf_counter() - start
    t = np.load(a.test)
    with torch.no_grad():  # fp32 from the fp32 master weights, as compare_torch.py scores coupler's
        pred = model(torch.from_numpy(t["x"])).argmax(1).numpy()
    acc = float((pred == t["y"]).mean())
    if rank == 0:
        print(json.dumps({"samples_per_s": steps * a.epochs * a.global_batch / elapsed,
                          "test_accuracy": acc, "steps": steps * a.epochs}))
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
