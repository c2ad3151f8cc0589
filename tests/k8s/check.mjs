// Checks a tree of Kubernetes manifests for coupler (deploy/k8s):
//   node tests/k8s/check.mjs [--secrets FILE]... [--source ROOT] [--kubectl] DEPLOY_DIR
// 1. every YAML file parses and belongs to a kustomization (no file that nothing applies);
// 2. every kustomization builds (tests/k8s/lib/kustomize.mjs), and with --kubectl, where kubectl
//    is installed, `kubectl kustomize` builds the same objects;
// 3. every object, and every Secret of --secrets (make-keys.sh's output), is valid against the
//    Kubernetes schemas (npm kubernetes-models);
// 4. each pool (a kustomization with the coordinator), together with the kustomizations that
//    add to it (the submit Job) and the Secrets, passes the cross-references of lib/crossref.mjs.
// Prints each thing checked; exits 1 with every failure listed, 2 when it cannot run.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { checkDeployment } from "./lib/crossref.mjs";
import { CheckError, MERGE_KEYS, build, kustomizationFile, parseYamlFile, parseYamlText } from "./lib/kustomize.mjs";
import { parseCoupler, workloads } from "./lib/pods.mjs";
import { validateObject } from "./lib/schema.mjs";

function usage(msg) {
  console.error(`check.mjs: ${msg}\nusage: node check.mjs [--secrets FILE]... [--source ROOT] [--kubectl] DEPLOY_DIR`);
  process.exit(2);
}

const args = process.argv.slice(2);
const secretsFiles = [];
let sourceRoot = null;
let useKubectl = false;
let deployDir = null;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--secrets") secretsFiles.push(args[++i]);
  else if (args[i] === "--source") sourceRoot = args[++i];
  else if (args[i] === "--kubectl") useKubectl = true;
  else if (!deployDir) deployDir = path.resolve(args[i]);
  else usage(`unexpected argument ${args[i]}`);
}
if (!deployDir) usage("no DEPLOY_DIR");

const failures = [];
const ok = (line) => console.log(`ok    ${line}`);
const rel = (p) => path.relative(deployDir, p) || ".";

function yamlFiles(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...yamlFiles(p));
    else if (/\.ya?ml$/.test(entry.name)) out.push(p);
  }
  return out;
}

// Keys sorted, and lists that merge by a key in key order: kustomize may reorder those (a
// patched env entry moves), which changes nothing unless one entry refers to another.
function canonical(value, key = "") {
  if (Array.isArray(value)) {
    const items = value.map((v) => canonical(v));
    const mk = MERGE_KEYS[key];
    return mk ? items.sort((a, b) => String(a?.[mk]).localeCompare(String(b?.[mk]))) : items;
  }
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical(value[k], k)]));
  }
  return value;
}

function kubectlAvailable() {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore", timeout: 30000 });
    return true;
  } catch {
    return false;
  }
}

async function main() {
  const files = yamlFiles(deployDir);
  for (const f of files) {
    try {
      parseYamlFile(f);
    } catch (e) {
      failures.push(e.message);
    }
  }
  ok(`${files.length} YAML files parse (as YAML 1.1, as Kubernetes reads them)`);

  // Build every kustomization.
  const builds = new Map();
  const used = new Set();
  for (const f of files.filter((f) => kustomizationFile(path.dirname(f)) === f)) {
    const dir = path.dirname(f);
    try {
      const b = build(dir);
      builds.set(dir, b);
      b.files.forEach((x) => used.add(x));
      ok(`kustomization ${rel(dir)} builds: ${b.objects.map((o) => `${o.kind}/${o.metadata?.name}`).join(", ")}`);
    } catch (e) {
      if (!(e instanceof CheckError)) throw e;
      failures.push(e.message);
    }
  }
  for (const f of files) {
    if (!used.has(f)) failures.push(`${rel(f)} is in no kustomization: nothing would apply it`);
  }

  if (useKubectl) {
    if (!kubectlAvailable()) {
      ok("kubectl is not installed: the kustomize subset was not compared with kubectl kustomize");
    } else {
      for (const [dir, b] of builds) {
        let out;
        try {
          out = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", timeout: 60000, stdio: ["ignore", "pipe", "pipe"] });
        } catch (e) {
          failures.push(`kubectl kustomize ${rel(dir)} fails: ${e.stderr || e.message}`);
          continue;
        }
        const theirs = new Map(parseYamlText(out, `kubectl kustomize ${rel(dir)}`).map((o) => [`${o.kind}/${o.metadata?.name}`, o]));
        for (const o of b.objects) {
          const key = `${o.kind}/${o.metadata?.name}`;
          if (!theirs.has(key)) failures.push(`kubectl kustomize ${rel(dir)} has no ${key}`);
          else if (JSON.stringify(canonical(theirs.get(key))) !== JSON.stringify(canonical(o))) {
            failures.push(`kubectl kustomize ${rel(dir)} builds ${key} differently from tests/k8s/lib/kustomize.mjs:\n` +
                          `  kubectl: ${JSON.stringify(canonical(theirs.get(key)))}\n  ours:    ${JSON.stringify(canonical(o))}`);
          }
          theirs.delete(key);
        }
        for (const key of theirs.keys()) failures.push(`kubectl kustomize ${rel(dir)} also builds ${key}`);
        ok(`kubectl kustomize ${rel(dir)} builds the same ${b.objects.length} objects`);
      }
    }
  }

  // Schemas: every built object (overlays included) and every Secret given.
  const secrets = [];
  for (const f of secretsFiles) {
    for (const o of parseYamlFile(f)) {
      Object.defineProperty(o, "__source", { value: f, enumerable: false });
      secrets.push(o);
    }
  }
  let validated = 0;
  for (const o of [...[...builds.values()].flatMap((b) => b.objects), ...secrets]) {
    try {
      await validateObject(o);
      ++validated;
    } catch (e) {
      if (!(e instanceof CheckError)) throw e;
      failures.push(e.message);
    }
  }
  ok(`${validated} objects are valid against the Kubernetes schemas`);

  // Cross-references: each pool with every add-on kustomization and the Secrets.
  const nested = new Set([...builds.keys()].filter((d) => [...builds.values()].some((b) => b !== builds.get(d) && b.files.includes(kustomizationFile(d)))));
  const hasCoordinator = (b) => workloads(b.objects).some((w) =>
    (w.spec.containers ?? []).some((c) => parseCoupler([...(c.command ?? []), ...(c.args ?? [])])?.sub === "coordinator"));
  const pools = [...builds].filter(([d, b]) => hasCoordinator(b) && !nested.has(d));
  const addOns = [...builds].filter(([d, b]) => !hasCoordinator(b) && !nested.has(d));
  if (pools.length === 0) failures.push("no kustomization runs the coordinator");
  for (const [dir, b] of pools) {
    const together = [...b.objects, ...addOns.flatMap(([, a]) => a.objects), ...secrets];
    const names = [rel(dir), ...addOns.map(([d]) => rel(d)), ...(secrets.length ? ["secrets"] : [])].join(" + ");
    console.log(`---- ${names}`);
    const found = checkDeployment(together, { sourceRoot, note: ok });
    failures.push(...found.map((f) => `${names}: ${f}`));
  }

  if (failures.length > 0) {
    for (const f of failures) console.log(`FAIL  ${f}`);
    console.log(`${failures.length} problem(s) in ${deployDir}`);
    process.exit(1);
  }
  console.log(`all checks passed for ${deployDir}`);
}

main().catch((e) => {
  console.error(`check.mjs: ${e instanceof CheckError ? e.message : e.stack}`);
  process.exit(2);
});
