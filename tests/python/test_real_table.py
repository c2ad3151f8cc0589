"""A realistic table through coupler, checked column by column against pandas on the same
file: ids past 2^24 (and past 2^40) stay exact int64, ISO 8601 timestamps (some with a UTC
offset) become datetime64[ns] exact to the nanosecond, a 50,000-value device column and a site
column with quoted commas and escaped quotes decode to the same text, and the 2% of values
written as '', NA, NULL or nan are missing in the same places. The pipeline is import -> stats
-> standardize -> filter -> derive -> select -> exec (the user's Python, reading the shards
with numpy only). `coupler plan` must show each column's type.

Run by ctest (tests/python/CMakeLists.txt) with COUPLER_BINARY and COUPLER_SOURCE_DIR set;
needs numpy and pandas for /usr/bin/python3 (COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh).
"""

import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "COUPLER_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COUPLER = os.environ.get("COUPLER_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "coupler"))
HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import numpy as np
    import pandas as pd
except ImportError:
    np = pd = None
MISSING = ("numpy and pandas are missing for /usr/bin/python3: run "
           "COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh")

ROWS = 60_000
FLOATS = ["f0", "f1", "f2", "f3", "f4", "f5"]
NAT = np.iinfo(np.int64).min if np is not None else None


def pandas_reference(csv):
    """The pipeline in pandas: floats as coupler keeps them (float32), statistics in float64
    over the values present (ddof 0, as column_stats), expressions in float32."""
    df = pd.read_csv(csv)  # pandas' default NA tokens: '', NA, NULL, nan among them
    ts = pd.to_datetime(df.ts, utc=True)
    f = {c: df[c].astype("float32") for c in FLOATS}
    scaled = {}
    for c in FLOATS + ["count"]:
        wide = (f[c] if c in f else df[c]).astype("float64")
        scaled[c] = ((wide - wide.mean()) / wide.std(ddof=0)).astype("float32")
    keep = (df.active & (scaled["f0"] > np.float32(-1))).to_numpy()
    ratio = (scaled["f1"].to_numpy() / (scaled["f5"].to_numpy() + np.float32(10)))
    return {
        "id": df.id.to_numpy()[keep],
        "ts": ts.dt.tz_localize(None).to_numpy().astype("datetime64[ns]").view("int64")[keep],
        "device": df.device.fillna("").to_numpy()[keep],
        "site": df.site.fillna("").to_numpy()[keep],
        "count": scaled["count"].to_numpy()[keep],
        "ratio": ratio.astype("float32")[keep],
        "active": df.active.to_numpy()[keep],
        "ts_raw": ts,
        "id_raw": df.id.to_numpy(),
    }


def read_shard(path):
    """docs/ops.md's reader: {column: array} of a coupler shard (.npz), strings decoded."""
    shard = np.load(path)
    out = {}
    for name in shard.files:
        if name.endswith(".dictionary.json"):
            continue
        values = shard[name]
        if name + ".dictionary.json" in shard.files:
            strings = json.loads(shard[name + ".dictionary.json"]) + [None]
            values = np.array(strings, dtype=object)[values]  # code -1 picks the None
        out[name] = values
    return out

@unittest.skipIf(pd is None, MISSING)
class RealTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="coupler-real-table-")
        cls.csv = os.path.join(cls.root, "events.csv")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(SOURCE_DIR, "bench", "pipeline", "make_events.py"),
                        cls.csv, str(ROWS)], check=True)
        shutil.copy(os.path.join(HERE, "real_table", "decode.py"), cls.root)
        with open(os.path.join(HERE, "real_table", "pipeline.yaml")) as f:
            text = f.read()
        cls.workdir = os.path.join(cls.root, "work")
        cls.spec = os.path.join(cls.root, "pipeline.yaml")
        with open(cls.spec, "w") as f:
            f.write(text.replace("WORKDIR", cls.workdir).replace("[CSV]", "[" + cls.csv + "]"))
        cls.want = pandas_reference(cls.csv)
        cls.run_result = subprocess.run([COUPLER, "run", cls.spec, "--workers", "2"],
                                        capture_output=True, text=True, timeout=600,
                                        cwd=cls.root)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def coupler(self, *args):
        return subprocess.run([COUPLER, *args], capture_output=True, text=True, timeout=300,
                              cwd=self.root)

    def node_shards(self, node):
        return sorted(glob.glob(os.path.join(self.workdir, "latest", node, "part-*.np[yz]")))

    def test_the_data_has_what_the_test_is_about(self):
        with open(self.csv, "rb") as f:
            head = f.read(1 << 20)
        self.assertIn(b"\r\n", head)
        self.assertIn(b'"The ""Hub"", Porto"', head)
        self.assertIn(b",NULL,", head)
        self.assertGreater((self.want["id_raw"] > 1 << 24).sum(), ROWS * 0.9)
        self.assertGreater((self.want["id_raw"] > 1 << 40).sum(), 0)
        self.assertGreater(self.want["ts_raw"].isna().sum(), 0)

    def test_plan_shows_each_columns_type(self):
        plan = self.coupler("plan", self.spec)
        self.assertEqual(plan.returncode, 0, plan.stdout + plan.stderr)
        out = plan.stdout
        block = out[out.index("columns of import"):]
        for line in [r"id\s+int64\s+yes\s+no", r"ts\s+datetime64\[ns\]\s+yes\s+no",
                     r"device\s+string\s+yes\s+yes", r"site\s+string\s+yes\s+yes",
                     r"f0 \.\. f5 \(6\)\s+float32\s+yes\s+no", r"count\s+int64\s+yes\s+no",
                     r"active\s+bool\s+no\s+no"]:
            self.assertRegex(block, re.compile(r"^\s+" + line + r"\s*$", re.M))
        js = self.coupler("plan", self.spec, "--json")
        self.assertEqual(js.returncode, 0, js.stderr)
        nodes = {n["id"]: n for n in json.loads(js.stdout)["nodes"]}
        columns = {c["name"]: c for c in nodes["import"]["columns"]}
        self.assertEqual(columns["id"], {"name": "id", "type": "int64", "nullable": True,
                                         "dictionary": False})
        self.assertEqual(columns["device"]["type"], "string")
        self.assertTrue(columns["device"]["dictionary"])
        self.assertIsNone(nodes["decoded"]["columns"])  # what an exec writes is its own
        # standardize turns the int64 count it rescales into float32
        scaled = {c["name"]: c for c in nodes["standardize"]["columns"]}
        self.assertEqual(scaled["count"]["type"], "float32")
        self.assertEqual(scaled["id"]["type"], "int64")

    def test_shards_hold_exact_types_numpy_reads_without_coupler(self):
        self.assertEqual(self.run_result.returncode, 0,
                         self.run_result.stdout + self.run_result.stderr)
        shards = self.node_shards("import")
        self.assertEqual(len(shards), 4)
        self.assertTrue(all(p.endswith(".npz") for p in shards), shards)
        records = {name: np.concatenate([np.load(p)[name] for p in shards])
                   for name in ("id", "ts", "active")}
        self.assertEqual(records["id"].dtype, np.dtype("<i8"))
        self.assertEqual(records["ts"].dtype, np.dtype("<M8[ns]"))
        self.assertEqual(records["active"].dtype, np.dtype("?"))
        np.testing.assert_array_equal(records["id"], self.want["id_raw"])
        self.assertEqual(int(records["id"][217]), 16_777_217)  # float32 would say 16777216
        want_ts = self.want["ts_raw"].dt.tz_localize(None).to_numpy().astype("datetime64[ns]")
        np.testing.assert_array_equal(records["ts"], want_ts)  # NaT where pandas has NaT

    def test_write_csv_gives_pandas_the_same_table(self):
        """write_csv's files, read back by pandas, hold what the pipeline computed."""
        self.assertEqual(self.run_result.returncode, 0,
                         self.run_result.stdout + self.run_result.stderr)
        files = sorted(glob.glob(os.path.join(self.workdir, "latest", "export", "part-*.csv")))
        self.assertEqual(len(files), 4, files)
        got = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        want = self.want
        self.assertEqual(list(got.columns), ["id", "ts", "device", "site", "f0", "f1", "f4",
                                             "f5", "count", "active", "ratio"])
        np.testing.assert_array_equal(got.id.to_numpy(), want["id"])
        ts = pd.to_datetime(got.ts, utc=True).dt.tz_localize(None).to_numpy()
        np.testing.assert_array_equal(ts.astype("datetime64[ns]").view("int64"), want["ts"])
        self.assertEqual(list(got.device.fillna("")), list(want["device"]))
        self.assertEqual(list(got.site.fillna("")), list(want["site"]))
        self.assertTrue(got.active.all())
        # float32 written in its shortest round-trip form reads back exactly
        np.testing.assert_array_equal(got["count"].to_numpy(dtype="float32"),
                                      self.node_column("slim", "count"))
        np.testing.assert_allclose(got.ratio.to_numpy(dtype="float32"), want["ratio"],
                                   rtol=1e-5, atol=1e-6)

    def node_column(self, node, column):
        return np.concatenate([np.load(p)[column] for p in self.node_shards(node)])

    def test_a_glob_of_gzip_files_imports_as_the_plain_file_does(self):
        """The same table as 4 .csv.gz files (each with its header), imported through a glob,
        gives the rows the plain file gives, in order, strings decoded alike."""
        self.assertEqual(self.run_result.returncode, 0,
                         self.run_result.stdout + self.run_result.stderr)
        with open(self.csv, "rb") as f:
            header, *lines = f.read().split(b"\r\n")
        lines = [l for l in lines if l]
        parts = os.path.join(self.root, "parts")
        os.makedirs(parts, exist_ok=True)
        cut = len(lines) // 4
        for k in range(4):
            chunk = lines[k * cut: (k + 1) * cut if k < 3 else len(lines)]
            with gzip.open(os.path.join(parts, "events-%d.csv.gz" % k), "wb") as f:
                f.write(b"\r\n".join([header] + chunk) + b"\r\n")
        spec = os.path.join(self.root, "glob.yaml")
        with open(spec, "w") as f:
            f.write("name: from-glob\nworkdir: %s\nnodes:\n"
                    "  - {id: import, op: import_csv, inputs: [parts/events-*.csv.gz], "
                    "params: {shards: 4}}\n" % os.path.join(self.root, "glob-work"))
        plan = self.coupler("plan", spec)
        self.assertEqual(plan.returncode, 0, plan.stdout + plan.stderr)
        self.assertRegex(plan.stdout, re.compile(r"^\s+id\s+int64\s", re.M))
        run = self.coupler("run", spec, "--workers", "2")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

        def rows(folder):
            out = {}
            for path in sorted(glob.glob(os.path.join(folder, "part-*.npz"))):
                for name, values in read_shard(path).items():
                    out.setdefault(name, []).append(values)
            return {k: np.concatenate(v) for k, v in out.items()}

        got = rows(os.path.join(self.root, "glob-work", "latest", "import"))
        want = rows(os.path.join(self.workdir, "latest", "import"))
        self.assertEqual(sorted(got), sorted(want))
        for name in want:
            if want[name].dtype == object:
                self.assertEqual(list(got[name]), list(want[name]), name)
            else:
                np.testing.assert_array_equal(got[name], want[name], err_msg=name)

    def test_run_matches_pandas_node_for_node(self):
        self.assertEqual(self.run_result.returncode, 0,
                         self.run_result.stdout + self.run_result.stderr)
        shards = self.node_shards("decoded")
        self.assertEqual(len(shards), 4, shards)
        got = np.concatenate([np.load(p) for p in shards])
        want = self.want
        self.assertEqual(len(got), len(want["id"]))
        self.assertGreater(len(got), ROWS // 4)
        np.testing.assert_array_equal(got["id"], want["id"])
        np.testing.assert_array_equal(got["ts"].view("int64"), want["ts"])
        self.assertEqual(list(got["device"]), list(want["device"]))
        self.assertEqual(list(got["site"]), list(want["site"]))
        self.assertTrue(got["active"].all())
        np.testing.assert_array_equal(np.isnan(got["count"]), np.isnan(want["count"]))
        np.testing.assert_allclose(got["count"], want["count"], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.isnan(got["ratio"]), np.isnan(want["ratio"]))
        np.testing.assert_allclose(got["ratio"], want["ratio"], rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main(verbosity=2)
