"""A realistic event table, as exports come: what bench/pipeline's realistic runs and
tests/python/test_real_table.py read.

    /usr/bin/python3 bench/pipeline/make_events.py OUT.csv [ROWS] [--seed 7]

Columns (12): id (int64, starting just below 2^24 and jumping past 2^40 every 1,000th row),
ts (a distinct ISO 8601 timestamp per row, microseconds, some with a UTC offset), device (one
of 50,000 names), site (quoted, with commas and escaped quotes), f0..f5 (floats on scales from
1e-3 to 1e6), count (an int), active (True/False). About 2% of ts, device, site, f0..f5 and
count are missing, written as '', NA, NULL or nan. Lines end in CRLF. Seeded: the same
arguments give the same bytes.
"""
import argparse
import random
import sys

ID_START = 16_777_000  # 2^24 is 16,777,216: ids past it do not fit a float32
SITES = ['Berlin', '"Lisbon, PT"', '"The ""Hub"", Porto"', 'Madrid', '"Rome, IT"',
         '"Vienna, ""Innere Stadt"""', 'Paris', '"New York, NY"', 'São Paulo', 'Zürich']
MISSING = ["", "NA", "NULL", "nan"]
CHUNK = 100_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("rows", nargs="?", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    rng = random.Random(args.seed)
    base = 1_704_067_200  # 2024-01-01T00:00:00Z
    with open(args.out, "w", encoding="utf-8", newline="") as out:
        out.write("id,ts,device,site,f0,f1,f2,f3,f4,f5,count,active\r\n")
        lines = []
        for i in range(args.rows):
            def gap(text):
                return rng.choice(MISSING) if rng.random() < 0.02 else text
            ident = ID_START + i if i % 1000 != 999 else (1 << 40) + i
            seconds = base + i * 7 + rng.randrange(7)
            micro = rng.randrange(1_000_000)
            day, rest = divmod(seconds, 86400)
            # Days from the epoch to a civil date, the inverse of days_from_civil.
            z = day + 719468
            era = z // 146097
            doe = z - era * 146097
            yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
            doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
            mp = (5 * doy + 2) // 153
            d = doy - (153 * mp + 2) // 5 + 1
            m = mp + 3 if mp < 10 else mp - 9
            y = yoe + era * 400 + (1 if m <= 2 else 0)
            hh, rem = divmod(rest, 3600)
            mm, ss = divmod(rem, 60)
            if i % 10 == 3:  # the same instant written with an offset: +02:00 is 2 h later
                hh2 = hh + 2
                ts = "%04d-%02d-%02dT%02d:%02d:%02d.%06d+02:00" % (y, m, d, hh2, mm, ss, micro) \
                    if hh2 < 24 else "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (y, m, d, hh, mm, ss, micro)
            else:
                ts = "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (y, m, d, hh, mm, ss, micro)
            fields = [
                str(ident),
                gap(ts),
                gap("dev-%05d" % rng.randrange(50_000)),
                gap(rng.choice(SITES)),
                gap("%.6f" % rng.gauss(0, 1)),
                gap("%.2f" % rng.uniform(0, 2e6)),
                gap("%.7f" % rng.uniform(0, 2e-3)),
                gap("%.4f" % rng.uniform(0, 100)),
                gap("%.3f" % rng.uniform(-50, 50)),
                gap("%.5f" % rng.gauss(1000, 250)),
                gap(str(rng.randrange(1001))),
                "True" if rng.random() < 0.6 else "False",
            ]
            lines.append(",".join(fields))
            if len(lines) == CHUNK:
                out.write("\r\n".join(lines) + "\r\n")
                lines.clear()
        if lines:
            out.write("\r\n".join(lines) + "\r\n")


if __name__ == "__main__":
    sys.exit(main())
