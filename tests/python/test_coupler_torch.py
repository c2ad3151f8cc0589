#!/usr/bin/python3
"""python/coupler_torch.py under `coupler run`, as a researcher's own PyTorch script uses it:
a rank killed mid-run (kill -9) fails the group, and the retry resumes from the module's newest
checkpoint and ends on the weights an uninterrupted run ends on, bit for bit; a stop signal to
one rank checkpoints every rank at one step and the retry resumes there; one rank running
out of memory backs every rank off to the same micro-batch, and the run ends on the weights of
a run started at that micro-batch; the steps reach the node's steps.jsonl.

Run by ctest with COUPLER_BINARY and COUPLER_SOURCE_DIR set; needs Debian's python3-torch and
Open MPI (CI installs both); exits 77 (skipped) without them.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get("COUPLER_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COUPLER = os.environ.get("COUPLER_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "coupler"))
SCRIPT = os.path.join(SOURCE_DIR, "tests", "python", "torch_gang", "gang_train.py")


def read_json(path):
    with open(path) as f:
        return json.load(f)


class CouplerTorchTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="coupler-torch-module-")
        shutil.copy(SCRIPT, self.root)

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def spec(self, name, args, retries=0):
        path = os.path.join(self.root, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(f"name: {name}\nworkdir: work-{name}\nnodes:\n"
                    f"  - id: train\n    op: mpi_exec\n    inputs: [gang_train.py]\n"
                    f"    ranks: 2\n    retries: {retries}\n    params:\n"
                    f"      command: '{{launch}} /usr/bin/python3 {{input}} {args}'\n"
                    f"      timeout: 300\n")
        return path

    def node(self, name):
        return os.path.join(self.root, f"work-{name}", "latest", "train")

    def signal_rank_1_when(self, name, args, ready, signum):
        """Runs the spec `name` (one retry) and sends `signum` to rank 1 of its first attempt
        once ready(node_folder) returns a value; returns that value and the finished run."""
        run = subprocess.Popen([COUPLER, "run", self.spec(name, args, retries=1),
                                "--workers", "2"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=self.root)
        pattern = os.path.join(self.root, f"work-{name}", "runs", "*", "train")
        deadline, seen = time.time() + 120, None
        while seen is None and time.time() < deadline and run.poll() is None:
            for node in glob.glob(pattern):
                pid_file = os.path.join(node, "pids", "rank-1")
                seen = ready(node) if os.path.exists(pid_file) else None
                if seen is not None:
                    with open(pid_file) as f:
                        os.kill(int(f.read()), signum)
                    break
            time.sleep(0.05)
        out, err = run.communicate(timeout=600)
        self.assertIsNotNone(seen, f"the group never got ready to be signalled:\n{out}{err}")
        self.assertEqual(run.returncode, 0, out + err)
        self.assertIn("2 attempts", out)  # the signalled group, then the retry
        return seen, [read_json(os.path.join(self.node(name), f"rank-{k}.json")) for k in (0, 1)]

    def run_to_end(self, name, args, retries=0):
        r = subprocess.run([COUPLER, "run", self.spec(name, args, retries), "--workers", "2"],
                           capture_output=True, text=True, timeout=600, cwd=self.root)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return [read_json(os.path.join(self.node(name), f"rank-{k}.json")) for k in (0, 1)]

    def test_a_killed_rank_fails_the_group_and_the_retry_resumes_from_the_checkpoint(self):
        def checkpoint_at_10(node):
            steps = [int(os.path.basename(p)[5:-3])
                     for p in glob.glob(os.path.join(node, "checkpoints", "ckpt-*.pt"))]
            return max(steps) if steps and max(steps) >= 10 else None

        _, resumed = self.signal_rank_1_when("killed", "--steps 40 --save-every 5 --step-seconds 0.1",
                                             checkpoint_at_10, signal.SIGKILL)
        for r in resumed:
            self.assertGreaterEqual(r["resumed_from"], 10, r)
            self.assertEqual(r["final_step"], 40)
        self.assertEqual(resumed[0]["weights"], resumed[1]["weights"])
        # The same run, uninterrupted: the same weights, bit for bit.
        whole = self.run_to_end("whole", "--steps 40 --save-every 5")
        self.assertIsNone(whole[0]["resumed_from"])
        self.assertEqual(resumed[0]["weights"], whole[0]["weights"])
        # Both attempts reported their steps; the last line is step 40.
        with open(os.path.join(self.node("killed"), "steps.jsonl")) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(lines[-1]["step"], 40)
        self.assertIn("loss", lines[-1])
        self.assertIn("time", lines[-1])
        # Whole checkpoints only, the newest three.
        kept = sorted(os.listdir(os.path.join(self.node("killed"), "checkpoints")))
        self.assertEqual(kept, ["ckpt-0000000030.pt", "ckpt-0000000035.pt", "ckpt-0000000040.pt"])

    def test_a_stop_signal_to_one_rank_checkpoints_every_rank_at_one_step(self):
        # SIGTERM, as coupler ends a group, to rank 1 only: should_stop() agrees on it, both
        # ranks save that step and leave (a failure coupler retries), the retry resumes there.
        def step_10(node):
            steps_file = os.path.join(node, "steps.jsonl")
            if not os.path.exists(steps_file):
                return None
            with open(steps_file) as f:
                lines = f.read().splitlines()
            try:
                return json.loads(lines[-1])["step"] if len(lines) >= 10 else None
            except ValueError:  # the line being written
                return None

        seen, resumed = self.signal_rank_1_when(
            "stopped", "--steps 40 --save-every 1000 --step-seconds 0.1", step_10, signal.SIGTERM)
        # No periodic checkpoint (every 1000 steps): the retry resumed from the stop's own,
        # taken at or after the step seen when the signal went.
        self.assertGreaterEqual(resumed[0]["resumed_from"], seen)
        self.assertEqual(resumed[0]["final_step"], 40)
        whole = self.run_to_end("whole", "--steps 40 --save-every 1000")
        self.assertEqual(resumed[0]["weights"], whole[0]["weights"])
        self.assertEqual(resumed[1]["weights"], whole[0]["weights"])

    def test_an_oom_on_one_rank_backs_off_every_rank_alike(self):
        backed = self.run_to_end("oom", "--steps 6 --rows 32 --micro-batch 32 --oom-rank 1 --oom-above 8")
        for r in backed:
            # 32 -> 16 -> 8 on both ranks, though only rank 1 ran out: 4 x 8 = 32 rows a step.
            self.assertEqual((r["micro_batch"], r["accumulate"], r["backoffs"]), (8, 4, 2), r)
            self.assertEqual(r["final_step"], 6)
        self.assertEqual(backed[0]["weights"], backed[1]["weights"])
        # What a run started at a micro-batch of 8 computes, bit for bit.
        started = self.run_to_end("small", "--steps 6 --rows 32 --micro-batch 8")
        self.assertEqual(started[0]["backoffs"], 0)
        self.assertEqual(backed[0]["weights"], started[0]["weights"])


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: Debian's python3-torch is not installed (COUPLER_PYTHON_EXAMPLES=1 "
              "scripts/install-deps.sh)")
        sys.exit(77)
    if shutil.which("mpirun") is None:
        print("skipped: mpirun is not installed (Debian: openmpi-bin)")
        sys.exit(77)
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
