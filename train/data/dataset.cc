// LoadDataset's common checks, and the seed-driven split and epoch orders. The permutations are
// ops::SeededPermutation (runtime/ops/train_model.h), bit-identical across platforms, compilers
// and standard libraries: a seed names the same split and the same batches everywhere, and
// evaluate finds the same held-out rows.
#include "train/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <system_error>

#include "runtime/check.h"
#include "runtime/ops/train_model.h"
#include "train/data/dataset_readers.h"

namespace coupler::train {
namespace {

namespace fs = std::filesystem;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Dataset Subset(const Dataset& all, std::span<const uint32_t> indices) {
  Dataset part;
  part.rows = indices.size();
  part.features = all.features;
  part.num_classes = all.num_classes;
  part.x.resize(part.rows * part.features);
  part.y.resize(part.rows);
  GatherRows(all, indices, part.x.data(), part.y.data());
  return part;
}

}  // namespace

Result<Dataset> LoadDataset(const std::string& path, const std::string& label_column) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return NotFound(path + ": no such file or directory");
  Result<Dataset> data = fs::is_directory(status) ? ReadNpyDirDataset(path, label_column)
                                                   : ReadCsvDataset(path, label_column);
  if (!data.ok()) return data;
  if (data->rows == 0) return InvalidArgument(path + ": the dataset has no rows");
  data->num_classes = static_cast<size_t>(*std::max_element(data->y.begin(), data->y.end())) + 1;
  return data;
}

Split SplitDataset(const Dataset& all, double test_fraction, uint64_t seed) {
  // The split evaluate reproduces (runtime/ops/train_model.h).
  const size_t test_rows = ops::HeldOutCount(all.rows, test_fraction);
  const std::vector<uint32_t> order = ops::SeededPermutation(all.rows, seed);
  const std::span<const uint32_t> rows(order);
  return Split{Subset(all, rows.first(all.rows - test_rows)), Subset(all, rows.last(test_rows)),
               Dataset{}};
}

void HoldOutValidation(Split& split, double fraction, uint64_t seed) {
  const size_t rows = split.train.rows;
  const size_t held = ops::HeldOutCount(rows, fraction);
  if (held == 0) return;
  const std::vector<uint32_t> order = ops::SeededPermutation(rows, SplitMix64(seed ^ 0x76616c6964617465ull));
  const std::span<const uint32_t> all(order);
  split.validation = Subset(split.train, all.last(held));
  split.train = Subset(split.train, all.first(rows - held));
}

std::vector<uint32_t> EpochOrder(size_t rows, uint64_t seed, int64_t epoch) {
  // Hashing (seed, epoch) gives unrelated generator states for neighbouring epochs and seeds.
  return ops::SeededPermutation(rows, SplitMix64(SplitMix64(seed) ^ static_cast<uint64_t>(epoch)));
}

void GatherRows(const Dataset& data, std::span<const uint32_t> indices, float* x, int32_t* y) {
  const size_t width = data.features;
  for (size_t i = 0; i < indices.size(); ++i) {
    const size_t row = indices[i];
    COUPLER_CHECK(row < data.rows) << "row " << row << " of " << data.rows;
    if (width > 0) std::memcpy(x + i * width, data.x.data() + row * width, width * sizeof(float));
    y[i] = data.y[row];
  }
}

}  // namespace coupler::train
