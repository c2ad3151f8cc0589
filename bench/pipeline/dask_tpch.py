"""The TPC-H-like query of compare_tpch.py in Dask distributed: 2 worker processes of one
thread each, the two cores coupler's 2 workers get.

    /usr/bin/python3 bench/pipeline/dask_tpch.py LINEITEM.csv PART.csv OUT_DIR [PARTITIONS]

dd.read_csv of lineitem in PARTITIONS blocks (default 16) and of part (one partition), merge on
l_partkey (Dask joins every lineitem partition with the one part partition, no shuffle),
filter, assign revenue, groupby.agg: one lazy graph, computed once, as a Dask user writes it
(persisting each step would only add memory and time). The small result is sorted and
written by pandas in the client. Prints one JSON object: the graph's seconds, the sort's and
the write's, and the groups.
"""
import json
import os
import sys
import time

import dask.dataframe as dd
from dask.distributed import Client, LocalCluster

DTYPES = {"l_orderkey": "int64", "l_partkey": "int64", "l_suppkey": "int64",
          "l_quantity": "int64", "l_extendedprice": "float64", "l_discount": "float64",
          "l_shipdate": "int64", "l_returnflag": "object", "l_linestatus": "object"}


def main() -> None:
    lineitem_csv, part_csv, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    partitions = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    os.makedirs(out_dir, exist_ok=True)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    times = {}
    try:
        t = time.perf_counter()
        blocksize = os.path.getsize(lineitem_csv) // partitions + 1
        lineitem = dd.read_csv(lineitem_csv, blocksize=blocksize, dtype=DTYPES)
        part = dd.read_csv(part_csv, dtype={"p_retailprice": "float64"})
        df = lineitem.merge(part, on="l_partkey", how="inner")
        df = df[(df.l_shipdate < 2000) & (df.p_size > 10)]
        df = df.assign(revenue=df.l_extendedprice * (1 - df.l_discount))
        grouped = df.groupby(["l_returnflag", "p_brand"]).agg({
            "l_quantity": ["size", "sum"], "revenue": "sum", "l_extendedprice": "mean",
            "l_discount": "mean"})
        result = grouped.compute()
        result.columns = ["rows", "qty", "revenue", "avg_price", "avg_disc"]
        result = result.reset_index()
        times["parse..group_by"] = time.perf_counter() - t

        t = time.perf_counter()
        result = result.sort_values("revenue", ascending=False, kind="stable")
        times["sort"] = time.perf_counter() - t

        t = time.perf_counter()
        result.to_csv(os.path.join(out_dir, "result.csv"), index=False)
        times["write"] = time.perf_counter() - t
    finally:
        client.close()
        cluster.close()
    print(json.dumps({"tool": "dask", "stages": times, "rows": int(result["rows"].sum()),
                      "groups": int(len(result))}))


if __name__ == "__main__":
    main()
