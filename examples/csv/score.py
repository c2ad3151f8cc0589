"""The pipeline's own Python step (exec, one process per shard): reads a shard coupler wrote,
turns the city codes back into names with the dictionary beside the shard, and writes one
record per row: city, label and a score.

    /usr/bin/python3 examples/csv/score.py INPUT.npy OUTPUT.npy
"""
import json
import os
import sys

import numpy as np


def read_shard(path):
    """A shard's records and its dictionaries ({column: [names]}; none without categoricals)."""
    records = np.load(path)
    sidecar = path + ".dict.json"  # part-00003.npy.dict.json
    dictionaries = {}
    if os.path.exists(sidecar):
        with open(sidecar, encoding="utf-8") as f:
            dictionaries = json.load(f)
    return records, dictionaries


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    records, dictionaries = read_shard(source)
    names = np.array(list(dictionaries.get("city", [])) + [""], dtype=object)
    codes = records["city"]  # -1 marks a missing city: it picks the "" appended above
    out = np.empty(len(records), dtype=[("city", "U32"), ("label", "<i4"), ("score", "<f4")])
    out["city"] = names[codes]
    out["label"] = records["label"]
    out["score"] = np.tanh(records["x01"]) * records["r"]
    np.save(target, out)


if __name__ == "__main__":
    main()
