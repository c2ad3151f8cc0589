#include "runtime/job/dataset_schema.h"

#include <fstream>
#include <string>
#include <vector>

#include "runtime/io/compressed_text.h"
#include "runtime/io/csv_schema.h"

namespace coupler::job {
namespace {

template <typename T>
const T* FindParam(const NodeSpec& node, const char* name) {
  const auto it = node.params.find(name);
  return it == node.params.end() ? nullptr : std::get_if<T>(&it->second);
}

}  // namespace

std::optional<io::TableSchema> CsvHeaderSchema(const NodeSpec& import_node) {
  if (import_node.resolved_inputs.empty()) return std::nullopt;
  // The same prefix (decompressed, for a .gz or .zst) every import task reads its types from.
  Result<std::string> read =
      io::ReadTextPrefix(import_node.resolved_inputs.front().path, io::kCsvSchemaSampleBytes);
  if (!read.ok()) return std::nullopt;
  const std::string prefix = std::move(read).value();
  io::CsvOptions options;
  if (const bool* header = FindParam<bool>(import_node, "header")) options.header = *header;
  if (const auto* label = FindParam<std::string>(import_node, "label_column")) {
    options.label_column = *label;
  }
  if (const auto* columns = FindParam<std::vector<std::string>>(import_node, "columns")) {
    options.columns = *columns;
  }
  if (const auto* dtypes = FindParam<ParamMap>(import_node, "dtypes")) options.dtypes = *dtypes;
  const auto* na = FindParam<std::vector<std::string>>(import_node, "na_values");
  const bool* keep_default_na = FindParam<bool>(import_node, "keep_default_na");
  options.na_values = io::CsvNaTokens(na != nullptr ? *na : std::vector<std::string>{},
                                      keep_default_na == nullptr || *keep_default_na);
  if (const bool* q = FindParam<bool>(import_node, "quoted_newlines")) options.quoted_newlines = *q;
  const auto* delimiter = FindParam<std::string>(import_node, "delimiter");
  const auto* encoding = FindParam<std::string>(import_node, "encoding");
  if (!io::SetCsvDialect(options, delimiter != nullptr ? *delimiter : ",",
                         encoding != nullptr ? *encoding : "utf-8")
           .ok()) {
    return std::nullopt;
  }
  auto schema = io::InferCsvSchema(prefix, options);
  if (!schema.ok()) return std::nullopt;
  return std::move(schema).value();
}

}  // namespace coupler::job
