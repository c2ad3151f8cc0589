"""examples/csv-pipeline.yaml end to end, as a new user runs it, checked against pandas on the
same file: a CSV with a string column (one name holding a comma, one non-ASCII) and about 1% of
its values missing goes through import, stats, standardize, a compound filter, derived columns
and a Python exec step; the Python step's records must equal what pandas computes. `coupler
plan` must catch a misspelt column in the filter with the spec's file and line.

Run by ctest (tests/python/CMakeLists.txt) with COUPLER_BINARY and COUPLER_SOURCE_DIR set;
needs numpy and pandas for /usr/bin/python3 (COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "COUPLER_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COUPLER = os.environ.get("COUPLER_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "coupler"))

try:
    import numpy as np
    import pandas as pd
except ImportError:
    np = pd = None
MISSING = ("numpy and pandas are missing for /usr/bin/python3: run "
           "COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh")

ROWS = 20_000
FEATURES = ["x0", "x1", "x2", "x3"]


def pandas_reference(csv):
    """The pipeline in pandas: the statistics in float64 over the values present (ddof 0, as
    column_stats), float32 columns as coupler keeps them."""
    df = pd.read_csv(csv, dtype={c: "float32" for c in FEATURES} | {"label": "int32"},
                     keep_default_na=False, na_values=["", "NA"])
    wide = df[FEATURES].astype("float64")
    mean, std = wide.mean(), wide.std(ddof=0)
    for c in FEATURES:
        df[c] = ((wide[c] - mean[c]) / std[c]).astype("float32")
    df = df[(df.x0 > -1) & ((df.x3 < 1) | (df.label == 2))]
    x01 = (df.x0 * df.x1 + 1).astype("float32")
    r = np.sqrt(np.abs(df.x2)).astype("float32")
    return pd.DataFrame({"city": df.city.fillna("").to_numpy(), "label": df.label.to_numpy(),
                         "score": (np.tanh(x01) * r).astype("float32").to_numpy()})


@unittest.skipIf(pd is None, MISSING)
class CsvPipelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="coupler-csv-pipeline-")
        examples = os.path.join(cls.root, "examples")
        os.makedirs(examples)
        shutil.copy(os.path.join(SOURCE_DIR, "examples", "csv-pipeline.yaml"), examples)
        shutil.copytree(os.path.join(SOURCE_DIR, "examples", "csv"),
                        os.path.join(examples, "csv"))
        cls.spec = os.path.join(examples, "csv-pipeline.yaml")
        cls.csv = os.path.join(cls.root, "data", "measurements.csv")
        subprocess.run(["/usr/bin/python3", os.path.join(examples, "csv", "make_measurements.py"),
                        cls.csv, str(ROWS)], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def coupler(self, *args, cwd=None):
        return subprocess.run([COUPLER, *args], capture_output=True, text=True, timeout=600,
                              cwd=cwd or self.root)

    def test_the_data_has_what_the_pipeline_is_about(self):
        df = pd.read_csv(self.csv, keep_default_na=False, na_values=["", "NA"])
        self.assertGreater(df[FEATURES].isna().to_numpy().mean(), 0.005)
        self.assertGreater(df.city.isna().sum(), 0)
        self.assertIn("New York, NY", set(df.city.dropna()))
        self.assertIn("São Paulo", set(df.city.dropna()))

    def test_run_matches_pandas(self):
        plan = self.coupler("plan", self.spec)
        self.assertEqual(plan.returncode, 0, plan.stdout + plan.stderr)
        run = self.coupler("run", self.spec, "--workers", "2")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        workdir = os.path.join(self.root, "coupler-work", "csv-pipeline")
        # Each run has a folder of its own under runs/; latest/ is the newest.
        self.assertEqual(len(glob.glob(os.path.join(workdir, "runs", "*"))), 1)
        shards = sorted(glob.glob(os.path.join(workdir, "latest", "score", "part-*.npy")))
        self.assertEqual(len(shards), 4, shards)
        got = np.concatenate([np.load(p) for p in shards])
        want = pandas_reference(self.csv)
        self.assertEqual(len(got), len(want))
        self.assertGreater(len(want), ROWS // 2)
        self.assertEqual(list(got["city"]), list(want.city))
        self.assertEqual(list(got["label"]), list(want.label))
        np.testing.assert_allclose(got["score"], want.score.to_numpy(), rtol=1e-5, atol=1e-6)

    def test_plan_names_a_misspelt_column_with_file_and_line(self):
        with open(self.spec) as f:
            text = f.read()
        self.assertIn("x3 < 1", text)
        bad = os.path.join(os.path.dirname(self.spec), "misspelt.yaml")
        with open(bad, "w") as f:
            f.write(text.replace("x3 < 1", "x33 < 1"))
        line = next(i + 1 for i, l in enumerate(text.splitlines()) if "x3 < 1" in l)
        plan = self.coupler("plan", bad)
        self.assertNotEqual(plan.returncode, 0, plan.stdout)
        out = plan.stdout + plan.stderr
        self.assertRegex(out, re.escape("misspelt.yaml:%d:" % line))
        self.assertIn("x33", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
