#!/usr/bin/python3
"""A small PyTorch DistributedDataParallel run over gloo, as one rank of an mpi_exec group.

Every rank loads the digits shards that coupler's import_csv wrote (.npz files, one array
per column), holds out the same seeded test rows, trains its own slice of the rest
through DDP (gradients averaged over the ranks each step), and rank 0 writes result.json into
--output. The rank and world size come from the launcher: mpirun (OMPI_COMM_WORLD_*), srun
(SLURM_PROCID / SLURM_NTASKS) or PMIx; the rendezvous is tcp://MASTER_ADDR:MASTER_PORT, which
mpi_exec fills in as {master_addr} and {master_port}. See README.md beside this file.
"""
import argparse
import datetime
import glob
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def launcher_env(names, default):
    for name in names:
        if os.environ.get(name, "") != "":
            return int(os.environ[name])
    return default


def load_shards(paths, label_column):
    """All rows of every shard under `paths` (folders or files), in shard order: coupler's
    .npz of columns, or an .npy of records."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(glob.glob(os.path.join(path, "*.np[yz]")))
        else:
            files.append(path)
    if not files:
        sys.exit(f"train_ddp: no .npz or .npy shards in {paths}")
    features, labels = [], []
    for f in files:
        shard = np.load(f)
        columns = shard.files if hasattr(shard, "files") else shard.dtype.names
        names = [n for n in columns if n != label_column and not n.endswith(".dictionary.json")]
        features.append(np.stack([shard[n].astype(np.float32) for n in names], axis=1))
        labels.append(shard[label_column].astype(np.int64))
    return np.concatenate(features), np.concatenate(labels)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", nargs="+", help="the input dataset(s): folders of .npz or .npy shards")
    p.add_argument("--master-addr", required=True)
    p.add_argument("--master-port", required=True, type=int)
    p.add_argument("--output", required=True, help="folder for result.json (rank 0)")
    p.add_argument("--label-column", default="label")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32, help="rows per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    rank = launcher_env(["OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK"], 0)
    world = launcher_env(["OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMIX_SIZE"], 1)
    # One thread per rank: the ranks share the host's cores, and more threads only contend.
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts)
    # gloo's pairs connect over the interface the host name resolves to; a group that meets on
    # loopback (one host) pairs over loopback too, which needs no name for the host.
    if args.master_addr.startswith("127.") and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://{args.master_addr}:{args.master_port}",
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))

    x, y = load_shards(args.data, args.label_column)
    x /= max(float(x.max()), 1.0)
    order = np.random.default_rng(args.seed).permutation(len(x))
    n_test = int(len(x) * args.test_fraction)
    test, train = order[:n_test], order[n_test:]
    # Each rank its own slice, all of one length: DDP needs the same number of steps everywhere.
    per_rank = len(train) // world
    mine = train[rank::world][:per_rank]
    xt, yt = torch.from_numpy(x[mine]), torch.from_numpy(y[mine])

    classes = int(y.max()) + 1
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 32), torch.nn.ReLU(), torch.nn.Linear(32, classes)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed + rank)
    epoch_losses = []
    for epoch in range(args.epochs):
        perm = torch.randperm(len(xt), generator=generator)
        total, steps = 0.0, 0
        for start in range(0, per_rank - args.batch + 1, args.batch):
            idx = perm[start:start + args.batch]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()  # DDP averages the gradients over the ranks here
            opt.step()
            total += loss.item()
            steps += 1
        mean = torch.tensor([total / max(steps, 1)])
        dist.all_reduce(mean)
        epoch_losses.append(mean.item() / world)
        print(f"rank {rank}/{world}: epoch {epoch + 1} loss {epoch_losses[-1]:.4f} "
              f"({steps} steps of {args.batch} rows)", flush=True)

    # Every rank scores its share of the held-out rows; the counts are summed.
    mine_test = test[rank::world]
    with torch.no_grad():
        pred = model(torch.from_numpy(x[mine_test])).argmax(dim=1).numpy()
    counts = torch.tensor([float((pred == y[mine_test]).sum()), float(len(mine_test))],
                          dtype=torch.float64)
    dist.all_reduce(counts)
    # The replicas must have stayed equal: the spread of a weight checksum over the ranks.
    checksum = torch.tensor([sum(float(p.double().sum()) for p in model.parameters())],
                            dtype=torch.float64)
    low, high = checksum.clone(), checksum.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    accuracy = counts[0].item() / counts[1].item()
    print(f"rank {rank}/{world}: held-out accuracy {accuracy:.4f}", flush=True)
    if rank == 0:
        result = {"world_size": world, "epochs": args.epochs, "train_rows": per_rank * world,
                  "test_rows": int(counts[1].item()), "epoch_losses": epoch_losses,
                  "test_accuracy": accuracy, "replicas_equal": low.item() == high.item()}
        os.makedirs(args.output, exist_ok=True)
        tmp = os.path.join(args.output, "result.json.tmp")
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, os.path.join(args.output, "result.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
