#!/usr/bin/python3
"""coupler train against PyTorch on a researcher's problem: a synthetic 20-class table (rows x
200 float features, labels from a random teacher MLP, 5% of them flipped), an MLP
200-W-W-20 with AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay), global batch 256,
the same initial weights (coupler's, written by a zero-step run), one thread per process; 1 and
2 processes (coupler: mpirun -np N coupler train; PyTorch: mpirun -np N python3 torch_mlp.py,
DDP over gloo). Rounds alternate coupler and PyTorch. Reports samples/s over the training loop
(both count it the same way) and the held-out accuracy of each run's final fp32 weights on the
same test rows, and the ratio coupler / PyTorch per configuration (median over rounds).

    /usr/bin/python3 bench/train/compare_torch.py --rows 200000 --widths 128,512,1024 --rounds 2
    /usr/bin/python3 bench/train/compare_torch.py --widths 512 --precisions fp32 --procs 2 --load 1

--load N keeps N busy processes running beside every run: a loaded machine, where MPI ranks that
spin while they wait starve their peers. --epochs 3 gives the accuracy comparison.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUPLER = os.path.join(ROOT, "build", "bin", "coupler")
TORCH = os.path.join(ROOT, "bench", "train", "torch_mlp.py")
FEATURES, CLASSES = 200, 20


def make_data(dir_, rows, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows + rows // 10, FEATURES), dtype=np.float32)
    w1 = rng.standard_normal((FEATURES, 64)).astype(np.float32) / np.sqrt(FEATURES)
    w2 = rng.standard_normal((64, CLASSES)).astype(np.float32) / 8
    y = np.argmax(np.maximum(x @ w1, 0) @ w2, axis=1).astype(np.int32)
    flip = rng.random(y.shape[0]) < 0.05
    y[flip] = rng.integers(0, CLASSES, flip.sum())
    train_x, train_y, test_x, test_y = x[:rows], y[:rows], x[rows:], y[rows:]
    shards = os.path.join(dir_, "shards")
    os.makedirs(shards)
    per = (rows + 7) // 8
    for i in range(8):  # as the loose path writes them: one array per column
        cols = {f"f{j:03d}": train_x[i * per:(i + 1) * per, j] for j in range(FEATURES)}
        cols["label"] = train_y[i * per:(i + 1) * per]
        np.savez(os.path.join(shards, f"part-{i:05d}.npz"), **cols)
    np.savez(os.path.join(dir_, "train.npz"), x=train_x, y=train_y)
    np.savez(os.path.join(dir_, "test.npz"), x=test_x, y=test_y)
    return shards


def config(dir_, shards, width, precision, procs, epochs):
    path = os.path.join(dir_, f"w{width}-{precision}-{procs}.yaml")
    with open(path, "w") as f:
        f.write(f"data: {shards}\nlabel_column: label\ntest_fraction: 0\n"
                f"layers: [{FEATURES}, {width}, {width}, {CLASSES}]\noptimizer: adamw\nlr: 0.001\n"
                f"weight_decay: 0\nepochs: {epochs}\nglobal_batch: 256\nmicro_batch: {256 // procs}\n"
                f"accumulate: 1\nprecision: {precision}\nseed: 1\n")
    return path


def mpirun(procs):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "-x", "OMP_NUM_THREADS=1", "-np", str(procs)]


def accuracy(weights, widths, test):
    flat, at, h = np.load(weights), 0, test["x"]
    for i in range(len(widths) - 1):
        w = flat[at:at + widths[i + 1] * widths[i]].reshape(widths[i + 1], widths[i]); at += w.size
        b = flat[at:at + widths[i + 1]]; at += b.size
        h = h @ w.T + b
        if i + 2 < len(widths):
            h = np.maximum(h, 0)
    return float((h.argmax(1) == test["y"]).mean())


def run_coupler(cfg, procs, dir_, widths, test):
    metrics, weights = os.path.join(dir_, "m.json"), os.path.join(dir_, "w.npy")
    out = subprocess.run(mpirun(procs) + [COUPLER, "--log-level", "warn", "train", cfg,
                                          "--metrics-out", metrics, "--weights-out", weights],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"coupler train failed ({out.returncode}):\n{out.stderr[-3000:]}")
    with open(metrics) as f:
        m = json.load(f)
    return m["samples_per_s"], accuracy(weights, widths, test)


def run_torch(dir_, width, precision, procs, epochs, init):
    rendezvous = ["-x", "MASTER_ADDR=127.0.0.1", "-x", "MASTER_PORT=29517"]  # gloo's, env://
    out = subprocess.run(mpirun(procs) + rendezvous + [sys.executable, TORCH, "--data", os.path.join(dir_, "train.npz"),
                                          "--test", os.path.join(dir_, "test.npz"), "--init", init,
                                          "--layers", f"{FEATURES},{width},{width},{CLASSES}",
                                          "--precision", precision, "--epochs", str(epochs)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"PyTorch run failed ({out.returncode}):\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["samples_per_s"], r["test_accuracy"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--widths", default="128,512,1024")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--procs", default="1,2")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--load", type=int, default=0,
                   help="busy processes kept running beside every run (a loaded machine)")
    a = p.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
    with open("/proc/loadavg") as f:
        print("loadavg before:", f.read().strip())
    dir_ = tempfile.mkdtemp(prefix="coupler-vs-torch-")
    shards = make_data(dir_, a.rows, 7)
    test = np.load(os.path.join(dir_, "test.npz"))
    print(f"{a.rows} training rows x {FEATURES} features, {CLASSES} classes, "
          f"{test['y'].shape[0]} test rows; {a.epochs} epoch(s), global batch 256, AdamW lr 1e-3"
          + (f"; {a.load} busy process(es) beside every run" if a.load else ""))
    print("| width | precision | procs | coupler samples/s | PyTorch samples/s | coupler / PyTorch "
          "| coupler acc | PyTorch acc |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for width in [int(w) for w in a.widths.split(",")]:
        for precision in a.precisions.split(","):
            for procs in [int(n) for n in a.procs.split(",")]:
                cfg = config(dir_, shards, width, precision, procs, a.epochs)
                init = os.path.join(dir_, f"init-{width}.npy")
                subprocess.run([COUPLER, "--log-level", "warn", "train", cfg, "--set", "micro_batch=256",
                                "--stop-after-steps", "0", "--weights-out", init],
                               check=True, stdout=subprocess.DEVNULL)
                widths = [FEATURES, width, width, CLASSES]
                c_runs, t_runs = [], []
                for _ in range(a.rounds):  # alternated
                    c_runs.append(run_coupler(cfg, procs, dir_, widths, test))
                    t_runs.append(run_torch(dir_, width, precision, procs, a.epochs, init))
                c = statistics.median(r[0] for r in c_runs)
                t = statistics.median(r[0] for r in t_runs)
                print(f"| {width} | {precision} | {procs} | {c:,.0f} | {t:,.0f} | {c / t:.2f} "
                      f"| {c_runs[-1][1]:.4f} | {t_runs[-1][1]:.4f} |", flush=True)
    with open("/proc/loadavg") as f:
        print("loadavg after:", f.read().strip())
    for hog in hogs:
        hog.kill()


if __name__ == "__main__":
    main()
