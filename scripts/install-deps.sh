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
  libopenblas-dev libcpp-httplib-dev
  python3
  iproute2 util-linux
  # The operations tests: a real Prometheus scrapes /metrics (promtool checks it), a real
  # browser opens the live page.
  prometheus chromium chromium-driver curl
)
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

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
