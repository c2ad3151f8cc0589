"""Writes the CSV of examples/csv-pipeline.yaml: four float columns, a city name and an int
label, with about 1% of the floats and cities missing (half as empty fields, half as NA), from a
fixed seed.

    /usr/bin/python3 examples/csv/make_measurements.py data/measurements.csv [ROWS] [SEED]
"""
import os
import sys

import numpy as np

CITIES = ["Lisbon", "Porto", "Madrid", "Paris", "Lyon", "Berlin", "Hamburg", "Rome", "Milan",
          "Vienna", "Prague", "Oslo", "São Paulo", "New York, NY"]


def main() -> None:
    path = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
    scale = np.array([1.0, 2.0, 0.5, 3.0])
    shift = np.array([0.0, 1.0, -2.0, 5.0])
    values = rng.standard_normal((rows, 4)) * scale + shift
    gaps = rng.random((rows, 5)) < 0.01
    cities = rng.integers(0, len(CITIES), rows)
    labels = rng.integers(0, 5, rows)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("x0,x1,x2,x3,city,label\n")
        for i in range(rows):
            gap = "NA" if i % 2 == 0 else ""
            fields = [gap if gaps[i, c] else "%.4f" % values[i, c] for c in range(4)]
            city = CITIES[cities[i]]
            # RFC 4180: a field holding a comma is quoted.
            fields.append(gap if gaps[i, 4] else ('"%s"' % city if "," in city else city))
            fields.append(str(labels[i]))
            out.write(",".join(fields) + "\n")


if __name__ == "__main__":
    main()
