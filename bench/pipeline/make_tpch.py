"""Two TPC-H-like tables for bench/pipeline/compare_tpch.py: a lineitem fact table and a part
dimension, joined on `l_partkey` (the key has the same name in both files).

    /usr/bin/python3 bench/pipeline/make_tpch.py OUT_DIR [--rows 20000000] [--parts 100000]
        [--seed 7]

Writes OUT_DIR/lineitem.csv and OUT_DIR/part.csv (numpy, seeded, generated and written in
chunks of 1,000,000 rows, so 20M rows never exist as Python objects at once; the same
arguments give the same bytes).

lineitem.csv: l_orderkey int64 (increasing, about 4 lines per order: a geometric count),
l_partkey int64 in [0, parts), l_suppkey int64 in [0, 1000), l_quantity int64 in [1, 50],
l_extendedprice (l_quantity * the part's retail price, 2 decimals), l_discount in [0, 0.1]
(2 decimals; about 1% missing, an empty field), l_shipdate an int day number in [0, 2500),
l_returnflag one of A/N/R, l_linestatus one of O/F.

part.csv: l_partkey int64 0..parts-1, p_brand "Brand#MN" (M, N in 1..5: 25 brands), p_size
int64 in [1, 50], p_retailprice (TPC-H's formula, 2 decimals).
"""
import argparse
import os
import sys

import numpy as np
import pandas as pd

CHUNK = 1_000_000
FLAGS = np.array(["A", "N", "R"], dtype=object)
STATUSES = np.array(["O", "F"], dtype=object)


def retail_cents(partkey):
    # TPC-H 4.2.3: (90000 + ((P_PARTKEY/10) modulo 20001) + 100 * (P_PARTKEY modulo 1000)) / 100
    return 90000 + (partkey // 10) % 20001 + 100 * (partkey % 1000)


def write_part(path, parts, rng):
    key = np.arange(parts, dtype=np.int64)
    brand = np.array(["Brand#%d%d" % (m, n) for m in range(1, 6) for n in range(1, 6)],
                     dtype=object)
    frame = pd.DataFrame({
        "l_partkey": key,
        "p_brand": brand[rng.integers(0, len(brand), parts)],
        "p_size": rng.integers(1, 51, parts, dtype=np.int64),
        "p_retailprice": retail_cents(key) / 100.0,
    })
    frame.to_csv(path, index=False, float_format="%.2f")


def write_lineitem(path, rows, parts, rng):
    orderkey = 0
    with open(path, "w", newline="") as out:
        header = True
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            # A new order starts at a row with probability 1/4: about 4 lines per order.
            starts = rng.integers(0, 4, n) == 0
            starts[0] = True
            orders = orderkey + np.cumsum(starts, dtype=np.int64)
            orderkey = int(orders[-1])
            partkey = rng.integers(0, parts, n, dtype=np.int64)
            quantity = rng.integers(1, 51, n, dtype=np.int64)
            discount = rng.integers(0, 11, n) / 100.0
            discount[rng.random(n) < 0.01] = np.nan
            frame = pd.DataFrame({
                "l_orderkey": orders,
                "l_partkey": partkey,
                "l_suppkey": rng.integers(0, 1000, n, dtype=np.int64),
                "l_quantity": quantity,
                "l_extendedprice": quantity * retail_cents(partkey) / 100.0,
                "l_discount": discount,
                "l_shipdate": rng.integers(0, 2500, n, dtype=np.int64),
                "l_returnflag": FLAGS[rng.integers(0, 3, n)],
                "l_linestatus": STATUSES[rng.integers(0, 2, n)],
            })
            frame.to_csv(out, index=False, header=header, float_format="%.2f", na_rep="")
            header = False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--parts", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    # Written under a temporary name and renamed, so an interrupted run leaves no half table
    # that compare_tpch.py would take for a finished one.
    for name, write in (("part.csv", lambda f: write_part(f, args.parts, rng)),
                        ("lineitem.csv", lambda f: write_lineitem(f, args.rows, args.parts, rng))):
        final = os.path.join(args.out_dir, name)
        tmp = final + ".tmp"
        write(tmp)
        os.replace(tmp, final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
