"""coupler against pandas and Dask on a TPC-H-like join and aggregation, rounds alternated.

    /usr/bin/python3 bench/pipeline/compare_tpch.py [--rows 20000000] [--rounds 2]
        [--dir /tmp/tpch-bench] [--shards 16] [--skip dask] [--max-wait 600]

The tables are bench/pipeline/make_tpch.py's (lineitem: ROWS rows; part: 100,000 rows),
generated once into DIR/data-ROWS/ and read once into the page cache. The query: lineitem
joined with part on l_partkey, `l_shipdate < 2000 and p_size > 10`, revenue =
l_extendedprice * (1 - l_discount), grouped by (l_returnflag, p_brand) with rows, qty, revenue,
avg_price and avg_disc, sorted by revenue descending, written as CSV. Each round runs coupler
(`coupler run --workers 2`, tpch_pipeline.yaml), pandas (one process, pandas_tpch.py) and Dask
distributed (2 single-thread workers, dask_tpch.py), one after the other, each after waiting
for /proc/loadavg's 1-minute figure to fall below 1 (at most --max-wait seconds). Per tool:
the whole run's seconds (process start to exit), its peak memory (the largest sum of RSS over
the tool's process tree, sampled every 20 ms) and each stage's seconds (coupler's from its
job's events.jsonl).

Prints the medians and the ratios, and checks that the three wrote the same groups (the same
keys; rows and qty equal; revenue within 1e-3 relative): exits 1 when they did not.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

import pandas as pd

from compare import chain_members, stage_times
from compare_events import run_measured, wait_quiet

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COUPLER = os.path.join(ROOT, "build", "bin", "coupler")
# coupler's nodes in the order they run, each with its stage; `part` is imported beside
# `lineitem`, so it is timed on its own (stage_times reads the others as one chain).
NODES = {"lineitem": "parse", "join": "join", "filter": "filter", "derive": "derive",
         "agg": "group_by", "sort": "sort", "write": "write"}
PART_NODE = {"part": "parse part"}
STAGES = ["parse part", "parse", "join", "filter", "derive", "group_by", "sort", "write"]
# The stages Dask runs as one graph: for the other two, the sum of theirs (coupler's part
# import overlaps its lineitem import, so it is left out of coupler's sum).
GRAPH = "parse..group_by"
GRAPH_STAGES = ["parse", "join", "filter", "derive", "group_by"]
KEYS = ["l_returnflag", "p_brand"]
REVENUE_RTOL = 1e-3


def run_coupler(lineitem, part, work, shards):
    with open(os.path.join(HERE, "tpch_pipeline.yaml")) as f:
        spec_text = f.read()
    out = os.path.join(work, "coupler-out")
    spec_text = (spec_text.replace("WORKDIR", out).replace("LINEITEM_CSV", lineitem)
                 .replace("PART_CSV", part).replace("SHARDS", str(shards)))
    spec = os.path.join(work, "tpch_pipeline.yaml")
    with open(spec, "w") as f:
        f.write(spec_text)
    state = os.path.join(work, "coupler-state")
    shutil.rmtree(state, ignore_errors=True)
    shutil.rmtree(os.path.join(out, "runs"), ignore_errors=True)  # the disk does not fill
    seconds, peak, _ = run_measured([COUPLER, "run", spec, "--workers", "2", "--state", state])
    stages, cost = stage_times(state, NODES)
    part_stages, part_cost = stage_times(state, PART_NODE)
    stages.update(part_stages)
    members = chain_members(stages, NODES)
    breakdown = {}
    for node, c in list(part_cost.items()) + list(cost.items()):
        label = "+".join({**PART_NODE, **NODES}[m] for m in members.get(node, [node]))
        breakdown[label] = {"task_s": c[0] / 1000, "kernel_s": c[1] / 1000, "mb": c[2] / 1e6}
    parts = sorted(glob.glob(os.path.join(out, "latest", "write", "part-*.csv")))
    result = pd.concat([read_result(p) for p in parts], ignore_index=True)
    return {"tool": "coupler", "stages": stages, "total": seconds, "peak": peak,
            "breakdown": breakdown, "result": result, "groups": len(result),
            "rows": int(result["rows"].sum())}


def read_result(path):
    # The keys are strings ("N" included): no NA tokens, so nothing is read as missing.
    return pd.read_csv(path, keep_default_na=False, na_values=[""],
                       dtype={"l_returnflag": str, "p_brand": str})


def run_python(script, lineitem, part, work, extra=()):
    out = os.path.join(work, script.split("_")[0] + "-out")
    shutil.rmtree(out, ignore_errors=True)
    seconds, peak, stdout = run_measured([sys.executable, os.path.join(HERE, script), lineitem,
                                          part, out, *extra])
    report = json.loads(stdout.strip().splitlines()[-1])
    report["total"] = seconds
    report["peak"] = peak
    report["result"] = read_result(os.path.join(out, "result.csv"))
    report["rows"] = int(report["result"]["rows"].sum())
    return report


def graph_seconds(stages):
    if GRAPH in stages:
        return stages[GRAPH]
    return sum(stages[s] for s in GRAPH_STAGES if isinstance(stages.get(s), float))


def compare_results(base, other, name):
    """Problems found comparing other's groups with coupler's (an empty list when none)."""
    problems = []
    if len(base) != len(other):
        problems.append("%s: %d groups, coupler %d" % (name, len(other), len(base)))
    merged = base.merge(other, on=KEYS, how="outer", suffixes=("_c", "_o"), indicator=True)
    lonely = merged[merged["_merge"] != "both"]
    if len(lonely):
        problems.append("%s: %d keys not in both, e.g. %s" % (
            name, len(lonely), lonely[KEYS + ["_merge"]].head(3).to_dict("records")))
    both = merged[merged["_merge"] == "both"]
    for column in ("rows", "qty"):
        bad = both[both[column + "_c"] != both[column + "_o"]]
        if len(bad):
            problems.append("%s: %s differs in %d groups, e.g. %s" % (
                name, column, len(bad), bad[KEYS + [column + "_c", column + "_o"]]
                .head(3).to_dict("records")))
    rel = ((both["revenue_c"] - both["revenue_o"]).abs()
           / both["revenue_c"].abs().clip(lower=1e-300))
    if (rel > REVENUE_RTOL).any():
        problems.append("%s: revenue differs by more than %g relative in %d groups (max %.3g)"
                        % (name, REVENUE_RTOL, int((rel > REVENUE_RTOL).sum()), rel.max()))
    diffs = {"revenue": rel.max() if len(rel) else 0.0}
    for column in ("avg_price", "avg_disc"):
        diffs[column] = ((both[column + "_c"] - both[column + "_o"]).abs()
                         / both[column + "_c"].abs().clip(lower=1e-300)).max()
    return problems, diffs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dir", default="/tmp/tpch-bench")
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--skip", default="", help="tools to leave out: pandas, dask (comma-separated)")
    p.add_argument("--max-wait", type=float, default=600,
                   help="seconds to wait for a 1-minute load below 1 before each tool")
    args = p.parse_args()
    data = os.path.join(args.dir, "data-%d" % args.rows)
    lineitem = os.path.join(data, "lineitem.csv")
    part = os.path.join(data, "part.csv")
    if not (os.path.exists(lineitem) and os.path.exists(part)):
        subprocess.run([sys.executable, os.path.join(HERE, "make_tpch.py"), data,
                        "--rows", str(args.rows)], check=True)
    for path in (lineitem, part):  # into the page cache, for every tool alike
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
    print("lineitem: %s (%d rows, %.0f MB); part: %s (%.1f MB)" % (
        lineitem, args.rows, os.path.getsize(lineitem) / 1e6, part, os.path.getsize(part) / 1e6))
    skip = set(filter(None, args.skip.split(",")))
    run_coupler(lineitem, part, args.dir, args.shards)  # warms the binaries, hashes the CSVs
    runs = {"coupler": [], "pandas": [], "dask": []}
    for r in range(args.rounds):
        print("round %d: loadavg %.2f before coupler" % (r + 1, wait_quiet(args.max_wait)),
              flush=True)
        runs["coupler"].append(run_coupler(lineitem, part, args.dir, args.shards))
        if "pandas" not in skip:
            print("round %d: loadavg %.2f before pandas" % (r + 1, wait_quiet(args.max_wait)),
                  flush=True)
            runs["pandas"].append(run_python("pandas_tpch.py", lineitem, part, args.dir))
        if "dask" not in skip:
            print("round %d: loadavg %.2f before dask" % (r + 1, wait_quiet(args.max_wait)),
                  flush=True)
            runs["dask"].append(run_python("dask_tpch.py", lineitem, part, args.dir,
                                           [str(args.shards)]))
    tools = [t for t in runs if runs[t]]
    med = {t: statistics.median(x["total"] for x in runs[t]) for t in tools}
    peak = {t: max(x["peak"] for x in runs[t]) for t in tools}
    print()
    print("| stage | " + " | ".join(tools) + " |")
    print("|---|" + "---:|" * len(tools))
    for stage in STAGES + [GRAPH]:
        cells = []
        for t in tools:
            if stage == GRAPH:
                vals = [graph_seconds(x["stages"]) for x in runs[t]]
            else:
                vals = [x["stages"][stage] for x in runs[t] if stage in x["stages"]]
            if vals and isinstance(vals[0], str):
                cells.append(vals[0])  # fused into the stage before
            elif vals:
                cells.append("%.2f s" % statistics.median(vals))
            else:
                cells.append("(in %s)" % GRAPH if t == "dask" else "-")
        label = stage if stage != GRAPH else (
            "%s (Dask: one graph, part's parse in it; others: the sum)" % GRAPH)
        print("| %s | %s |" % (label, " | ".join(cells)))
    print("| **whole run** (median of %d) | %s |" % (args.rounds, " | ".join(
        "**%.2f s**" % med[t] for t in tools)))
    print("| each round | %s |" % " | ".join(
        ", ".join("%.2f" % x["total"] for x in runs[t]) for t in tools))
    print("| peak memory (process tree) | %s |" % " | ".join(
        "%.2f GB" % (peak[t] / 1e9) for t in tools))
    print("| rows kept (sum of `rows`) | %s |" % " | ".join(
        str(runs[t][0]["rows"]) for t in tools))
    print("| groups | %s |" % " | ".join(str(len(runs[t][0]["result"])) for t in tools))
    print()
    print("coupler, summed over each stage's tasks (last round; shuffles: map and reduce tasks):")
    print()
    print("| stage | task time | in the kernel | rest | MB processed |")
    print("|---|---:|---:|---:|---:|")
    for stage, b in runs["coupler"][-1]["breakdown"].items():
        print("| %s | %.2f s | %.2f s | %.2f s | %.0f |" % (
            stage, b["task_s"], b["kernel_s"], b["task_s"] - b["kernel_s"], b["mb"]))
    print()
    for t in tools[1:]:
        print("%s / coupler: %.2fx time; coupler / %s peak memory: %.2f"
              % (t, med[t] / med["coupler"], t, peak["coupler"] / peak[t]))
    problems = []
    base = runs["coupler"][-1]["result"]
    for t in tools[1:]:
        found, diffs = compare_results(base, runs[t][-1]["result"], t)
        problems += found
        print("%s against coupler: largest relative difference: %s" % (
            t, ", ".join("%s %.2g" % kv for kv in diffs.items())))
    if problems:
        for line in problems:
            print("RESULTS DIFFER: " + line, file=sys.stderr)
        sys.exit(1)
    print("results agree: %d groups, rows and qty equal, revenue within %g relative"
          % (len(base), REVENUE_RTOL))


if __name__ == "__main__":
    main()
