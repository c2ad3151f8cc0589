"""The comparison pipeline in Dask distributed: 2 worker processes of one thread each, the
same two-core budget coupler's 2 workers get.

    /usr/bin/python3 bench/pipeline/dask_pipeline.py ROWS.csv OUT_DIR [PARTITIONS]

The same stages as pandas_pipeline.py. Dask is lazy, so each stage is persisted before the
next is timed (as coupler materializes each node's shards); the statistics are one compute.
Each partition's result is written as .npy files by the workers. Prints one JSON object.
"""
import json
import os
import sys
import time

import numpy as np
import dask.dataframe as dd
from dask.distributed import Client, LocalCluster, wait

FEATURES = ["x0", "x1", "x2", "x3"]


def write_partition(frame, partition_info=None, out_dir=""):
    index = partition_info["number"] if partition_info else 0
    for c in frame.columns:
        values = frame[c].cat.codes.to_numpy() if c == "city" else frame[c].to_numpy()
        np.save(os.path.join(out_dir, "%s-%05d.npy" % (c, index)), values)
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
                         dtype={"x0": "float32", "x1": "float32", "x2": "float32",
                                "x3": "float32", "city": "category", "label": "int32"})
        df = df.persist()
        wait(df)
        times["parse"] = time.perf_counter() - t

        t = time.perf_counter()
        wide = df[FEATURES].astype("float64")  # float64 sums, as in pandas_pipeline.py
        mean, std = dd.compute(wide.mean(), wide.std(ddof=0))
        times["stats"] = time.perf_counter() - t

        t = time.perf_counter()
        df = df.assign(**{c: ((df[c] - mean[c]) / std[c]).astype("float32") for c in FEATURES})
        df = df.persist()
        wait(df)
        times["standardize"] = time.perf_counter() - t

        t = time.perf_counter()
        df = df[(df.x0 > -1) & ((df.x3 < 1) | (df.label == 2))].persist()
        wait(df)
        times["filter"] = time.perf_counter() - t

        t = time.perf_counter()
        df = df.assign(x01=df.x0 * df.x1 + 1, r=np.sqrt(np.abs(df.x2))).persist()
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
