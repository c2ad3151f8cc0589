"""coupler against pandas and Dask on a realistic table, rounds alternated, in one run.

    /usr/bin/python3 bench/pipeline/compare_events.py [--rows 20000000] [--rounds 2]
        [--dir /tmp/events-bench] [--shards 32] [--skip dask]

The table is bench/pipeline/make_events.py's (ids, a timestamp per row, a 50,000-value string
column, a quoted string column, six floats, an int, a bool, 2% missing as '', NA, NULL, nan,
CRLF), generated once and read once into the page cache. Each round runs coupler
(`coupler run --workers 2`, events_pipeline.yaml), pandas (one process, pandas_events.py) and
Dask distributed (2 single-thread workers, dask_events.py), one after the other, after waiting
for /proc/loadavg's 1-minute figure to fall below 1. Per tool: the whole run's seconds (process
start to exit), its peak memory (the largest sum of RSS over the tool's process tree, sampled
every 20 ms), each stage's seconds, and for coupler each stage's bytes read and written.
Prints the medians and the ratios; exits non-zero when the tools kept different row counts.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

from compare import chain_members, stage_times  # the same events.jsonl reading as the numeric comparison

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STAGES = ["parse", "stats", "standardize", "filter", "derive", "write"]
NODES = {"import": "parse", "stats": "stats", "standardize": "standardize",
         "filter": "filter", "derive": "derive"}


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_quiet(limit_s=600):
    """Until the 1-minute load is below 1; returns the load seen last."""
    deadline = time.time() + limit_s
    load = loadavg()
    while load >= 1.0 and time.time() < deadline:
        time.sleep(5)
        load = loadavg()
    return load


def tree_rss(root_pid):
    """Sum of RSS (bytes) of root_pid and its descendants."""
    parents = {}
    rss = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(name)] = int(fields[1])
            rss[int(name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root_pid]
    seen = set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        todo.extend(p for p, parent in parents.items() if parent == pid)
    return total


def run_measured(cmd, **kwargs):
    """Runs cmd; returns (seconds, peak tree RSS in bytes, stdout)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **kwargs)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    seconds = time.perf_counter() - t
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit("%s exited %d" % (cmd[0], proc.returncode))
    return seconds, peak[0], out


def dir_bytes(folder):
    return sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)
               if not n.startswith(".") and os.path.isfile(os.path.join(folder, n)))


def run_coupler(csv, work, shards):
    with open(os.path.join(HERE, "events_pipeline.yaml")) as f:
        spec_text = f.read()
    out = os.path.join(work, "coupler-out")
    spec_text = (spec_text.replace("WORKDIR", out).replace("[CSV]", "[" + csv + "]")
                 .replace("SHARDS", str(shards)))
    spec = os.path.join(work, "events_pipeline.yaml")
    with open(spec, "w") as f:
        f.write(spec_text)
    state = os.path.join(work, "coupler-state")
    shutil.rmtree(state, ignore_errors=True)
    shutil.rmtree(os.path.join(out, "runs"), ignore_errors=True)
    seconds, peak, _ = run_measured([os.path.join(ROOT, "build", "bin", "coupler"), "run", spec,
                                     "--workers", "2", "--state", state])
    stages, cost = stage_times(state, NODES)
    import numpy as np
    latest = os.path.join(out, "latest")
    shards = [np.load(os.path.join(latest, "derive", n))
              for n in os.listdir(os.path.join(latest, "derive")) if n.endswith(".npz")]
    rows = sum(len(shard[shard.files[0]]) for shard in shards)
    breakdown = {}
    members = chain_members(stages, NODES)
    for node, c in cost.items():
        # A fused chain's task wrote what its nodes kept on disk (the others hold only logs/).
        written = sum(dir_bytes(os.path.join(latest, m)) for m in members.get(node, [node]))
        label = "+".join(NODES[m] for m in members.get(node, [node]))
        breakdown[label] = {"task_s": c[0] / 1000, "kernel_s": c[1] / 1000,
                                  "read_mb": max(c[2] - written, 0) / 1e6,
                                  "written_mb": written / 1e6}
    return {"tool": "coupler", "stages": stages, "rows": rows, "total": seconds, "peak": peak,
            "breakdown": breakdown}


def run_python(script, csv, work, extra=()):
    out = os.path.join(work, script.split("_")[0] + "-out")
    shutil.rmtree(out, ignore_errors=True)
    seconds, peak, stdout = run_measured([sys.executable, os.path.join(HERE, script), csv, out,
                                          *extra])
    report = json.loads(stdout.strip().splitlines()[-1])
    report["total"] = seconds
    report["peak"] = peak
    return report


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dir", default="/tmp/events-bench")
    p.add_argument("--shards", type=int, default=32)
    p.add_argument("--skip", default="")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    csv = os.path.join(args.dir, "events-%d.csv" % args.rows)
    if not os.path.exists(csv):
        subprocess.run([sys.executable, os.path.join(HERE, "make_events.py"), csv,
                        str(args.rows)], check=True)
    with open(csv, "rb") as f:  # into the page cache, for every tool alike
        while f.read(1 << 24):
            pass
    print("csv: %s (%d rows, %.0f MB)" % (csv, args.rows, os.path.getsize(csv) / 1e6))
    skip = set(filter(None, args.skip.split(",")))
    run_coupler(csv, args.dir, args.shards)  # warms the binaries, hashes the new CSV once
    runs = {"coupler": [], "pandas": [], "dask": []}
    for r in range(args.rounds):
        print("round %d: loadavg %.2f before coupler" % (r + 1, wait_quiet()), flush=True)
        runs["coupler"].append(run_coupler(csv, args.dir, args.shards))
        if "pandas" not in skip:
            print("round %d: loadavg %.2f before pandas" % (r + 1, wait_quiet()), flush=True)
            runs["pandas"].append(run_python("pandas_events.py", csv, args.dir))
        if "dask" not in skip:
            print("round %d: loadavg %.2f before dask" % (r + 1, wait_quiet()), flush=True)
            runs["dask"].append(run_python("dask_events.py", csv, args.dir, [str(args.shards)]))
    tools = [t for t in runs if runs[t]]
    med = {t: statistics.median(x["total"] for x in runs[t]) for t in tools}
    peak = {t: max(x["peak"] for x in runs[t]) for t in tools}
    print()
    print("| | " + " | ".join(tools) + " |")
    print("|---|" + "---:|" * len(tools))
    for stage in STAGES:
        cells = []
        for t in tools:
            vals = [x["stages"][stage] for x in runs[t] if stage in x["stages"]]
            if vals and isinstance(vals[0], str):
                cells.append(vals[0])  # fused into the stage before
            else:
                cells.append("%.2f s" % statistics.median(vals) if vals else "(in each node)")
        print("| %s | %s |" % (stage, " | ".join(cells)))
    print("| **whole run** (median of %d) | %s |" % (args.rounds, " | ".join(
        "**%.2f s**" % med[t] for t in tools)))
    print("| each round | %s |" % " | ".join(
        ", ".join("%.2f" % x["total"] for x in runs[t]) for t in tools))
    print("| peak memory (process tree) | %s |" % " | ".join(
        "%.2f GB" % (peak[t] / 1e9) for t in tools))
    print("| rows kept | %s |" % " | ".join(str(runs[t][0]["rows"]) for t in tools))
    print()
    print("coupler, summed over each stage's tasks (last round):")
    print()
    print("| stage | task time | in the kernel | rest | MB read | MB written |")
    print("|---|---:|---:|---:|---:|---:|")
    for stage, b in runs["coupler"][-1]["breakdown"].items():
        print("| %s | %.2f s | %.2f s | %.2f s | %.0f | %.0f |" % (
            stage, b["task_s"], b["kernel_s"], b["task_s"] - b["kernel_s"], b["read_mb"],
            b["written_mb"]))
    print()
    for t in tools[1:]:
        print("%s / coupler: %.2fx time, coupler's peak memory %.2f of %s's"
              % (t, med[t] / med["coupler"], peak["coupler"] / peak[t], t))
    if len({runs[t][0]["rows"] for t in tools}) != 1:
        print("ROWS DIFFER between tools", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
