// The CUDA twin of EvaluateExpressionCpu, declared without CUDA headers: host pointers in and
// out, columns copied to the current device in chunks, one thread per row interpreting the
// program. kernels/nocuda/ answers Unavailable in a CPU-only build.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/expr/instruction.h"
#include "runtime/status.h"

namespace coupler::kernels {

// input_bytes[c]: the size of one value of column c (4 or 8).
Status EvaluateExpressionCuda(const expr::Instruction* code, size_t count, int registers,
                              const void* const* inputs, const size_t* input_bytes,
                              size_t columns, size_t rows, void* out, expr::ValueType result);

}  // namespace coupler::kernels
