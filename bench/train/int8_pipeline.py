#!/usr/bin/python3
"""INT8 inference on the researcher's problem, as a pipeline runs it: the synthetic 20-class
table of compare_torch.py (rows x 200 features, 8 .npz shards), a 200-W-W-20 MLP trained by a
`train` node (AdamW, global batch 256, fp32, 10% of the rows held out), a `quantize` node
calibrating each layer's input on the training rows, and an `evaluate` node scoring the held-out
rows at fp32, bf16 and int8. Prints `coupler run`'s summary: accuracy, forward samples/s (one
worker, steady rate) and bytes of weights per precision.

    /usr/bin/python3 bench/train/int8_pipeline.py --rows 200000 --width 512 --epochs 3
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import COUPLER, CLASSES, FEATURES, make_data  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    with open("/proc/loadavg") as f:
        print("loadavg before:", f.read().strip())
    dir_ = tempfile.mkdtemp(prefix="coupler-int8-")
    shards = make_data(dir_, a.rows, 7)
    cfg = os.path.join(dir_, "train.yaml")
    with open(cfg, "w") as f:
        f.write(f"data: {shards}\nlabel_column: label\ntest_fraction: 0.1\n"
                f"layers: [{FEATURES}, {a.width}, {a.width}, {CLASSES}]\noptimizer: adamw\n"
                f"lr: 0.001\nweight_decay: 0\nepochs: {a.epochs}\nglobal_batch: 256\n"
                f"micro_batch: 256\naccumulate: 1\nprecision: fp32\nseed: 1\n")
    spec = os.path.join(dir_, "int8.yaml")
    with open(spec, "w") as f:
        f.write(f"name: int8-researcher\nworkdir: {dir_}/work\nnodes:\n"
                f"  - id: train\n    op: train\n    inputs: [{shards}]\n    ranks: 1\n"
                f"    params: {{config: {cfg}}}\n"
                f"  - {{id: quantize, op: quantize, inputs: [{shards}, train], params: {{label_column: label}}}}\n"
                f"  - {{id: evaluate, op: evaluate, inputs: [{shards}, train, quantize], params: {{label_column: label}}}}\n")
    print(f"{a.rows} rows x {FEATURES} features, {CLASSES} classes, 10% held out; "
          f"layers {FEATURES}-{a.width}-{a.width}-{CLASSES}, {a.epochs} epoch(s) fp32")
    out = subprocess.run([COUPLER, "--log-level", "warn", "run", spec, "--workers", "1"],
                         capture_output=True, text=True)
    print(out.stdout[out.stdout.find("evaluate:"):] if "evaluate:" in out.stdout else out.stdout)
    if out.returncode != 0:
        sys.exit(f"coupler run failed ({out.returncode}):\n{out.stderr[-3000:]}")
    with open("/proc/loadavg") as f:
        print("loadavg after:", f.read().strip())


if __name__ == "__main__":
    main()
