// COUPLER_HD marks small inline functions that must compile for both the host and CUDA
// devices (fp16/bf16 conversions, element-wise kernel math), so the CPU and CUDA twins of a
// kernel share one definition and CPU tests cover the arithmetic the GPU runs.
#pragma once

#if defined(__CUDACC__)
#define COUPLER_HD __host__ __device__
#else
#define COUPLER_HD
#endif
