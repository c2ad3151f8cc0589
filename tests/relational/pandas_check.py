#!/usr/bin/env python3
"""Generated tables and pandas' answers for coupler's relational ops (group_by, ...).

  pandas_check.py make OUT.csv ROWS SEED
      A table as data engineers have them: a skewed string key (one user holds 30% of the
      rows), an integer key with gaps, float and integer values with gaps, a string value and
      a two-valued flag (so most partitions of a fine shuffle are empty).

  pandas_check.py group_by IN.csv OUT_DIR KEYS AGGREGATES DROPNA
      Compares the part-*.csv files coupler's write_csv left in OUT_DIR with
      pandas' groupby(KEYS, dropna=DROPNA).agg(...).reset_index() of IN.csv. KEYS is
      comma-separated; AGGREGATES is "out=fn(col);out2=size()". Each part file must hold its
      groups sorted by the keys; together, exactly pandas' groups and values. Exit 1 with the
      differences otherwise.

  pandas_check.py make-dim OUT.csv SEED
      A small dimension table keyed by user: most users once, some twice (a many-to-many
      join), some the fact table lacks, a missing user; a `region` column both tables have.

  pandas_check.py join LEFT.csv RIGHT.csv OUT_DIR KEYS HOW
      Compares coupler's join output (part-*.csv) with pandas' merge(left, right, on=KEYS,
      how=HOW) (semi/anti: the left rows whose keys the right has, or has not): the same
      rows, told apart by the left's id and the right's uid.

  pandas_check.py sort IN.csv OUT_DIR BY DESCENDING NA_POSITION
      Compares coupler's sort output, its part files read in order, with pandas'
      sort_values(BY, ascending=..., na_position=..., kind="stable"): the same rows in the
      same order (ties in input order). DESCENDING: comma-separated columns of BY, or "-".
      Also fails when the largest part file holds more than twice the rows of an even split.

  pandas_check.py dedup IN.csv OUT_DIR KEYS KEEP
      Compares coupler's dedup output (part-*.csv) with pandas' drop_duplicates(subset=KEYS,
      keep=KEEP): the same rows (by id), each part file in input order.
"""
import glob
import os
import re
import sys

import numpy as np
import pandas as pd

DTYPES = {"amount": "float64"}


def make(path, rows, seed):
    rng = np.random.default_rng(seed)
    users = np.array([f"user{i:03d}" for i in range(120)] + ["O'Brien, Ltd", 'say "hi"'], dtype=object)
    user = rng.choice(users, size=rows)
    user[rng.random(rows) < 0.30] = "alice"  # one key holds 30% of the rows
    user[rng.random(rows) < 0.03] = None
    region = rng.integers(-3, 40, size=rows).astype("float64")
    region[rng.random(rows) < 0.04] = np.nan
    amount = np.round(rng.normal(100.0, 40.0, size=rows), 3)
    amount[rng.random(rows) < 0.05] = np.nan
    qty = rng.integers(-5, 1000, size=rows)
    qty[:3] = [2**53 + 1, 2**53 + 3, -(2**53) - 1]  # big ints that a float would round
    qty_missing = rng.random(rows) < 0.05
    qty_missing[:3] = False
    tag = rng.choice(np.array(["red", "green", "blue", "black", "white"], dtype=object), size=rows)
    tag[rng.random(rows) < 0.05] = None
    flag = rng.integers(0, 2, size=rows)
    df = pd.DataFrame({
        "id": np.arange(rows, dtype="int64"),
        "user": user,
        "region": pd.array(region, dtype="Int64"),
        "amount": amount,
        "qty": pd.arrays.IntegerArray(qty.astype("int64"), qty_missing),
        "tag": tag,
        "flag": flag,
    })
    df.to_csv(path, index=False)


def exact_ints(column):
    """Int64 from the CSV's text: pandas 1.5 reads dtype="Int64" through float64, which rounds
    ints past 2^53 (9007199254740993 comes back ...992)."""
    return pd.array([None if pd.isna(v) else int(v) for v in column], dtype="Int64")


def read_input(path):
    df = pd.read_csv(path, dtype={"user": object, "tag": object, "region": object, "qty": object})
    df["region"] = exact_ints(df["region"])
    df["qty"] = exact_ints(df["qty"])
    return df


AGG = re.compile(r"^\s*(\w+)\s*=\s*(\w+)\((\w*)\)\s*$")


def group_by(in_csv, out_dir, keys, aggregates, dropna):
    df = read_input(in_csv)
    named = {}
    for item in aggregates.split(";"):
        m = AGG.match(item)
        if not m:
            raise SystemExit(f"bad aggregate {item!r}")
        out, fn, col = m.groups()
        named[out] = (keys[0], "size") if fn == "size" else (col, fn)
    grouped = df.groupby(keys, dropna=dropna, sort=True)
    want = grouped.agg(**named).reset_index()
    for out, (src, fn) in named.items():
        if fn == "sum" and str(df[src].dtype) == "Int64":
            # pandas 1.5 sums a nullable Int64 column through float64, which rounds past 2^53;
            # coupler's int64 sum is exact, as Python's is.
            exact = [sum(int(v) for v in g.dropna()) for _, g in grouped[src]]
            want[out] = pd.array(exact, dtype="Int64")

    parts = sorted(glob.glob(os.path.join(out_dir, "**", "part-*.csv"), recursive=True))
    if not parts:
        raise SystemExit(f"no part-*.csv under {out_dir}")
    frames = []
    problems = []
    for p in parts:
        part = pd.read_csv(p, dtype=object)  # as text, then typed exactly below
        for k in keys:
            if str(df[k].dtype) == "Int64":
                part[k] = exact_ints(part[k])
            elif df[k].dtype != object:
                part[k] = part[k].astype("float64")
        for c, (src, fn) in named.items():
            if fn in ("count", "size", "nunique") or (
                    str(df[src].dtype) == "Int64" and fn in ("sum", "min", "max", "first", "last")):
                part[c] = exact_ints(part[c])
            elif not (df[src].dtype == object and fn in ("first", "last", "min", "max")):
                part[c] = part[c].astype("float64")
        # Within a part file the groups are in key order (missing keys last).
        ordered = part.sort_values(keys, na_position="last", kind="stable").reset_index(drop=True)
        if not part[keys].reset_index(drop=True).equals(ordered[keys]):
            problems.append(f"{p}: groups not sorted by {keys}")
        frames.append(part)
    got = pd.concat(frames, ignore_index=True)
    if len(got) != len(want):
        problems.append(f"{len(got)} groups, pandas has {len(want)}")

    def normalized(frame):
        frame = frame.copy()
        for k in keys:
            if df[k].dtype != object:
                frame[k] = frame[k].astype("float64")
        return frame.sort_values(keys, na_position="last").reset_index(drop=True)

    got, want = normalized(got), normalized(want)
    if len(got) == len(want):
        for k in keys:
            a, b = got[k], want[k]
            same = (a == b) | (a.isna() & b.isna())
            if not same.all():
                problems.append(f"key {k}: first difference at {int((~same).idxmax())}: "
                                f"{a[~same].iloc[0]!r} vs pandas {b[~same].iloc[0]!r}")
        for c, (src, fn) in named.items():
            a, b = got[c], want[c]
            if a.isna().ne(b.isna()).any():
                i = int(a.isna().ne(b.isna()).idxmax())
                problems.append(f"{c} ({fn} of {src}): missing differs at group {i}: "
                                f"{a.iloc[i]!r} vs pandas {b.iloc[i]!r}")
                continue
            present = ~a.isna()
            if df[src].dtype == object and fn in ("first", "last", "min", "max"):
                bad = a[present] != b[present]
            elif fn in ("count", "size", "nunique"):
                bad = a[present].astype("int64") != b[present].astype("int64")
            elif str(df[src].dtype) == "Int64" and fn in ("sum", "min", "max", "first", "last"):
                # Exact: big ints must not round through a float.
                bad = a[present].astype("int64") != b[present].astype("int64")
            else:
                x = a[present].astype("float64").to_numpy()
                y = b[present].astype("float64").to_numpy()
                bad = pd.Series(~np.isclose(x, y, rtol=1e-9, atol=1e-9), index=a[present].index)
            if bad.any():
                i = bad.idxmax()
                problems.append(f"{c} ({fn} of {src}): {int(bad.sum())} groups differ, e.g. group "
                                f"{dict(got.loc[i, keys])}: {a[i]!r} vs pandas {b[i]!r}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{len(got)} groups in {len(parts)} part files match pandas")


def frame_equal(got, want, problems):
    for c in want.columns:
        a, b = got[c], want[c]
        if a.isna().ne(b.isna()).any():
            i = int(a.isna().ne(b.isna()).idxmax())
            problems.append(f"{c}: missing differs at row {i}: {a.iloc[i]!r} vs pandas {b.iloc[i]!r}")
            continue
        present = ~a.isna()
        if b.dtype == object:
            bad = a[present].astype(str) != b[present].astype(str)
        elif str(b.dtype) in ("Int64", "int64"):
            bad = a[present].astype("int64") != b[present].astype("int64")
        else:
            bad = pd.Series(~np.isclose(a[present].astype("float64"), b[present].astype("float64"),
                                        rtol=1e-12), index=a[present].index)
        if bad.any():
            i = bad.idxmax()
            problems.append(f"{c}: {int(bad.sum())} rows differ, e.g. row {i}: {a[i]!r} vs pandas {b[i]!r}")


def read_parts(out_dir, dtypes):
    parts = sorted(glob.glob(os.path.join(out_dir, "**", "part-*.csv"), recursive=True))
    if not parts:
        raise SystemExit(f"no part-*.csv under {out_dir}")
    return parts, [pd.read_csv(p, dtype=dtypes) for p in parts]


def dedup(in_csv, out_dir, keys, keep):
    df = read_input(in_csv)
    want = df.drop_duplicates(subset=keys, keep=keep).sort_values("id").reset_index(drop=True)
    parts, frames = read_parts(out_dir, {"user": object, "tag": object, "region": object,
                                         "qty": object})
    for f in frames:
        f["region"] = exact_ints(f["region"])
        f["qty"] = exact_ints(f["qty"])
    problems = []
    for p, f in zip(parts, frames):
        if not f["id"].is_monotonic_increasing:
            problems.append(f"{p}: rows not in input order")
    got = pd.concat(frames, ignore_index=True).sort_values("id").reset_index(drop=True)
    if list(got.columns) != list(want.columns):
        problems.append(f"columns {list(got.columns)}, pandas {list(want.columns)}")
    elif len(got) != len(want):
        problems.append(f"{len(got)} rows, pandas keeps {len(want)}")
    else:
        frame_equal(got, want, problems)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{len(got)} rows in {len(parts)} part files match pandas")


def make_dim(path, seed):
    rng = np.random.default_rng(seed)
    users = [f"user{i:03d}" for i in range(0, 140, 1) if i % 7 != 3] + ["alice", "alice", 'say "hi"']
    users += [None, "user005", "user010"]  # a missing key, and two users twice
    n = len(users)
    credit = rng.integers(0, 10_000, size=n)
    credit_missing = rng.random(n) < 0.1
    df = pd.DataFrame({
        "uid": np.arange(n, dtype="int64"),
        "user": np.array(users, dtype=object),
        "tier": rng.choice(np.array(["gold", "silver", "bronze"], dtype=object), size=n),
        "credit": pd.arrays.IntegerArray(credit.astype("int64"), credit_missing),
        "region": rng.integers(0, 40, size=n),
    })
    df.to_csv(path, index=False)


def read_dim(path):
    df = pd.read_csv(path, dtype={"user": object, "tier": object, "credit": object})
    df["credit"] = exact_ints(df["credit"])
    return df


def int_text(v):
    """An integer's digits, exactly: from text ("9007199254740993", or "14.0" where a side's
    missing rows made the column float), an int, or a float holding an integer."""
    if isinstance(v, str):
        try:
            return str(int(v))
        except ValueError:
            return str(int(float(v)))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(int(float(v)))


def join(left_csv, right_csv, out_dir, keys, how):
    left, right = read_input(left_csv), read_dim(right_csv)
    if how in ("semi", "anti"):
        has = left.set_index(keys).index.isin(right.set_index(keys).index)
        want = left[has if how == "semi" else ~has]
    else:
        for k in keys:
            if str(left[k].dtype) == "Int64":
                # pandas 1.5 cannot merge a nullable Int64 key with gaps (TypeError on NAType):
                # as float64 (small ids here), NaN still matches NaN as it does in merge.
                left[k] = left[k].astype("float64")
                right[k] = right[k].astype("float64")
        want = left.merge(right, on=keys, how=how, suffixes=("_x", "_y"))
    text = {c: object for c in want.columns}
    parts, frames = read_parts(out_dir, text)
    got = pd.concat(frames, ignore_index=True)
    problems = []
    if list(got.columns) != list(want.columns):
        problems.append(f"columns {list(got.columns)}, pandas {list(want.columns)}")
    elif len(got) != len(want):
        problems.append(f"{len(got)} rows, pandas has {len(want)}")
    else:
        # Both as text, rows told apart by the ids of the rows they pair.
        ids = [c for c in ("id", "uid") if c in want.columns]

        def as_text(frame):
            # Typed by pandas' answer, so both frames are written the same way.
            out = frame.copy()
            for c in out.columns:
                kind = want[c].dtype
                col = out[c]
                if c in ids or str(kind) in ("Int64", "int64") or (
                        c in ("credit", "region", "region_x", "region_y", "qty", "flag")):
                    out[c] = [None if pd.isna(v) else int_text(v) for v in col]
                elif kind == object:
                    out[c] = [None if pd.isna(v) else str(v) for v in col]
                else:
                    out[c] = [None if pd.isna(v) else repr(float(v)) for v in col]
            key = out[ids].fillna("-1").astype("int64")
            return out.assign(_a=key[ids[0]], _b=key[ids[-1]]).sort_values(["_a", "_b"]).drop(
                columns=["_a", "_b"]).reset_index(drop=True)

        a, b = as_text(got), as_text(want)
        for c in want.columns:
            bad = ~((a[c] == b[c]) | (a[c].isna() & b[c].isna()))
            if bad.any():
                i = int(bad.idxmax())
                problems.append(f"{c}: {int(bad.sum())} rows differ, e.g. {dict(a.loc[i, ids])}: "
                                f"{a[c][i]!r} vs pandas {b[c][i]!r}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{len(got)} rows in {len(parts)} part files match pandas' {how} join")


def sort(in_csv, out_dir, by, descending, na_position):
    df = read_input(in_csv)
    want = df.sort_values(by, ascending=[c not in descending for c in by], na_position=na_position,
                          kind="stable").reset_index(drop=True)
    parts, frames = read_parts(out_dir, {"user": object, "tag": object, "region": object,
                                         "qty": object})
    got = pd.concat(frames, ignore_index=True)
    problems = []
    if len(got) != len(want):
        problems.append(f"{len(got)} rows, pandas has {len(want)}")
    else:
        ids = got["id"].astype("int64").to_numpy()
        if not (ids == want["id"].to_numpy()).all():
            i = int(np.argmax(ids != want["id"].to_numpy()))
            problems.append(f"row {i} of the part files in order is id {ids[i]}, pandas has "
                            f"id {want['id'][i]} ({dict(want.loc[i, by])})")
    sizes = [len(f) for f in frames]
    if sizes and max(sizes) > 2 * len(want) / len(sizes) + 64:
        problems.append(f"unbalanced partitions: {sizes}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{len(got)} rows in {len(parts)} part files ({sizes}) in pandas' order")


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "group_by":
        group_by(sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5],
                 sys.argv[6] == "true")
    elif cmd == "make-dim":
        make_dim(sys.argv[2], int(sys.argv[3]))
    elif cmd == "join":
        join(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(","), sys.argv[6])
    elif cmd == "sort":
        sort(sys.argv[2], sys.argv[3], sys.argv[4].split(","),
             [] if sys.argv[5] == "-" else sys.argv[5].split(","), sys.argv[6])
    elif cmd == "dedup":
        dedup(sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
