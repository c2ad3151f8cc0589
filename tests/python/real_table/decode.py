"""The last step of tests/python/test_real_table.py's pipeline (exec, one process per shard):
reads a shard (an .npz of columns) as any numpy user would, turns string codes back into text
with each column's dictionary, and writes one record per row.

    /usr/bin/python3 decode.py INPUT.npz OUTPUT.npy
"""
import json
import sys

import numpy as np


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    records = np.load(source)

    def text(column):
        names = np.array(json.loads(records[column + ".dictionary.json"]) + [""], dtype=object)
        return names[records[column]]  # code -1 (missing) picks the "" appended

    out = np.empty(len(records["id"]), dtype=[("id", "<i8"), ("ts", "<M8[ns]"), ("device", "U16"),
                                        ("site", "U40"), ("count", "<f4"), ("ratio", "<f4"),
                                        ("active", "?")])
    out["id"] = records["id"]
    out["ts"] = records["ts"]
    out["device"] = text("device")
    out["site"] = text("site")
    out["count"] = records["count"]
    out["ratio"] = records["ratio"]
    out["active"] = records["active"]
    np.save(target, out)


if __name__ == "__main__":
    main()
