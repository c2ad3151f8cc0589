#include "runtime/io/csv_schema.h"

#include <algorithm>
#include <optional>

namespace coupler::io {
namespace {

std::string HeaderList(const std::vector<std::string>& header) {
  std::string list;
  for (const std::string& n : header) list += (list.empty() ? "" : ", ") + n;
  return list;
}

std::optional<size_t> IndexOf(const std::vector<std::string>& header, std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) return std::nullopt;
  return static_cast<size_t>(it - header.begin());
}

// The type a dtypes entry names.
std::optional<ColumnSchema> ForcedType(const std::string& name, std::string_view type) {
  if (type == "float32") return ColumnSchema{name, ElementType::kFloat32, false};
  if (type == "float64") return ColumnSchema{name, ElementType::kFloat64, false};
  if (type == "int32") return ColumnSchema{name, ElementType::kInt32, false};
  if (type == "string") return ColumnSchema{name, ElementType::kInt32, true};
  return std::nullopt;
}

void SplitPlain(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return;
    }
    fields.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

}  // namespace

Result<CsvLayout> InferCsvLayout(std::string_view whole, const CsvOptions& options) {
  CsvLayout layout;
  COUPLER_ASSIGN_OR_RETURN(layout.header, CsvHeaderNames(whole, options.header));
  // Callers may pass more than the prefix; the sample stays the same either way.
  const std::string_view text = whole.substr(0, kCsvSchemaSampleBytes);
  const std::vector<std::string>& header = layout.header;
  auto unknown = [&](const std::string& what, const std::string& name) {
    return InvalidArgument(what + " '" + name + "' is not a column (the header has: " +
                           HeaderList(header) + ")");
  };

  // Which fields, in which order.
  if (options.columns.empty()) {
    for (size_t i = 0; i < header.size(); ++i) layout.fields.push_back(i);
  } else {
    for (const std::string& name : options.columns) {
      const std::optional<size_t> index = IndexOf(header, name);
      if (!index) return unknown("columns: entry", name);
      if (std::find(layout.fields.begin(), layout.fields.end(), *index) != layout.fields.end()) {
        return InvalidArgument("columns: '" + name + "' is listed twice");
      }
      layout.fields.push_back(*index);
    }
  }
  auto kept = [&](size_t field) {
    return std::find(layout.fields.begin(), layout.fields.end(), field) != layout.fields.end();
  };

  // Forced types first: the label column, then dtypes.
  std::vector<std::optional<ColumnSchema>> types(header.size());
  if (!options.label_column.empty()) {
    const std::optional<size_t> index = IndexOf(header, options.label_column);
    if (!index) return unknown("label_column", options.label_column);
    if (!kept(*index)) {
      return InvalidArgument("label_column '" + options.label_column +
                             "' is not among the columns: kept");
    }
    types[*index] = ColumnSchema{options.label_column, ElementType::kInt32, false};
  }
  for (const job::ParamEntry& entry : options.dtypes) {
    const std::optional<size_t> index = IndexOf(header, entry.key);
    if (!index) return unknown("dtypes: column", entry.key);
    if (!kept(*index)) {
      return InvalidArgument("dtypes: column '" + entry.key +
                             "' is not among the columns: kept");
    }
    std::optional<ColumnSchema> forced = ForcedType(entry.key, entry.value);
    if (!forced) {
      return InvalidArgument("dtypes: '" + entry.key + "': unknown type '" + entry.value +
                             "' (expected float32, float64, int32 or string)");
    }
    if (entry.key == options.label_column && !(forced->dtype == ElementType::kInt32 &&
                                               !forced->categorical)) {
      return InvalidArgument("dtypes: '" + entry.key + "' is the label_column, which is int32");
    }
    types[*index] = std::move(forced);
  }

  // Sampling: every kept column without a forced type starts as float32 and becomes a string
  // column at its first sampled field that is neither missing nor a number.
  std::vector<bool> is_string(header.size(), false);
  std::vector<size_t> undecided;
  for (const size_t f : layout.fields) {
    if (!types[f]) undecided.push_back(f);
  }
  const bool whole_file = whole.size() < kCsvSchemaSampleBytes;
  size_t begin = CsvTextStart(text);
  if (options.header) begin = CsvAfterNewline(text, begin);
  std::vector<std::string_view> plain;
  std::vector<std::string> quoted;
  for (size_t lines = 0; !undecided.empty() && begin < text.size() &&
                         lines < kCsvSchemaSampleLines;) {
    const size_t next = CsvAfterNewline(text, begin);
    if (!whole_file && (next == text.size() && !text.ends_with('\n'))) break;  // a cut line
    const std::string_view line = CsvLineAt(text, begin, text.size());
    if (line.empty()) {
      begin = next;
      continue;
    }
    ++lines;
    size_t count = 0;
    const bool has_quote = line.find('"') != std::string_view::npos;
    if (has_quote) {
      size_t open = 0;
      if (!SplitCsvLine(line, quoted, &open).ok()) {
        return InvalidArgument(CsvQuotedNewlineMessage(
            CsvLineNumber(text, begin), open < header.size() ? header[open] : "", open));
      }
      count = quoted.size();
    } else {
      SplitPlain(line, plain);
      count = plain.size();
    }
    if (count != header.size()) {
      return InvalidArgument("line " + std::to_string(CsvLineNumber(text, begin)) +
                             ": expected " + std::to_string(header.size()) + " fields, found " +
                             std::to_string(count));
    }
    for (size_t u = 0; u < undecided.size();) {
      const size_t f = undecided[u];
      const std::string_view field = has_quote ? std::string_view(quoted[f]) : plain[f];
      float value = 0;
      const bool numeric = IsCsvMissing(field, options.na_values) ||
                           ParseCsvFloat(field, value) != CsvNumber::kNotNumber;
      if (numeric) {
        ++u;
        continue;
      }
      is_string[f] = true;
      undecided.erase(undecided.begin() + static_cast<std::ptrdiff_t>(u));
    }
    begin = next;
  }

  for (const size_t f : layout.fields) {
    if (types[f]) {
      layout.schema.columns.push_back(*types[f]);
    } else if (is_string[f]) {
      layout.schema.columns.push_back({header[f], ElementType::kInt32, true});
    } else {
      layout.schema.columns.push_back({header[f], ElementType::kFloat32, false});
    }
  }
  return layout;
}

Result<TableSchema> InferCsvSchema(std::string_view text_prefix, const CsvOptions& options) {
  COUPLER_ASSIGN_OR_RETURN(CsvLayout layout, InferCsvLayout(text_prefix, options));
  return std::move(layout.schema);
}

}  // namespace coupler::io
