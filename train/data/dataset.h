// The training data: a digits-style CSV (header row, one label column) or a directory of .npy
// shards (the loose path's output), split into train and held-out rows deterministically from the
// seed, and cut per step into each rank's slice of the global batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace coupler::train {

// Features are row-major fp32, labels are class indices in [0, num_classes).
struct Dataset {
  size_t rows = 0;
  size_t features = 0;
  size_t num_classes = 0;           // max label + 1
  std::vector<float> x;             // rows x features
  std::vector<int32_t> y;           // rows
};

// `path` is a CSV file (header; every column numeric; label_column holds non-negative integers,
// "3" or "3.0"; read by the import_csv kernel, so empty lines and CRLF are fine) or a directory
// of .npz (or .npy) shards as the loose path writes them (runtime/io/shard_file.h: named columns; every
// shard the same columns, names and dtypes in the same order; read in file-name order;
// temporaries and hidden files skipped), whose column `label_column` holds the labels and every
// other column is a feature widened to fp32. Errors: NotFound for a missing path,
// InvalidArgument naming the file (and line/column for CSV, row/column for .npy) for anything
// malformed, for a label that is negative or not an integer, and for a dataset with no rows.
Result<Dataset> LoadDataset(const std::string& path, const std::string& label_column);

// Rows split once by a seed-driven permutation: the last round(rows x test_fraction) of it are
// held out. Both parts keep their permuted order. Every rank computes the same split.
// test_fraction in [0, 1] and rows < 2^32 (checked).
struct Split {
  Dataset train;
  Dataset test;
  Dataset validation;  // empty unless HoldOutValidation took some of train
};
// Takes `all` (pass it with std::move: the split reuses its memory rather than copying it).
Split SplitDataset(Dataset all, double test_fraction, uint64_t seed);

// Moves round(train rows x fraction) of split.train into split.validation: the last ones of a
// permutation seeded from (seed, "validation"), so the held-out test rows stay exactly those of
// a run without validation, and every rank takes the same. fraction in [0, 1).
void HoldOutValidation(Split& split, double fraction, uint64_t seed);

// The order of training rows for an epoch: a permutation of [0, rows) from (seed, epoch), the
// same on every rank and independent of the world size (so np=1 and np=2 see the same global
// batches). std::mt19937_64 + our own Fisher-Yates with unbiased modulo-rejection indices
// (std::shuffle's and std::uniform_int_distribution's algorithms are unspecified), seeded from
// splitmix64(splitmix64(seed) ^ epoch): the same permutations on every platform, compiler and
// standard library. SplitDataset uses the same shuffle seeded with `seed` itself.
std::vector<uint32_t> EpochOrder(size_t rows, uint64_t seed, int64_t epoch);

// Copies rows `indices` of `data` into x (indices.size() x features) and y. An index out of
// range is a bug (checked).
void GatherRows(const Dataset& data, std::span<const uint32_t> indices, float* x, int32_t* y);

}  // namespace coupler::train
