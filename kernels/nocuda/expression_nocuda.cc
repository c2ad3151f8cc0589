// The expression interpreter's CUDA twin in a CPU-only build.
#include "kernels/cuda/expression_cuda.h"
#include "kernels/nocuda/not_built.h"

namespace coupler::kernels {

Status EvaluateExpressionCuda(const expr::Instruction*, size_t, int, const void* const*,
                              const size_t*, size_t, size_t, void*, expr::ValueType) {
  return NotBuilt("expression");
}

}  // namespace coupler::kernels
