#include "kernels/cpu/openblas_library.h"

#include <dlfcn.h>

#include <string>

namespace coupler::kernels {
namespace {

constexpr const char* kLibrary = "libopenblas.so.0";

Result<OpenBlasApi> Load() {
  // Never closed: sgemm may run until the process ends.
  void* library = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return Unavailable(std::string("cannot load OpenBLAS for CPU GEMMs: ") + ::dlerror() +
                       " (Debian: apt install libopenblas0)");
  }
  OpenBlasApi api;
  api.sgemm = reinterpret_cast<decltype(api.sgemm)>(::dlsym(library, "cblas_sgemm"));
  if (api.sgemm == nullptr) return Unavailable(std::string(kLibrary) + " lacks cblas_sgemm");
  // Training runs one rank (or one worker slot) per core: OpenBLAS's own threads would only
  // oversubscribe it.
  using SetThreads = void (*)(int);
  if (auto set_threads =
          reinterpret_cast<SetThreads>(::dlsym(library, "openblas_set_num_threads"))) {
    set_threads(1);
  }
  return api;
}

}  // namespace

Result<const OpenBlasApi*> OpenBlas() {
  static const Result<OpenBlasApi> api = Load();
  if (!api.ok()) return api.status();
  return &*api;
}

}  // namespace coupler::kernels
