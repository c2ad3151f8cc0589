#!/usr/bin/env bash
# rules_test.sh DIR: `promtool check rules` and `promtool test rules` on DIR/coupler-alerts.yml,
# then the same tests on copies with one rule's threshold or `for:` changed, each of which must
# fail: tests that pass whatever the rules say would prove nothing.
set -euo pipefail
dir=$1
if ! command -v promtool >/dev/null; then
  echo "promtool is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
promtool check rules "$dir/coupler-alerts.yml"
promtool test rules "$dir/coupler-alerts.test.yml"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$dir/coupler-alerts.test.yml" "$work/"
# Each: a sed script that breaks one rule, and what it breaks.
breaks=(
  's/expr: coupler_dispatch_stopped == 1/expr: coupler_dispatch_stopped == 2/|dispatch stopped never fires'
  's/expr: coupler_ready == 0/expr: coupler_ready == 1/|not ready fires on a ready coordinator'
  's/for: 30s/for: 10m/|dispatch stopped waits too long'
  's/> 0.25$/> 5/|a lagging loop never fires'
  's#floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 4) % 2#DCGM_FI_DEV_CLOCK_THROTTLE_REASONS % 2#|the idle bit counts as a throttle'
  's/expr: coupler_gpu_fenced == 1/expr: coupler_gpu_fenced == 0/|a fenced GPU never alerts'
  's/increase(coupler_tasks_finished_total\[15m\])) == 0/increase(coupler_tasks_finished_total[15m])) >= 0/|a queue that drains counts as stuck'
)
for b in "${breaks[@]}"; do
  script=${b%%|*}
  what=${b##*|}
  sed "$script" "$dir/coupler-alerts.yml" >"$work/coupler-alerts.yml"
  if cmp -s "$dir/coupler-alerts.yml" "$work/coupler-alerts.yml"; then
    echo "FAIL: the break '$what' changed nothing (sed: $script)" >&2
    exit 1
  fi
  if (cd "$work" && promtool test rules coupler-alerts.test.yml >/dev/null 2>&1); then
    echo "FAIL: the tests pass with a broken rule: $what" >&2
    exit 1
  fi
  echo "ok: the tests catch: $what"
done
echo "PrometheusRules: all checks passed"
