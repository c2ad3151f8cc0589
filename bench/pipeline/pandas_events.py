"""The realistic comparison pipeline in pandas, one process, as a data engineer writes it.

    /usr/bin/python3 bench/pipeline/pandas_events.py EVENTS.csv OUT_DIR

Parse (the default NA tokens; ts as datetime64[ns]; device and site as categoricals; the
floats as float32, as coupler keeps them), statistics over the values present in float64,
standardize, filter `active & f0 > -1`, derive `ratio`, write one .npy per column. Prints one
JSON object: each stage's seconds and the rows kept.
"""
import json
import os
import sys
import time

import numpy as np
import pandas as pd

FLOATS = ["f0", "f1", "f2", "f3", "f4", "f5"]
SCALED = FLOATS + ["count"]


def main() -> None:
    path, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    times = {}
    t = time.perf_counter()
    df = pd.read_csv(path, dtype={**{c: "float32" for c in FLOATS},
                                  "device": "category", "site": "category"})
    df["ts"] = pd.to_datetime(df.ts, utc=True).dt.tz_localize(None)
    times["parse"] = time.perf_counter() - t

    t = time.perf_counter()
    wide = df[SCALED].astype("float64")
    mean, std = wide.mean(), wide.std(ddof=0)
    times["stats"] = time.perf_counter() - t

    t = time.perf_counter()
    for c in SCALED:
        df[c] = ((df[c] - mean[c]) / std[c]).astype("float32")
    times["standardize"] = time.perf_counter() - t

    t = time.perf_counter()
    df = df[df.active & (df.f0 > np.float32(-1))]
    times["filter"] = time.perf_counter() - t

    t = time.perf_counter()
    df = df.assign(ratio=df.f1 / (df.f5 + np.float32(10)))
    times["derive"] = time.perf_counter() - t

    t = time.perf_counter()
    for c in df.columns:
        values = df[c].cat.codes.to_numpy() if str(df[c].dtype) == "category" else df[c].to_numpy()
        np.save(os.path.join(out_dir, c + ".npy"), values)
    times["write"] = time.perf_counter() - t
    print(json.dumps({"tool": "pandas", "stages": times, "rows": int(len(df))}))


if __name__ == "__main__":
    main()
