"""The Python client against a real `coupler coordinator` and `coupler worker` on loopback,
with keys on as users run it: the coordinator makes its key set in STATE/keys at first start,
the worker uses STATE/keys/local-worker and the client STATE/keys/local-client. What the
client reports is compared with what the `coupler` CLI prints for the same coordinator.

Run by ctest (tests/python/CMakeLists.txt) with COUPLER_BINARY and COUPLER_SOURCE_DIR set;
by hand: COUPLER_BINARY=build/bin/coupler /usr/bin/python3 tests/python/test_client.py
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get(
    "COUPLER_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COUPLER = os.environ.get("COUPLER_BINARY", "")

try:
    import zmq  # noqa: F401  (coupler_client needs it)
except ImportError:
    zmq = None
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
if zmq is not None:
    import coupler_client as cc

MISSING_ZMQ = ("python3-zmq is missing: run scripts/install-deps.sh (or apt-get install "
               "python3-zmq) so /usr/bin/python3 can import zmq")


def restore_env_after(test, *names):
    """Puts the environment variables `names` back as they are now when `test` ends."""
    saved = {k: os.environ.get(k) for k in names}
    def restore():
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    test.addCleanup(restore)


def wait_until(predicate, timeout_s, what):
    """Polls `predicate` until it returns a truthy value, or fails naming `what`."""
    give_up = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > give_up:
            raise AssertionError("timed out after %d s waiting for %s" % (timeout_s, what))
        time.sleep(0.1)


def port_pair_free(port):
    for p in (port, port + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
        finally:
            s.close()
    return True


class Cluster:
    """A coordinator and workers in a temporary folder, killed by stop() on every exit path."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="coupler-pyclient-")
        self.state = os.path.join(self.dir, "state")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)
        # The coordinator's notes for local peers go here, not to the user's ~/.coupler.
        self.env = dict(os.environ, COUPLER_HOME=os.path.join(self.dir, "home"))
        self.procs = []
        self.endpoint = ""

    @property
    def client_keys(self):
        return os.path.join(self.state, "keys", "local-client")

    def spawn(self, name, argv):
        out = open(os.path.join(self.logs, name + ".out"), "wb")
        err = open(os.path.join(self.logs, name + ".err"), "wb")
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=self.env,
                             start_new_session=True)
        out.close()
        err.close()
        self.procs.append(p)
        return p

    def start_coordinator(self):
        for attempt in range(5):
            port = random.randint(20000, 60000)
            if not port_pair_free(port):
                continue
            self.endpoint = "tcp://127.0.0.1:%d" % port
            ready = os.path.join(self.dir, "ready-%d" % attempt)
            p = self.spawn("coordinator-%d" % attempt, [
                COUPLER, "--log-level", "info", "coordinator", "--listen", self.endpoint,
                "--state", self.state, "--ready-file", ready, "--heartbeat-ms", "300",
                "--dead-after-ms", "3000"])
            give_up = time.monotonic() + 60
            while time.monotonic() < give_up and p.poll() is None and not os.path.exists(ready):
                time.sleep(0.05)
            if os.path.exists(ready):
                return
            self.kill(p)  # another process took the port first: try another
        raise AssertionError("the coordinator did not start\n" + self.tails())

    def start_worker(self, worker_id, slots):
        self.spawn("worker-" + worker_id, [
            COUPLER, "--log-level", "info", "worker", "--coordinator", self.endpoint,
            "--slots", str(slots), "--id", worker_id, "--heartbeat-ms", "300",
            "--keys", os.path.join(self.state, "keys", "local-worker")])

    def cli(self, *args, timeout=60):
        """`coupler ARGS` against this coordinator with the client keys: (rc, stdout, stderr)."""
        r = subprocess.run([COUPLER, *args, "--coordinator", self.endpoint, "--keys",
                            self.client_keys], capture_output=True, text=True, env=self.env,
                           timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def kill(self, p):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait(timeout=30)

    def tails(self):
        out = ""
        for name in sorted(os.listdir(self.logs)):
            if name.endswith(".err"):
                with open(os.path.join(self.logs, name), errors="replace") as f:
                    out += "---- %s\n%s" % (name, f.read()[-3000:])
        return out

    def stop(self):
        for p in self.procs:
            self.kill(p)
        shutil.rmtree(self.dir, ignore_errors=True)


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if zmq is None or not COUPLER:
            return
        cls.cluster = Cluster()
        cls.addClassCleanup(cls.cluster.stop)
        cls.cluster.start_coordinator()
        cls.cluster.start_worker("w1", 2)
        with open(os.path.join(cls.cluster.dir, "in.csv"), "w") as f:
            f.write("c0,c1,label\n")
            for r in range(40):
                f.write("%d.5,%d.25,%d\n" % (r, -r, r % 10))

    def setUp(self):
        if zmq is None:
            self.fail(MISSING_ZMQ)
        self.assertTrue(COUPLER, "set COUPLER_BINARY to the coupler binary")
        self.assertTrue(zmq.has("curve"), "this libzmq has no CURVE: the client cannot use keys")
        self.client = cc.Client(self.cluster.endpoint, keys=self.cluster.client_keys,
                                timeout_s=30)
        self.addCleanup(self.client.close)
        wait_until(lambda: any(w["state"] == "alive" for w in self.client.workers()), 60,
                   "worker w1 to register\n" + self.cluster.tails())

    def spec(self, name, nodes):
        # Relative paths: inputs and workdir resolve against the spec's folder, which is what
        # sending the spec's absolute path is for.
        path = os.path.join(self.cluster.dir, name + ".yaml")
        with open(path, "w") as f:
            f.write("name: %s\nworkdir: work-%s\nnodes:\n"
                    "  - {id: import, op: import_csv, inputs: [in.csv], "
                    "params: {shards: 2, label_column: label}}\n%s" % (name, name, nodes))
        return path

    def test_submit_wait_status_and_logs_agree_with_the_cli(self):
        spec = self.spec("py-echo", "  - id: echo\n    op: exec\n    inputs: [import]\n"
                         "    params:\n      command: \"echo hello from shard {shard}; "
                         "echo a warning >&2\"\n")
        job = self.client.submit(spec)
        self.assertRegex(job, r"^j-[0-9]+$")
        final = self.client.wait(job, timeout_s=120, poll_s=1)
        self.assertEqual(final["state"], "succeeded", final["error"] + self.cluster.tails())
        # Each submission writes its own run directory under the spec's workdir.
        self.assertEqual(final["workdir"],
                         os.path.join(self.cluster.dir, "work-py-echo", "runs", job))
        self.assertEqual([n["reused"] for n in final["nodes"]], [False, False])
        self.assertEqual(final["submitted_by"], "local")
        self.assertEqual([n["id"] for n in final["nodes"]], ["import", "echo"])
        self.assertEqual(final["tasks"]["done"], final["tasks"]["total"])

        rc, out, err = self.cluster.cli("status", job, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.client.status(job), json.loads(out))
        self.assertEqual(final, json.loads(out))
        rc, out, err = self.cluster.cli("status", "--json", "--limit", "0")
        self.assertEqual(rc, 0, err)
        listed = self.client.status()
        self.assertEqual(listed["jobs"], json.loads(out)["jobs"])
        self.assertTrue(listed["coordinator"]["encrypted"])
        self.assertEqual(self.client.status(state="succeeded", limit=1)["jobs"][0]["id"],
                         listed["jobs"][0]["id"])

        # Logs: what the CLI prints, read from the same workdir.
        for args, kwargs in ((("echo",), {"node": "echo"}), ((), {})):
            rc, out, err = self.cluster.cli("logs", job, *args)
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.client.logs(job, **kwargs), out)
        echo = self.client.logs(job, node="echo")
        self.assertRegex(echo, r"==> echo/task [0-9]+ attempt 0 stdout <==\nhello from shard 0\n")
        self.assertIn("attempt 0 stderr <==\na warning\n", echo)
        task = int(echo.split("==> echo/task ", 1)[1].split(" ", 1)[0])
        rc, out, err = self.cluster.cli("logs", job, "echo", str(task), "--attempt", "0")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.client.logs(job, node="echo", task=task, attempt=0), out)
        self.assertEqual(self.client.logs(job, node="echo", task=999), "")
        with self.assertRaises(cc.CouplerError) as e:
            self.client.logs(job, node="nope")
        self.assertEqual(str(e.exception), "the job has no node 'nope'; its nodes: import, echo")

        # Workers: as `coupler workers --json`, but for how long ago each was heard.
        rc, out, err = self.cluster.cli("workers", "--json")
        self.assertEqual(rc, 0, err)
        def unheard(workers):
            return [{k: v for k, v in w.items() if k != "heard_ms_ago"} for w in workers]
        self.assertEqual(unheard(self.client.workers()), unheard(json.loads(out)))

    def test_a_submission_id_returns_the_first_job(self):
        spec = self.spec("py-once", "")
        first = self.client.submit(spec, priority=3, submission_id="py-test-once")
        second = self.client.submit(spec, submission_id="py-test-once")
        self.assertEqual(first, second)
        self.assertEqual(self.client.status(first)["submission_id"], "py-test-once")
        self.assertEqual(self.client.wait(first, timeout_s=120)["state"], "succeeded")

    def test_cancel_ends_a_long_job_cancelled(self):
        spec = self.spec("py-long", "  - id: naps\n    op: exec\n    inputs: [import]\n"
                         "    params:\n      timeout: 300\n      command: \"sleep 120\"\n")
        job = self.client.submit(spec)
        wait_until(lambda: self.client.status(job)["nodes"][1]["state"] == "running", 60,
                   "job %s's exec node to run\n%s" % (job, self.cluster.tails()))
        self.assertTrue(self.client.cancel(job))
        final = self.client.wait(job, timeout_s=60)
        self.assertEqual(final["state"], "cancelled")
        rc, out, err = self.cluster.cli("status", job, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["state"], "cancelled")

    def test_retry_runs_a_failed_job_again_in_its_run_directory(self):
        marker = os.path.join(self.cluster.dir, "py-retry-marker")
        spec = self.spec("py-retry", "  - id: mid\n    op: exec\n    inputs: [import]\n"
                         "    retries: 0\n    params:\n      command: \"test -e %s && "
                         "cp {input} {output}\"\n" % marker)
        job = self.client.submit(spec)
        failed = self.client.wait(job, timeout_s=120, poll_s=1)
        self.assertEqual(failed["state"], "failed", self.cluster.tails())
        with self.assertRaises(cc.CouplerError) as e:
            self.client.retry(job + "0")
        self.assertEqual(e.exception.code_name, "NotFound")
        open(marker, "w").close()
        self.assertIn("retrying " + job, self.client.retry(job))
        final = self.client.wait(job, timeout_s=120, poll_s=1)
        self.assertEqual(final["state"], "succeeded", final["error"] + self.cluster.tails())
        self.assertEqual(final["workdir"], failed["workdir"])
        self.assertEqual(final["nodes"][0]["attempts"], failed["nodes"][0]["attempts"])
        with self.assertRaises(cc.CouplerError) as e:
            self.client.retry(job)
        self.assertEqual(e.exception.code_name, "InvalidArgument")
        self.assertIn("nothing to retry", str(e.exception))

    def test_wrong_job_ids_get_the_coordinators_error(self):
        for call in (self.client.status, self.client.cancel, self.client.wait, self.client.retry):
            with self.subTest(call.__name__):
                with self.assertRaises(cc.CouplerError) as e:
                    call("j-999999")
                self.assertEqual(e.exception.code_name, "NotFound")
                self.assertEqual(str(e.exception), "no job j-999999")
        rc, _, err = self.cluster.cli("cancel", "j-999999")
        self.assertNotEqual(rc, 0)
        self.assertIn("no job j-999999", err)

    def test_gpu_fences_travel_as_the_cli_sends_them(self):
        # w1 has no GPU: the coordinator's own refusal comes back with its code and words.
        for call in (lambda: self.client.clear_gpu("w1"),
                     lambda: self.client.fence_gpu("w1", "fan noise", gpus=[0])):
            with self.assertRaises(cc.CouplerError) as e:
                call()
            self.assertEqual(e.exception.code_name, "NotFound")
            self.assertIn("worker w1 has no GPUs known here", str(e.exception))
        w1 = [w for w in self.client.workers() if w["id"] == "w1"][0]
        self.assertEqual(w1["gpu_fences"], [])

    def test_a_bad_spec_gets_the_diagnostics(self):
        path = os.path.join(self.cluster.dir, "bad.yaml")
        with open(path, "w") as f:
            f.write("name: bad\nnodes:\n  - {id: x, op: no_such_op}\n")
        with self.assertRaises(cc.CouplerError) as e:
            self.client.submit(path)
        self.assertEqual(e.exception.code_name, "InvalidArgument")
        self.assertIn("no_such_op", str(e.exception))
        self.assertIn("bad.yaml", str(e.exception))
        with self.assertRaises(cc.CouplerError) as e:
            self.client.submit(os.path.join(self.cluster.dir, "missing.yaml"))
        self.assertEqual(e.exception.code_name, "NotFound")

    def test_a_key_not_on_the_allow_list_is_refused_with_a_clear_error(self):
        stranger = os.path.join(self.cluster.dir, "stranger")
        rc = subprocess.run([COUPLER, "keygen", stranger, "--role", "client", "--name",
                             "stranger"], capture_output=True, env=self.cluster.env,
                            timeout=60).returncode
        self.assertEqual(rc, 0)
        shutil.copy(os.path.join(self.cluster.client_keys, "coordinator.pub"), stranger)
        before = self.client.status()["coordinator"]["handshakes_refused"]
        with cc.Client(self.cluster.endpoint, keys=stranger, timeout_s=30) as c:
            with self.assertRaises(cc.CouplerError) as e:
                c.status()
        # A refusal, not a timeout: a hang would be DeadlineExceeded or Unavailable.
        self.assertEqual(e.exception.code_name, "PermissionDenied")
        self.assertIn("refused this key", str(e.exception))
        self.assertIn(self.cluster.endpoint.rsplit(":", 1)[0], str(e.exception))
        self.assertGreater(self.client.status()["coordinator"]["handshakes_refused"], before)
        # Plaintext to a coordinator with keys on is no way in either.
        with cc.Client(self.cluster.endpoint, insecure=True, timeout_s=30) as c:
            with self.assertRaises(cc.CouplerError) as e:
                c.status()
        self.assertEqual(e.exception.code_name, "Unavailable")
        self.assertIn("security handshake", str(e.exception))

    def test_another_coordinators_public_key_is_named_as_the_cause(self):
        other = os.path.join(self.cluster.dir, "other-coordinator")
        rc = subprocess.run([COUPLER, "keygen", other, "--role", "coordinator"],
                            capture_output=True, env=self.cluster.env, timeout=60).returncode
        self.assertEqual(rc, 0)
        keys = os.path.join(self.cluster.dir, "wrong-server")
        shutil.copytree(self.cluster.client_keys, keys)
        shutil.copy(os.path.join(other, "coordinator.pub"), keys)
        with cc.Client(self.cluster.endpoint, keys=keys, timeout_s=30) as c:
            with self.assertRaises(cc.CouplerTimeout) as e:
                c.status()
        self.assertEqual(e.exception.code_name, "Unavailable")
        self.assertIn("coordinator.pub", str(e.exception))

    def test_keys_are_found_as_the_cli_finds_them(self):
        # $COUPLER_KEYS, then the coordinator's local note under $COUPLER_HOME.
        restore_env_after(self, "COUPLER_KEYS", "COUPLER_HOME")
        os.environ["COUPLER_KEYS"] = self.cluster.client_keys
        with cc.Client(self.cluster.endpoint) as c:
            self.assertTrue(c.status()["coordinator"]["encrypted"])
        del os.environ["COUPLER_KEYS"]
        os.environ["COUPLER_HOME"] = self.cluster.env["COUPLER_HOME"]
        with cc.Client(self.cluster.endpoint) as c:
            self.assertTrue(c.status()["coordinator"]["encrypted"])
        os.environ["COUPLER_HOME"] = os.path.join(self.cluster.dir, "nobody")
        with self.assertRaises(cc.CouplerError) as e:
            cc.Client(self.cluster.endpoint)
        self.assertIn("no keys for the coordinator at", str(e.exception))

    def test_no_coordinator_is_an_error_naming_the_endpoint(self):
        port = 0
        for _ in range(50):
            port = random.randint(20000, 60000)
            if port_pair_free(port):
                break
        nowhere = "tcp://127.0.0.1:%d" % port
        with cc.Client(nowhere, keys=self.cluster.client_keys, timeout_s=5) as c:
            with self.assertRaises(cc.CouplerTimeout) as e:
                c.status()
        self.assertIn("tcp://127.0.0.1:%d" % (port + 1), str(e.exception))
        self.assertIn("is it running?", str(e.exception))



class KeyNoteTest(unittest.TestCase):
    """The coordinator's local note, as the Python client reads it: one left by a coordinator
    that has stopped is not used, as `coupler` does not use it (runtime/net/key_discovery)."""

    def setUp(self):
        if zmq is None:
            self.fail(MISSING_ZMQ)
        self.home = tempfile.mkdtemp(prefix="coupler-py-notes-")
        self.addCleanup(shutil.rmtree, self.home, True)
        restore_env_after(self, "COUPLER_HOME", "COUPLER_KEYS")
        os.environ["COUPLER_HOME"] = self.home
        os.environ.pop("COUPLER_KEYS", None)
        os.makedirs(os.path.join(self.home, "coordinators"))
        self.note = os.path.join(self.home, "coordinators", "tcp-23999")
        self.endpoint = "tcp://127.0.0.1:23999"

    def write(self, text):
        with open(self.note, "w", encoding="utf-8") as f:
            f.write(text)

    def test_a_note_left_by_a_stopped_coordinator_is_not_used(self):
        ns = os.readlink("/proc/self/ns/pid")
        with open("/proc/self/stat", encoding="utf-8") as f:
            started = int(f.read().rpartition(")")[2].split()[19])
        # Written by a live process (this one): read; "insecure" means no keys.
        self.write("insecure\npid %d %d %s\n" % (os.getpid(), started, ns))
        self.assertIsNone(cc.find_peer_keys(self.endpoint))
        # The same pid with another start time: that coordinator has stopped.
        self.write("insecure\npid %d 1 %s\n" % (os.getpid(), ns))
        with self.assertRaises(cc.CouplerError) as e:
            cc.find_peer_keys(self.endpoint)
        self.assertEqual(e.exception.code_name, "NotFound")
        self.assertIn("left by one that has stopped", str(e.exception))
        # Written in another PID namespace: not judged here; an older build's note: read.
        self.write("insecure\npid %d 1 pid:[1]\n" % os.getpid())
        self.assertIsNone(cc.find_peer_keys(self.endpoint))
        self.write("insecure\n")
        self.assertIsNone(cc.find_peer_keys(self.endpoint))


if __name__ == "__main__":
    unittest.main(verbosity=2)
