# Every third-party dependency, found on the system. A missing one stops configure with the
# Debian package that provides it (scripts/install-deps.sh installs them all).
function(coupler_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "coupler: ${what} not found. Install it with: "
                        "apt-get install ${package}  (or run scripts/install-deps.sh)")
  endif()
endfunction()

find_package(Threads REQUIRED)

find_package(MPI COMPONENTS C QUIET)
coupler_require(MPI_C_FOUND "Open MPI" "libopenmpi-dev openmpi-bin")

find_package(cppzmq CONFIG QUIET)
coupler_require(cppzmq_FOUND "ZeroMQ C++ bindings (cppzmq)" "libzmq3-dev cppzmq-dev")

find_package(cereal CONFIG QUIET)
coupler_require(cereal_FOUND "cereal" "libcereal-dev")

find_package(spdlog CONFIG QUIET)
coupler_require(spdlog_FOUND "spdlog" "libspdlog-dev")

find_package(CLI11 CONFIG QUIET)
coupler_require(CLI11_FOUND "CLI11" "libcli11-dev")

find_package(yaml-cpp CONFIG QUIET)
coupler_require(yaml-cpp_FOUND "yaml-cpp" "libyaml-cpp-dev")

find_package(SQLite3 QUIET)
coupler_require(SQLite3_FOUND "SQLite" "libsqlite3-dev")

set(BLA_VENDOR OpenBLAS)
find_package(BLAS QUIET)
coupler_require(BLAS_FOUND "OpenBLAS" "libopenblas-dev")
find_path(COUPLER_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread)
coupler_require(COUPLER_CBLAS_INCLUDE_DIR "cblas.h" "libopenblas-dev")

# The CPU GEMMs (fp32, and bf16 on AMX/AVX512_BF16): oneDNN's matmul, OpenBLAS where it has none.
# Found by hand: Debian's dnnl-config.cmake insists on the OpenCL headers, which the CPU
# library does not need. Optional: without libdnnl-dev every CPU GEMM runs on OpenBLAS (slower
# in fp32, much slower in bf16), and `coupler doctor` says so.
find_path(COUPLER_DNNL_INCLUDE_DIR dnnl.hpp PATH_SUFFIXES oneapi/dnnl)
find_library(COUPLER_DNNL_LIBRARY dnnl)
if(COUPLER_DNNL_INCLUDE_DIR AND COUPLER_DNNL_LIBRARY)
  set(COUPLER_ONEDNN_ENABLED ON)
else()
  set(COUPLER_ONEDNN_ENABLED OFF)
  message(WARNING "coupler: oneDNN (libdnnl-dev) not found: the CPU GEMMs run on OpenBLAS. "
                  "Install it with scripts/install-deps.sh for fast fp32 and bf16 training.")
endif()

find_package(PkgConfig QUIET)
coupler_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")
pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
coupler_require(HTTPLIB_FOUND "cpp-httplib" "libcpp-httplib-dev")
# import_csv reads .csv.gz and .csv.zst as streams.
find_package(ZLIB QUIET)
coupler_require(ZLIB_FOUND "zlib" "zlib1g-dev")
pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
coupler_require(ZSTD_FOUND "libzstd" "libzstd-dev")

if(COUPLER_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  coupler_require(GTest_FOUND "GoogleTest" "libgtest-dev libgmock-dev")
  include(GoogleTest)
endif()
if(COUPLER_BUILD_BENCH AND NOT COUPLER_FUZZ)
  find_package(benchmark CONFIG QUIET)
  coupler_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()

find_program(COUPLER_MPIEXEC NAMES mpirun mpiexec)
coupler_require(COUPLER_MPIEXEC "mpirun" "openmpi-bin")
