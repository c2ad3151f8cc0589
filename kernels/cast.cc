#include "kernels/cast.h"

#include <string>

#include "kernels/column_checks.h"
#include "kernels/cpu/batch_cpu.h"
#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {

Status Cast(std::span<const float> in, std::span<uint16_t> out, ElementType format,
            Backend backend) {
  if (format != ElementType::kFloat16 && format != ElementType::kBFloat16) {
    return InvalidArgument("cast: the output type is " + std::string(ElementTypeName(format)) +
                           ", expected float16 or bfloat16");
  }
  COUPLER_RETURN_IF_ERROR(CheckSameLength("cast", in.size(), out.size()));
  // Elements are narrower on the way out, so even an exact alias would overwrite input that a
  // parallel backend has not read yet.
  if (Overlaps(in.data(), in.size_bytes(), out.data(), out.size_bytes())) {
    return InvalidArgument("cast: output overlaps the input; cast into a separate column");
  }
  switch (backend) {
    case Backend::kCpu:
      if (format == ElementType::kFloat16) {
        CastToFp16Cpu(in.data(), out.data(), in.size());
      } else {
        CastToBf16Cpu(in.data(), out.data(), in.size());
      }
      return Status::Ok();
    case Backend::kCuda:
      if (!BuiltWithCuda()) {
        return Unavailable("cast: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (in.empty()) return Status::Ok();
      return CastCuda(in.data(), out.data(), in.size(), format).WithContext("cast (cuda)");
  }
  return InvalidArgument("cast: unknown backend");
}

}  // namespace coupler::kernels
