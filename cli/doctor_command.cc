// `coupler doctor`: gathers what this machine offers (CUDA driver and runtime, devices, NVML,
// NCCL, MPI, ZeroMQ) and prints cli/doctor's verdict, one line per finding with its fix. Exits 1
// when something is broken, 0 otherwise (a machine without a GPU is a normal machine). With
// --coordinator EP it is also a new worker host's preflight (cli/doctor_preflight.h).
#include <zmq.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/device.h"
#include "train/comm/mpi_session.h"
#include "train/comm/nccl_factory.h"
#include "cli/doctor/diagnose.h"
#include "cli/doctor/preflight.h"
#include "cli/doctor_preflight.h"
#include "worker/gpu_monitor.h"

namespace coupler::cli {
namespace {

std::string FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(dir) / program;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
  }
  return "";
}

doctor::Facts GatherFacts() {
  doctor::Facts f;
  f.built_with_cuda = kernels::BuiltWithCuda();
  f.cuda_runtime = kernels::CudaRuntimeVersion();
  f.cuda_driver = kernels::CudaDriverVersion();
  auto devices = kernels::ListCudaDevices();
  if (!devices.ok()) {
    f.gpu_error = devices.status().ToString();
  } else {
    for (const auto& d : *devices) {
      f.gpus.push_back({d.index, d.name, d.total_memory, d.free_memory, d.compute_major,
                        d.compute_minor});
    }
  }
  if (Result<std::unique_ptr<worker::NvmlSession>> nvml = worker::NvmlSession::Open(); !nvml.ok()) {
    f.nvml_error = nvml.status().message();
  } else if (Result<std::string> version = (*nvml)->DriverVersion(); !version.ok()) {
    f.nvml_error = "no NVML: " + version.status().message();
  } else {
    f.nvml_driver = *version;
    Result<unsigned> count = (*nvml)->DeviceCount();
    f.nvml_gpus = count.ok() ? *count : 0;
  }
  f.nccl = comm::NcclVersion();
  f.mpi_library = comm::MpiSession::LibraryVersion();
  f.mpirun = FindOnPath("mpirun");
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  f.zeromq = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  f.zeromq_curve = zmq_has("curve") != 0;
  f.onednn = kernels::OneDnnBuilt();
  f.cpu_isa = std::string(kernels::OneDnnIsa());
  f.cpu_bf16_gemm = kernels::OneDnnRunsBf16();
  return f;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, CommandBody* run) {
  CLI::App* cmd = app.add_subcommand(
      "doctor", "Check this machine: CUDA driver and runtime, GPUs, NVML, NCCL, MPI, ZeroMQ; "
                "with --coordinator, whether a worker here can join that pool");
  auto pre = std::make_shared<PreflightOptions>();
  auto timeout_s = std::make_shared<double>(5);
  cmd->add_option("--coordinator", pre->coordinator,
                  "a pool's worker endpoint (tcp://HOST:PORT): check that a worker here reaches "
                  "it, that its key is accepted, the shared --workdir and Open MPI's ports");
  cmd->add_option("--keys", pre->keys_dir,
                  "the worker key set to check (default: as `coupler worker` finds it)");
  cmd->add_flag("--insecure", pre->insecure, "the coordinator runs --insecure (plaintext)");
  cmd->add_option("--workdir", pre->workdir,
                  "a directory of the pool's shared filesystem (a job's workdir): writable here, "
                  "and showing the coordinator's job markers");
  cmd->add_option("--timeout", *timeout_s, "seconds to wait for each answer")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  cmd->callback([run, pre, timeout_s] {
    *run = [pre, timeout_s] {
      auto findings = doctor::Diagnose(GatherFacts());
      if (!pre->coordinator.empty()) {
        pre->timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000));
        for (doctor::Finding& f : doctor::DiagnosePreflight(ProbeCoordinator(*pre))) {
          findings.push_back(std::move(f));
        }
      }
      std::fputs(doctor::FormatFindings(findings).c_str(), stdout);
      return doctor::HasProblem(findings) ? kExitFailure : kExitOk;
    };
  });
}

}  // namespace coupler::cli
