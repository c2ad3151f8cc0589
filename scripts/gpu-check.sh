#!/usr/bin/env bash
# Builds coupler with CUDA and runs everything that needs a real GPU: the `gpu`-labelled tests
# and the GPU mode of any bench_* binary. For a machine with an NVIDIA GPU and no network: it
# installs nothing. Logs go to $OUT/gpu-check when OUT is set, else build-gpu/gpu-check.
# Exits non-zero when configure or build fails, a gpu test fails, or the gpu tests skipped
# (on a GPU machine that means the tests saw no device; GPU_CHECK_ALLOW_SKIP=1 accepts it).
# All steps share one deadline, so the whole check ends within 8 minutes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
readonly BUILD_DIR=build-gpu
LOGS="${OUT:+${OUT}/gpu-check}"
LOGS="${LOGS:-${BUILD_DIR}/gpu-check}"
readonly LOGS
readonly DEADLINE=$((SECONDS + 450))  # steps get 7.5 minutes; the rest is slack for teardown
readonly TEST_RESERVE=120             # seconds kept back from the build for the gpu tests
mkdir -p "${LOGS}"

summary=()  # rows: step|status|seconds|detail
exit_code=0

add_row() { summary+=("$1|$2|$3|$4"); }
remaining() { echo $((DEADLINE - SECONDS)); }
fail() { exit_code=1; }

# run_step NAME LIMIT_S LOG CMD...: runs CMD under `timeout` (at most LIMIT_S and never past
# the deadline), copies its output to LOG, records a row and returns CMD's status (124: time).
run_step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local left rc start=${SECONDS}
  left=$(remaining)
  ((limit > left)) && limit=${left}
  if ((limit < 5)); then
    add_row "${name}" TIMEOUT 0 "no time left before the deadline"
    return 124
  fi
  echo "==> ${name} (limit ${limit}s): $*"
  set +e
  timeout --kill-after=10 "${limit}" "$@" 2>&1 | tee "${log}"
  rc=${PIPESTATUS[0]}
  set -e
  local status=ok
  if ((rc == 124 || rc == 137)); then
    status=TIMEOUT
  elif ((rc != 0)); then
    status="FAIL(${rc})"
  fi
  add_row "${name}" "${status}" "$((SECONDS - start))" "${log}"
  return "${rc}"
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
print_summary() {
  local row name status secs detail
  echo
  echo "gpu-check summary (logs: ${LOGS})"
  printf '%-28s %-10s %7s  %s\n' STEP STATUS SECONDS DETAIL
  for row in "${summary[@]}"; do
    IFS='|' read -r name status secs detail <<<"${row}"
    printf '%-28s %-10s %7s  %s\n' "${name}" "${status}" "${secs}" "${detail}"
  done
  if ((exit_code == 0)); then echo "result: PASS"; else echo "result: FAIL"; fi
}
trap print_summary EXIT

# --- the hardware as the driver sees it (informational) ---
if command -v nvidia-smi >/dev/null 2>&1; then
  run_step nvidia-smi 30 "${LOGS}/nvidia-smi.log" nvidia-smi || true
else
  add_row nvidia-smi missing 0 "nvidia-smi not on PATH; continuing"
fi

# --- configure and build ---
cmake_args=(-S . -B "${BUILD_DIR}" -DCOUPLER_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
            -DCMAKE_BUILD_TYPE=Release)
if ! run_step configure 90 "${LOGS}/configure.log" cmake "${cmake_args[@]}"; then
  # Benchmarks are not tests: a broken bench/ must not hide the GPU test results.
  fail
  run_step configure-no-bench 90 "${LOGS}/configure-no-bench.log" \
    cmake "${cmake_args[@]}" -DCOUPLER_BUILD_BENCH=OFF || exit 1
fi

jobs=$(nproc 2>/dev/null || echo 4)
if ! run_step build $(($(remaining) - TEST_RESERVE)) "${LOGS}/build.log" \
    cmake --build "${BUILD_DIR}" -j "${jobs}"; then
  # One broken target elsewhere should not cost the GPU results: build just the kernel tests
  # (the failed full build still fails the run).
  fail
  run_step build-kernel-tests $(($(remaining) - TEST_RESERVE + 30)) \
    "${LOGS}/build-kernel-tests.log" \
    cmake --build "${BUILD_DIR}" -j "${jobs}" --target coupler_kernel_tests || exit 1
fi

# --- gpu-labelled tests ---
ctest_rc=0
# NCCL refuses two ranks on one device, so the two-rank NCCL test needs two GPUs.
gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
exclude=()
if ((gpu_count < 2)); then
  exclude=(-E 'mpi_nccl_np2')
  add_row "mpi_nccl_np2" excluded 0 "${gpu_count} GPU(s) visible; it needs 2"
fi
run_step "ctest -L gpu" 100 "${LOGS}/ctest-gpu.log" \
  ctest --test-dir "${BUILD_DIR}" -L gpu "${exclude[@]}" --output-on-failure --no-tests=error \
  --timeout 90 --output-junit "$(realpath "${LOGS}")/ctest-gpu.xml" || ctest_rc=$?
skipped=$(grep -c '\*\*\*Skipped' "${LOGS}/ctest-gpu.log" || true)
tally=$(grep -E 'tests passed, [0-9]+ tests? failed out of' "${LOGS}/ctest-gpu.log" | tail -1 || true)
if ((ctest_rc == 0)); then
  add_row "gpu tests" ok 0 "${tally:-no tally} (${skipped} skipped)"
else
  add_row "gpu tests" FAIL 0 "${tally:-no tally} (${skipped} skipped)"
  fail
fi
if ((skipped > 0)) && [[ "${GPU_CHECK_ALLOW_SKIP:-0}" != "1" ]]; then
  add_row "gpu tests skipped" FAIL 0 "the tests saw no CUDA device; see ctest-gpu.log"
  fail
fi

# --- coupler doctor, once the CLI has it (informational) ---
if [[ -x "${BUILD_DIR}/bin/coupler" ]] &&
    timeout 10 "${BUILD_DIR}/bin/coupler" --help 2>&1 | grep -qw doctor; then
  run_step "coupler doctor" 20 "${LOGS}/doctor.log" "${BUILD_DIR}/bin/coupler" doctor || true
fi

# --- GPU benchmarks: informational; benchmarks never gate on a time ---
shopt -s nullglob
benches=("${BUILD_DIR}"/bin/bench_*)
if ((${#benches[@]} == 0)); then
  add_row benchmarks none 0 "no ${BUILD_DIR}/bin/bench_* binaries yet"
fi
for bench in "${benches[@]}"; do
  [[ -f "${bench}" && -x "${bench}" ]] || continue
  name=$(basename "${bench}")
  help=$(timeout 10 "${bench}" --help 2>&1 || true)
  if grep -q -- '--gpu' <<<"${help}"; then
    run_step "${name}" 90 "${LOGS}/${name}.log" "${bench}" --gpu || true
  elif grep -q -- 'benchmark_filter' <<<"${help}"; then
    run_step "${name}" 90 "${LOGS}/${name}.log" "${bench}" \
      '--benchmark_filter=[Cc]uda|[Gg]pu|GPU' || true
  else
    add_row "${name}" skipped 0 "no GPU mode (--gpu) in its --help"
  fi
done

# --- the digits pipeline end to end on the GPU (informational; needs data/digits.csv, which
# scripts/fetch-digits.sh writes — this script downloads nothing) ---
coupler="${BUILD_DIR}/bin/coupler"
if [[ ! -s data/digits.csv ]]; then
  add_row "digits pipeline" skipped 0 "data/digits.csv absent (scripts/fetch-digits.sh)"
elif [[ -x "${coupler}" ]]; then
  if run_step "digits pipeline" 120 "${LOGS}/digits-pipeline.log" \
      "${coupler}" run examples/digits-pipeline.yaml --workers 2; then
    add_row "  devices" info 0 "$(grep -m1 '^devices:' "${LOGS}/digits-pipeline.log" || true)"
    add_row "  evaluate" info 0 "$(grep -m1 'accuracy' "${LOGS}/digits-pipeline.log" | cut -c1-90 || true)"
  fi
fi

exit "${exit_code}"
