#!/usr/bin/env bash
# Makes the keys of a coupler pool on Kubernetes and prints them as Secrets (YAML on stdout):
#   coupler-coordinator-keys  coordinator.key/.pub, and the worker's and client's .pub to admit
#   coupler-worker-keys       worker.key + coordinator.pub (every worker pod)
#   coupler-client-keys       client.key + coordinator.pub (the submit Job; an admin key)
#   coupler-http-tls          a self-signed certificate for the coordinator's HTTPS port
# The pods lay these files out as each `--keys` directory expects (see the manifests' items).
#
#   deploy/k8s/make-keys.sh > secrets.yaml && kubectl apply -f secrets.yaml && rm secrets.yaml
#   deploy/k8s/make-keys.sh --client-keys ~/.coupler/k8s | kubectl apply -f -
#
# --namespace NS (default coupler) names the Secrets' namespace and the certificate's DNS names;
# --client-keys DIR also keeps the client key set (and the certificate, coordinator-https.crt)
# in DIR, to submit from outside the cluster through `kubectl port-forward`.
# Needs `coupler` (or COUPLER=/path/to/coupler) and openssl. Running it again makes new keys:
# apply them, then restart the pods (kubectl rollout restart) so all of them use the new set.
set -euo pipefail

COUPLER="${COUPLER:-coupler}"
namespace=coupler
client_keys=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --namespace) namespace="$2"; shift 2 ;;
    --client-keys) client_keys="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-keys.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
command -v "$COUPLER" >/dev/null || { echo "make-keys.sh: no $COUPLER on PATH (set COUPLER=...)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-keys.sh: needs openssl (apt-get install openssl)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# keygen prints what to copy where; here this script does the copying.
"$COUPLER" keygen "$tmp/coordinator" --role coordinator >/dev/null
"$COUPLER" keygen "$tmp/worker" --role worker --name worker >/dev/null
"$COUPLER" keygen "$tmp/client" --role client --name client >/dev/null

# The kubelet's probes do not check certificates; clients that do (curl through a
# port-forward) find the Service's names and localhost in it.
service=coupler-coordinator
mkdir -m 0700 "$tmp/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 \
  -subj "/CN=$service" \
  -addext "subjectAltName=DNS:$service,DNS:$service.$namespace,DNS:$service.$namespace.svc,DNS:$service.$namespace.svc.cluster.local,DNS:localhost,IP:127.0.0.1" \
  -keyout "$tmp/tls/tls.key" -out "$tmp/tls/tls.crt" 2>/dev/null

# secret NAME TYPE KEY=FILE...: one Secret object, its values base64-encoded.
secret() {
  local name="$1" type="$2"
  shift 2
  printf -- '---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n' "$name" "$namespace"
  printf '  labels:\n    app.kubernetes.io/name: coupler\ntype: %s\ndata:\n' "$type"
  local pair
  for pair in "$@"; do
    printf '  %s: %s\n' "${pair%%=*}" "$(base64 -w0 "${pair#*=}")"
  done
}

secret coupler-coordinator-keys Opaque \
  coordinator.key="$tmp/coordinator/coordinator.key" \
  coordinator.pub="$tmp/coordinator/coordinator.pub" \
  worker.pub="$tmp/worker/worker.pub" \
  client.pub="$tmp/client/client.pub"
secret coupler-worker-keys Opaque \
  worker.key="$tmp/worker/worker.key" \
  coordinator.pub="$tmp/coordinator/coordinator.pub"
secret coupler-client-keys Opaque \
  client.key="$tmp/client/client.key" \
  coordinator.pub="$tmp/coordinator/coordinator.pub"
secret coupler-http-tls kubernetes.io/tls \
  tls.crt="$tmp/tls/tls.crt" \
  tls.key="$tmp/tls/tls.key"

if [[ -n "$client_keys" ]]; then
  mkdir -p "$client_keys"
  chmod 0700 "$client_keys"
  install -m 0600 "$tmp/client/client.key" "$client_keys/client.key"
  install -m 0644 "$tmp/coordinator/coordinator.pub" "$client_keys/coordinator.pub"
  install -m 0644 "$tmp/tls/tls.crt" "$client_keys/coordinator-https.crt"
  echo "make-keys.sh: client key set in $client_keys (coupler submit --keys $client_keys)" >&2
fi
