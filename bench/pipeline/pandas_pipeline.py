"""The comparison pipeline in pandas, one process: what a researcher writes by hand.

    /usr/bin/python3 bench/pipeline/pandas_pipeline.py ROWS.csv OUT_DIR

Stages as coupler's bench/pipeline/pipeline.yaml runs them: parse (string column as a
categorical, gaps as NaN), column statistics over the values present, standardize, filter
with a compound expression, derive two columns, and write the result one .npy per column.
Prints one JSON object: each stage's seconds and the rows kept.
"""
import json
import os
import sys
import time

import numpy as np
import pandas as pd

FEATURES = ["x0", "x1", "x2", "x3"]


def main() -> None:
    path, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    times = {}
    t = time.perf_counter()
    df = pd.read_csv(path, dtype={"x0": "float32", "x1": "float32", "x2": "float32",
                                  "x3": "float32", "city": "category", "label": "int32"})
    times["parse"] = time.perf_counter() - t

    t = time.perf_counter()
    # In float64: pandas sums a float32 column in float32, which here moves the stddev in
    # the fourth digit (coupler's column_stats accumulates in float64).
    wide = df[FEATURES].astype("float64")
    mean = wide.mean()
    std = wide.std(ddof=0)
    times["stats"] = time.perf_counter() - t

    t = time.perf_counter()
    for c in FEATURES:
        df[c] = ((df[c] - mean[c]) / std[c]).astype("float32")
    times["standardize"] = time.perf_counter() - t

    t = time.perf_counter()
    df = df[(df.x0 > -1) & ((df.x3 < 1) | (df.label == 2))]
    times["filter"] = time.perf_counter() - t

    t = time.perf_counter()
    df = df.assign(x01=df.x0 * df.x1 + 1, r=np.sqrt(np.abs(df.x2)))
    times["derive"] = time.perf_counter() - t

    t = time.perf_counter()
    for c in df.columns:
        values = df[c].cat.codes.to_numpy() if c == "city" else df[c].to_numpy()
        np.save(os.path.join(out_dir, c + ".npy"), values)
    times["write"] = time.perf_counter() - t
    print(json.dumps({"tool": "pandas", "stages": times, "rows": int(len(df))}))


if __name__ == "__main__":
    main()
