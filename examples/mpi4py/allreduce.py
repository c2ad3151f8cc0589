#!/usr/bin/python3
"""mpi4py under mpi_exec: each rank sums one column of its share of the shards, an allreduce
adds the ranks' sums, and rank 0 writes total.json into --output.

The shards are the .npz files coupler's import_csv wrote (one array per column; an .npy of
records, as a command writes, reads the same way); rank r of n reads shards r, r+n, r+2n, ... so every row is counted once.
"""
import argparse
import glob
import json
import os

import numpy as np
from mpi4py import MPI


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", nargs="+", help="the input dataset(s): folders of .npz or .npy shards")
    p.add_argument("--column", required=True)
    p.add_argument("--output", required=True, help="folder for total.json (rank 0)")
    args = p.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    shards = []
    for path in args.data:
        shards += sorted(glob.glob(os.path.join(path, "*.np[yz]"))) if os.path.isdir(path) else [path]
    mine = shards[rank::size]
    local_sum, local_rows = 0.0, 0
    for f in mine:
        column = np.load(f)[args.column]
        local_sum += float(column.astype(np.float64).sum())
        local_rows += len(column)
    print(f"rank {rank} of {size} on {MPI.Get_processor_name()}: {len(mine)} shards, "
          f"{local_rows} rows, sum of {args.column} {local_sum:g}", flush=True)
    total = comm.allreduce(local_sum, op=MPI.SUM)
    rows = comm.allreduce(local_rows, op=MPI.SUM)
    if rank == 0:
        os.makedirs(args.output, exist_ok=True)
        tmp = os.path.join(args.output, "total.json.tmp")
        with open(tmp, "w") as f:
            json.dump({"column": args.column, "total": total, "rows": rows, "ranks": size,
                       "shards": len(shards)}, f)
        os.replace(tmp, os.path.join(args.output, "total.json"))
        print(f"total of {args.column} over {rows} rows: {total:g}", flush=True)


if __name__ == "__main__":
    main()
