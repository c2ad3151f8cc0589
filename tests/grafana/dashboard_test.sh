#!/usr/bin/env bash
# ctest entry for the shipped Grafana board (tests/grafana/CMakeLists.txt):
#   dashboard_test.sh SOURCE_DIR
# check_dashboard.mjs must accept deploy/grafana/coupler.json, and refuse copies broken the ways
# a hand edit breaks a board: each break must be caught, or the check proves nothing. Without
# node, promtool or the npm packages it fails, naming scripts/install-deps.sh.
set -euo pipefail
src="$1"
here="$src/tests/grafana"
board="$src/deploy/grafana/coupler.json"
command -v node >/dev/null || { echo "FAIL: node is not installed; run scripts/install-deps.sh"; exit 1; }
command -v promtool >/dev/null || { echo "FAIL: promtool is not installed; run scripts/install-deps.sh"; exit 1; }
for pkg in @grafana/schema typescript; do
  [[ -f "$here/node_modules/$pkg/package.json" ]] ||
    { echo "FAIL: tests/grafana/node_modules/$pkg is missing; run scripts/install-deps.sh (npm ci --prefix tests/grafana)"; exit 1; }
done
tmp="$(mktemp -d "${TMPDIR:-/tmp}/coupler-grafana-test-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

node "$here/check_dashboard.mjs" "$board" "$tmp/good"

# Each: a JavaScript edit of the parsed board, and a text the refusal must contain.
breaks=(
  'b.panels[1].gridPos = 7|not a Grafana Dashboard'
  'b.panels[1].titel = "typo"|not a Grafana Dashboard'
  'b.panels[2].fieldConfig.defaults.thresholds.mode = "relative"|not a Grafana Dashboard'
  'b.panels[3].targets[0].expr = "sum(rate(coupler_tasks_finished_total[5m])"|not PromQL'
  'b.panels[3].targets[0].expr += " by (worker"|not PromQL'
  'b.panels[4].gridPos = {...b.panels[3].gridPos}|overlaps'
  'b.panels[5].gridPos.x = 22|outside the 24-column grid'
  'b.panels[6].id = b.panels[5].id|id used twice'
  'b.panels[3].targets[0].expr = "coupler_ready{instance=~\"$coordinator\"}"|does not define'
  'b.panels[3].datasource = {type: "prometheus", uid: "prod-prom"}|not the ${datasource} variable'
)
i=0
for entry in "${breaks[@]}"; do
  edit=${entry%%|*}
  expect=${entry##*|}
  i=$((i + 1))
  node -e "const fs = require('fs'); const b = JSON.parse(fs.readFileSync(process.argv[1], 'utf8')); ${edit};
           fs.writeFileSync(process.argv[2], JSON.stringify(b, null, 2));" "$board" "$tmp/broken-$i.json"
  if out=$(node "$here/check_dashboard.mjs" "$tmp/broken-$i.json" "$tmp/broken-$i" 2>&1); then
    echo "FAIL: a board with '$edit' was accepted"
    exit 1
  fi
  if [[ "$out" != *"$expect"* ]]; then
    echo "FAIL: a board with '$edit' was refused, but not for '$expect':"
    echo "$out"
    exit 1
  fi
  echo "ok: refused: $edit"
done
echo "GrafanaBoard: the board passes; ${#breaks[@]} broken copies were refused"
