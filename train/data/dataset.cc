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

// Row i becomes the old row order[i], in place: each cycle of the permutation is walked once,
// one row kept aside, so the extra memory is a row and a bit per row.
void PermuteRowsInPlace(Dataset& data, const std::vector<uint32_t>& order) {
  COUPLER_CHECK(order.size() == data.rows) << order.size() << " indices for " << data.rows << " rows";
  const size_t width = data.features;
  std::vector<bool> placed(data.rows, false);
  std::vector<float> kept(width);
  float* x = data.x.data();
  for (size_t start = 0; start < data.rows; ++start) {
    if (placed[start]) continue;
    std::copy_n(x + start * width, width, kept.data());
    const int32_t kept_y = data.y[start];
    size_t i = start;
    while (true) {
      placed[i] = true;
      const size_t from = order[i];
      if (from == start) {
        std::copy_n(kept.data(), width, x + i * width);
        data.y[i] = kept_y;
        break;
      }
      std::copy_n(x + from * width, width, x + i * width);
      data.y[i] = data.y[from];
      i = from;
    }
  }
}

// The last `n` rows of `data`, moved into a dataset of their own; `data` keeps the rest (its
// memory is not given back: shrinking would copy the rows that stay).
Dataset TakeLastRows(Dataset& data, size_t n) {
  Dataset tail;
  tail.rows = n;
  tail.features = data.features;
  tail.num_classes = data.num_classes;
  const size_t keep = data.rows - n;
  tail.x.assign(data.x.begin() + static_cast<std::ptrdiff_t>(keep * data.features), data.x.end());
  tail.y.assign(data.y.begin() + static_cast<std::ptrdiff_t>(keep), data.y.end());
  data.rows = keep;
  data.x.resize(keep * data.features);
  data.y.resize(keep);
  return tail;
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

Split SplitDataset(Dataset all, double test_fraction, uint64_t seed) {
  // The split evaluate reproduces (runtime/ops/train_model.h): rows in the permutation's order,
  // the last test_rows of it held out. Done in the loaded rows' own memory, so a rank holds its
  // dataset once (with a gathered copy per side it held it twice, for the whole run).
  const size_t test_rows = ops::HeldOutCount(all.rows, test_fraction);
  PermuteRowsInPlace(all, ops::SeededPermutation(all.rows, seed));
  Split split;
  split.test = TakeLastRows(all, test_rows);
  split.train = std::move(all);
  return split;
}

void HoldOutValidation(Split& split, double fraction, uint64_t seed) {
  const size_t held = ops::HeldOutCount(split.train.rows, fraction);
  if (held == 0) return;
  PermuteRowsInPlace(split.train, ops::SeededPermutation(split.train.rows,
                                                         SplitMix64(seed ^ 0x76616c6964617465ull)));
  split.validation = TakeLastRows(split.train, held);
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
