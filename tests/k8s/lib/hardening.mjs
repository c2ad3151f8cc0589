// What an operator's security review asks of the manifests beyond their wiring: no pod holds a
// Kubernetes API credential (the pool needs none; docs/security.md's threat model has tenants
// running code in worker pods), the network admits only the pool's own traffic, voluntary
// evictions take workers one at a time, every container is bounded, gangs have the shared
// memory NCCL and MPI use, and GPU pods land on GPU nodes. Each rule fails on its own removal
// (tests/k8s/negative.mjs).

// Does a label selector (matchLabels, matchExpressions with In/Exists) select `labels`?
function selects(selector, labels) {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    if (e.operator === "In" && !(e.values ?? []).includes(labels[e.key])) return false;
    if (e.operator === "Exists" && !(e.key in labels)) return false;
    if (e.operator === "NotIn" && (e.values ?? []).includes(labels[e.key])) return false;
    if (e.operator === "DoesNotExist" && e.key in labels) return false;
  }
  return true;
}

const memoryMi = (q) => {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti)?$/.exec(String(q ?? ""));
  if (!m) return 0;
  const scale = { Ki: 1 / 1024, Mi: 1, Gi: 1024, Ti: 1024 * 1024 }[m[2]] ?? 1 / (1024 * 1024);
  return Number(m[1]) * scale;
};

// `pods`: workloads(objects); `workers`: the workloads running `coupler worker`; `coordinator`:
// the one running the coordinator.
export function checkHardening(objects, pods, { coordinator, workers }, fail, note) {
  const byKind = (kind) => objects.filter((o) => o.kind === kind);

  // No API credential in any pod: a ServiceAccount of the pool's own, its token not mounted,
  // and nothing binding it to a Role.
  const accounts = new Map(byKind("ServiceAccount").map((a) => [a.metadata.name, a]));
  for (const w of pods) {
    const name = w.spec.serviceAccountName;
    if (!name || name === "default") {
      fail(`${w.name}: runs as the namespace's default ServiceAccount; give it the pool's own (serviceAccountName), with no API rights`);
      continue;
    }
    const account = accounts.get(name);
    if (!account) fail(`${w.name}: serviceAccountName ${name} is no ServiceAccount among the objects`);
    const automount = w.spec.automountServiceAccountToken ?? account?.automountServiceAccountToken ?? true;
    if (automount !== false) {
      fail(`${w.name}: mounts a Kubernetes API token (automountServiceAccountToken is not false): a task could use it`);
    }
  }
  for (const b of [...byKind("RoleBinding"), ...byKind("ClusterRoleBinding")]) {
    for (const s of b.subjects ?? []) {
      if (s.kind === "ServiceAccount" && accounts.has(s.name)) {
        fail(`${b.kind}/${b.metadata.name} grants API rights to ServiceAccount ${s.name}: the pool needs none`);
      }
    }
  }
  note(`every pod runs as its own ServiceAccount, with no API token mounted and no Role bound`);

  // The network: deny by default, then the pool's own ports.
  const policies = byKind("NetworkPolicy");
  const admitsIngress = (p) => (p.spec?.policyTypes ?? ["Ingress"]).includes("Ingress");
  const denyAll = policies.find((p) => admitsIngress(p) && Object.keys(p.spec?.podSelector ?? {}).length === 0 &&
                                  (p.spec?.ingress ?? []).length === 0);
  if (!denyAll) fail(`no NetworkPolicy denies ingress by default (podSelector {} with no ingress rules): every pod is open to the cluster`);
  const rulesFor = (w) => policies.filter((p) => admitsIngress(p) && selects(p.spec?.podSelector, w.labels))
    .flatMap((p) => p.spec?.ingress ?? []);
  if (coordinator) {
    const rules = rulesFor(coordinator);
    for (const c of coordinator.spec.containers ?? []) {
      for (const port of c.ports ?? []) {
        const admitted = rules.some((r) => (r.ports ?? []).some((p) => p.port === port.containerPort || p.port === port.name));
        if (!admitted) fail(`${coordinator.name}: no NetworkPolicy admits its port ${port.name ?? port.containerPort} (${port.containerPort})`);
      }
    }
  }
  for (const w of workers) {
    const fromWorkers = rulesFor(w).some((r) => (r.from ?? []).some((f) => f.podSelector && selects(f.podSelector, w.labels)) &&
                                                 !(r.ports?.length));
    if (!fromWorkers) {
      fail(`${w.name}: no NetworkPolicy admits the other workers on every port: a gang's ranks (MPI, NCCL) could not reach each other`);
    }
  }
  note(`NetworkPolicies deny ingress by default and admit the coordinator's ports and worker-to-worker traffic`);

  // Voluntary disruptions (node drains) take workers a few at a time.
  for (const w of workers) {
    const pdb = byKind("PodDisruptionBudget").find((p) => selects(p.spec?.selector, w.labels));
    if (!pdb) fail(`${w.name}: no PodDisruptionBudget selects its pods: a node drain may evict every worker at once`);
    else if (pdb.spec.maxUnavailable === undefined && pdb.spec.minAvailable === undefined) {
      fail(`PodDisruptionBudget/${pdb.metadata.name} sets neither maxUnavailable nor minAvailable`);
    }
  }

  // Bounded containers: requests to be placed, a memory limit to be contained.
  for (const w of pods) {
    for (const c of [...(w.spec.initContainers ?? []), ...(w.spec.containers ?? [])]) {
      if (w.spec.initContainers?.includes(c)) continue;  // an init container shares the pod's
      const r = c.resources ?? {};
      if (!r.requests?.cpu || !r.requests?.memory) fail(`${w.name} container ${c.name}: no cpu and memory requests`);
      if (!r.limits?.memory) fail(`${w.name} container ${c.name}: no memory limit`);
    }
  }

  // Shared memory for gangs: a RAM-backed /dev/shm, sized (the runtime's default is 64 MiB).
  for (const w of workers) {
    const containers = w.spec.containers ?? [];
    for (const c of containers) {
      const m = (c.volumeMounts ?? []).find((v) => v.mountPath === "/dev/shm");
      const vol = m && (w.spec.volumes ?? []).find((v) => v.name === m.name);
      if (!vol?.emptyDir || vol.emptyDir.medium !== "Memory") {
        fail(`${w.name} container ${c.name}: no RAM-backed /dev/shm (an emptyDir of medium Memory): NCCL and MPI's shared-memory transport get the runtime's 64 MiB`);
      } else if (memoryMi(vol.emptyDir.sizeLimit) < 1024) {
        fail(`${w.name}: /dev/shm's sizeLimit ${vol.emptyDir.sizeLimit ?? "(none)"} is under 1Gi`);
      }
    }
  }

  // GPU pods on GPU nodes.
  for (const w of workers) {
    const wantsGpu = (w.spec.containers ?? []).some((c) => c.resources?.limits?.["nvidia.com/gpu"]);
    if (!wantsGpu) continue;
    const terms = w.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    const onGpuNodes = terms.length > 0 && terms.every((t) => (t.matchExpressions ?? []).some((e) => e.key === "nvidia.com/gpu.present"));
    if (!onGpuNodes) {
      fail(`${w.name}: asks for nvidia.com/gpu but has no required node affinity to nodes labelled nvidia.com/gpu.present (GPU feature discovery)`);
    } else {
      note(`${w.name}: GPU pods require nodes labelled nvidia.com/gpu.present`);
    }
  }
}
