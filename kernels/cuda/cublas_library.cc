#include "kernels/cuda/cublas_library.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

namespace coupler::kernels {
namespace {

const std::string kLibrary = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

// The folder of the libcudart this process runs with: a toolkit outside the loader's path
// (found through the binary's RUNPATH at link time) keeps libcublas beside it.
std::string CudartFolder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&cudaGetDeviceCount), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

template <typename Fn>
bool Resolve(void* library, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(::dlsym(library, name));
  if (out == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return out != nullptr;
}

Result<CublasApi> Load() {
  void* library = ::dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string reason = library == nullptr ? ::dlerror() : "";
  if (library == nullptr) {
    const std::string beside = CudartFolder() + kLibrary;
    library = ::dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) reason += std::string("; ") + ::dlerror();
  }
  if (library == nullptr) return Unavailable("cannot load cuBLAS for GPU GEMMs: " + reason);
  // Never closed: handles made from it live until the process ends.
  CublasApi api;
  std::string missing;
  Resolve(library, "cublasCreate_v2", api.create, missing);
  Resolve(library, "cublasDestroy_v2", api.destroy, missing);
  Resolve(library, "cublasSetMathMode", api.set_math_mode, missing);
  Resolve(library, "cublasSetStream_v2", api.set_stream, missing);
  Resolve(library, "cublasGemmEx", api.gemm_ex, missing);
  Resolve(library, "cublasGetStatusString", api.status_string, missing);
  if (!missing.empty()) return Unavailable(kLibrary + " lacks " + missing);
  return api;
}

}  // namespace

Result<const CublasApi*> Cublas() {
  static const Result<CublasApi> api = Load();
  if (!api.ok()) return api.status();
  return &*api;
}

}  // namespace coupler::kernels
