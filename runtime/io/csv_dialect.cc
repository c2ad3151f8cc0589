#include "runtime/io/csv_dialect.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <limits>
#include <system_error>

namespace coupler::io {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Blanks, then one pair of surrounding quotes (a quoted number on a line the kernel's fast path
// did not split), then a leading '+'.
std::string_view NumberText(std::string_view field) {
  std::string_view s = CsvTrimBlanks(field);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  if (s.starts_with('+')) s.remove_prefix(1);
  return s;
}

// For a number too far out of range even for a double: true when it is tiny (a negative
// exponent, or no exponent and a zero integer part), false when it is huge.
bool TinyMagnitude(std::string_view number) {
  const size_t e = number.find_first_of("eE");
  if (e != std::string_view::npos) return e + 1 < number.size() && number[e + 1] == '-';
  const size_t first = number.find_first_not_of("-0");
  return first == std::string_view::npos || number[first] == '.';
}

}  // namespace

std::vector<std::string> DefaultCsvNaValues() {
  return {"#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
          "<NA>", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"};
}

std::vector<std::string> CsvNaTokens(const std::vector<std::string>& extra, bool keep_default) {
  std::vector<std::string> tokens = keep_default ? DefaultCsvNaValues() : std::vector<std::string>{};
  for (const std::string& token : extra) {
    if (std::find(tokens.begin(), tokens.end(), token) == tokens.end()) tokens.push_back(token);
  }
  return tokens;
}

size_t CsvTextStart(std::string_view text) {
  return text.starts_with(kUtf8Bom) ? kUtf8Bom.size() : 0;
}

size_t CsvAfterNewline(std::string_view text, size_t from) {
  if (from >= text.size()) return text.size();
  const void* nl = std::memchr(text.data() + from, '\n', text.size() - from);
  return nl == nullptr ? text.size()
                       : static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
}

std::string_view CsvLineAt(std::string_view text, size_t begin, size_t limit) {
  const size_t end = std::min(CsvAfterNewline(text, begin), std::min(limit, text.size()));
  if (begin >= end) return {};
  std::string_view line = text.substr(begin, end - begin);
  if (line.ends_with('\n')) line.remove_suffix(1);
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

size_t CsvLineNumber(std::string_view text, size_t offset) {
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

std::string_view CsvTrimBlanks(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

Status SetCsvDialect(CsvOptions& options, const std::string& delimiter,
                     const std::string& encoding) {
  if (delimiter.size() != 1 || delimiter == "\"" || delimiter == "\n" || delimiter == "\r") {
    return InvalidArgument("delimiter must be one character other than a quote or a line break, "
                           "got '" + PrintableField(delimiter) + "'");
  }
  options.delimiter = delimiter[0];
  const std::optional<TextEncoding> e = ParseTextEncoding(encoding);
  if (!e) {
    return InvalidArgument("encoding must be utf-8 or latin-1, got '" + PrintableField(encoding) +
                           "'");
  }
  options.encoding = *e;
  return Status::Ok();
}

std::string PrintableField(std::string_view field, size_t max) {
  field = field.substr(0, max);
  std::string out;
  while (!field.empty()) {
    const std::optional<size_t> bad = FirstInvalidUtf8(field);
    const size_t good = bad.value_or(field.size());
    out.append(field.substr(0, good));
    if (!bad) break;
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(field[good]));
    out += hex;
    field.remove_prefix(good + 1);
  }
  return out;
}

Status SplitCsvLine(std::string_view line, std::vector<std::string>& fields,
                    size_t* field_index, char delimiter) {
  fields.clear();
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    std::string field;
    size_t start = i;
    // Blanks before a quote; a tab that is the delimiter ends the field instead.
    while (start < n && line[start] != delimiter && IsBlank(line[start])) ++start;
    if (start < n && line[start] == '"') {
      size_t j = start + 1;
      bool closed = false;
      while (j < n) {
        const char c = line[j];
        if (c == '"') {
          if (j + 1 < n && line[j + 1] == '"') {  // "" inside quotes is one quote
            field.push_back('"');
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        field.push_back(c);
        ++j;
      }
      if (!closed) {
        if (field_index != nullptr) *field_index = fields.size();
        return InvalidArgument("a quoted field is still open at the end of the line");
      }
      // After the closing quote: blanks are dropped, other text is kept (pandas keeps it too).
      const size_t comma = line.find(delimiter, j);
      const std::string_view rest =
          CsvTrimBlanks(line.substr(j, comma == std::string_view::npos ? n - j : comma - j));
      field.append(rest);
      fields.push_back(std::move(field));
      if (comma == std::string_view::npos) return Status::Ok();
      i = comma + 1;
      continue;
    }
    const size_t comma = line.find(delimiter, i);
    fields.emplace_back(line.substr(i, comma == std::string_view::npos ? n - i : comma - i));
    if (comma == std::string_view::npos) return Status::Ok();
    i = comma + 1;
  }
}

std::string CsvQuotedNewlineMessage(size_t line, std::string_view column, size_t field) {
  const std::string where =
      column.empty() ? "" : ", column '" + std::string(column) + "'";
  return "line " + std::to_string(line) + where + " (field " + std::to_string(field + 1) +
         "): a quoted field runs past the end of the line. If the file's quoted fields hold "
         "line breaks, set quoted_newlines: true (each file is then read whole by one task); "
         "else the quote is not closed";
}

Result<std::vector<std::string>> CsvHeaderNames(std::string_view text, bool header,
                                                char delimiter, TextEncoding encoding) {
  const size_t start = CsvTextStart(text);
  if (start >= text.size()) return InvalidArgument("the file is empty");
  std::vector<std::string> fields;
  size_t open = 0;
  if (!SplitCsvLine(CsvLineAt(text, start, text.size()), fields, &open, delimiter).ok()) {
    return InvalidArgument(CsvQuotedNewlineMessage(1, "", open));
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!header) {
      names.push_back("c" + std::to_string(i));
      continue;
    }
    std::string name(CsvTrimBlanks(fields[i]));
    if (!IsAscii(name)) {
      if (encoding == TextEncoding::kLatin1) {
        name = Latin1ToUtf8(name);
      } else if (const std::optional<size_t> bad = FirstInvalidUtf8(name)) {
        return InvalidArgument("line 1: the name of column " + std::to_string(i + 1) + " ('" +
                               PrintableField(name) + "') is not UTF-8 at its byte " +
                               std::to_string(*bad + 1) +
                               "; if the file is Latin-1, set encoding: latin-1");
      }
    }
    if (name.empty()) {
      return InvalidArgument("line 1: column " + std::to_string(i + 1) +
                             " has an empty name in the header");
    }
    const auto seen = std::find(names.begin(), names.end(), name);
    if (seen != names.end()) {
      return InvalidArgument("line 1: duplicate column name '" + name + "' in the header (columns " +
                             std::to_string(seen - names.begin() + 1) + " and " +
                             std::to_string(i + 1) + ")");
    }
    names.push_back(std::move(name));
  }
  return names;
}

bool IsCsvMissing(std::string_view field, const std::vector<std::string>& na_values) {
  const std::string_view s = CsvTrimBlanks(field);
  if (s.empty()) return true;
  for (const std::string& na : na_values) {
    if (na.size() == s.size() && s == na) return true;
  }
  return false;
}

CsvNumber ParseCsvFloat(std::string_view field, float& out) {
  const std::string_view s = NumberText(field);
  if (s.empty()) return CsvNumber::kEmpty;
  const char* const end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ptr != end) return CsvNumber::kNotNumber;
  if (ec == std::errc::result_out_of_range) {
    // Underflow is not an error: the value rounds to a float32 subnormal or zero.
    double wide = 0;
    if (std::from_chars(s.data(), end, wide).ec == std::errc()) {
      if (std::fabs(wide) > std::numeric_limits<float>::max()) return CsvNumber::kOutOfRange;
      out = static_cast<float>(wide);
      return CsvNumber::kOk;
    }
    if (!TinyMagnitude(s)) return CsvNumber::kOutOfRange;
    out = s.starts_with('-') ? -0.0f : 0.0f;
    return CsvNumber::kOk;
  }
  return ec == std::errc() ? CsvNumber::kOk : CsvNumber::kNotNumber;
}

CsvNumber ParseCsvDouble(std::string_view field, double& out) {
  const std::string_view s = NumberText(field);
  if (s.empty()) return CsvNumber::kEmpty;
  const char* const end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ptr != end) return CsvNumber::kNotNumber;
  if (ec == std::errc::result_out_of_range) {
    if (!TinyMagnitude(s)) return CsvNumber::kOutOfRange;
    out = s.starts_with('-') ? -0.0 : 0.0;
    return CsvNumber::kOk;
  }
  return ec == std::errc() ? CsvNumber::kOk : CsvNumber::kNotNumber;
}

CsvNumber ParseCsvInt64(std::string_view field, int64_t& out) {
  const std::string_view s = NumberText(field);
  if (s.empty()) return CsvNumber::kEmpty;
  const char* const end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ptr == end) {
    if (ec == std::errc::result_out_of_range) return CsvNumber::kOutOfRange;
    if (ec == std::errc()) {
      return out == std::numeric_limits<int64_t>::min() ? CsvNumber::kOutOfRange : CsvNumber::kOk;
    }
  }
  double value = 0;
  if (const CsvNumber e = ParseCsvDouble(field, value); e != CsvNumber::kOk) return e;
  if (value != std::trunc(value)) return CsvNumber::kNotInteger;
  // Whole doubles beyond 2^53 are not known to be the integer the text meant.
  if (!(std::fabs(value) <= 9007199254740992.0)) return CsvNumber::kOutOfRange;
  out = static_cast<int64_t>(value);
  return CsvNumber::kOk;
}

bool ParseCsvBool(std::string_view field, bool& out) {
  std::string_view s = CsvTrimBlanks(field);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  if (s == "true" || s == "True" || s == "TRUE") {
    out = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    out = false;
    return true;
  }
  return false;
}

CsvNumber ParseCsvInt32(std::string_view field, int32_t& out) {
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  if (ec == std::errc() && ptr == field.data() + field.size()) return CsvNumber::kOk;
  double value = 0;
  if (const CsvNumber e = ParseCsvDouble(field, value); e != CsvNumber::kOk) return e;
  if (value != std::trunc(value) || !(std::fabs(value) < 2147483648.0)) {
    return CsvNumber::kNotInteger;
  }
  out = static_cast<int32_t>(value);
  return CsvNumber::kOk;
}

}  // namespace coupler::io
