// `coupler doctor`'s judgement, apart from how the facts are gathered: what the machine has
// (driver, runtime, devices, NVML, NCCL, MPI, ZeroMQ) in, one line per finding with its fix
// out. Pure, so every classic failure (no driver, a driver older than the runtime, a GPU
// visible but unusable, no launcher, no NVML) is unit-tested without the hardware behind it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coupler::doctor {

struct Gpu {
  int index = 0;
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct Facts {
  bool built_with_cuda = false;
  std::string cuda_runtime = "none";     // "13.0"
  std::string cuda_driver = "none";      // newest CUDA the driver supports, "none" without one
  std::optional<std::string> gpu_error;  // the device listing failed: present but broken
  std::vector<Gpu> gpus;
  // NVML (the driver's libnvidia-ml.so.1), which the worker samples GPU utilization through:
  // the driver version it reports and the GPUs it sees when it loads, else why it did not.
  std::optional<std::string> nvml_driver;  // "550.54.15"
  unsigned nvml_gpus = 0;
  std::string nvml_error;                  // "no NVML: libnvidia-ml.so.1: cannot open ..."
  std::string nccl = "none";             // "2.27.3"
  std::string mpi_library;               // "Open MPI v4.1.4"
  std::string mpirun;                    // path, empty when not on PATH
  std::string zeromq;                    // "4.3.4"
  bool zeromq_curve = false;
  // The CPU GEMMs (kernels/cpu/onednn_gemm.h): the instruction set oneDNN uses here, and
  // whether it runs bf16 ones (else they are widened to fp32 for OpenBLAS).
  bool onednn = true;                    // built with oneDNN (libdnnl-dev)
  std::string cpu_isa;                   // "avx512_core_amx"
  bool cpu_bf16_gemm = false;
};

enum class Verdict { kOk, kNote, kProblem };

struct Finding {
  std::string check;   // "cuda driver", "gpu 0", ...
  Verdict verdict = Verdict::kOk;
  std::string detail;  // what was found
  std::string fix;     // one line; empty when nothing to do
};

std::vector<Finding> Diagnose(const Facts& facts);

// One aligned line per finding ("ok", "note", "PROBLEM"), fixes indented under them.
std::string FormatFindings(const std::vector<Finding>& findings);

bool HasProblem(const std::vector<Finding>& findings);

}  // namespace coupler::doctor
