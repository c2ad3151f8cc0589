// The CPU twin of int8_gemm's loop form (kernels/int8_gemm.h): the definition every other
// implementation (oneDNN's matmul, the CUDA twin) must match bit for bit. Input already checked.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/int8_gemm.h"

namespace coupler::kernels {

void Int8GemmLoop(Int8Activations a, const int8_t* w, size_t n, const float* scale, float* c);

}  // namespace coupler::kernels
