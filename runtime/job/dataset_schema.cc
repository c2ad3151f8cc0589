#include "runtime/job/dataset_schema.h"

#include <charconv>
#include <fstream>
#include <string>
#include <vector>

namespace coupler::job {
namespace {

// Enough for any header line a spec's check needs; a longer first line leaves it unknown.
constexpr size_t kPrefixBytes = 1 << 20;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// RFC 4180 fields of one line: quoted fields may hold commas and "" for a quote.
std::vector<std::string> SplitHeader(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && Trim(field).empty()) {
      field.clear();
      quoted = true;
    } else if (c == ',') {
      out.emplace_back(Trim(field));
      field.clear();
    } else {
      field += c;
    }
  }
  out.emplace_back(Trim(field));
  return out;
}

constexpr int kSampleLines = 200;

bool LooksNumericOrMissing(std::string_view field) {
  field = Trim(field);
  if (field.empty() || field == "NA" || field == "nan" || field == "NaN" || field == "null") {
    return true;
  }
  double value = 0;
  if (field.front() == '+') field.remove_prefix(1);
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  return ec == std::errc() && end == field.data() + field.size();
}

}  // namespace

std::optional<io::TableSchema> SchemaFromCsvPrefix(std::string_view prefix, bool header,
                                                   std::string_view label_column) {
  if (prefix.size() >= 3 && prefix.substr(0, 3) == "\xEF\xBB\xBF") prefix.remove_prefix(3);
  const size_t newline = prefix.find('\n');
  if (newline == std::string_view::npos && prefix.size() >= kPrefixBytes) return std::nullopt;
  const std::string_view line = prefix.substr(0, newline);
  if (Trim(line).empty()) return std::nullopt;
  std::vector<std::string> names = SplitHeader(line);
  // A column whose values in the first lines are not all numbers (or missing) is a string
  // column, which import_csv keeps as a categorical: so `city == "Paris"` is not refused.
  std::vector<bool> text(names.size(), false);
  size_t at = header ? (newline == std::string_view::npos ? prefix.size() : newline + 1) : 0;
  for (int lines = 0; lines < kSampleLines && at < prefix.size(); ++lines) {
    const size_t end = prefix.find('\n', at);
    if (end == std::string_view::npos) break;  // a cut line proves nothing
    const std::vector<std::string> fields = SplitHeader(prefix.substr(at, end - at));
    for (size_t i = 0; i < fields.size() && i < text.size(); ++i) {
      if (!text[i] && !LooksNumericOrMissing(fields[i])) text[i] = true;
    }
    at = end + 1;
  }
  io::TableSchema schema;
  for (size_t i = 0; i < names.size(); ++i) {
    io::ColumnSchema column;
    column.name = header ? names[i] : "c" + std::to_string(i);
    column.dtype = column.name == label_column || text[i] ? ElementType::kInt32
                                                          : ElementType::kFloat32;
    column.categorical = text[i] && column.name != label_column;
    schema.columns.push_back(std::move(column));
  }
  return schema;
}

std::optional<io::TableSchema> CsvHeaderSchema(const NodeSpec& import_node) {
  if (import_node.resolved_inputs.empty()) return std::nullopt;
  std::ifstream in(import_node.resolved_inputs.front().path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string prefix(kPrefixBytes, '\0');
  in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  prefix.resize(static_cast<size_t>(in.gcount()));
  bool header = true;
  std::string label;
  if (auto it = import_node.params.find("header"); it != import_node.params.end()) {
    if (const bool* b = std::get_if<bool>(&it->second)) header = *b;
  }
  if (auto it = import_node.params.find("label_column"); it != import_node.params.end()) {
    if (const std::string* s = std::get_if<std::string>(&it->second)) label = *s;
  }
  // SEAM: when runtime/io/csv_schema.h lands, return InferCsvSchema(prefix, options) here
  // (options from the node's params: header, label_column, columns, dtypes, missing values)
  // for real types and categoricals; this fallback knows the names only.
  return SchemaFromCsvPrefix(prefix, header, label);
}

}  // namespace coupler::job
