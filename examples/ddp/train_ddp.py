#!/usr/bin/python3
"""A small data-parallel PyTorch run over gloo, as one rank of an mpi_exec group.

Every rank loads the digits shards that coupler's import_csv wrote (.npz files, one array
per column), holds out the same seeded test rows, trains its own slice of the rest (gradients
averaged over the ranks each step, as DistributedDataParallel averages them), and rank 0 writes
result.json into --output. coupler_torch (coupler's python/ folder, which mpi_exec puts on PYTHONPATH) joins the
process group from the gang's environment, checkpoints each epoch into the node's folder (a
retried group resumes from the newest), stops every rank at one step when coupler ends the
group, reports each step's loss into the node's steps.jsonl, and backs every rank off together
should one run out of memory. See README.md beside this file.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

try:
    import coupler_torch as ct
except ImportError:  # run by hand from a checkout: the module is in ../../python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import coupler_torch as ct


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
    p.add_argument("--output", required=True, help="folder for result.json (rank 0)")
    p.add_argument("--label-column", default="label")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32, help="rows per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    # One thread per rank: the ranks share the host's cores, and more threads only contend.
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    gang = ct.init()
    rank, world = gang.rank, gang.world

    x, y = load_shards(args.data, args.label_column)
    x /= max(float(x.max()), 1.0)
    order = np.random.default_rng(args.seed).permutation(len(x))
    n_test = int(len(x) * args.test_fraction)
    test, train = order[:n_test], order[n_test:]
    # Each rank its own slice, all of one length: every step is collective, so every rank takes
    # the same number of them.
    per_rank = len(train) // world
    mine = train[rank::world][:per_rank]
    xt, yt = torch.from_numpy(x[mine]), torch.from_numpy(y[mine])

    classes = int(y.max()) + 1
    model = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 32), torch.nn.ReLU(), torch.nn.Linear(32, classes))
    ct.broadcast_parameters(model)  # the replicas start equal
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed + rank)
    epoch_losses, first_epoch, step = [], 0, 0
    state = ct.load_latest()
    if state is not None:  # a retried group: where the last whole checkpoint left off
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        generator.set_state(state["generators"][rank])
        epoch_losses, first_epoch, step = state["epoch_losses"], state["epoch"], state["step"]
        print(f"rank {rank}/{world}: resumed after epoch {first_epoch} (step {step})", flush=True)
    batching = ct.OomBackoff(micro_batch=args.batch)
    for epoch in range(first_epoch, args.epochs):
        perm = torch.randperm(len(xt), generator=generator)
        total, steps = 0.0, 0
        for start in range(0, per_rank - args.batch + 1, args.batch):
            idx = perm[start:start + args.batch]
            losses = []

            def forward_backward(chunk, weight):
                loss = loss_fn(model(xt[chunk]), yt[chunk])
                (loss * weight).backward()
                losses.append(loss.item() * weight)

            # The gradients are averaged over the ranks once per step, by coupler_torch.
            batching.step(model, opt, idx, forward_backward)
            step += 1
            total += sum(losses)
            steps += 1
            ct.report(step, loss=sum(losses), epoch=epoch + 1)
        mean = torch.tensor([total / max(steps, 1)])
        dist.all_reduce(mean)
        epoch_losses.append(mean.item() / world)
        print(f"rank {rank}/{world}: epoch {epoch + 1} loss {epoch_losses[-1]:.4f} "
              f"({steps} steps of {args.batch} rows)", flush=True)
        # Every rank's shuffling state, so a resumed rank draws the batches it would have.
        generators = [torch.zeros_like(generator.get_state()) for _ in range(world)]
        dist.all_gather(generators, generator.get_state())
        ct.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                 "generators": generators, "epoch_losses": epoch_losses, "epoch": epoch + 1,
                 "step": step}, step)
        if ct.should_stop():
            ct.exit_stopped()

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
    ct.finish()


if __name__ == "__main__":
    main()
