// What a pod's containers will see: their command lines once the kubelet expands $(VAR), the
// files their volume mounts hold, and the coupler flags in those command lines.
import path from "node:path";

// Each workload's pod template, with where it came from.
export function workloads(objects) {
  const out = [];
  for (const obj of objects) {
    const template = obj.spec?.template;
    if (!template?.spec || !["StatefulSet", "Deployment", "Job", "DaemonSet"].includes(obj.kind)) continue;
    out.push({ obj, name: `${obj.kind}/${obj.metadata.name}`, spec: template.spec, labels: template.metadata?.labels ?? {} });
  }
  return out;
}

// The kubelet's $(VAR) expansion: from the container's env, in order; $$ is a literal $; an
// unknown $(VAR) stays as written (and is reported). A downward-API value is given by `fields`
// (fieldPath -> value), defaulting to a placeholder naming the field.
export function expand(container, fields = {}) {
  const vars = {};
  const missing = [];
  const sub = (s) =>
    s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name) => {
      if (m === "$$") return "$";
      if (name in vars) return vars[name];
      missing.push(name);
      return m;
    });
  for (const e of container.env ?? []) {
    if (e.value !== undefined) vars[e.name] = sub(String(e.value));
    else if (e.valueFrom?.fieldRef) {
      const f = e.valueFrom.fieldRef.fieldPath;
      vars[e.name] = fields[f] ?? `<${f}>`;
    } else vars[e.name] = `<${e.name} from ${Object.keys(e.valueFrom ?? {}).join(",")}>`;
  }
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map((a) => sub(String(a)));
  return { argv, env: vars, missing };
}

// How many values each coupler flag takes (0: a switch); an unlisted flag takes one.
const ARITY = { "--http-tls": 2, "--wait": 0, "--json": 0, "--insecure": 0 };

// `coupler SUB [positional...] --flag value...` -> { sub, positional, flags: {flag: [values]} }.
export function parseCoupler(argv) {
  if (path.basename(argv[0] ?? "") !== "coupler") return null;
  const out = { sub: argv[1], positional: [], flags: {} };
  for (let i = 2; i < argv.length; ++i) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const [flag, inline] = a.split(/=(.*)/s, 2);
      const n = inline !== undefined ? 0 : ARITY[flag] ?? 1;
      const values = inline !== undefined ? [inline] : argv.slice(i + 1, i + 1 + n);
      if (values.length < n) values.push(undefined);
      out.flags[flag] = values;
      i += n;
    } else {
      out.positional.push(a);
    }
  }
  return out;
}

export function flag(parsed, name) {
  return parsed.flags[name]?.[0];
}

// The mount holding `file` in `container` (longest mountPath prefix) and the path inside it.
export function mountOf(container, spec, file) {
  let best = null;
  for (const m of container.volumeMounts ?? []) {
    const mp = m.mountPath.replace(/\/+$/, "");
    if (file === mp || file.startsWith(mp + "/")) {
      if (!best || mp.length > best.mount.mountPath.length) {
        best = { mount: m, volume: (spec.volumes ?? []).find((v) => v.name === m.name), rel: path.relative(mp, file) };
      }
    }
  }
  return best;
}

// The files a secret or configMap volume shows: relative path -> { key, mode }. With items,
// only those; without, every key of the object at its own name.
export function projectedFiles(source, object) {
  const defaultMode = source.defaultMode ?? 0o644;
  const files = new Map();
  const keys = Object.keys({ ...(object?.data ?? {}), ...(object?.stringData ?? {}), ...(object?.binaryData ?? {}) });
  const items = source.items ?? keys.map((k) => ({ key: k, path: k }));
  for (const item of items) files.set(item.path, { key: item.key, mode: item.mode ?? defaultMode });
  return files;
}

// The text of one key of a Secret (base64 data or stringData) or ConfigMap.
export function valueOf(object, key) {
  if (object?.stringData?.[key] !== undefined) return String(object.stringData[key]);
  if (object?.kind === "Secret" && object?.data?.[key] !== undefined) {
    return Buffer.from(String(object.data[key]), "base64").toString("utf8");
  }
  if (object?.data?.[key] !== undefined) return String(object.data[key]);
  if (object?.binaryData?.[key] !== undefined) return Buffer.from(String(object.binaryData[key]), "base64").toString("utf8");
  return undefined;
}

// A coupler key file's fields (runtime/net/curve_keys.cc writes `k = v` lines).
export function parseKeyText(text) {
  const out = {};
  for (const line of (text ?? "").split("\n")) {
    const m = line.match(/^\s*([a-z]+)\s*=\s*(\S+)\s*$/);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

export function octal(mode) {
  return "0" + mode.toString(8).padStart(3, "0");
}

// Who a container runs as: its securityContext over the pod's (uid/gid undefined: the image's
// USER decides). fsGroup is the pod's only.
export function identityOf(container, podSpec) {
  const pod = podSpec.securityContext ?? {};
  const own = container.securityContext ?? {};
  return {
    uid: own.runAsUser ?? pod.runAsUser,
    gid: own.runAsGroup ?? pod.runAsGroup,
    nonRoot: own.runAsNonRoot ?? pod.runAsNonRoot,
    fsGroup: pod.fsGroup,
  };
}

// A Secret or ConfigMap file's mode as the kubelet shows it: with a pod fsGroup it chowns the
// volume's files to that group and adds group read (pkg/volume SetVolumeOwnership; these
// volumes are read-only). The owner is root either way.
export function shownMode(mode, podSpec) {
  return podSpec.securityContext?.fsGroup !== undefined ? mode | 0o440 : mode;
}

// The copies an init container makes with `coupler-copy-keys FROM TO [FROM TO]...`
// (deploy/k8s/copy-keys.sh): [{ init, from, to }] for every such pair of the pod.
export function keyCopies(podSpec) {
  const out = [];
  for (const init of podSpec.initContainers ?? []) {
    const argv = [...(init.command ?? []), ...(init.args ?? [])];
    if (path.basename(argv[0] ?? "") !== "coupler-copy-keys") continue;
    for (let i = 1; i + 1 < argv.length; i += 2) out.push({ init, from: argv[i], to: argv[i + 1] });
  }
  return out;
}
