#include "cli/doctor/diagnose.h"

#include <cstdio>
#include <cstdlib>

namespace coupler::doctor {
namespace {

// "13.0" -> 13000 (CUDA's own encoding: major * 1000 + minor * 10); 0 for anything else.
int CudaVersionCode(const std::string& text) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0) return 0;
  return std::atoi(text.substr(0, dot).c_str()) * 1000 +
         std::atoi(text.substr(dot + 1).c_str()) * 10;
}

std::string Gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return text;
}

void CheckCuda(const Facts& f, std::vector<Finding>* out) {
  if (!f.built_with_cuda) {
    out->push_back({"cuda", Verdict::kNote, "this build has no CUDA kernels: everything runs on the CPU",
                    "where the CUDA Toolkit is installed, rebuild: scripts/build.sh "
                    "-DCOUPLER_WITH_CUDA=ON"});
    return;
  }
  const bool driver = f.cuda_driver != "none";
  out->push_back({"cuda runtime", Verdict::kOk, f.cuda_runtime, ""});
  if (!driver) {
    out->push_back({"cuda driver", Verdict::kNote,
                    "no NVIDIA driver: GPU work falls back to the CPU",
                    "if this machine has an NVIDIA GPU, install its driver (nvidia-smi must "
                    "list it)"});
    return;
  }
  const int driver_code = CudaVersionCode(f.cuda_driver);
  const int runtime_code = CudaVersionCode(f.cuda_runtime);
  if (driver_code != 0 && runtime_code != 0 && driver_code < runtime_code) {
    out->push_back({"cuda driver", Verdict::kProblem,
                    "driver supports CUDA " + f.cuda_driver + " but this build uses runtime " +
                        f.cuda_runtime,
                    "upgrade the NVIDIA driver to one for CUDA " + f.cuda_runtime +
                        " or newer, or rebuild with a matching toolkit"});
  } else {
    out->push_back({"cuda driver", Verdict::kOk, "supports CUDA " + f.cuda_driver, ""});
  }
  if (f.gpu_error) {
    out->push_back({"gpu", Verdict::kProblem, "a GPU is present but unusable: " + *f.gpu_error,
                    "check `nvidia-smi`; another process may hold it in exclusive mode, or it "
                    "needs a reset"});
    return;
  }
  if (f.gpus.empty()) {
    out->push_back({"gpu", Verdict::kProblem, "the driver is installed but no device is visible",
                    "check CUDA_VISIBLE_DEVICES, `nvidia-smi`, and in a container the GPU "
                    "runtime flag (docker --gpus all)"});
    return;
  }
  for (const Gpu& g : f.gpus) {
    const std::string detail = g.name + ", sm_" + std::to_string(g.compute_major) +
                               std::to_string(g.compute_minor) + ", " + Gib(g.total_bytes) +
                               " total, " + Gib(g.free_bytes) + " free";
    if (g.free_bytes == 0) {
      out->push_back({"gpu " + std::to_string(g.index), Verdict::kNote, detail + " (busy)",
                      "another process holds it: see `nvidia-smi`"});
    } else {
      out->push_back({"gpu " + std::to_string(g.index), Verdict::kOk, detail, ""});
    }
  }
}

void CheckNvml(const Facts& f, std::vector<Finding>* out) {
  if (f.nvml_driver) {
    out->push_back({"nvml", Verdict::kOk,
                    "driver " + *f.nvml_driver + ", " + std::to_string(f.nvml_gpus) +
                        " GPU(s): workers report GPU utilization",
                    ""});
  } else if (!f.gpus.empty()) {
    // The GPUs work without it; only what `coupler workers` shows of them and the idle-GPU
    // warning are lost.
    out->push_back({"nvml", Verdict::kNote,
                    "CUDA sees GPUs but NVML does not load (" + f.nvml_error +
                        "): workers cannot report GPU utilization, and idle GPUs go unnoticed",
                    "libnvidia-ml.so.1 ships with the NVIDIA driver: reinstall the driver's "
                    "utilities, or in a container add `utility` to NVIDIA_DRIVER_CAPABILITIES"});
  } else {
    out->push_back({"nvml", Verdict::kOk, "not loaded, not needed without a GPU (" +
                                              f.nvml_error + ")", ""});
  }
}

}  // namespace

std::vector<Finding> Diagnose(const Facts& f) {
  std::vector<Finding> out;
  CheckCuda(f, &out);
  CheckNvml(f, &out);
  if (f.built_with_cuda && f.nccl == "none") {
    out.push_back({"nccl", Verdict::kNote, "not built in: training groups all-reduce over MPI",
                   "install NCCL beside the CUDA Toolkit (nccl.h, libnccl) and rebuild"});
  } else if (f.nccl != "none") {
    out.push_back({"nccl", Verdict::kOk, f.nccl, ""});
  }
  out.push_back({"mpi", Verdict::kOk, f.mpi_library.empty() ? "linked" : f.mpi_library, ""});
  if (f.mpirun.empty()) {
    out.push_back({"mpirun", Verdict::kProblem, "not on PATH: training groups cannot start",
                   "apt-get install openmpi-bin (scripts/install-deps.sh does)"});
  } else {
    out.push_back({"mpirun", Verdict::kOk, f.mpirun, ""});
  }
  if (!f.onednn) {
    out.push_back({"cpu gemm", Verdict::kNote,
                   "built without oneDNN: every CPU GEMM runs on OpenBLAS (bf16 widened to fp32)",
                   "install libdnnl-dev (scripts/install-deps.sh does) and rebuild"});
  } else if (f.cpu_bf16_gemm) {
    out.push_back({"cpu gemm", Verdict::kOk, "oneDNN on " + f.cpu_isa + ": fp32 and bf16 GEMMs", ""});
  } else {
    out.push_back({"cpu gemm", Verdict::kNote,
                   "oneDNN on " + f.cpu_isa + ": fp32 GEMMs; bf16 ones are widened to fp32, so "
                   "precision bf16 saves memory here but is not faster",
                   "bf16 GEMMs need AVX-512 (fastest with AVX512_BF16 or AMX)"});
  }
  if (f.zeromq_curve) {
    out.push_back({"zeromq", Verdict::kOk, f.zeromq + " with CURVE", ""});
  } else {
    out.push_back({"zeromq", Verdict::kNote, f.zeromq + " without CURVE: no encrypted links",
                   "use a libzmq built with libsodium (Debian's libzmq5 is)"});
  }
  return out;
}

std::string FormatFindings(const std::vector<Finding>& findings) {
  std::string text;
  for (const Finding& f : findings) {
    const char* verdict = f.verdict == Verdict::kOk     ? "ok"
                          : f.verdict == Verdict::kNote ? "note"
                                                        : "PROBLEM";
    char line[64];
    std::snprintf(line, sizeof(line), "%-8s %-13s ", verdict, f.check.c_str());
    text += line;
    text += f.detail;
    text += '\n';
    if (!f.fix.empty()) {
      text += "         fix: ";
      text += f.fix;
      text += '\n';
    }
  }
  return text;
}

bool HasProblem(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.verdict == Verdict::kProblem) return true;
  }
  return false;
}

}  // namespace coupler::doctor
