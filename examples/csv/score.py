"""The pipeline's own Python step (exec, one process per shard): reads a shard coupler wrote
(an .npz of columns), turns the city codes back into names with the column's dictionary, and
writes one record per row: city, label and a score.

    /usr/bin/python3 examples/csv/score.py INPUT.npz OUTPUT.npy
"""
import json
import sys

import numpy as np


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    shard = np.load(source)  # shard["city"] is a column; "city.dictionary.json" its strings
    names = np.array(json.loads(shard["city.dictionary.json"]) + [""], dtype=object)
    codes = shard["city"]  # -1 marks a missing city: it picks the "" appended above
    records = {name: shard[name] for name in ("label", "x01", "r")}
    out = np.empty(len(codes), dtype=[("city", "U32"), ("label", "<i4"), ("score", "<f4")])
    out["city"] = names[codes]
    out["label"] = records["label"]
    out["score"] = np.tanh(records["x01"]) * records["r"]
    np.save(target, out)


if __name__ == "__main__":
    main()
