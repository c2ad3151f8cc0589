// check_dashboard.mjs BOARD.json WORKDIR: refuses a Grafana board that
//  - is not a Dashboard as Grafana's own types (@grafana/schema) describe it: the board is
//    written out as a TypeScript object literal typed `Dashboard` and compiled with tsc, so a
//    misspelt or mistyped field is an error, not a panel Grafana silently drops;
//  - has panels with duplicate ids, outside the 24-column grid or overlapping one another;
//  - queries a data source other than its ${datasource} variable, or uses a $variable it does
//    not define, or repeats a refId within a panel;
//  - has a query that is not PromQL: every expr goes through `promtool check rules`.
// Prints one line per problem and exits 1, or prints a summary and exits 0.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [boardPath, work] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const problems = [];
const fail = (m) => problems.push(m);

let board;
try {
  board = JSON.parse(fs.readFileSync(boardPath, "utf8"));
} catch (e) {
  console.log(`${boardPath}: not JSON: ${e.message}`);
  process.exit(1);
}

// 1. Grafana's types.
fs.mkdirSync(work, { recursive: true });
const ts = path.join(work, "board.ts");
// JSON holds an enum's value ("absolute"), where TypeScript wants the enum member
// (ThresholdsMode.Absolute): AsJson turns every string enum into the union of its values and
// leaves every other type, optional and excess fields included, as Grafana declares it.
fs.writeFileSync(ts, `import type { Dashboard } from "@grafana/schema";\n` +
  "type AsJson<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T :\n" +
  "  T extends Array<infer U> ? Array<AsJson<U>> : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;\n" +
  `export const board: AsJson<Dashboard> = ${JSON.stringify(board, null, 2)};\n`);
fs.writeFileSync(path.join(work, "tsconfig.json"), JSON.stringify({
  compilerOptions: {
    strict: true, noEmit: true, skipLibCheck: true, target: "es2022",
    module: "nodenext", moduleResolution: "nodenext", typeRoots: [],
    baseUrl: ".", paths: { "@grafana/schema": [path.join(here, "node_modules/@grafana/schema")] },
  },
  files: ["board.ts"],
}));
// node_modules beside the generated file, so tsc resolves the package as Node would.
const link = path.join(work, "node_modules");
if (!fs.existsSync(link)) fs.symlinkSync(path.join(here, "node_modules"), link);
const tsc = spawnSync(process.execPath, [path.join(here, "node_modules/typescript/bin/tsc"), "-p", work],
                      { encoding: "utf8" });
if (tsc.status !== 0) {
  for (const line of (tsc.stdout + tsc.stderr).split("\n").filter(Boolean)) fail(`not a Grafana Dashboard: ${line}`);
}

// 2. The grid, ids, data sources, variables.
const vars = new Set((board.templating?.list ?? []).map((v) => v.name));
const builtin = new Set(["__rate_interval", "__interval", "__range"]);
const all = [];
for (const p of board.panels ?? []) {
  all.push(p);
  for (const q of p.panels ?? []) all.push(q);
}
const ids = new Set();
const cells = new Map();
const exprs = [];
for (const p of all) {
  const name = `panel ${p.id} "${p.title}"`;
  if (ids.has(p.id)) fail(`${name}: id used twice`);
  ids.add(p.id);
  const g = p.gridPos;
  if (!g || g.x < 0 || g.w < 1 || g.x + g.w > 24 || g.h < 1 || g.y < 0) {
    fail(`${name}: gridPos ${JSON.stringify(g)} is outside the 24-column grid`);
  } else {
    for (let y = g.y; y < g.y + g.h; ++y) {
      for (let x = g.x; x < g.x + g.w; ++x) {
        const key = `${x},${y}`;
        if (cells.has(key)) fail(`${name}: overlaps ${cells.get(key)} at column ${x}, row ${y}`);
        cells.set(key, name);
      }
    }
  }
  if (p.type === "row") continue;
  if (p.datasource?.uid !== "${datasource}") fail(`${name}: its data source is not the \${datasource} variable`);
  const refs = new Set();
  if (!(p.targets?.length > 0)) fail(`${name}: no queries`);
  for (const t of p.targets ?? []) {
    if (refs.has(t.refId)) fail(`${name}: refId ${t.refId} twice`);
    refs.add(t.refId);
    if (typeof t.expr !== "string" || t.expr.trim() === "") {
      fail(`${name}: query ${t.refId} has no expr`);
      continue;
    }
    for (const m of t.expr.matchAll(/\$\{?(\w+)\}?/g)) {
      if (!vars.has(m[1]) && !builtin.has(m[1])) fail(`${name}: query ${t.refId} uses $${m[1]}, which the board does not define`);
    }
    exprs.push({ name: `${name} ${t.refId}`, expr: t.expr });
  }
}

// 3. PromQL, as Prometheus parses it: each expr as a recording rule, variables filled in.
const rules = ["groups:", "  - name: board", "    rules:"];
exprs.forEach((e, i) => {
  const expr = e.expr.replaceAll("$__rate_interval", "5m").replaceAll("$__interval", "1m")
    .replaceAll("$__range", "1h").replace(/\$\{?\w+\}?/g, ".*");
  rules.push(`      - record: board:query_${i}`, `        expr: ${JSON.stringify(expr)}`);
});
const rulesFile = path.join(work, "board-rules.yml");
fs.writeFileSync(rulesFile, rules.join("\n") + "\n");
const promtool = spawnSync("promtool", ["check", "rules", rulesFile], { encoding: "utf8" });
if (promtool.error) fail(`promtool: ${promtool.error.message} (scripts/install-deps.sh installs prometheus)`);
else if (promtool.status !== 0) {
  for (const line of (promtool.stdout + promtool.stderr).split("\n").filter((l) => /error|err:/i.test(l))) {
    const m = line.match(/query_(\d+)/);
    fail(`not PromQL${m ? ` (${exprs[Number(m[1])].name}: ${exprs[Number(m[1])].expr})` : ""}: ${line.trim()}`);
  }
  if (!problems.length) fail(`promtool refused the queries: ${promtool.stdout}${promtool.stderr}`);
}

if (problems.length) {
  for (const p of problems) console.log(p);
  process.exit(1);
}
console.log(`${boardPath}: a Grafana Dashboard of ${all.length} panels, ${exprs.length} PromQL queries, all valid`);
