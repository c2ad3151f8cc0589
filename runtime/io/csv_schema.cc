#include "runtime/io/csv_schema.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "runtime/io/iso_datetime.h"

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
  if (type == "int64") return ColumnSchema{name, ElementType::kInt64, false};
  if (type == "bool") return ColumnSchema{name, ElementType::kBool, false};
  if (type == "datetime" || type == "datetime64[ns]") {
    return ColumnSchema{name, ElementType::kDatetime64, false};
  }
  if (type == "string") return ColumnSchema{name, ElementType::kInt32, true};
  return std::nullopt;
}

// What the sampled fields of one column still allow. A column starts allowing everything and
// loses a type at its first sampled value that type cannot hold; missing values allow all.
struct Candidates {
  bool any_value = false;
  bool any_missing = false;
  bool int64 = true;     // every value an integer spelling int64 holds
  bool number = true;    // every value a number
  bool float64 = false;  // some value beyond float32's range
  bool boolean = true;   // every value true/false
  bool datetime = true;  // every value an ISO 8601 timestamp

  bool Open() const { return int64 || number || boolean || datetime; }

  void See(std::string_view field) {
    any_value = true;
    if (int64) {
      std::string_view s = CsvTrimBlanks(field);
      if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
      if (s.starts_with('+')) s.remove_prefix(1);
      int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      int64 = !s.empty() && ec == std::errc() && ptr == s.data() + s.size() &&
              v != std::numeric_limits<int64_t>::min();
    }
    if (number) {
      float f = 0;
      const CsvNumber n = ParseCsvFloat(field, f);
      number = n == CsvNumber::kOk || n == CsvNumber::kOutOfRange;
      float64 = float64 || n == CsvNumber::kOutOfRange;
    }
    if (boolean) {
      bool b = false;
      boolean = ParseCsvBool(field, b);
    }
    if (datetime) {
      int64_t ns = 0;
      datetime = ParseIsoDatetime(field, ns);
    }
  }

  // The column's type once sampling ends. Integers are int64 whatever their size in the sample,
  // so a bigger id later in the file still fits; a number too big for float32 makes float64; a
  // bool column with a missing value is a string column (numpy's bool has no missing value).
  ColumnSchema Decide(const std::string& name) const {
    if (!any_value) return {name, ElementType::kFloat32, false};
    if (int64) return {name, ElementType::kInt64, false};
    if (number) return {name, float64 ? ElementType::kFloat64 : ElementType::kFloat32, false};
    if (boolean && !any_missing) return {name, ElementType::kBool, false};
    if (datetime) return {name, ElementType::kDatetime64, false};
    return {name, ElementType::kInt32, true};
  }
};

void SplitPlain(std::string_view line, std::vector<std::string_view>& fields, char delimiter) {
  fields.clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(delimiter, start);
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
  COUPLER_ASSIGN_OR_RETURN(layout.header, CsvHeaderNames(whole, options.header, options.delimiter,
                                                         options.encoding));
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
                             "' (expected float32, float64, int32, int64, bool, datetime or "
                             "string)");
    }
    if (entry.key == options.label_column && !(forced->dtype == ElementType::kInt32 &&
                                               !forced->categorical)) {
      return InvalidArgument("dtypes: '" + entry.key + "' is the label_column, which is int32");
    }
    types[*index] = std::move(forced);
  }

  // Sampling: every kept column without a forced type narrows its candidates field by field
  // and stops being looked at once only a string column is left.
  std::vector<Candidates> candidates(header.size());
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
    size_t next = CsvAfterNewline(text, begin);
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
      bool split = SplitCsvLine(line, quoted, &open, options.delimiter).ok();
      // quoted_newlines: the record goes on over the next lines until its quotes close.
      while (!split && options.quoted_newlines && next < text.size()) {
        const size_t after = CsvAfterNewline(text, next);
        if (!whole_file && after == text.size() && !text.ends_with('\n')) break;
        next = after;
        std::string_view record = text.substr(begin, next - begin);
        if (record.ends_with('\n')) record.remove_suffix(1);
        if (record.ends_with('\r')) record.remove_suffix(1);
        split = SplitCsvLine(record, quoted, &open, options.delimiter).ok();
      }
      if (!split && options.quoted_newlines && !whole_file) break;  // a record the sample cut
      if (!split) {
        return InvalidArgument(CsvQuotedNewlineMessage(
            CsvLineNumber(text, begin), open < header.size() ? header[open] : "", open));
      }
      count = quoted.size();
    } else {
      SplitPlain(line, plain, options.delimiter);
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
      Candidates& c = candidates[f];
      if (IsCsvMissing(field, options.na_values)) {
        c.any_missing = true;
      } else {
        c.See(field);
      }
      if (c.Open()) {
        ++u;
        continue;
      }
      undecided.erase(undecided.begin() + static_cast<std::ptrdiff_t>(u));
    }
    begin = next;
  }

  for (const size_t f : layout.fields) {
    layout.schema.columns.push_back(types[f] ? *types[f] : candidates[f].Decide(header[f]));
  }
  return layout;
}

Result<TableSchema> InferCsvSchema(std::string_view text_prefix, const CsvOptions& options) {
  COUPLER_ASSIGN_OR_RETURN(CsvLayout layout, InferCsvLayout(text_prefix, options));
  return std::move(layout.schema);
}

}  // namespace coupler::io
