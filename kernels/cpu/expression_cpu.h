// The CPU evaluator of compiled expressions (see kernels/expression.h): the rows in blocks,
// each instruction one loop over the block, so the dispatch costs once per block, not per row.
#pragma once

#include <cstddef>

#include "runtime/expr/instruction.h"

namespace coupler::kernels {

inline constexpr size_t kExpressionBlockRows = 4096;

// inputs[c]: column c's values; out: `rows` values of `result`. The code is valid (checked by
// the compiler and EvaluateExpression).
void EvaluateExpressionCpu(const expr::Instruction* code, size_t count, int registers,
                           const void* const* inputs, size_t rows, void* out,
                           expr::ValueType result);

}  // namespace coupler::kernels
