// Runs the pool the manifests describe on this machine, from the manifests themselves:
//   node tests/k8s/run_local.mjs --coupler BIN --secrets FILE DEPLOY_DIR
// Each Secret and ConfigMap volume is laid out the way the kubelet lays it out (files owned by
// root in a timestamped folder, reached through the ..data symlink, with the items' paths and
// modes, and the pod's fsGroup applied), each claim and emptyDir is a folder, each pod's init
// containers run first, and the coordinator, a worker and the submit Job's container are
// started with their own command lines, as their securityContext's uid and gid (as root), where only what a cluster provides is replaced: a
// mountPath by the folder standing for it (in arguments, env and the ConfigMap's spec), the Service's name by 127.0.0.1, its ports by free
// ones, the downward API by a pod name and 127.0.0.1. It then asks what the kubelet would ask
// (/healthz over HTTPS, no token) and what an operator would (the job runs to success through
// the submit Job's command; `coupler drain POD` from the coordinator's pod stops that worker).
// Exits 0 when all of that holds; every process it starts has a deadline and is killed on exit.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { build, parseYamlFile } from "./lib/kustomize.mjs";
import { expand, flag, identityOf, parseCoupler, projectedFiles, shownMode, valueOf, workloads } from "./lib/pods.mjs";

const args = process.argv.slice(2);
let coupler = null;
let secretsFile = null;
let deployDir = null;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--coupler") coupler = path.resolve(args[++i]);
  else if (args[i] === "--secrets") secretsFile = args[++i];
  else deployDir = path.resolve(args[i]);
}
if (!coupler || !secretsFile || !deployDir) {
  console.error("usage: node run_local.mjs --coupler BIN --secrets FILE DEPLOY_DIR");
  process.exit(2);
}

const DEADLINE_MS = 240_000;
const root = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), "coupler-k8s-"));
// As root, each container runs as the user its securityContext names and the volumes are laid
// out with the kubelet's owners (root) and fsGroup; as anyone else, as that user, which proves
// less (said below).
const asRoot = process.getuid() === 0;
fs.chmodSync(root, 0o755);
const children = [];
let failed = false;

function log(line) {
  console.log(`local ${line}`);
}

function die(msg) {
  failed = true;
  console.log(`FAIL  ${msg}`);
  for (const ch of children) {
    const text = fs.existsSync(ch.logFile) ? fs.readFileSync(ch.logFile, "utf8") : "";
    console.log(`---- ${ch.name} (${ch.logFile}), last lines:\n${text.split("\n").slice(-25).join("\n")}`);
  }
  cleanup();
  process.exit(1);
}

function cleanup() {
  for (const ch of children) if (ch.exitCode === null) ch.proc.kill("SIGKILL");
  if (!failed || !process.env.COUPLER_K8S_KEEP) fs.rmSync(root, { recursive: true, force: true });
  else console.log(`kept ${root}`);
}
process.on("SIGINT", () => die("interrupted"));
process.on("SIGTERM", () => die("terminated"));
setTimeout(() => die(`not done after ${DEADLINE_MS / 1000} s`), DEADLINE_MS).unref();

// ---- The objects: the pool (base) and the submit Job, and the Secrets.
const objects = [...build(path.join(deployDir, "base")).objects, ...build(path.join(deployDir, "submit")).objects,
                 ...parseYamlFile(secretsFile)];
const get = (kind, name) => objects.find((o) => o.kind === kind && o.metadata?.name === name);
const roles = {};
for (const w of workloads(objects)) {
  for (const c of w.spec.containers) {
    const parsed = parseCoupler([...(c.command ?? []), ...(c.args ?? [])]);
    if (parsed) roles[parsed.sub] ??= { w, c };
  }
}
for (const r of ["coordinator", "worker", "submit"]) if (!roles[r]) die(`no container runs coupler ${r}`);
const podNames = {
  coordinator: `${roles.coordinator.w.obj.metadata.name}-0`,
  worker: `${roles.worker.w.obj.metadata.name}-6d5f8b7c9-x2k7q`,
  submit: `${roles.submit.w.obj.metadata.name}-7hq4m`,
};

// ---- Free local ports for the coordinator's, keyed by the numbers the manifests use.
function tryPort(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once("error", () => resolve(null));
    s.listen(port, "0.0.0.0", () => {
      const bound = s.address().port;
      s.close(() => resolve(bound));
    });
  });
}
// Clients find the client port at the workers port + 1: the two stay neighbours here too.
async function freePair() {
  for (let i = 0; i < 100; ++i) {
    const p = await tryPort(0);
    if (p && p < 65535 && (await tryPort(p + 1))) return p;
  }
  die("no two neighbouring free ports");
}
const service = objects.find((o) => o.kind === "Service");
const portMap = new Map();
const coordFlags = parseCoupler([...(roles.coordinator.c.command ?? []), ...roles.coordinator.c.args]);
const listenPort = Number(flag(coordFlags, "--listen").split(":").pop());
const pair = await freePair();
portMap.set(listenPort, pair);
portMap.set(listenPort + 1, pair + 1);
for (const p of roles.coordinator.c.ports ?? []) {
  if (!portMap.has(p.containerPort)) portMap.set(p.containerPort, await tryPort(0));
}
for (const p of service.spec.ports) {
  const target = typeof p.targetPort === "string"
    ? roles.coordinator.c.ports.find((x) => x.name === p.targetPort).containerPort
    : p.targetPort ?? p.port;
  portMap.set(p.port, portMap.get(target));
}

// ---- Volumes: claims are folders shared by every pod; Secrets and ConfigMaps per pod.
// The kubelet's ownership of a volume's file or folder under the pod's fsGroup (SetVolumeOwnership):
// group fsGroup, group read (and write, on a writable volume) added, folders setgid.
function ownVolumePath(p, podSpec, writable) {
  const fsGroup = podSpec.securityContext?.fsGroup;
  if (!asRoot || fsGroup === undefined) return;
  fs.chownSync(p, fs.statSync(p).uid, fsGroup);
  const st = fs.statSync(p);
  const add = (writable ? 0o660 : 0o440) | (st.isDirectory() ? 0o2110 : 0);
  fs.chmodSync(p, (st.mode & 0o7777) | add);
}

function layOut(dir, source, object, rewrite, podSpec) {
  // The kubelet's atomic writer: ..<timestamp>/ holds the files, ..data points at it, and each
  // top-level name is a symlink through ..data.
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const ts = `..${new Date().toISOString().replace(/[-:T]/g, "_").replace(/\..*/, "")}.${process.pid}`;
  const tops = new Set();
  for (const [rel, f] of projectedFiles(source, object)) {
    const file = path.join(dir, ts, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
    const value = object.kind === "Secret" && object.data?.[f.key] !== undefined
      ? Buffer.from(object.data[f.key], "base64")
      : Buffer.from(rewrite(valueOf(object, f.key)));
    fs.writeFileSync(file, value);
    fs.chmodSync(file, shownMode(f.mode, podSpec));
    ownVolumePath(file, podSpec, false);
    for (let d = path.dirname(file); d.startsWith(dir); d = path.dirname(d)) ownVolumePath(d, podSpec, false);
    tops.add(rel.split("/")[0]);
  }
  fs.symlinkSync(ts, path.join(dir, "..data"));
  for (const t of tops) fs.symlinkSync(path.join("..data", t), path.join(dir, t));
}

// mountPath -> host folder, for one container of the role's pod (its main one by default).
function mountTable(role, c = roles[role].c) {
  const { w } = roles[role];
  const table = [];
  const claimTemplates = new Set((w.obj.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name));
  for (const m of c.volumeMounts ?? []) {
    const v = (w.spec.volumes ?? []).find((x) => x.name === m.name);
    let host;
    if (claimTemplates.has(m.name)) host = path.join(root, "volumes", `${m.name}-${podNames[role]}`);
    else if (v?.persistentVolumeClaim) host = path.join(root, "volumes", v.persistentVolumeClaim.claimName);
    else host = path.join(root, "pods", podNames[role], m.name);
    table.push({ mountPath: m.mountPath, host, volume: v, mount: m });
  }
  table.sort((a, b) => b.mountPath.length - a.mountPath.length);
  return table;
}

function rewritePath(table, p) {
  for (const t of table) {
    if (p === t.mountPath || p.startsWith(t.mountPath + "/")) return t.host + p.slice(t.mountPath.length);
  }
  return p;
}

const serviceNames = new Set([service.metadata.name, `${service.metadata.name}.${service.metadata.namespace}`,
  `${service.metadata.name}.${service.metadata.namespace}.svc`, `${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local`]);

function rewriteArg(table, a) {
  const tcp = /^tcp:\/\/([^:/]+):(\d+)$/.exec(a);
  if (tcp) {
    const host = serviceNames.has(tcp[1]) ? "127.0.0.1" : tcp[1];
    return `tcp://${host}:${portMap.get(Number(tcp[2])) ?? tcp[2]}`;
  }
  const hostPort = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(a);
  if (hostPort && portMap.has(Number(hostPort[2]))) return `${hostPort[1]}:${portMap.get(Number(hostPort[2]))}`;
  return a.startsWith("/") ? rewritePath(table, a) : a;
}

// The user a container runs as here: the securityContext's, when this runs as root.
function userOf(role, c) {
  const who = identityOf(c, roles[role].w.spec);
  return asRoot && who.uid !== undefined ? { uid: who.uid, gid: who.gid ?? 0 } : {};
}

// The volumes one container mounts, made as the kubelet makes them (each once per pod): claims
// and emptyDirs as folders (owned through the fsGroup), Secrets and ConfigMaps laid out.
const madeVolumes = new Set();
function makeVolumes(role, table) {
  const { w } = roles[role];
  const pvcMounts = table.filter((t) => t.volume?.persistentVolumeClaim || !t.volume);
  // Paths inside a ConfigMap (the spec) name the claims' mountPaths too.
  const rewriteText = (text) => pvcMounts.reduce((s, t) => s.replaceAll(t.mountPath + "/", t.host + "/"), text);
  for (const t of table) {
    if (madeVolumes.has(t.host)) continue;
    madeVolumes.add(t.host);
    if (t.volume?.persistentVolumeClaim || !t.volume) {
      // A claim's root belongs to the provisioner (root), 0755.
      fs.mkdirSync(t.host, { recursive: true, mode: 0o755 });
      ownVolumePath(t.host, w.spec, true);
      continue;
    }
    if (t.volume.emptyDir) {
      fs.mkdirSync(t.host, { recursive: true });
      fs.chmodSync(t.host, 0o777);
      ownVolumePath(t.host, w.spec, true);
      continue;
    }
    const src = t.volume.secret ?? t.volume.configMap;
    if (!src) continue;
    const object = get(t.volume.secret ? "Secret" : "ConfigMap", src.secretName ?? src.name);
    if (!object) die(`${role}: no ${t.volume.secret ? "Secret" : "ConfigMap"} ${src.secretName ?? src.name}`);
    layOut(t.host, src, object, rewriteText, w.spec);
  }
}

// The pod's init containers, run to their end in order, as the kubelet does before the main
// one. coupler-copy-keys is deploy/k8s/copy-keys.sh, which the image installs under that name.
function runInitContainers(role) {
  const { w } = roles[role];
  for (const ic of w.spec.initContainers ?? []) {
    const table = mountTable(role, ic);
    makeVolumes(role, table);
    const x = expand(ic, { "metadata.name": podNames[role], "status.podIP": "127.0.0.1" });
    const argv = x.argv.map((a) => (a.startsWith("/") ? rewritePath(table, a) : a));
    if (argv[0] === "coupler-copy-keys") argv[0] = path.join(deployDir, "copy-keys.sh");
    else die(`${role}: init container ${ic.name} runs ${argv[0]}, which this local run does not know`);
    const r = spawnSync(argv[0], argv.slice(1), { env: { PATH: process.env.PATH }, encoding: "utf8", timeout: 30_000,
                                                  cwd: root, ...userOf(role, ic) });
    if (r.status !== 0) die(`${role}: init container ${ic.name} exited ${r.status ?? r.signal}: ${r.stdout}${r.stderr}`);
    log(`${role}: init container ${ic.name}: ${(r.stdout ?? "").trim().replaceAll(root, "$ROOT")}`);
  }
}

// The command line and environment a container gets, made local.
function prepare(role) {
  const { c } = roles[role];
  runInitContainers(role);
  const table = mountTable(role);
  makeVolumes(role, table);
  const x = expand(c, { "metadata.name": podNames[role], "status.podIP": "127.0.0.1" });
  const user = userOf(role, c);
  const home = path.join(root, "pods", podNames[role], "home");
  fs.mkdirSync(home, { recursive: true });
  if (user.uid !== undefined) fs.chownSync(home, user.uid, user.gid);
  const env = { PATH: process.env.PATH, HOME: home, COUPLER_HOME: path.join(home, ".coupler") };
  for (const [k, v] of Object.entries(x.env)) env[k] = v.startsWith("/") ? rewritePath(table, v) : v;
  const argv = x.argv.map((a) => rewriteArg(table, a));
  argv[0] = coupler;
  return { argv, env, table, user, parsed: parseCoupler(["coupler", ...x.argv.slice(1)]) };
}

function startProcess(name, { argv, env, user }) {
  const logFile = path.join(root, `${name}.log`);
  const fd = fs.openSync(logFile, "w");
  const proc = spawn(argv[0], argv.slice(1), { env, stdio: ["ignore", fd, fd], cwd: root, ...user });
  fs.closeSync(fd);
  const ch = { name, proc, logFile, exitCode: null };
  proc.on("exit", (code, signal) => { ch.exitCode = code ?? signal; });
  children.push(ch);
  log(`started ${name}: ${argv.map((a) => a.replace(root, "$ROOT")).join(" ")}`);
  return ch;
}

function runCommand(what, argv, env, timeoutMs = 60_000, user = {}) {
  const r = spawnSync(argv[0], argv.slice(1), { env, encoding: "utf8", timeout: timeoutMs, cwd: root, ...user });
  return { status: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}`, what };
}

function get_(url, options = {}) {
  return new Promise((resolve) => {
    const req = https.get(url, { timeout: 5000, ...options }, (res) => {
      let body = "";
      res.on("data", (d) => { body += d; });
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("error", (e) => resolve({ status: 0, body: e.message }));
    req.on("timeout", () => req.destroy(new Error("timeout")));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, deadlineMs, probe, child) {
  const end = Date.now() + deadlineMs;
  let last;
  while (Date.now() < end) {
    if (child && child.exitCode !== null) die(`${child.name} exited (${child.exitCode}) while waiting for ${what}`);
    last = await probe();
    if (last.done) return last;
    await sleep(200);
  }
  die(`${what}: not within ${deadlineMs / 1000} s (last: ${JSON.stringify(last)})`);
}

// ---- The coordinator, as the StatefulSet starts it.
const coord = prepare("coordinator");
const coordinator = startProcess("coordinator", coord);
log(coord.user.uid !== undefined
  ? `the pods run as their securityContext's user (uid ${coord.user.uid}, gid ${coord.user.gid}), ` +
    `Secrets owned by root as the kubelet mounts them`
  : "not root: every pod runs as this user, and the Secrets' owners are not the kubelet's");
const httpPort = Number(flag(coord.parsed, "--http").split(":").pop());
const localHttps = `https://127.0.0.1:${portMap.get(httpPort)}`;
// The kubelet's probe: HTTPS, no certificate check, no token.
const health = await waitFor("GET /healthz answering 200", 60_000, async () => {
  const r = await get_(`${localHttps}/healthz`, { rejectUnauthorized: false });
  return { ...r, done: r.status === 200 };
}, coordinator);
if (JSON.parse(health.body).status !== "ok") die(`/healthz answered ${health.body}`);
log(`the probe: GET ${localHttps}/healthz without a token answers 200 ${health.body.trim()}`);

// The certificate make-keys.sh made holds for a client that checks it (a port-forward).
const ca = fs.readFileSync(rewritePath(coord.table, coord.parsed.flags["--http-tls"][0]));
const verified = await get_(`https://localhost:${portMap.get(httpPort)}/healthz`, { ca });
if (verified.status !== 200) die(`/healthz with the certificate checked against make-keys.sh's tls.crt: ${verified.body}`);
log("the certificate verifies for https://localhost (kubectl port-forward)");

const stateDir = rewritePath(coord.table, flag(coord.parsed, "--state"));
const stateMode = fs.statSync(stateDir).mode & 0o777;
if (stateMode !== 0o700) die(`the coordinator left ${stateDir} mode ${stateMode.toString(8)}, not 0700`);
if (coord.user.uid !== undefined) {
  // What the coordinator made and reads is its user's own: the state and its key copy.
  const keysDir = rewritePath(coord.table, flag(coord.parsed, "--keys"));
  const key = fs.statSync(path.join(keysDir, "coordinator.key"));
  if (fs.statSync(stateDir).uid !== coord.user.uid) die(`${stateDir} does not belong to uid ${coord.user.uid}`);
  if (key.uid !== coord.user.uid || (key.mode & 0o777) !== 0o400) {
    die(`the coordinator's key copy is uid ${key.uid} mode ${(key.mode & 0o777).toString(8)}, not uid ${coord.user.uid} mode 400`);
  }
  log(`the state folder and the key copy (coordinator.key 0400) belong to uid ${coord.user.uid}`);
}
const token = fs.readFileSync(path.join(stateDir, "http-token"), "utf8").trim();
const bare = await get_(`${localHttps}/metrics`, { rejectUnauthorized: false });
if (bare.status !== 401) die(`/metrics without the token answered ${bare.status}, not 401`);
const metrics = await get_(`${localHttps}/metrics`, { rejectUnauthorized: false, headers: { Authorization: `Bearer ${token}` } });
if (metrics.status !== 200 || !metrics.body.includes("coupler_")) die(`/metrics with STATE/http-token answered ${metrics.status}`);
log("/metrics needs the token in --state/http-token (401 without, 200 with); the state folder is 0700");

// ---- A worker, as the Deployment starts it.
const workerRun = prepare("worker");
const worker = startProcess("worker", workerRun);
// Commands an operator runs in the coordinator's pod (kubectl exec): its env, its own address.
const opsEnv = coord.env;
const opsCoordinator = `tcp://127.0.0.1:${portMap.get(Number(flag(coord.parsed, "--listen").split(":").pop()))}`;
await waitFor(`coupler workers listing ${podNames.worker}`, 60_000, async () => {
  const r = runCommand("workers", [coupler, "workers", "--coordinator", opsCoordinator], opsEnv, 60_000, coord.user);
  return { ...r, done: r.status === 0 && r.out.includes(podNames.worker) };
}, worker);
log(`the worker registered as ${podNames.worker} (its pod name), with the worker Secret's key`);

// ---- The submit Job's container: submit the ConfigMap's spec and wait.
const submitRun = prepare("submit");
const submit = runCommand("submit", submitRun.argv, submitRun.env, 150_000, submitRun.user);
console.log(submit.out.split("\n").map((l) => `      | ${l}`).join("\n"));
if (submit.status !== 0) die(`the submit Job's command exited ${submit.status}`);
const spec = fs.readFileSync(rewritePath(submitRun.table, submitRun.parsed.positional[0]), "utf8");
const workdir = /workdir:\s*(\S+)/.exec(spec)[1];
if (!fs.existsSync(workdir)) die(`the job's workdir ${workdir} is not on the shared claim's folder`);
log(`the submit Job's command exited 0; the job's workdir is on the shared claim (${workdir.replace(root, "$ROOT")})`);

// ---- Drain by pod name, with the admin key the coordinator's pod carries.
const drain = runCommand("drain", [coupler, "drain", podNames.worker, "--coordinator", opsCoordinator], opsEnv, 60_000,
                         coord.user);
if (drain.status !== 0) die(`coupler drain ${podNames.worker}: ${drain.out}`);
await waitFor("the drained worker to exit", 60_000, async () => ({ done: worker.exitCode !== null }));
if (worker.exitCode !== 0) die(`the drained worker exited ${worker.exitCode}, not 0`);
log(`coupler drain ${podNames.worker} from the coordinator's pod: the worker finished and exited 0`);

// ---- SIGTERM, as the kubelet stops a pod.
coordinator.proc.kill("SIGTERM");
await waitFor("the coordinator to stop on SIGTERM", 30_000, async () => ({ done: coordinator.exitCode !== null }));
if (coordinator.exitCode !== 0) die(`the coordinator exited ${coordinator.exitCode} on SIGTERM`);
cleanup();
log("all local checks passed");
process.exit(0);
