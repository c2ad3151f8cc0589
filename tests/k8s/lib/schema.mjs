// Schema validation of Kubernetes objects against the OpenAPI schemas that npm's
// kubernetes-models is generated from: types, required fields, enums, formats.
import { CheckError } from "./kustomize.mjs";

const modules = new Map();

async function modelModule(apiVersion) {
  if (!modules.has(apiVersion)) {
    let mod = null;
    try {
      mod = await import(`kubernetes-models/${apiVersion}`);
    } catch {
      mod = null;
    }
    modules.set(apiVersion, mod);
  }
  return modules.get(apiVersion);
}

function describe(obj) {
  return `${obj.kind}/${obj.metadata?.name ?? "?"} (${obj.__source ?? "generated"})`;
}

// Throws CheckError naming the object, its file and the first violations.
export async function validateObject(obj) {
  if (!obj || typeof obj !== "object" || !obj.apiVersion || !obj.kind) {
    throw new CheckError(`${obj?.__source ?? "?"}: a document without apiVersion and kind`);
  }
  const mod = await modelModule(obj.apiVersion);
  const Model = mod?.[obj.kind];
  if (!Model) throw new CheckError(`${describe(obj)}: no such kind in ${obj.apiVersion}`);
  try {
    new Model(obj).validate();
  } catch (e) {
    const errors = (e.errors ?? []).slice(0, 5).map((x) => `${x.instancePath} ${x.message}`);
    throw new CheckError(`${describe(obj)}: schema: ${errors.length ? errors.join("; ") : e.message}`);
  }
}
