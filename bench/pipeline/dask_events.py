"""The realistic comparison pipeline in Dask distributed: 2 worker processes of one thread
each, the two cores coupler's 2 workers get.

    /usr/bin/python3 bench/pipeline/dask_events.py EVENTS.csv OUT_DIR [PARTITIONS]

The stages of pandas_events.py, each persisted before the next is timed (as coupler
materializes each node's shards). Prints one JSON object.
"""
import json
import os
import sys
import time

import numpy as np
import pandas as pd
import dask.dataframe as dd
from dask.distributed import Client, LocalCluster, wait

FLOATS = ["f0", "f1", "f2", "f3", "f4", "f5"]
SCALED = FLOATS + ["count"]


def write_partition(frame, partition_info=None, out_dir=""):
    index = partition_info["number"] if partition_info else 0
    for c in frame.columns:
        values = frame[c].to_numpy() if c not in ("device", "site") else frame[c].astype(str).to_numpy()
        np.save(os.path.join(out_dir, "%s-%05d.npy" % (c, index)), values, allow_pickle=True)
    return frame.iloc[:0]


def main() -> None:
    path, out_dir = sys.argv[1], sys.argv[2]
    partitions = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    os.makedirs(out_dir, exist_ok=True)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    times = {}
    try:
        t = time.perf_counter()
        blocksize = os.path.getsize(path) // partitions + 1
        df = dd.read_csv(path, blocksize=blocksize,
                         dtype={**{c: "float32" for c in FLOATS}, "count": "float64",
                                "device": "object", "site": "object", "ts": "object"})
        df = df.assign(ts=df.ts.map_partitions(
            lambda s: pd.to_datetime(s, utc=True).dt.tz_localize(None),
            meta=("ts", "datetime64[ns]")))
        df = df.persist()
        wait(df)
        times["parse"] = time.perf_counter() - t

        t = time.perf_counter()
        wide = df[SCALED].astype("float64")
        mean, std = dd.compute(wide.mean(), wide.std(ddof=0))
        times["stats"] = time.perf_counter() - t

        t = time.perf_counter()
        df = df.assign(**{c: ((df[c] - mean[c]) / std[c]).astype("float32") for c in SCALED})
        df = df.persist()
        wait(df)
        times["standardize"] = time.perf_counter() - t

        t = time.perf_counter()
        df = df[df.active & (df.f0 > np.float32(-1))].persist()
        wait(df)
        times["filter"] = time.perf_counter() - t

        t = time.perf_counter()
        df = df.assign(ratio=df.f1 / (df.f5 + np.float32(10))).persist()
        wait(df)
        times["derive"] = time.perf_counter() - t

        t = time.perf_counter()
        rows = int(df.shape[0].compute())
        df.map_partitions(write_partition, out_dir=out_dir, meta=df._meta).compute()
        times["write"] = time.perf_counter() - t
    finally:
        client.close()
        cluster.close()
    print(json.dumps({"tool": "dask", "stages": times, "rows": rows}))


if __name__ == "__main__":
    main()
