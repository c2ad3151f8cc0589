// The CSV form: parsed by the import_csv kernel (the same reader, numbers and messages as the
// loose path), then turned from columns into the row-major features training wants.
#include <cstring>
#include <string_view>

#include "kernels/csv_import.h"
#include "runtime/io/mapped_file.h"
#include "train/data/dataset_readers.h"

namespace coupler::train {
namespace {

// The 1-based line of data row `row`. The kernel skips empty lines, so only non-empty ones
// count. Only used for an error message.
size_t LineOfRow(std::string_view text, size_t row) {
  size_t line = 1;
  size_t begin = text.find('\n');
  while (begin != std::string_view::npos && begin + 1 < text.size()) {
    ++begin;
    ++line;
    const size_t nl = text.find('\n', begin);
    std::string_view content = text.substr(begin, nl == std::string_view::npos ? nl : nl - begin);
    if (content.ends_with('\r')) content.remove_suffix(1);
    if (!content.empty()) {
      if (row == 0) return line;
      --row;
    }
    begin = nl;
  }
  return line;
}

}  // namespace

Result<Dataset> ReadCsvDataset(const std::string& path, const std::string& label_column) {
  COUPLER_ASSIGN_OR_RETURN(const io::MappedFile file, io::MappedFile::Open(path));
  const std::string_view text = file.text();
  kernels::CsvOptions options;
  options.header = true;
  options.label_column = label_column;
  Result<std::vector<std::string>> names = kernels::CsvColumnNames(text, options);
  if (!names.ok()) return names.status().WithContext(path);
  if (names->size() < 2) {
    return InvalidArgument(path + ": no feature columns besides the label column '" +
                           label_column + "'");
  }
  Result<io::Table> parsed =
      kernels::ParseCsvRange(text, kernels::CsvTaskRange(text, true, 0, 1), *names, options);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  const io::Table& table = *parsed;

  Dataset data;
  data.rows = table.rows();
  data.features = table.num_columns() - 1;
  data.x.resize(data.rows * data.features);
  size_t feature = 0;
  for (const io::Column& column : table.columns()) {
    if (column.name() == label_column) {
      const std::span<const int32_t> labels = column.values<int32_t>();
      data.y.assign(labels.begin(), labels.end());
      continue;
    }
    const std::span<const float> values = column.values<float>();
    for (size_t r = 0; r < data.rows; ++r) data.x[r * data.features + feature] = values[r];
    ++feature;
  }
  for (size_t r = 0; r < data.rows; ++r) {
    if (data.y[r] < 0) {
      return InvalidArgument(path + ": line " + std::to_string(LineOfRow(text, r)) +
                             ", column '" + label_column + "': " + std::to_string(data.y[r]) +
                             " is not a class index (labels are integers >= 0)");
    }
  }
  return data;
}

}  // namespace coupler::train
