"""coupler against pandas and Dask on one pipeline, in one run: bench/pipeline/README.md.

    /usr/bin/python3 bench/pipeline/compare.py [--rows 10000000] [--dir /tmp/pipeline-bench]
                                                [--shards 16] [--skip pandas,dask]

Generates the CSV once (build/bin/bench_csv_gen, seeded), reads it once so every tool starts
from the page cache, then runs coupler (`coupler run --workers 2`), pandas (one process) and
Dask distributed (2 single-thread workers). Prints each stage's seconds, the totals and the
ratios, and checks that the three kept the same number of rows.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STAGES = ["parse", "stats", "standardize", "filter", "derive", "write"]
# coupler's nodes per stage; a node's shards are its output, so "write" is inside each node.
NODES = {"import": "parse", "stats": "stats", "standardize": "standardize",
         "filter": "filter", "derive": "derive"}


def stage_times(state, nodes=NODES):
    """From a coupler run's events.jsonl: each stage's seconds, and per node its tasks' summed
    [wall_ms, kernel_ms, bytes]. A node starts when its inputs are done (its first task may be
    sent earlier, to wait prefetched in a worker), so its time runs from the later of the two to
    its last task. A node fused into the chain of the node before it (docs/ops.md, "Fused
    chains") has no task of its own: its stage reads "(fused with X)", and its time and bytes
    are in X's."""
    first, last, cost = {}, {}, {}
    with open(os.path.join(state, "events.jsonl")) as f:
        for line in f:
            event = json.loads(line)
            node = event.get("node")
            if node not in nodes:
                continue
            if event["event"] == "task_assigned":
                first[node] = min(first.get(node, event["ms"]), event["ms"])
            elif event["event"] == "task_done":
                last[node] = max(last.get(node, 0), event["ms"])
                c = cost.setdefault(node, [0.0, 0.0, 0])
                c[0] += event.get("wall_ms", 0)
                c[1] += event.get("kernel_ms", 0)
                c[2] += event.get("bytes", 0)
    stages, previous_end, chain_start = {}, None, None
    for node, stage in nodes.items():
        if node not in first:
            stages[stage] = "(fused with %s)" % nodes[chain_start]
            continue
        chain_start = node
        start = first[node] if previous_end is None else max(first[node], previous_end)
        stages[stage] = (last[node] - start) / 1000.0
        previous_end = last[node]
    return stages, cost


def chain_members(stages, nodes=NODES):
    """Per node that ran tasks, itself and the nodes fused after it, in order."""
    members, head = {}, None
    for node, stage in nodes.items():
        if isinstance(stages.get(stage), str):
            members[head].append(node)
        else:
            head = node
            members[head] = [node]
    return members


def stage_cell(value):
    return value if isinstance(value, str) else "%.2f s" % value


def run_coupler(csv, work, shards):
    spec_text = open(os.path.join(HERE, "pipeline.yaml")).read()
    spec_text = (spec_text.replace("WORKDIR", os.path.join(work, "coupler-out"))
                 .replace("[CSV]", "[" + csv + "]").replace("SHARDS", str(shards)))
    spec = os.path.join(work, "pipeline.yaml")
    with open(spec, "w") as f:
        f.write(spec_text)
    state = os.path.join(work, "coupler-state")
    shutil.rmtree(state, ignore_errors=True)
    # The workdir is kept between runs: each run gets a folder of its own under runs/, and the
    # CSV's content hash (for --reuse) is cached in the user's reuse catalogue
    # (~/.coupler/reuse.db), so only the first run on a new file hashes it. Old runs are removed so the disk does not fill.
    shutil.rmtree(os.path.join(work, "coupler-out", "runs"), ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([os.path.join(ROOT, "build", "bin", "coupler"), "run", spec, "--workers", "2",
                    "--state", state], check=True, stdout=subprocess.DEVNULL)
    total = time.perf_counter() - t
    stages, cost = stage_times(state)
    rows = count_rows(os.path.join(work, "coupler-out", "latest", "derive"))
    # Where each stage's time went, summed over its tasks: compute (the kernel) against the
    # rest of the attempt (reading and writing shards, starting).
    members = chain_members(stages)
    breakdown = {"+".join(NODES[m] for m in members.get(n, [n])):
                 {"task_s": c[0] / 1000, "kernel_s": c[1] / 1000, "mb": c[2] / 1e6}
                 for n, c in cost.items()}
    return {"tool": "coupler", "stages": stages, "rows": rows, "total": total,
            "breakdown": breakdown}


def count_rows(node_dir):
    import numpy as np
    shards = [np.load(os.path.join(node_dir, name))
              for name in os.listdir(node_dir) if name.endswith(".npz")]
    return sum(len(shard[shard.files[0]]) for shard in shards)


def run_python(script, csv, work, extra=()):
    out = os.path.join(work, os.path.basename(script).split("_")[0] + "-out")
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    result = subprocess.run([sys.executable, os.path.join(HERE, script), csv, out, *extra],
                            check=True, capture_output=True, text=True)
    total = time.perf_counter() - t
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["total"] = total
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dir", default="/tmp/pipeline-bench")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--skip", default="")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    csv = os.path.join(args.dir, "rows-%d.csv" % args.rows)
    if not os.path.exists(csv):
        subprocess.run([os.path.join(ROOT, "build", "bin", "bench_csv_gen"), str(args.rows), csv],
                       check=True)
    with open(csv, "rb") as f:  # into the page cache, for every tool alike
        while f.read(1 << 24):
            pass
    with open("/proc/loadavg") as f:
        print("loadavg before:", f.read().strip())
    print("csv: %s (%d rows, %.0f MB)" % (csv, args.rows, os.path.getsize(csv) / 1e6))
    skip = set(filter(None, args.skip.split(",")))
    first = time.perf_counter()
    run_coupler(csv, args.dir, args.shards)  # hashes a new CSV once, warms every binary
    print("coupler's first run on this file: %.2f s" % (time.perf_counter() - first))
    reports = [run_coupler(csv, args.dir, args.shards)]
    if "pandas" not in skip:
        reports.append(run_python("pandas_pipeline.py", csv, args.dir))
    if "dask" not in skip:
        reports.append(run_python("dask_pipeline.py", csv, args.dir, [str(args.shards)]))

    print()
    print("| stage | " + " | ".join(r["tool"] for r in reports) + " |")
    print("|---|" + "---:|" * len(reports))
    for stage in STAGES:
        cells = [stage_cell(r["stages"][stage]) if stage in r["stages"] else "(in each node)"
                 for r in reports]
        print("| %s | %s |" % (stage, " | ".join(cells)))
    print("| **whole run** (process start to exit) | %s |"
          % " | ".join("**%.2f s**" % r["total"] for r in reports))
    print("| rows kept | %s |" % " | ".join(str(r["rows"]) for r in reports))
    print()
    print("coupler, summed over each stage's tasks (2 workers run them side by side):")
    print()
    print("| stage | task time | in the kernel | rest (read, write, start) | MB processed | MB/s per task-second |")
    print("|---|---:|---:|---:|---:|---:|")
    for stage, b in reports[0]["breakdown"].items():
        print("| %s | %.2f s | %.2f s | %.2f s | %.0f | %.0f |"
              % (stage, b["task_s"], b["kernel_s"], b["task_s"] - b["kernel_s"], b["mb"],
                 b["mb"] / b["task_s"] if b["task_s"] else 0))
    print()
    base = reports[0]["total"]
    for r in reports[1:]:
        print("%s / coupler: %.1fx" % (r["tool"], r["total"] / base))
    if len({r["rows"] for r in reports}) != 1:
        print("ROWS DIFFER between tools", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
