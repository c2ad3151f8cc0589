// What the `train` op leaves for `evaluate` and both must read alike: model.json (the layer
// widths and the split the group trained with) and the held-out split itself, a seeded
// permutation of the dataset's rows. One definition, so evaluate scores exactly the rows
// coupler train held out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace coupler::ops {

// In a train node's directory, beside weights.npy and metrics.json.
inline constexpr std::string_view kModelInfoFile = "model.json";

struct ModelInfo {
  std::vector<size_t> layers;  // widths, input first
  std::string label_column;
  double test_fraction = 0;
  uint64_t seed = 0;
  std::string data;  // the dataset it was trained on
};

std::string ModelInfoJson(const ModelInfo& info);
// InvalidArgument naming `path` for anything the train op would not have written.
Result<ModelInfo> ReadModelInfo(const std::string& path);

// A permutation of [0, rows) from `seed`: std::mt19937_64 (whose output the standard fixes),
// unbiased modulo-rejection indices and Fisher-Yates from the back of our own, so a seed names
// the same order on every platform, compiler and standard library. rows < 2^32 (checked).
std::vector<uint32_t> SeededPermutation(size_t rows, uint64_t seed);

// The split: SeededPermutation(rows, seed), whose last HeldOutCount(rows, test_fraction)
// entries are held out (round(rows x test_fraction)); test_fraction in [0, 1] (checked).
size_t HeldOutCount(size_t rows, double test_fraction);

}  // namespace coupler::ops
