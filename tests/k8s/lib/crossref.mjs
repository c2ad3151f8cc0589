// The references between the objects of one deployment that no schema sees: the ports the
// coordinator is told to listen on are the ones its Service and probes use, the Secrets and
// ConfigMaps the pods mount exist with the keys they name and lay out the key sets coupler
// reads, the workers and clients dial the Service, and every pod sees the shared filesystem at
// one path. Each rule mirrors what coupler itself would refuse or what Kubernetes would do.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { checkHardening } from "./hardening.mjs";
import { expand, flag, identityOf, keyCopies, mountOf, octal, parseCoupler, parseKeyText, projectedFiles, shownMode, valueOf,
  workloads } from "./pods.mjs";

function parseTcp(endpoint) {
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(endpoint ?? "");
  return m ? { host: m[1], port: Number(m[2]) } : null;
}

function isLoopback(host) {
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\./.test(host);
}

// Runs every rule over `objects` (what is applied together). `note(line)` receives what was
// checked; the returned list holds what failed, each message naming the object and the rule.
export function checkDeployment(objects, { sourceRoot, note = () => {} }) {
  const failures = [];
  const fail = (msg) => failures.push(msg);
  const byKey = new Map();
  for (const o of objects) {
    const key = `${o.kind}/${o.metadata?.name}`;
    if (byKey.has(key)) fail(`${key} is defined twice (${byKey.get(key).__source}, ${o.__source})`);
    byKey.set(key, o);
  }
  const get = (kind, name) => byKey.get(`${kind}/${name}`);

  // One namespace for everything, and it is created.
  const namespaces = new Set(objects.filter((o) => o.kind !== "Namespace").map((o) => o.metadata?.namespace ?? "(none)"));
  if (namespaces.size !== 1) fail(`objects span namespaces ${[...namespaces].join(", ")}: one is expected`);
  const ns = [...namespaces][0];
  if (!get("Namespace", ns)) fail(`no Namespace ${ns} among the objects`);
  else note(`every object is in namespace ${ns}, which is created`);

  const pods = workloads(objects);
  const roles = { coordinator: [], worker: [], client: [] };
  for (const w of pods) {
    checkPodWiring(w, get, fail, note);
    for (const c of w.spec.containers ?? []) {
      const x = expand(c, { "metadata.name": "<metadata.name>", "status.podIP": "<status.podIP>" });
      for (const v of x.missing) fail(`${w.name} container ${c.name}: $(${v}) is not in its env, so it reaches coupler as written`);
      const parsed = parseCoupler(x.argv);
      if (!parsed) continue;
      const entry = { w, c, x, parsed };
      if (parsed.sub === "coordinator") roles.coordinator.push(entry);
      else if (parsed.sub === "worker") roles.worker.push(entry);
      else roles.client.push(entry);
    }
  }

  for (const w of new Set([...roles.coordinator, ...roles.worker, ...roles.client].map((e) => e.w))) {
    checkUnprivileged(w, fail, note);
  }
  if (roles.coordinator.length !== 1) {
    fail(`expected exactly one coordinator container, found ${roles.coordinator.length}`);
    return failures;
  }
  const coord = checkCoordinator(roles.coordinator[0], objects, get, sourceRoot, fail, note);
  for (const entry of roles.worker) checkWorker(entry, coord, get, fail, note);
  for (const entry of roles.client) checkClient(entry, coord, get, fail, note);
  if (roles.worker.length === 0) fail("no worker Deployment runs `coupler worker`");
  checkShared([roles.coordinator[0], ...roles.worker, ...roles.client], get, fail, note);
  checkHardening(objects, pods, { coordinator: roles.coordinator[0].w, workers: [...new Set(roles.worker.map((e) => e.w))] },
                 fail, note);
  return failures;
}

// Selectors, volumes and mounts of one pod template.
function checkPodWiring(w, get, fail, note) {
  const { obj, spec, labels } = w;
  const match = obj.spec?.selector?.matchLabels;
  if (obj.kind !== "Job") {
    if (!match || Object.keys(match).length === 0) fail(`${w.name}: no selector.matchLabels`);
    for (const [k, v] of Object.entries(match ?? {})) {
      if (labels[k] !== v) fail(`${w.name}: selector ${k}=${v} does not match its pod labels`);
    }
  }
  const claimTemplates = new Set((obj.spec?.volumeClaimTemplates ?? []).map((t) => t.metadata?.name));
  const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
  const mounted = new Set();
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    if (!/:[^/]+$|@/.test(c.image ?? "")) fail(`${w.name} container ${c.name}: image ${c.image} has no tag (kustomize images)`);
    for (const m of c.volumeMounts ?? []) {
      mounted.add(m.name);
      if (!volumes.has(m.name) && !claimTemplates.has(m.name)) {
        fail(`${w.name} container ${c.name}: mounts volume ${m.name}, which the pod does not define`);
      }
    }
  }
  for (const name of [...volumes.keys(), ...claimTemplates]) {
    if (!mounted.has(name)) fail(`${w.name}: volume ${name} is mounted by no container`);
  }
  for (const v of volumes.values()) {
    const ref = v.secret
      ? { kind: "Secret", name: v.secret.secretName, source: v.secret }
      : v.configMap
        ? { kind: "ConfigMap", name: v.configMap.name, source: v.configMap }
        : v.persistentVolumeClaim
          ? { kind: "PersistentVolumeClaim", name: v.persistentVolumeClaim.claimName }
          : null;
    if (!ref) continue;
    const target = get(ref.kind, ref.name);
    if (!target) {
      fail(`${w.name}: volume ${v.name} needs ${ref.kind} ${ref.name}, which does not exist` +
           (ref.kind === "Secret" ? " (deploy/k8s/make-keys.sh makes the Secrets)" : ""));
      continue;
    }
    if (!ref.source) {
      note(`${w.name}: volume ${v.name} is claim ${ref.name}`);
      continue;
    }
    for (const item of ref.source.items ?? []) {
      if (valueOf(target, item.key) === undefined) {
        fail(`${w.name}: volume ${v.name} takes key ${item.key} of ${ref.kind} ${ref.name}, which has no such key`);
      }
    }
    if (ref.kind === "Secret") {
      for (const [rel, f] of projectedFiles(ref.source, target)) {
        // runtime/net/curve_keys.cc: a .key file anyone but its owner can read is refused. What
        // coupler sees is checked with the key sets (keySetAt); this is what the Secret says.
        if (rel.endsWith(".key") && (f.mode & 0o077) !== 0) {
          fail(`${w.name}: volume ${v.name} declares ${rel} with mode ${octal(f.mode)}: coupler refuses a secret ` +
               `key readable by group or others (use defaultMode: 0400)`);
        }
      }
    }
    note(`${w.name}: volume ${v.name} is ${ref.kind} ${ref.name} with every key it names`);
  }
}

// A key set directory as a container sees it: a Secret volume mounted exactly at `dir`, or an
// emptyDir there that an init container fills from such a Secret with coupler-copy-keys
// (deploy/k8s/copy-keys.sh: files 0400, owned by the init container's user).
function keySetAt(entry, dir, get, fail, what) {
  const { w, c } = entry;
  if (!dir) {
    fail(`${w.name} container ${c.name}: ${what} has no --keys (in a pod there is no local key note to fall back on)`);
    return null;
  }
  const m = mountOf(c, w.spec, dir);
  let volume = m?.rel === "" && m.volume?.secret ? m.volume : null;
  let copiedBy = null;
  if (m?.rel === "" && m.volume?.emptyDir) {
    const copy = keyCopies(w.spec).find(({ init, to }) => {
      const t = mountOf(init, w.spec, to);
      return t?.rel === "" && t.volume?.name === m.volume.name;
    });
    if (!copy) {
      fail(`${w.name} container ${c.name}: ${what} key directory ${dir} is an emptyDir that no init container ` +
           `fills (coupler-copy-keys FROM ${dir})`);
      return null;
    }
    const from = mountOf(copy.init, w.spec, copy.from);
    if (from?.rel !== "" || !from.volume?.secret) {
      fail(`${w.name} init container ${copy.init.name}: copies ${copy.from}, which is not a Secret volume's mountPath`);
      return null;
    }
    volume = from.volume;
    copiedBy = copy.init;
  }
  if (!volume) {
    fail(`${w.name} container ${c.name}: ${what} key directory ${dir} is not a Secret volume's mountPath ` +
         `(nor an emptyDir an init container copies one into)`);
    return null;
  }
  const secret = get("Secret", volume.secret.secretName);
  if (!secret) return null;  // reported with the volume
  const reader = copiedBy ?? c;
  const who = identityOf(reader, w.spec);
  const fsGroup = who.fsGroup;
  const files = new Map();
  let unreadable = null;
  for (const [rel, f] of projectedFiles(volume.secret, secret)) {
    const shown = shownMode(f.mode, w.spec);
    // The kubelet's files belong to root: another user reads them through the fsGroup or not at all.
    const readable = who.uid === 0 || (fsGroup !== undefined && (shown & 0o040) !== 0) || (shown & 0o004) !== 0;
    if (!readable) unreadable ??= `${rel} (mode ${octal(shown)})`;
    // The copy is made under umask 077.
    const mode = copiedBy ? shown & 0o700 : shown;
    if (!copiedBy && rel.endsWith(".key") && (mode & 0o077) !== 0) {
      fail(`${w.name} container ${c.name}: ${what} reads ${rel} straight from Secret ${secret.metadata.name}, which ` +
           `the kubelet shows with mode ${octal(mode)}${fsGroup !== undefined ? ` under the pod's fsGroup ${fsGroup}` : ""}: ` +
           `coupler refuses a secret key readable by group or others; copy it in an init container (coupler-copy-keys)`);
    }
    files.set(rel, { ...f, mode, key: parseKeyText(valueOf(secret, f.key)) });
  }
  if (unreadable) {
    fail(`${w.name} container ${reader.name}: runs as uid ${who.uid ?? "(the image's)"} and cannot read ${unreadable} ` +
         `of Secret ${secret.metadata.name}, owned by root: the pod needs an fsGroup`);
  }
  return { dir, files, secret: secret.metadata.name, copiedBy };
}

// What a coupler pod runs as: never root (a coordinator serves files for the clients it admits
// with its own rights), the claims writable through the fsGroup without the kubelet loosening
// every file at each mount, and nothing to gain or write beyond that.
function checkUnprivileged(w, fail, note) {
  const pod = w.spec.securityContext ?? {};
  const claims = (w.spec.volumes ?? []).some((v) => v.persistentVolumeClaim) ||
                 (w.obj.spec?.volumeClaimTemplates ?? []).length > 0;
  const bad = [];
  if (claims && pod.fsGroup === undefined) {
    bad.push(`no pod fsGroup: its claims are not writable by a non-root user`);
  } else if (pod.fsGroup !== undefined && pod.fsGroupChangePolicy !== "OnRootMismatch") {
    bad.push(`fsGroup without fsGroupChangePolicy: OnRootMismatch: the kubelet adds group access to every file ` +
             `of the claims at each mount, and a restarted coordinator refuses its own http-token`);
  }
  for (const c of [...(w.spec.initContainers ?? []), ...(w.spec.containers ?? [])]) {
    const who = identityOf(c, w.spec);
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}`;
    if (who.nonRoot !== true) bad.push(`${where}: runAsNonRoot is not true`);
    if (who.uid === undefined) bad.push(`${where}: no runAsUser (the image's user decides; name it, e.g. 10001)`);
    else if (who.uid === 0) bad.push(`${where}: runAsUser 0 runs as root`);
    if (who.gid === undefined) bad.push(`${where}: no runAsGroup (it would run with group root)`);
    else if (who.gid === 0) bad.push(`${where}: runAsGroup 0 is group root`);
    if (sc.allowPrivilegeEscalation !== false) bad.push(`${where}: allowPrivilegeEscalation is not false`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) bad.push(`${where}: capabilities do not drop ALL`);
    if (sc.readOnlyRootFilesystem !== true) bad.push(`${where}: readOnlyRootFilesystem is not true`);
  }
  for (const b of bad) fail(`${w.name}: securityContext: ${b}`);
  if (bad.length === 0) {
    note(`${w.name}: runs as uid ${pod.runAsUser} gid ${pod.runAsGroup} (fsGroup ${pod.fsGroup}), non-root, ` +
         `no privilege escalation, no capabilities, read-only root filesystem`);
  }
}

function checkCoordinator(entry, objects, get, sourceRoot, fail, note) {
  const { w, c, parsed } = entry;
  if (w.obj.kind !== "StatefulSet") fail(`${w.name}: the coordinator should be a StatefulSet (one pod, its own claim)`);
  if ((w.obj.spec.replicas ?? 1) !== 1) fail(`${w.name}: replicas must be 1: two coordinators would each run the jobs`);
  const listen = parseTcp(flag(parsed, "--listen"));
  if (!listen) {
    fail(`${w.name}: --listen must be tcp://HOST:PORT, is ${flag(parsed, "--listen")}`);
    return {};
  }
  const clients = parsed.flags["--clients"] ? parseTcp(flag(parsed, "--clients")) : { host: listen.host, port: listen.port + 1 };
  if (!clients) fail(`${w.name}: --clients must be tcp://HOST:PORT`);
  const httpArg = flag(parsed, "--http");
  const httpMatch = /^(.*):(\d+)$/.exec(httpArg ?? "");
  if (!httpMatch) fail(`${w.name}: --http HOST:PORT is needed for the probes, is ${httpArg}`);
  const http = httpMatch ? { host: httpMatch[1], port: Number(httpMatch[2]) } : { host: "", port: -1 };
  for (const [what, ep] of [["--listen", listen], ["--clients", clients], ["--http", http]]) {
    if (ep && isLoopback(ep.host)) fail(`${w.name}: ${what} on ${ep.host}: other pods cannot reach a loopback address`);
  }
  const tls = parsed.flags["--http-tls"];
  // coordinator/http/http_server.cc (CheckHttpAllowed): plaintext HTTP beyond loopback is refused.
  if (!isLoopback(http.host) && !tls && !parsed.flags["--insecure"]) {
    fail(`${w.name}: --http ${httpArg} without --http-tls: coupler refuses plaintext HTTP beyond loopback`);
  }
  if (tls) {
    for (const file of tls) {
      const m = file && mountOf(c, w.spec, file);
      const src = m?.volume?.secret;
      const secret = src && get("Secret", src.secretName);
      if (!m || !src || (secret && !projectedFiles(src, secret).has(m.rel))) {
        fail(`${w.name}: --http-tls file ${file} is not a file of a mounted Secret`);
      }
    }
    note(`${w.name}: --http-tls ${tls.join(" ")} are files of a mounted Secret`);
  }

  // The ports: named containerPorts carry exactly the numbers of the flags.
  const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
  const numbers = new Set((c.ports ?? []).map((p) => p.containerPort));
  for (const [what, ep] of [["--listen", listen], ["--clients", clients], ["--http", http]]) {
    if (ep && !numbers.has(ep.port)) fail(`${w.name}: ${what} port ${ep.port} is not a containerPort (${[...numbers].join(", ")})`);
  }
  const resolve = (p) => (typeof p === "string" ? ports.get(p) : p);

  // The Service: selects this pod and forwards exactly those three ports.
  const services = objects.filter(
    (o) => o.kind === "Service" && o.spec?.selector &&
      Object.entries(o.spec.selector).every(([k, v]) => w.labels[k] === v));
  if (services.length !== 1) fail(`${w.name}: ${services.length} Services select the coordinator's pods; expected 1`);
  const svc = services[0];
  const serviceOf = {};
  if (svc) {
    for (const p of svc.spec.ports ?? []) {
      const target = resolve(p.targetPort ?? p.port);
      if (target === undefined) fail(`Service/${svc.metadata.name} port ${p.name}: targetPort ${p.targetPort} names no containerPort`);
      for (const [what, ep] of [["workers", listen], ["clients", clients], ["http", http]]) {
        if (ep && target === ep.port) serviceOf[what] = p.port;
      }
      if (![listen?.port, clients?.port, http.port].includes(target)) {
        fail(`Service/${svc.metadata.name} port ${p.name} forwards to ${target}, where the coordinator does not listen`);
      }
    }
    for (const what of ["workers", "clients", "http"]) {
      if (serviceOf[what] === undefined) fail(`Service/${svc.metadata.name} does not forward the coordinator's ${what} port`);
    }
    // A client derives the client port as the workers port + 1 when --clients is not given.
    if (serviceOf.workers !== undefined && serviceOf.clients !== serviceOf.workers + 1) {
      fail(`Service/${svc.metadata.name}: the clients port ${serviceOf.clients} is not the workers port ${serviceOf.workers} + 1, ` +
           `which \`coupler submit --coordinator\` assumes`);
    }
    if (w.obj.spec.serviceName && !get("Service", w.obj.spec.serviceName)) {
      fail(`${w.name}: serviceName ${w.obj.spec.serviceName} is no Service`);
    }
    note(`Service/${svc.metadata.name}: ports ${JSON.stringify(serviceOf)} forward to --listen ${listen.port}, ` +
         `--clients ${clients?.port}, --http ${http.port}`);
  }

  // Probes on the HTTP port, on a route that needs no token.
  const routes = sourceRoot ? fs.readFileSync(path.join(sourceRoot, "coordinator/http/api_routes.cc"), "utf8") : "";
  for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"]) {
    const probe = c[kind];
    if (!probe) {
      if (kind !== "startupProbe") fail(`${w.name}: no ${kind}`);
      continue;
    }
    const g = probe.httpGet;
    if (!g) {
      fail(`${w.name}: ${kind} is not an httpGet`);
      continue;
    }
    // Readiness is /readyz (503 while dispatch is stopped, e.g. on a full state disk); liveness
    // and startup are /healthz (a full disk is no reason to restart).
    const want = kind === "readinessProbe" ? "/readyz" : "/healthz";
    if (g.path !== want) {
      fail(`${w.name}: ${kind} asks ${g.path}; the coordinator's ${kind === "readinessProbe" ? "readiness" : "health"} route is ${want}`);
    }
    // Every route but /healthz and /readyz is Guarded (needs the token): the kubelet sends none.
    const escaped = (g.path ?? "").replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    if (sourceRoot && !new RegExp(`server\\.Get\\("${escaped}",\\s*\\[`).test(routes)) {
      fail(`${w.name}: ${kind} path ${g.path} is not a token-free route of coordinator/http/api_routes.cc`);
    }
    if (resolve(g.port) !== http.port) fail(`${w.name}: ${kind} port ${g.port} is not the --http port ${http.port}`);
    const scheme = g.scheme ?? "HTTP";
    if (scheme !== (tls ? "HTTPS" : "HTTP")) fail(`${w.name}: ${kind} scheme ${scheme}, but the coordinator serves ${tls ? "HTTPS" : "HTTP"}`);
    note(`${w.name}: ${kind} GET ${scheme} ${g.path} on port ${resolve(g.port)}`);
  }

  // The state on a claim, written by the coordinator.
  const state = flag(parsed, "--state");
  const sm = state && mountOf(c, w.spec, state);
  const claims = new Set((w.obj.spec.volumeClaimTemplates ?? []).map((t) => t.metadata?.name));
  if (!sm || !(claims.has(sm.mount.name) || sm.volume?.persistentVolumeClaim)) {
    fail(`${w.name}: --state ${state} is not on a PersistentVolumeClaim: a restarted pod would start empty`);
  } else if (sm.mount.readOnly) {
    fail(`${w.name}: --state ${state} is on a read-only mount`);
  } else {
    note(`${w.name}: --state ${state} is on claim ${sm.mount.name}`);
  }

  // The key set: coordinator.key + .pub and the allow-lists.
  const keys = keySetAt(entry, flag(parsed, "--keys"), get, fail, "the coordinator");
  const allowed = { workers: new Set(), clients: new Set(), admins: new Set() };
  if (keys) {
    const own = keys.files.get("coordinator.key")?.key;
    const pub = keys.files.get("coordinator.pub")?.key;
    if (!own || own.role !== "coordinator" || !own.secret) fail(`${w.name}: ${keys.dir}/coordinator.key is not a coordinator key pair`);
    if (!pub || pub.public !== own?.public) fail(`${w.name}: ${keys.dir}/coordinator.pub is not coordinator.key's public half`);
    for (const [rel, f] of keys.files) {
      const m = /^authorized\/(workers|clients|admins)\/([^/]+)\.pub$/.exec(rel);
      if (m) allowed[m[1]].add(f.key.public);
      else if (rel.startsWith("authorized/")) fail(`${w.name}: ${keys.dir}/${rel} is no allow-list file (authorized/{workers,clients,admins}/NAME.pub)`);
    }
    for (const list of ["workers", "clients"]) {
      if (allowed[list].size === 0) fail(`${w.name}: ${keys.dir}/authorized/${list}/ is empty: no ${list} would be admitted`);
    }
    note(`${w.name}: --keys ${keys.dir} (Secret ${keys.secret}) holds coordinator.key, coordinator.pub and ` +
         `${allowed.workers.size} worker, ${allowed.clients.size} client, ${allowed.admins.size} admin key(s)`);
  }
  const coord = { w, c, listen, clients, http, svc, serviceOf, ns: w.obj.metadata.namespace, allowed, publicKey: keys?.files.get("coordinator.key")?.key.public };
  // COUPLER_KEYS in the coordinator's container: a client key set for `kubectl exec ... coupler drain`.
  const envKeys = entry.x.env.COUPLER_KEYS;
  if (envKeys) {
    checkPeerKeys({ ...entry }, envKeys, "client", coord, get, fail, note, true);
    // `kubectl exec ... coupler drain POD` gives no --coordinator: the clients' default,
    // tcp://127.0.0.1:7100 (its clients at 7101), must be where this coordinator listens.
    if (listen.port !== 7100 || clients?.port !== 7101) {
      fail(`${w.name}: commands run in the pod (COUPLER_KEYS) dial the default tcp://127.0.0.1:7100 and 7101, ` +
           `but the coordinator listens on ${listen.port} and ${clients?.port}`);
    }
  }
  return coord;
}

// A worker's or client's key set: one NAME.key of `role`, coordinator.pub of this coordinator,
// and a public key the coordinator admits.
function checkPeerKeys(entry, dir, role, coord, get, fail, note, admin = false) {
  const { w, c } = entry;
  const keys = keySetAt(entry, dir, get, fail, `the ${role}`);
  if (!keys) return;
  const own = [...keys.files].filter(([rel]) => !rel.includes("/") && rel.endsWith(".key"));
  if (own.length !== 1) fail(`${w.name} container ${c.name}: ${dir} shows ${own.length} .key files; coupler wants exactly one`);
  const key = own[0]?.[1].key;
  if (key && key.role !== role) fail(`${w.name} container ${c.name}: ${dir}/${own[0][0]} is a ${key.role} key, not a ${role} key`);
  const server = keys.files.get("coordinator.pub")?.key;
  if (!server) fail(`${w.name} container ${c.name}: no coordinator.pub in ${dir}`);
  else if (coord.publicKey && server.public !== coord.publicKey) {
    fail(`${w.name} container ${c.name}: ${dir}/coordinator.pub is not the coordinator's key`);
  }
  const list = role === "worker" ? "workers" : "clients";
  if (key && coord.allowed && !coord.allowed[list].has(key.public)) {
    fail(`${w.name} container ${c.name}: its ${role} key is not in the coordinator's authorized/${list}/`);
  }
  if (admin && key && coord.allowed && !coord.allowed.admins.has(key.public)) {
    fail(`${w.name} container ${c.name}: the key in ${dir} is not an admin (authorized/admins/): drain would be refused`);
  }
  if (key) note(`${w.name} container ${c.name}: ${dir} (Secret ${keys.secret}) is a ${role} key set the coordinator admits`);
}

// --coordinator names the Service and its workers port.
function checkDial(entry, coord, fail, note) {
  const { w, c, parsed } = entry;
  const arg = flag(parsed, "--coordinator");
  const ep = parseTcp(arg);
  if (!ep || !coord.svc) {
    fail(`${w.name} container ${c.name}: --coordinator must be tcp://SERVICE:PORT, is ${arg}`);
    return;
  }
  const name = coord.svc.metadata.name;
  const dns = [name, `${name}.${coord.ns}`, `${name}.${coord.ns}.svc`, `${name}.${coord.ns}.svc.cluster.local`];
  if (!dns.includes(ep.host)) fail(`${w.name} container ${c.name}: --coordinator host ${ep.host} is not Service ${name}`);
  if (ep.port !== coord.serviceOf.workers) {
    fail(`${w.name} container ${c.name}: --coordinator port ${ep.port} is not the Service's workers port ${coord.serviceOf.workers}`);
  }
  if (parsed.flags["--clients"]) fail(`${w.name} container ${c.name}: --clients is derived from --coordinator; drop it`);
  note(`${w.name} container ${c.name}: --coordinator ${arg} is Service ${name}'s workers port`);
}

function cpuCores(q) {
  if (q === undefined) return undefined;
  const s = String(q);
  return s.endsWith("m") ? Number(s.slice(0, -1)) / 1000 : Number(s);
}

function checkWorker(entry, coord, get, fail, note) {
  const { w, c, parsed } = entry;
  if (w.obj.kind !== "Deployment") fail(`${w.name}: workers should be a Deployment (kubectl scale)`);
  checkDial(entry, coord, fail, note);
  checkPeerKeys(entry, flag(parsed, "--keys"), "worker", coord, get, fail, note);
  if (flag(parsed, "--id") !== "<metadata.name>") {
    fail(`${w.name}: --id is ${flag(parsed, "--id")}, not the pod name (downward API metadata.name): coupler drain POD would not find it`);
  }
  if (flag(parsed, "--advertise") !== "<status.podIP>") {
    fail(`${w.name}: --advertise is ${flag(parsed, "--advertise")}, not the pod IP (downward API status.podIP)`);
  }
  const slots = Number(flag(parsed, "--slots"));
  const cpus = cpuCores(c.resources?.requests?.cpu);
  if (!Number.isInteger(slots) || slots < 1) fail(`${w.name}: --slots ${flag(parsed, "--slots")} is not a count (a container sees the node's CPUs)`);
  else if (cpus !== undefined && slots > cpus) fail(`${w.name}: --slots ${slots} exceeds the CPU request ${cpus}`);
  const gpusLimit = Number(c.resources?.limits?.["nvidia.com/gpu"] ?? 0);
  const gpus = flag(parsed, "--gpus") ?? "all";
  if (gpusLimit > 0 && gpus === "none") fail(`${w.name}: asks for ${gpusLimit} nvidia.com/gpu but runs --gpus none`);
  if (gpusLimit === 0 && gpus !== "none") fail(`${w.name}: --gpus ${gpus} with no nvidia.com/gpu limit: the pod gets no GPU`);
  if (w.spec.terminationGracePeriodSeconds === undefined) fail(`${w.name}: no terminationGracePeriodSeconds: a drain gets 30 s`);
  note(`${w.name}: --id = pod name, --advertise = pod IP, --slots ${slots} (CPU request ${cpus}), --gpus ${gpus} (nvidia.com/gpu ${gpusLimit})`);
}

function checkClient(entry, coord, get, fail, note) {
  const { w, c, parsed } = entry;
  checkDial(entry, coord, fail, note);
  checkPeerKeys(entry, flag(parsed, "--keys"), "client", coord, get, fail, note);
  if (parsed.sub !== "submit") return;
  const specPath = parsed.positional[0];
  const m = specPath && mountOf(c, w.spec, specPath);
  const cm = m?.volume?.configMap && get("ConfigMap", m.volume.configMap.name);
  const file = cm && projectedFiles(m.volume.configMap, cm).get(m.rel);
  if (!file) {
    fail(`${w.name}: the spec ${specPath} is not a file of a mounted ConfigMap`);
    return;
  }
  let spec;
  try {
    spec = YAML.parse(valueOf(cm, file.key), { version: "1.1" });
  } catch (e) {
    fail(`${w.name}: the spec in ConfigMap ${cm.metadata.name} key ${file.key} is not YAML: ${e.message}`);
    return;
  }
  // Relative paths resolve from the spec's folder (the ConfigMap's, seen by this pod only);
  // submit checks inputs exist here, the coordinator and workers then use the same paths:
  // absolute, on the filesystem all of them mount.
  const nodeIds = new Set((spec.nodes ?? []).map((n) => n.id));
  const paths = [["workdir", spec.workdir]];
  for (const n of spec.nodes ?? []) {
    for (const i of n.inputs ?? []) if (!nodeIds.has(i)) paths.push([`node ${n.id} input`, i]);
    if (n.op === "train" && n.params?.config !== undefined) paths.push([`node ${n.id} params.config`, n.params.config]);
  }
  entry.specPaths = [];
  for (const [what, p] of paths) {
    if (typeof p !== "string" || !p.startsWith("/")) {
      fail(`${w.name}: spec ${what} ${p} is not an absolute path (relative paths resolve inside the ConfigMap's folder)`);
      continue;
    }
    entry.specPaths.push([what, p]);
  }
  note(`${w.name}: the spec ${specPath} is key ${file.key} of ConfigMap ${cm.metadata.name}; its paths are absolute`);
}

// The ReadWriteMany claim: mounted at one path by the coordinator, the workers and the
// submitters, and the spec's paths live there.
function checkShared(entries, get, fail, note) {
  const seenAt = new Map();  // claim -> mountPath -> [who]
  for (const { w, c } of entries) {
    for (const m of c.volumeMounts ?? []) {
      const v = (w.spec.volumes ?? []).find((x) => x.name === m.name);
      const claim = v?.persistentVolumeClaim?.claimName;
      if (!claim) continue;
      const pvc = get("PersistentVolumeClaim", claim);
      if (!pvc?.spec?.accessModes?.includes("ReadWriteMany")) continue;
      if (!seenAt.has(claim)) seenAt.set(claim, new Map());
      const at = seenAt.get(claim);
      if (!at.has(m.mountPath)) at.set(m.mountPath, []);
      at.get(m.mountPath).push(`${w.name}/${c.name}`);
    }
  }
  if (seenAt.size === 0) {
    fail("no ReadWriteMany PersistentVolumeClaim is mounted: coupler needs one filesystem for all pods");
    return;
  }
  for (const [claim, at] of seenAt) {
    if (at.size !== 1) fail(`claim ${claim} is mounted at different paths: ${JSON.stringify(Object.fromEntries(at))}`);
  }
  const [claim, at] = [...seenAt][0];
  const mountPath = [...at.keys()][0];
  const who = new Set([...at.values()].flat());
  for (const { w, c } of entries) {
    if (!who.has(`${w.name}/${c.name}`)) fail(`${w.name} container ${c.name} does not mount the shared claim ${claim}`);
  }
  for (const e of entries) {
    for (const [what, p] of e.specPaths ?? []) {
      if (!(p === mountPath || p.startsWith(mountPath + "/"))) {
        fail(`${e.w.name}: spec ${what} ${p} is not on the shared claim ${claim} (${mountPath})`);
      }
    }
  }
  note(`claim ${claim} (ReadWriteMany) is mounted at ${mountPath} by ${[...who].join(", ")}`);
}
