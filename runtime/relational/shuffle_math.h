// The per-row arithmetic of the shuffle's kernels — routing a row to its partition by the hash
// of its key words, and folding a value into its group's running moments — shared by the CPU
// loops (runtime/relational) and the CUDA twins (kernels/cuda/shuffle_cuda.cu), so both twins
// give the same bits and the CPU tests cover the arithmetic the GPU runs.
#pragma once

#include <cstdint>

#include "runtime/precision/host_device.h"

namespace coupler::relational {

// A row index that stands for no row: in a list of rows to take, a missing value; as a row's
// group, a row no aggregate folds (its key or value is missing).
inline constexpr uint32_t kMissingRow = 0xFFFFFFFFu;

// splitmix64's finalizer: every input bit moves every output bit.
COUPLER_HD constexpr uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A row's key hash starts here and takes one step per key column's word (KeyHashWords).
inline constexpr uint64_t kKeyHashSeed = 0x243f6a8885a308d3ULL;
COUPLER_HD constexpr uint64_t KeyHashStep(uint64_t h, uint64_t word) { return Mix(h * 31 + word); }

// The partition of a row whose key hashes to h, of `partitions` (at most 65,536): the high 32
// bits times P, shifted back — a uniform pick without a division per row.
COUPLER_HD constexpr uint32_t PartitionOfHash(uint64_t h, uint32_t partitions) {
  return static_cast<uint32_t>(((h >> 32) * partitions) >> 32);
}

// IEEE double operations rounded once each. On the device the intrinsics keep nvcc from
// contracting a multiply and an add into an FMA (which rounds once for both, so the GPU's M2
// would differ from the host's in the last bit); the host build never contracts (ISO C++,
// no -ffp-contract=fast).
COUPLER_HD inline double AddRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
COUPLER_HD inline double SubRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
COUPLER_HD inline double MulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
COUPLER_HD inline double DivRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// One present value folded into its group's count, sum and Welford's mean and M2 (the sum of
// squared deviations): the update pandas' var/std agree with to the last few bits.
COUPLER_HD inline void FoldMoment(int64_t& n, double& sum, double& mean, double& m2, double x) {
  ++n;
  sum = AddRn(sum, x);
  const double delta = SubRn(x, mean);
  mean = AddRn(mean, DivRn(delta, static_cast<double>(n)));
  m2 = AddRn(m2, MulRn(delta, SubRn(x, mean)));
}

// One present value added to its group's exact integer sum: wraps on overflow as numpy's int64
// does (unsigned arithmetic, no undefined behaviour).
COUPLER_HD constexpr void FoldSum(int64_t& n, int64_t& sum, int64_t x) {
  ++n;
  sum = static_cast<int64_t>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(x));
}

}  // namespace coupler::relational
