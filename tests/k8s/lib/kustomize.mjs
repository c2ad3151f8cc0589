// The part of kustomize that deploy/k8s uses, so the checker sees the objects `kubectl apply -k`
// would send without needing kubectl: resources (files and folders), namespace, images and
// strategic-merge patches. Any other field is refused rather than ignored: a checker that skips
// what it does not understand would pass a tree it never looked at.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";

const KNOWN_FIELDS = new Set(["apiVersion", "kind", "namespace", "resources", "images", "patches"]);

// Kubernetes reads YAML 1.1 (0400 is octal there, 256; YAML 1.2 would read four hundred).
export function parseYamlFile(file) {
  return parseYamlText(fs.readFileSync(file, "utf8"), file);
}

export function parseYamlText(text, file) {
  const docs = YAML.parseAllDocuments(text, { version: "1.1", prettyErrors: true });
  const out = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      throw new CheckError(`${file}: not valid YAML: ${doc.errors[0].message}`);
    }
    const value = doc.toJS({ maxAliasCount: 100 });
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

export class CheckError extends Error {}

export function kustomizationFile(dir) {
  for (const name of ["kustomization.yaml", "kustomization.yml", "Kustomization"]) {
    const f = path.join(dir, name);
    if (fs.existsSync(f)) return f;
  }
  return null;
}

// Lists with a merge key are merged element by element (as the Kubernetes types declare it);
// every other list is replaced by the patch's.
export const MERGE_KEYS = {
  containers: "name",
  initContainers: "name",
  env: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  ports: "containerPort",
  imagePullSecrets: "name",
};

export function strategicMerge(base, patch, key = "") {
  if (Array.isArray(patch)) {
    const mergeKey = MERGE_KEYS[key];
    if (!mergeKey || !Array.isArray(base)) return structuredClone(patch);
    const out = structuredClone(base);
    for (const item of patch) {
      const i = out.findIndex((b) => b && item && b[mergeKey] === item[mergeKey]);
      if (i >= 0) out[i] = strategicMerge(out[i], item);
      else out.push(structuredClone(item));
    }
    return out;
  }
  if (patch && typeof patch === "object") {
    const out = base && typeof base === "object" && !Array.isArray(base) ? structuredClone(base) : {};
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete out[k];
      else out[k] = strategicMerge(out[k], v, k);
    }
    return out;
  }
  return patch;
}

function podSpecs(obj) {
  const spec = obj.spec?.template?.spec ?? obj.spec?.jobTemplate?.spec?.template?.spec;
  return spec ? [spec] : [];
}

function applyImages(objects, images, where) {
  for (const img of images ?? []) {
    if (!img.name) throw new CheckError(`${where}: an images entry has no name`);
    let used = false;
    for (const obj of objects) {
      for (const spec of podSpecs(obj)) {
        for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
          const [name] = c.image.split(":");
          if (name !== img.name) continue;
          used = true;
          const newName = img.newName ?? name;
          c.image = img.digest ? `${newName}@${img.digest}` : `${newName}:${img.newTag ?? "latest"}`;
        }
      }
    }
    if (!used) throw new CheckError(`${where}: images entry ${img.name} matches no container`);
  }
}

// Builds one kustomization folder. Returns { objects, files } where each object carries its
// source file in a hidden `__source` property (for messages) and files lists every file read.
export function build(dir, seen = new Set()) {
  const kfile = kustomizationFile(dir);
  if (!kfile) throw new CheckError(`${dir}: no kustomization.yaml`);
  if (seen.has(kfile)) throw new CheckError(`${kfile}: includes itself`);
  seen.add(kfile);
  const [k] = parseYamlFile(kfile);
  if (!k || k.kind !== "Kustomization") throw new CheckError(`${kfile}: kind is not Kustomization`);
  for (const field of Object.keys(k)) {
    if (!KNOWN_FIELDS.has(field)) {
      throw new CheckError(`${kfile}: field '${field}' is not understood by tests/k8s (add it there)`);
    }
  }
  const files = [kfile];
  let objects = [];
  for (const r of k.resources ?? []) {
    const p = path.resolve(dir, r);
    if (!fs.existsSync(p)) throw new CheckError(`${kfile}: resource ${r} does not exist`);
    if (fs.statSync(p).isDirectory()) {
      if (!path.relative(p, dir).startsWith("..")) {
        throw new CheckError(`${kfile}: resource ${r} contains this kustomization (kustomize refuses the cycle)`);
      }
      const sub = build(p, seen);
      objects.push(...sub.objects);
      files.push(...sub.files);
    } else {
      for (const obj of parseYamlFile(p)) {
        Object.defineProperty(obj, "__source", { value: p, enumerable: false, writable: true });
        objects.push(obj);
      }
      files.push(p);
    }
  }
  for (const patch of k.patches ?? []) {
    if (!patch.path) throw new CheckError(`${kfile}: only patches with a path are understood`);
    const p = path.resolve(dir, patch.path);
    if (!fs.existsSync(p)) throw new CheckError(`${kfile}: patch ${patch.path} does not exist`);
    files.push(p);
    for (const doc of parseYamlFile(p)) {
      const target = patch.target ?? { kind: doc.kind, name: doc.metadata?.name };
      const i = objects.findIndex((o) => o.kind === target.kind && o.metadata?.name === target.name);
      if (i < 0) {
        throw new CheckError(`${p}: patches ${target.kind}/${target.name}, which ${kfile} does not have`);
      }
      const merged = strategicMerge(objects[i], doc);
      Object.defineProperty(merged, "__source", { value: `${objects[i].__source} + ${p}`, enumerable: false, writable: true });
      objects[i] = merged;
    }
  }
  if (k.namespace) {
    for (const obj of objects) {
      if (obj.kind === "Namespace") continue;
      obj.metadata = { ...obj.metadata, namespace: k.namespace };
    }
  }
  applyImages(objects, k.images, kfile);
  return { objects, files };
}
