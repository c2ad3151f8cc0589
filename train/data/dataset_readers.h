// The two on-disk forms LoadDataset accepts, read into a Dataset. Internal to train/data:
// callers use LoadDataset, which picks one from the path and adds the common checks.
#pragma once

#include <string>

#include "runtime/status.h"
#include "train/data/dataset.h"

namespace coupler::train {

// A CSV file with a header row. Rows and features filled; num_classes left for the caller.
Result<Dataset> ReadCsvDataset(const std::string& path, const std::string& label_column);

// A directory of .npy shards, concatenated in file-name order. Same contract as above.
Result<Dataset> ReadNpyDirDataset(const std::string& dir, const std::string& label_column);

}  // namespace coupler::train
