"""The TPC-H-like query of compare_tpch.py in pandas, one process, as an analyst writes it.

    /usr/bin/python3 bench/pipeline/pandas_tpch.py LINEITEM.csv PART.csv OUT_DIR

read_csv both tables (the default types: int64, float64 with NaN for the missing discounts,
object strings), merge on l_partkey, keep `l_shipdate < 2000 and p_size > 10`, derive revenue,
group by (l_returnflag, p_brand), sort by revenue descending, write OUT_DIR/result.csv. Prints
one JSON object: each stage's seconds, the rows kept by the filter and the groups.
"""
import json
import os
import sys
import time

import pandas as pd

AGGREGATES = dict(rows=("l_quantity", "size"), qty=("l_quantity", "sum"),
                  revenue=("revenue", "sum"), avg_price=("l_extendedprice", "mean"),
                  avg_disc=("l_discount", "mean"))


def main() -> None:
    lineitem_csv, part_csv, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)
    times = {}
    t = time.perf_counter()
    part = pd.read_csv(part_csv)
    times["parse part"] = time.perf_counter() - t

    t = time.perf_counter()
    lineitem = pd.read_csv(lineitem_csv)
    times["parse"] = time.perf_counter() - t

    t = time.perf_counter()
    df = lineitem.merge(part, on="l_partkey", how="inner")
    del lineitem
    times["join"] = time.perf_counter() - t

    t = time.perf_counter()
    df = df[(df.l_shipdate < 2000) & (df.p_size > 10)]
    times["filter"] = time.perf_counter() - t

    t = time.perf_counter()
    df = df.assign(revenue=df.l_extendedprice * (1 - df.l_discount))
    times["derive"] = time.perf_counter() - t

    t = time.perf_counter()
    result = df.groupby(["l_returnflag", "p_brand"]).agg(**AGGREGATES).reset_index()
    times["group_by"] = time.perf_counter() - t

    t = time.perf_counter()
    result = result.sort_values("revenue", ascending=False, kind="stable")
    times["sort"] = time.perf_counter() - t

    t = time.perf_counter()
    result.to_csv(os.path.join(out_dir, "result.csv"), index=False)
    times["write"] = time.perf_counter() - t
    print(json.dumps({"tool": "pandas", "stages": times, "rows": int(len(df)),
                      "groups": int(len(result))}))


if __name__ == "__main__":
    main()
