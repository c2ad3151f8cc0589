#!/usr/bin/env python3
"""Checks examples/relational-pipeline.yaml's output against pandas doing the same steps.

Usage: check_relational.py MEASUREMENTS.csv CITIES.csv OUT_DIR
OUT_DIR holds the ranked node's part-*.csv files (read in order: one sorted table). Exits 1
with the first difference.
"""
import glob
import os
import sys

import numpy as np
import pandas as pd


def main():
    measurements, cities, out_dir = sys.argv[1:4]
    m = pd.read_csv(measurements, dtype={"city": object})
    c = pd.read_csv(cities, dtype={"city": object, "country": object})
    # coupler reads floats as float32 unless told otherwise: compare at that precision.
    for col in ("x0", "x1", "x2", "x3"):
        m[col] = m[col].astype("float32").astype("float64")
    joined = m.merge(c, on="city", how="left")
    kept = joined[joined["x0"] > 0]
    want = kept.groupby(["country", "label"], dropna=False).agg(
        rows=("x0", "size"), mean_x1=("x1", "mean"), max_x2=("x2", "max"),
        cities=("city", "nunique"), people_k=("population_k", "max")).reset_index()
    want = want.sort_values(["rows", "country"], ascending=[False, True], na_position="last",
                            kind="stable").reset_index(drop=True)
    parts = sorted(glob.glob(os.path.join(out_dir, "part-*.csv")))
    got = pd.concat([pd.read_csv(p, dtype={"country": object}) for p in parts], ignore_index=True)
    if len(got) != len(want):
        sys.exit(f"{len(got)} groups, pandas has {len(want)}")
    for col in want.columns:
        a, b = got[col], want[col]
        if a.dtype == object or b.dtype == object:
            same = (a.astype(str) == b.astype(str)) | (a.isna() & b.isna())
        else:
            same = pd.Series(np.isclose(a.astype("float64"), b.astype("float64"), rtol=1e-6,
                                        equal_nan=True))
        if not same.all():
            i = int((~same).idxmax())
            sys.exit(f"{col}, row {i}: {a[i]!r}, pandas {b[i]!r}")
    print(f"{len(got)} groups in {len(parts)} part files, in order, match pandas")


if __name__ == "__main__":
    main()
