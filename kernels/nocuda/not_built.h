// The answer every CUDA entry point gives in a CPU-only build.
#pragma once

#include <string>

#include "runtime/status.h"

namespace coupler::kernels {

inline Status NotBuilt(const char* op) {
  return Unavailable(std::string(op) + ": coupler was built without CUDA "
                                       "(COUPLER_WITH_CUDA=OFF); use the CPU backend");
}

}  // namespace coupler::kernels
