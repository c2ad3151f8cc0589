#!/usr/bin/env bash
# ctest entry for the Kubernetes manifests (tests/k8s/CMakeLists.txt):
#   k8s_test.sh check|negative|local COUPLER_BINARY SOURCE_DIR
# Makes a fresh key set with deploy/k8s/make-keys.sh (the Secrets the manifests mount), then
#   check     schemas and cross-references of deploy/k8s (check.mjs)
#   negative  broken copies of deploy/k8s are refused (negative.mjs)
#   local     the pool runs here from the manifests' command lines and Secret layout (run_local.mjs)
# Without node or the npm packages it fails, naming scripts/install-deps.sh: a skipped check
# would let a broken manifest through.
set -euo pipefail
mode="$1" coupler="$2" src="$3"
here="$src/tests/k8s"

if ! command -v node >/dev/null; then
  echo "FAIL: node is not installed; run scripts/install-deps.sh (Debian's nodejs and npm, then npm ci in tests/k8s)"
  exit 1
fi
for pkg in kubernetes-models yaml; do
  if [[ ! -f "$here/node_modules/$pkg/package.json" ]]; then
    echo "FAIL: tests/k8s/node_modules/$pkg is missing; run scripts/install-deps.sh (npm ci --prefix tests/k8s)"
    exit 1
  fi
done
[[ -x "$coupler" ]] || { echo "FAIL: no coupler binary at $coupler (build the coupler target)"; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/coupler-k8s-test-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
COUPLER="$coupler" timeout 60 "$src/deploy/k8s/make-keys.sh" --client-keys "$tmp/client" >"$tmp/secrets.yaml"
# The kept client key set is one coupler accepts: a 0600 secret beside coordinator.pub.
mode_of() { stat -c %a "$1"; }
[[ "$(mode_of "$tmp/client/client.key")" == 600 && -f "$tmp/client/coordinator.pub" ]] ||
  { echo "FAIL: make-keys.sh --client-keys did not leave client.key (0600) and coordinator.pub"; exit 1; }
echo "ok    make-keys.sh wrote $(grep -c '^kind: Secret' "$tmp/secrets.yaml") Secrets and a client key set"

cd "$here"
# Not exec: the trap removes the keys afterwards.
case "$mode" in
  check) timeout 240 node check.mjs --secrets "$tmp/secrets.yaml" --source "$src" --kubectl "$src/deploy/k8s" ;;
  negative) timeout 280 node negative.mjs --secrets "$tmp/secrets.yaml" --source "$src" "$src/deploy/k8s" ;;
  local) timeout 280 node run_local.mjs --coupler "$coupler" --secrets "$tmp/secrets.yaml" "$src/deploy/k8s" ;;
  *) echo "k8s_test.sh: unknown mode $mode"; exit 2 ;;
esac
