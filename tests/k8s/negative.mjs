// Proves check.mjs can fail: each case below breaks one thing in a copy of the manifests (or of
// the Secrets) the way an edit could, runs the checker on the copy and expects exit status 1
// with the message naming the problem. The unbroken copy must pass first, so each failure is
// the mutation's.
//   node tests/k8s/negative.mjs --secrets FILE --source ROOT DEPLOY_DIR
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let secrets = null;
let source = null;
let deployDir = null;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--secrets") secrets = args[++i];
  else if (args[i] === "--source") source = args[++i];
  else deployDir = path.resolve(args[i]);
}
if (!secrets || !source || !deployDir) {
  console.error("usage: node negative.mjs --secrets FILE --source ROOT DEPLOY_DIR");
  process.exit(2);
}

// A replacement of the first `from` (which must be there: a stale case would prove nothing).
const CASES = [
  { name: "a containerPort that --listen does not use", file: "base/coordinator-statefulset.yaml",
    from: "containerPort: 7100", to: "containerPort: 7200", expect: "--listen port 7100 is not a containerPort" },
  { name: "--listen on a port the Service does not forward", file: "base/coordinator-statefulset.yaml",
    from: "tcp://0.0.0.0:7100", to: "tcp://0.0.0.0:7300", expect: "--listen port 7300 is not a containerPort" },
  { name: "a Service targetPort where nothing listens", file: "base/coordinator-service.yaml",
    from: "targetPort: clients", to: "targetPort: 7102", expect: "forwards to 7102, where the coordinator does not listen" },
  { name: "a Secret name nobody makes", file: "base/worker-deployment.yaml",
    from: "secretName: coupler-worker-keys", to: "secretName: coupler-worker-key",
    expect: "needs Secret coupler-worker-key, which does not exist" },
  { name: "an item key the Secret does not have", file: "base/coordinator-statefulset.yaml",
    from: "- key: worker.pub", to: "- key: workers.pub", expect: "takes key workers.pub of Secret coupler-coordinator-keys, which has no such key" },
  { name: "an allow-list at the wrong path", file: "base/coordinator-statefulset.yaml",
    from: "path: authorized/workers/worker.pub", to: "path: authorized/worker/worker.pub",
    expect: "authorized/workers/ is empty" },
  { name: "a probe on a route that does not exist", file: "base/coordinator-statefulset.yaml",
    from: "path: /healthz", to: "path: /health", expect: "the coordinator's health route is /healthz" },
  { name: "a readiness probe that passes while dispatch is stopped", file: "base/coordinator-statefulset.yaml",
    from: "path: /readyz", to: "path: /healthz", expect: "the coordinator's readiness route is /readyz" },
  { name: "a probe on a route that needs the token", file: "base/coordinator-statefulset.yaml",
    from: "path: /healthz", to: "path: /metrics", expect: "is not a token-free route" },
  { name: "a plaintext probe on the HTTPS port", file: "base/coordinator-statefulset.yaml",
    from: "scheme: HTTPS", to: "scheme: HTTP", expect: "scheme HTTP, but the coordinator serves HTTPS" },
  { name: "HTTP beyond loopback without TLS", file: "base/coordinator-statefulset.yaml",
    from: "            - --http-tls\n            - /etc/coupler/tls/tls.crt\n            - /etc/coupler/tls/tls.key\n", to: "",
    expect: "coupler refuses plaintext HTTP beyond loopback" },
  { name: "a group-readable secret key", file: "base/worker-deployment.yaml",
    from: "defaultMode: 0400", to: "defaultMode: 0440", expect: "declares worker.key with mode 0440" },
  { name: "a mode written in decimal (400 is 0620)", file: "base/worker-deployment.yaml",
    from: "defaultMode: 0400", to: "defaultMode: 400", expect: "declares worker.key with mode 0620" },
  // Hardening (lib/hardening.mjs): each piece removed.
  { name: "the API token mounted", file: "base/service-account.yaml",
    from: "automountServiceAccountToken: false", to: "automountServiceAccountToken: true",
    expect: "mounts a Kubernetes API token" },
  { name: "workers on the default ServiceAccount", file: "base/worker-deployment.yaml",
    from: "      serviceAccountName: coupler\n", to: "", expect: "runs as the namespace's default ServiceAccount" },
  { name: "no default-deny NetworkPolicy", file: "base/network-policies.yaml",
    from: "  name: coupler-default-deny\nspec:\n  podSelector: {}\n", to: "  name: coupler-default-deny\nspec:\n  podSelector:\n    matchLabels: {app: none}\n",
    expect: "no NetworkPolicy denies ingress by default" },
  { name: "the coordinator's client port closed", file: "base/network-policies.yaml",
    from: "        - port: 7101\n          protocol: TCP\n", to: "", expect: "no NetworkPolicy admits its port clients (7101)" },
  { name: "workers closed to each other", file: "base/network-policies.yaml",
    from: "              app.kubernetes.io/component: worker", to: "              app.kubernetes.io/component: coordinator",
    expect: "no NetworkPolicy admits the other workers on every port" },
  { name: "no PodDisruptionBudget for workers", file: "base/worker-pdb.yaml",
    from: "      app.kubernetes.io/component: worker", to: "      app.kubernetes.io/component: workers",
    expect: "no PodDisruptionBudget selects its pods" },
  { name: "no /dev/shm for gangs", file: "base/worker-deployment.yaml",
    from: "            medium: Memory\n            sizeLimit: 1Gi\n", to: "            sizeLimit: 1Gi\n",
    expect: "no RAM-backed /dev/shm" },
  { name: "an unbounded client", file: "submit/submit-job.yaml",
    from: "            limits:\n              memory: 256Mi\n", to: "",
    expect: "container submit: no memory limit" },
  { name: "GPU pods on any node", file: "overlays/gpu/worker-gpu.yaml",
    from: "                  - key: nvidia.com/gpu.present", to: "                  - key: gpu",
    expect: "has no required node affinity to nodes labelled nvidia.com/gpu.present" },
  // Unprivileged: each thing the coordinator's pod sets to run as an ordinary user, removed.
  { name: "the coordinator without runAsNonRoot", file: "base/coordinator-statefulset.yaml",
    from: "        runAsNonRoot: true\n", to: "",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: runAsNonRoot is not true" },
  { name: "the coordinator without runAsUser (the image decides)", file: "base/coordinator-statefulset.yaml",
    from: "        runAsUser: 10001\n", to: "",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: no runAsUser" },
  { name: "the coordinator as root", file: "base/coordinator-statefulset.yaml",
    from: "        runAsUser: 10001\n", to: "        runAsUser: 0\n",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: runAsUser 0 runs as root" },
  { name: "the coordinator without runAsGroup", file: "base/coordinator-statefulset.yaml",
    from: "        runAsGroup: 10001\n", to: "",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: no runAsGroup" },
  { name: "the coordinator without fsGroup (its state claim not writable)", file: "base/coordinator-statefulset.yaml",
    from: "        fsGroup: 10001\n        fsGroupChangePolicy: OnRootMismatch\n", to: "",
    expect: "StatefulSet/coupler-coordinator: securityContext: no pod fsGroup" },
  { name: "the coordinator's fsGroup applied to every file at each mount", file: "base/coordinator-statefulset.yaml",
    from: "        fsGroupChangePolicy: OnRootMismatch\n", to: "",
    expect: "StatefulSet/coupler-coordinator: securityContext: fsGroup without fsGroupChangePolicy: OnRootMismatch" },
  { name: "the coordinator allowed privilege escalation", file: "base/coordinator-statefulset.yaml",
    from: "nothing in the image.\n          securityContext:\n            allowPrivilegeEscalation: false\n",
    to: "nothing in the image.\n          securityContext:\n",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: allowPrivilegeEscalation is not false" },
  { name: "the coordinator with a writable root filesystem", file: "base/coordinator-statefulset.yaml",
    from: "            readOnlyRootFilesystem: true\n            capabilities:\n              drop: [ALL]\n          ports:",
    to: "            capabilities:\n              drop: [ALL]\n          ports:",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: readOnlyRootFilesystem is not true" },
  { name: "the coordinator keeping its capabilities", file: "base/coordinator-statefulset.yaml",
    from: "            capabilities:\n              drop: [ALL]\n          ports:", to: "          ports:",
    expect: "StatefulSet/coupler-coordinator: securityContext: container coordinator: capabilities do not drop ALL" },
  { name: "the key copy running as root", file: "base/coordinator-statefulset.yaml",
    from: "            allowPrivilegeEscalation: false\n", to: "            runAsUser: 0\n            allowPrivilegeEscalation: false\n",
    expect: "securityContext: container copy-keys: runAsUser 0 runs as root" },
  { name: "a worker as root", file: "base/worker-deployment.yaml",
    from: "        runAsUser: 10001\n", to: "        runAsUser: 0\n",
    expect: "Deployment/coupler-worker: securityContext: container worker: runAsUser 0 runs as root" },
  { name: "the coordinator reading its keys straight from the Secret", file: "base/coordinator-statefulset.yaml",
    from: "- name: keys\n              mountPath: /etc/coupler/keys\n              readOnly: true",
    to: "- name: keys-secret\n              mountPath: /etc/coupler/keys\n              readOnly: true",
    expect: "reads coordinator.key straight from Secret coupler-coordinator-keys, which the kubelet shows with mode 0440 under the pod's fsGroup" },
  { name: "a key folder no init container fills", file: "base/worker-deployment.yaml",
    from: "args: [/etc/coupler/secrets/keys, /etc/coupler/keys]", to: "args: [/etc/coupler/secrets/keys, /tmp]",
    expect: "key directory /etc/coupler/keys is an emptyDir that no init container fills" },
  { name: "workers dialling another name", file: "base/worker-deployment.yaml",
    from: "tcp://coupler-coordinator:7100", to: "tcp://coupler-coord:7100", expect: "is not Service coupler-coordinator" },
  { name: "workers dialling the clients port", file: "base/worker-deployment.yaml",
    from: "tcp://coupler-coordinator:7100", to: "tcp://coupler-coordinator:7101", expect: "is not the Service's workers port" },
  { name: "an env variable the container lacks", file: "base/worker-deployment.yaml",
    from: "- $(POD_NAME)", to: "- $(POD_NAMES)", expect: "$(POD_NAMES) is not in its env" },
  { name: "a worker id that is not the pod name", file: "base/worker-deployment.yaml",
    from: "fieldPath: metadata.name", to: "fieldPath: spec.nodeName", expect: "not the pod name" },
  { name: "a schema violation", file: "base/worker-deployment.yaml",
    from: "replicas: 2", to: "replicas: two", expect: "schema: /spec/replicas must be integer" },
  { name: "state off the claim", file: "base/coordinator-statefulset.yaml",
    from: "- /var/lib/coupler/state", to: "- /tmp/state", expect: "is not on a PersistentVolumeClaim" },
  { name: "the shared claim at another path in the Job", file: "submit/submit-job.yaml",
    from: "mountPath: /shared", to: "mountPath: /data", expect: "is mounted at different paths" },
  { name: "a relative workdir in the spec", file: "submit/example-spec.yaml",
    from: "workdir: /shared/work/k8s-example", to: "workdir: work/k8s-example", expect: "is not an absolute path" },
  { name: "an overlay patching a Deployment that does not exist", file: "overlays/gpu/worker-gpu.yaml",
    from: "name: coupler-worker", to: "name: coupler-workers", expect: "patches Deployment/coupler-workers" },
  { name: "a GPU worker without a GPU limit", file: "overlays/gpu/worker-gpu.yaml",
    from: "          resources:\n            limits:\n              nvidia.com/gpu: 1\n", to: "",
    expect: "--gpus all with no nvidia.com/gpu limit" },
  { name: "a file no kustomization applies", add: "base/extra-service.yaml",
    text: "apiVersion: v1\nkind: Service\nmetadata:\n  name: extra\nspec:\n  ports: [{port: 1}]\n", expect: "base/extra-service.yaml is in no kustomization" },
  { name: "a worker key the coordinator does not admit", secrets: true,
    edit: (text) => {
      // The coordinator's allow-list gets the client's public key in place of the worker's.
      const client = /^  client\.pub: (\S+)$/m.exec(text)[1];
      return text.replace(/^  worker\.pub: \S+$/m, `  worker.pub: ${client}`);
    }, expect: "its worker key is not in the coordinator's authorized/workers/" },
];

function checkArgs(dir, secretsFile) {
  return [path.join(here, "check.mjs"), "--secrets", secretsFile, "--source", source, dir];
}

function runCheck(dir, secretsFile) {
  const r = spawnSync(process.execPath, checkArgs(dir, secretsFile), { encoding: "utf8", timeout: 120_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

// The same, without blocking: the cases run a few at a time, as each checker mostly waits.
function runCheckAsync(dir, secretsFile) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, checkArgs(dir, secretsFile), { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { out += d; });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, out });
    });
  });
}
const PARALLEL = 4;

const work = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), "coupler-k8s-neg-"));
let bad = 0;
try {
  const pristine = path.join(work, "pristine");
  fs.cpSync(deployDir, pristine, { recursive: true });
  const base = runCheck(pristine, secrets);
  if (base.status !== 0) {
    console.log(`FAIL  the unmodified copy does not pass, so no case below would prove anything:\n${base.out}`);
    process.exit(1);
  }
  console.log("ok    the unmodified copy passes");
  const runs = [];  // [case, dir, secrets file], in order
  CASES.forEach((c, i) => {
    const dir = path.join(work, `case-${i}`);
    fs.cpSync(deployDir, dir, { recursive: true });
    let secretsFile = secrets;
    if (c.add) {
      fs.writeFileSync(path.join(dir, c.add), c.text);
    } else if (c.secrets) {
      secretsFile = path.join(work, `case-${i}-secrets.yaml`);
      const text = fs.readFileSync(secrets, "utf8");
      const edited = c.edit(text);
      if (edited === text) throw new Error(`case "${c.name}": the edit changed nothing`);
      fs.writeFileSync(secretsFile, edited);
    } else {
      const file = path.join(dir, c.file);
      const text = fs.readFileSync(file, "utf8");
      if (!text.includes(c.from)) {
        console.log(`FAIL  case "${c.name}": ${c.file} no longer holds ${JSON.stringify(c.from)}; update the case`);
        ++bad;
        return;
      }
      fs.writeFileSync(file, text.replace(c.from, c.to));
    }
    runs.push([c, dir, secretsFile]);
  });
  const results = new Array(runs.length);
  let next = 0;
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    while (next < runs.length) {
      const i = next++;
      results[i] = await runCheckAsync(runs[i][1], runs[i][2]);
    }
  }));
  runs.forEach(([c], i) => {
    const r = results[i];
    if (r.status === 1 && r.out.includes(c.expect)) {
      console.log(`ok    ${c.name}: refused (${c.expect})`);
    } else {
      ++bad;
      console.log(`FAIL  ${c.name}: expected exit 1 and "${c.expect}", got exit ${r.status}:\n${r.out}`);
    }
  });
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
if (bad > 0) {
  console.log(`${bad} of ${CASES.length} broken copies were not refused as expected`);
  process.exit(1);
}
console.log(`all ${CASES.length} broken copies were refused`);
