// The CSV kernel: one pass over a byte range, fields parsed in place with std::from_chars (no
// copies, no locale), values appended to per-column vectors that become the Table's columns.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <system_error>

#include "kernels/csv_import.h"

namespace coupler::kernels {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
constexpr size_t kNone = static_cast<size_t>(-1);

// Excel writes a byte-order mark; it is not part of the first name.
size_t TextStart(std::string_view text) { return text.starts_with(kUtf8Bom) ? kUtf8Bom.size() : 0; }

// One past the first '\n' at or after `from`; the text's end when there is none.
size_t AfterNewline(std::string_view text, size_t from) {
  if (from >= text.size()) return text.size();
  const void* nl = std::memchr(text.data() + from, '\n', text.size() - from);
  return nl == nullptr ? text.size() : static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
}

size_t FirstDataByte(std::string_view text, bool header) {
  return header ? AfterNewline(text, TextStart(text)) : TextStart(text);
}

// The line starting at `begin`, without its '\n' or '\r\n'.
std::string_view LineAt(std::string_view text, size_t begin, size_t limit) {
  const size_t end = std::min(AfterNewline(text, begin), limit);
  std::string_view line = text.substr(begin, end - begin);
  if (line.ends_with('\n')) line.remove_suffix(1);
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// Only computed for an error message, so the happy path never counts lines.
size_t LineNumber(std::string_view text, size_t offset) {
  size_t line = 1;
  const char* p = text.data();
  const char* const end = p + std::min(offset, text.size());
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) break;
    ++line;
    p = static_cast<const char*>(nl) + 1;
  }
  return line;
}

enum class ParseError { kOk, kEmpty, kNotNumber, kOutOfRange, kNotInteger };

// For a number too far out of range even for a double: true when it is tiny (a negative
// exponent, or no exponent and a zero integer part), false when it is huge.
bool TinyMagnitude(std::string_view number) {
  const size_t e = number.find_first_of("eE");
  if (e != std::string_view::npos) return e + 1 < number.size() && number[e + 1] == '-';
  const size_t first = number.find_first_not_of("-0");
  return first == std::string_view::npos || number[first] == '.';
}

ParseError ParseFloat(std::string_view field, float& out) {
  const auto fast = std::from_chars(field.data(), field.data() + field.size(), out);
  if (fast.ec == std::errc() && fast.ptr == field.data() + field.size()) return ParseError::kOk;
  // The slow path: surrounding blanks or quotes, a leading '+', range errors.
  std::string_view s = Trim(field);
  if (s.starts_with('+')) s.remove_prefix(1);
  if (s.empty()) return ParseError::kEmpty;
  const char* const end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ptr != end) return ParseError::kNotNumber;
  if (ec == std::errc::result_out_of_range) {
    // Underflow is not an error: the value rounds to a float32 subnormal or zero.
    double wide = 0;
    if (std::from_chars(s.data(), end, wide).ec == std::errc()) {
      if (std::fabs(wide) > std::numeric_limits<float>::max()) return ParseError::kOutOfRange;
      out = static_cast<float>(wide);
      return ParseError::kOk;
    }
    if (!TinyMagnitude(s)) return ParseError::kOutOfRange;
    out = s.starts_with('-') ? -0.0f : 0.0f;
    return ParseError::kOk;
  }
  return ec == std::errc() ? ParseError::kOk : ParseError::kNotNumber;
}

ParseError ParseLabel(std::string_view field, int32_t& out) {
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  if (ec == std::errc() && ptr == field.data() + field.size()) return ParseError::kOk;
  // Labels exported by tools that write every number as a float ("3.0") are still integers.
  float value = 0;
  if (const ParseError e = ParseFloat(field, value); e != ParseError::kOk) return e;
  if (value != std::trunc(value) || !(std::fabs(value) < 2147483648.0f)) {
    return ParseError::kNotInteger;
  }
  out = static_cast<int32_t>(value);
  return ParseError::kOk;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

}  // namespace

CsvRange CsvTaskRange(std::string_view text, bool header, size_t index, size_t count) {
  const size_t size = text.size();
  if (count == 0 || index >= count) return {size, size};
  // index * size / count without overflowing for big files.
  auto offset = [size, count](size_t i) { return size / count * i + size % count * i / count; };
  const size_t first = FirstDataByte(text, header);
  const size_t begin = index == 0 ? first : std::max(AfterNewline(text, offset(index)), first);
  const size_t end = index + 1 == count ? size : AfterNewline(text, offset(index + 1));
  return {begin, std::max(begin, end)};
}

Result<std::vector<std::string>> CsvColumnNames(std::string_view text,
                                                const CsvOptions& options) {
  const size_t start = TextStart(text);
  if (start >= text.size()) return InvalidArgument("the file is empty");
  const std::vector<std::string_view> fields = SplitFields(LineAt(text, start, text.size()));
  std::vector<std::string> names;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!options.header) {
      names.push_back("c" + std::to_string(i));
      continue;
    }
    std::string name(Trim(fields[i]));
    if (name.empty()) {
      return InvalidArgument("line 1: column " + std::to_string(i + 1) +
                             " has an empty name in the header");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return InvalidArgument("line 1: duplicate column name '" + name + "' in the header");
    }
    names.push_back(std::move(name));
  }
  if (!options.label_column.empty() &&
      std::find(names.begin(), names.end(), options.label_column) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    return InvalidArgument("label_column '" + options.label_column +
                           "' is not a column (columns: " + list + ")");
  }
  return names;
}

Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const std::vector<std::string>& names, const CsvOptions& options) {
  const size_t columns = names.size();
  if (columns == 0) return InvalidArgument("no columns");
  range.end = std::min(range.end, text.size());
  const size_t label = options.label_column.empty()
                           ? kNone
                           : static_cast<size_t>(std::find(names.begin(), names.end(),
                                                           options.label_column) -
                                                 names.begin());
  std::vector<std::vector<float>> floats(columns);
  std::vector<int32_t> labels;
  if (range.begin < range.end) {
    // Reserving from the first line's length avoids most regrowth on uniform files.
    const size_t first = LineAt(text, range.begin, range.end).size() + 1;
    const size_t estimate = (range.end - range.begin) / first + 16;
    for (size_t c = 0; c < columns; ++c) {
      if (c == label) {
        labels.reserve(estimate);
      } else {
        floats[c].reserve(estimate);
      }
    }
  }

  auto error = [&](size_t line_begin, const std::string& what) {
    return InvalidArgument("line " + std::to_string(LineNumber(text, line_begin)) + what);
  };

  for (size_t line_begin = range.begin; line_begin < range.end;) {
    const size_t next = std::min(AfterNewline(text, line_begin), range.end);
    const std::string_view line = LineAt(text, line_begin, range.end);
    if (line.empty()) {
      line_begin = next;
      continue;
    }
    const char* p = line.data();
    const char* const line_end = p + line.size();
    for (size_t c = 0; c < columns; ++c) {
      const char* q = p;
      while (q < line_end && *q != ',') ++q;
      if ((q == line_end) != (c + 1 == columns)) {
        return error(line_begin, ": expected " + std::to_string(columns) + " fields, found " +
                                     std::to_string(SplitFields(line).size()));
      }
      const std::string_view field(p, static_cast<size_t>(q - p));
      ParseError status;
      if (c == label) {
        int32_t v = 0;
        status = ParseLabel(field, v);
        labels.push_back(v);
      } else {
        float v = 0;
        status = ParseFloat(field, v);
        floats[c].push_back(v);
      }
      if (status != ParseError::kOk) {
        const std::string where = ", column '" + names[c] + "' (field " + std::to_string(c + 1) +
                                  "): '" + std::string(field.substr(0, 40)) + "' ";
        switch (status) {
          case ParseError::kOutOfRange: return error(line_begin, where + "is out of float32 range");
          case ParseError::kNotInteger: return error(line_begin, where + "is not an int32 label");
          case ParseError::kEmpty:
            return error(line_begin, where + "is empty (missing values are not supported)");
          default: return error(line_begin, where + "is not a number");
        }
      }
      p = q + 1;
    }
    line_begin = next;
  }

  io::Table table;
  for (size_t c = 0; c < columns; ++c) {
    io::Column column = c == label ? io::Column::Int32(names[c], std::move(labels))
                                   : io::Column::Float32(names[c], std::move(floats[c]));
    COUPLER_RETURN_IF_ERROR(table.AddColumn(std::move(column)));
  }
  return table;
}

}  // namespace coupler::kernels
