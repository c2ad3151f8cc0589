"""Writes the CSV of examples/csv-pipeline.yaml: four float columns, a city name and an int label,
with about 1% of the floats and cities missing (half as empty fields, half as NA), from a fixed
seed. Plain Python (no numpy), so scripts/test.sh and scripts/demo.sh can always make it.

    /usr/bin/python3 examples/csv/make_measurements.py data/measurements.csv [ROWS] [SEED]
"""
import os
import random
import sys

CITIES = ["Lisbon", "Porto", "Madrid", "Paris", "Lyon", "Berlin", "Hamburg", "Rome", "Milan",
          "Vienna", "Prague", "Oslo", "São Paulo", "New York, NY"]
SCALE = [1.0, 2.0, 0.5, 3.0]
SHIFT = [0.0, 1.0, -2.0, 5.0]


def main() -> None:
    path = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temp = path + ".tmp"
    with open(temp, "w", encoding="utf-8", newline="") as out:
        out.write("x0,x1,x2,x3,city,label\n")
        for i in range(rows):
            gap = "NA" if i % 2 == 0 else ""
            fields = [gap if rng.random() < 0.01 else "%.4f" % (rng.gauss(0, 1) * SCALE[c] + SHIFT[c])
                      for c in range(4)]
            city = rng.choice(CITIES)
            # RFC 4180: a field holding a comma is quoted.
            fields.append(gap if rng.random() < 0.01 else ('"%s"' % city if "," in city else city))
            fields.append(str(rng.randrange(5)))
            out.write(",".join(fields) + "\n")
    os.replace(temp, path)  # a run cut short never leaves half a file under the real name


if __name__ == "__main__":
    main()
