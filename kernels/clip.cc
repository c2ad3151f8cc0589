#include "kernels/clip.h"

#include <cmath>
#include <sstream>

#include "kernels/column_checks.h"
#include "kernels/cpu/batch_cpu.h"
#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {

Status Clip(std::span<const float> in, std::span<float> out, float lo, float hi,
            Backend backend) {
  COUPLER_RETURN_IF_ERROR(CheckSameLength("clip", in.size(), out.size()));
  if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
    std::ostringstream message;
    message << "clip: bounds must satisfy lo <= hi and not be NaN, got lo=" << lo
            << " hi=" << hi;
    return InvalidArgument(message.str());
  }
  const bool in_place = in.data() == out.data();
  if (!in_place && Overlaps(in.data(), in.size_bytes(), out.data(), out.size_bytes())) {
    return InvalidArgument("clip: output partly overlaps the input; pass the same column "
                           "for in-place work or a separate one");
  }
  switch (backend) {
    case Backend::kCpu:
      if (in_place) {
        ClipInPlaceCpu(out.data(), out.size(), lo, hi);
      } else {
        ClipCpu(in.data(), out.data(), in.size(), lo, hi);
      }
      return Status::Ok();
    case Backend::kCuda:
      if (!BuiltWithCuda()) {
        return Unavailable("clip: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (in.empty()) return Status::Ok();
      return ClipCuda(in.data(), out.data(), in.size(), lo, hi).WithContext("clip (cuda)");
  }
  return InvalidArgument("clip: unknown backend");
}

Status Clip(std::span<float> data, float lo, float hi, Backend backend) {
  return Clip(std::span<const float>(data), data, lo, hi, backend);
}

}  // namespace coupler::kernels
