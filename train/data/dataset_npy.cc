// The .npy form: a directory of shards as the loose path writes them, read with the shard reader
// and concatenated in file-name order; every column but the label is a feature, widened to fp32.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "runtime/io/output_layout.h"
#include "runtime/io/shard_file.h"
#include "runtime/precision/half.h"
#include "train/data/dataset_readers.h"

namespace coupler::train {
namespace {

namespace fs = std::filesystem;

// Calls fn(row, value) for every row of `column`, the value exactly as a double (so the label
// check sees what is stored). The dtype is dispatched once per column, not per value.
template <typename Fn>
void ForEachValue(const io::Column& column, Fn fn) {
  auto each = [&fn](auto values, auto widen) {
    for (size_t r = 0; r < values.size(); ++r) fn(r, static_cast<double>(widen(values[r])));
  };
  auto same = [](auto v) { return v; };
  switch (column.dtype()) {
    case ElementType::kFloat32: return each(column.values<float>(), same);
    case ElementType::kInt32: return each(column.values<int32_t>(), same);
    case ElementType::kFloat64: return each(column.values<double>(), same);
    case ElementType::kFloat16: return each(column.values<uint16_t>(), precision::HalfBitsToFloat);
    case ElementType::kBFloat16: return each(column.values<uint16_t>(), precision::Bf16BitsToFloat);
    case ElementType::kInt64:
    case ElementType::kDatetime64: return each(column.values<int64_t>(), io::Int64AsDouble);
    case ElementType::kBool: return each(column.values<uint8_t>(), same);
  }
}

// Appends one shard's rows to `data` (features in column order, the label column skipped).
Status AppendShard(const std::string& file, const io::Table& table,
                   const std::string& label_column, Dataset& data) {
  const size_t first = data.rows;
  data.rows += table.rows();
  data.x.resize(data.rows * data.features);
  data.y.resize(data.rows);
  size_t feature = 0;
  for (const io::Column& column : table.columns()) {
    if (column.name() != label_column) {
      float* out = data.x.data() + first * data.features + feature;
      ForEachValue(column, [out, &data](size_t r, double v) {
        out[r * data.features] = static_cast<float>(v);
      });
      ++feature;
      continue;
    }
    size_t bad_row = table.rows();
    double bad_label = 0;
    ForEachValue(column, [&](size_t r, double label) {
      if (!(label >= 0 && label < 2147483648.0) || label != std::trunc(label)) {
        if (bad_row == table.rows()) {
          bad_row = r;
          bad_label = label;
        }
        return;
      }
      data.y[first + r] = static_cast<int32_t>(label);
    });
    if (bad_row != table.rows()) {
      std::ostringstream label;
      label << bad_label;
      return InvalidArgument(file + ": row " + std::to_string(bad_row) + ", column '" +
                             label_column + "': " + label.str() +
                             " is not a class index (labels are integers >= 0)");
    }
  }
  return {};
}

}  // namespace

Result<Dataset> ReadNpyDirDataset(const std::string& dir, const std::string& label_column) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (io::IsShardFileName(it->path().filename().string()) && it->is_regular_file(ec)) {
      files.push_back(it->path().string());
    }
  }
  if (ec) return InvalidArgument(dir + ": cannot list the directory: " + ec.message());
  if (files.empty()) return InvalidArgument(dir + ": no .npz or .npy shards in the directory");
  // Name order: part-00000.npz, part-00001.npz, ... is the order the loose path wrote.
  std::sort(files.begin(), files.end());

  Dataset data;
  std::string columns;  // the first shard's "name (dtype), ..." every other must match
  for (const std::string& file : files) {
    COUPLER_ASSIGN_OR_RETURN(io::Table table, io::ReadShardFile(file));
    if (&file == &files.front()) {
      if (table.Find(label_column) == nullptr) {
        return InvalidArgument(file + ": label_column '" + label_column +
                               "' is not a column (columns: " + table.Describe() + ")");
      }
      if (table.num_columns() < 2) {
        return InvalidArgument(file + ": no feature columns besides the label column '" +
                               label_column + "'");
      }
      data.features = table.num_columns() - 1;
      columns = table.Describe();
    } else if (table.Describe() != columns) {
      return InvalidArgument(file + ": columns " + table.Describe() + " differ from " +
                             files.front() + "'s " + columns +
                             " (every shard must have the same columns)");
    }
    COUPLER_RETURN_IF_ERROR(AppendShard(file, table, label_column, data));
  }
  return data;
}

}  // namespace coupler::train
