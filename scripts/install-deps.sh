#!/usr/bin/env bash
# Installs every Debian package coupler builds, tests and runs with. Idempotent: packages
# already present are skipped, so a second run costs one dpkg query.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin
  libzmq3-dev cppzmq-dev
  libcereal-dev rapidjson-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libyaml-cpp-dev libsqlite3-dev
  libopenblas-dev libcpp-httplib-dev libssl-dev
  zlib1g-dev libzstd-dev
  python3 python3-zmq
  iproute2 util-linux
  # The operations tests: a real Prometheus scrapes /metrics (promtool checks it), a real
  # browser opens the live page.
  prometheus chromium chromium-driver curl
)
# The Slurm tests (tests/slurm, ctest label slurm) run a one-node cluster of Debian's own
# daemons: an optional group, which CI installs (scripts/test.sh sets COUPLER_SLURM=1 there).
if [[ "${COUPLER_SLURM:-0}" == "1" ]]; then
  PACKAGES+=(slurm-wlm munge)
fi
# The Python examples' test (examples/ddp and examples/mpi4py under mpi_exec: PyTorch DDP over
# gloo, an mpi4py allreduce) uses Debian's builds for /usr/bin/python3: an optional group,
# which CI installs (scripts/test.sh sets COUPLER_PYTHON_EXAMPLES=1 there).
if [[ "${COUPLER_PYTHON_EXAMPLES:-0}" == "1" ]]; then
  PACKAGES+=(python3-torch python3-mpi4py python3-numpy python3-pandas)
fi
# The pipeline comparisons (bench/pipeline/compare*.py) run pandas and Dask distributed beside
# coupler, the training one (bench/train/compare_torch.py) PyTorch: an optional group, for
# benchmarks only.
if [[ "${COUPLER_BENCH_PYTHON:-0}" == "1" ]]; then
  PACKAGES+=(python3-pandas python3-distributed python3-numpy python3-torch)
fi
# clang + its sanitizer/libFuzzer runtime are only needed for -DCOUPLER_FUZZ=ON.
if [[ "${COUPLER_FUZZ:-0}" == "1" ]]; then
  PACKAGES+=(clang libclang-rt-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# No early exit when all are present: the sections below still have their own checks to run.
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
fi

# oneDNN: the CPU GEMMs (fast fp32, and bf16 on AMX/AVX512_BF16). Installed where it can be;
# the build falls back to OpenBLAS without it (coupler doctor says so), so a mirror that lacks
# it never stops the build.
if ! dpkg-query -W -f='${Status}' libdnnl-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "install-deps: installing libdnnl-dev"
  if ! { $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq &&
         $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends libdnnl-dev; }; then
    echo "install-deps: libdnnl-dev could not be installed: the CPU GEMMs will run on OpenBLAS" >&2
  fi
fi

# The Kubernetes manifests' test (tests/k8s, ctest label k8s): Node.js, the npm packages pinned
# in tests/k8s/package-lock.json, and openssl for deploy/k8s/make-keys.sh. Debian's nodejs and
# npm only where no node is on PATH (a newer one installed otherwise is kept); npm ci only when
# node_modules is missing or older than the lock file, so a second run costs two stat calls.
K8S_TESTS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/k8s"
k8s_missing=()
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then k8s_missing+=(nodejs npm); fi
if ! command -v openssl >/dev/null; then k8s_missing+=(openssl); fi
if [[ ${#k8s_missing[@]} -gt 0 ]]; then
  echo "install-deps: installing ${k8s_missing[*]} (tests/k8s)"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${k8s_missing[@]}"
fi
# The Grafana board's test (tests/grafana) takes the same way: @grafana/schema and typescript.
for npm_dir in "$K8S_TESTS" "$(dirname "$K8S_TESTS")/grafana"; do
  name="tests/$(basename "$npm_dir")"
  if [[ ! -d "$npm_dir/node_modules" || "$npm_dir/package-lock.json" -nt "$npm_dir/node_modules" ]]; then
    echo "install-deps: npm ci in $name"
    npm ci --prefix "$npm_dir" --no-audit --no-fund
    touch "$npm_dir/node_modules"  # the folder's time is what the next run compares
  else
    echo "install-deps: $name/node_modules is up to date"
  fi
done
