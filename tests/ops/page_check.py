#!/usr/bin/env python3
"""Opens the coordinator's live page in headless Chromium (driven through chromedriver's
WebDriver protocol, no library needed) and reports what its DOM shows while a job runs.

  page_check.py --url http://127.0.0.1:7180 --token-file STATE/http-token --job j-000001
                --screenshot out.png [--timeout 180]

Prints one JSON object per look at the page (every 0.5 s) until the job's row reads as finished,
then a last one with "final": true, and saves a screenshot. The page is loaded once: every later
change comes from the page's own refresh. Exit 0 when the job finished on the page, 1 on a
timeout, 2 when the browser could not be driven.
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

# What the DOM holds, read in the page: the job rows, the graph's nodes, the workers, and how
# many times the page refreshed itself.
READ_DOM = r"""
const rows = [...document.querySelectorAll('#jobs tr[data-job]')].map(r => {
  const p = r.querySelector('td.progress');
  return {id: r.dataset.job, state: r.dataset.state,
          done: Number(p.dataset.done), total: Number(p.dataset.total)};
});
const nodes = [...document.querySelectorAll('#graph .node')].map(n => ({
  id: n.dataset.node, kind: n.dataset.kind, state: n.dataset.state,
  done: Number(n.dataset.done), total: Number(n.dataset.total),
  ranks: n.querySelector('[data-ranks]') ? Number(n.querySelector('[data-ranks]').dataset.ranks) : 0,
  hosts: (n.querySelector('.hosts') || {}).textContent || ''}));
const workers = [...document.querySelectorAll('#workers tr[data-worker]')].map(w => ({
  id: w.dataset.worker, state: w.dataset.state}));
const graph = document.querySelector('#graph');
return {jobs: rows, nodes: nodes, workers: workers, graph_job: graph ? graph.dataset.job : '',
        refreshes: Number(document.getElementById('updated').dataset.refreshes || '0'),
        title: document.title};
"""

FINISHED = {"succeeded", "failed", "cancelled"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.session = None

    def call(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                return json.loads(res.read().decode() or "{}").get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s %s: HTTP %d %s" % (method, path, e.code, e.read().decode()[:500]))

    def start(self, profile):
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + profile,
                "--window-size=1400,1100"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": shutil.which("chromium") or "/usr/bin/chromium",
                                   "args": args}}}}
        value = self.call("POST", "/session", caps, timeout=120)
        self.session = value["sessionId"]

    def go(self, url):
        self.call("POST", "/session/%s/url" % self.session, {"url": url})

    def script(self, source):
        return self.call("POST", "/session/%s/execute/sync" % self.session,
                         {"script": source, "args": []})

    def screenshot(self, path):
        png = base64.b64decode(self.call("GET", "/session/%s/screenshot" % self.session))
        with open(path, "wb") as f:
            f.write(png)

    def quit(self):
        if self.session:
            try:
                self.call("DELETE", "/session/%s" % self.session, timeout=20)
            except Exception:
                pass


def wait_for_driver(port, proc, deadline):
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/status" % port, timeout=2) as res:
                if json.loads(res.read().decode())["value"]["ready"]:
                    return True
        except Exception:
            time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--timeout", type=float, default=180)
    a = ap.parse_args()
    with open(a.token_file) as f:
        token = f.read().strip()

    port = free_port()
    profile = tempfile.mkdtemp(prefix="coupler-chromium-")
    log = open(os.path.join(profile, "chromedriver.log"), "w")
    driver_bin = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    proc = subprocess.Popen([driver_bin, "--port=%d" % port], stdout=log, stderr=log)
    wd = WebDriver(port)
    try:
        if not wait_for_driver(port, proc, time.time() + 60):
            print(json.dumps({"error": "chromedriver did not start"}), flush=True)
            return 2
        try:
            wd.start(os.path.join(profile, "profile"))
            # The link the coordinator logs: the token becomes a cookie and leaves the address.
            wd.go("%s/?token=%s&job=%s" % (a.url, token, a.job))
        except Exception as e:
            print(json.dumps({"error": "cannot drive chromium: %s" % e}), flush=True)
            return 2
        deadline = time.time() + a.timeout
        while True:
            dom = wd.script(READ_DOM)
            dom["url"] = wd.call("GET", "/session/%s/url" % wd.session)
            row = next((j for j in dom["jobs"] if j["id"] == a.job), None)
            done = row is not None and row["state"] in FINISHED
            if done or time.time() > deadline:
                dom["final"] = True
                wd.screenshot(a.screenshot)
                print(json.dumps(dom), flush=True)
                return 0 if done else 1
            print(json.dumps(dom), flush=True)
            time.sleep(0.5)
    finally:
        wd.quit()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
