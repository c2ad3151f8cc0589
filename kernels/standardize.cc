#include "kernels/standardize.h"

#include "kernels/column_checks.h"
#include "kernels/cpu/preprocess_cpu.h"
#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {

Status Standardize(std::span<const float> in, std::span<float> out, double mean, double stddev,
                   Backend backend) {
  COUPLER_RETURN_IF_ERROR(CheckSameLength("standardize", in.size(), out.size()));
  const bool in_place = in.data() == out.data();
  if (!in_place && Overlaps(in.data(), in.size_bytes(), out.data(), out.size_bytes())) {
    return InvalidArgument("standardize: output partly overlaps the input; pass the same "
                           "column for in-place work or a separate one");
  }
  // A constant column: multiplying by 0 maps every finite value to 0 (NaN and inf stay faults).
  const double inv_stddev = stddev == 0 ? 0.0 : 1.0 / stddev;
  switch (backend) {
    case Backend::kCpu:
      if (in_place) {
        StandardizeInPlaceCpu(out.data(), out.size(), mean, inv_stddev);
      } else {
        StandardizeCpu(in.data(), out.data(), in.size(), mean, inv_stddev);
      }
      return Status::Ok();
    case Backend::kCuda:
      if (!BuiltWithCuda()) {
        return Unavailable("standardize: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (in.empty()) return Status::Ok();
      return StandardizeCuda(in.data(), out.data(), in.size(), mean, inv_stddev)
          .WithContext("standardize (cuda)");
  }
  return InvalidArgument("standardize: unknown backend");
}

}  // namespace coupler::kernels
