// Evaluating a compiled expression (runtime/expr/program.h) over whole columns: the CPU runs
// one tight loop per instruction over blocks of rows; the CUDA twin interprets the program per
// element. Both give the same values bit for bit, except log (the GPU's logf/log may differ in
// the last place) and NaN payloads.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/expr/program.h"
#include "runtime/precision/element_type.h"
#include "runtime/status.h"

namespace coupler::kernels {

// One column the program reads, in Program::columns order.
struct ExpressionInput {
  const void* data = nullptr;  // `rows` values of dtype
  ElementType dtype = ElementType::kFloat32;
  const std::vector<std::string>* dictionary = nullptr;  // categorical columns
};

// The bytes one result value takes: 1 (bool, stored 0/1 as uint8_t), 4 or 8.
size_t ResultBytes(expr::ValueType type);

// out: `rows` values of program.result. InvalidArgument when an input's type differs from what
// the program was compiled for; Unavailable for kCuda in a CPU-only build or without a device
// (checked before `out` is touched).
Status EvaluateExpression(const expr::Program& program, std::span<const ExpressionInput> inputs,
                          size_t rows, void* out, Backend backend);

}  // namespace coupler::kernels
