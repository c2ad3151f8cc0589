// The CSV kernel: one pass over a byte range. A line without a quote (the usual case) is split
// in place: plain decimals are read and their field's end found in one scan
// (kernels/cpu/plain_decimal.h), other numbers go through std::from_chars (no copies, no locale),
// and string fields already in the column's dictionary cost one hash probe. Only a line that
// holds a '"' goes through the RFC 4180 splitter, which copies its fields. Values are appended
// to per-column vectors that become the Table's columns.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <system_error>

#include "kernels/cpu/category_codes.h"
#include "kernels/cpu/plain_decimal.h"
#include "kernels/csv_import.h"
#include "runtime/io/iso_datetime.h"

namespace coupler::kernels {
namespace {

constexpr size_t kSkipped = static_cast<size_t>(-1);

enum class Sink : uint8_t { kSkip, kFloat32, kFloat64, kInt32, kInt64, kBool, kDatetime, kString };

enum class FieldError : uint8_t {
  kOk,
  kNotNumber,
  kOutOfRange,
  kNotInteger,
  kMissingInt,
  kNotBool,
  kMissingBool,
  kNotUtf8,
};

struct StringColumn {
  CategoryCodes codes;
  bool used = false;  // the column is a string column
};

struct FieldSink {
  Sink sink = Sink::kSkip;
  size_t out = kSkipped;  // the output column
  std::vector<float>* f32 = nullptr;
  std::vector<double>* f64 = nullptr;
  std::vector<int32_t>* i32 = nullptr;
  std::vector<int64_t>* i64 = nullptr;  // int64 and datetime64 columns
  std::vector<uint8_t>* b8 = nullptr;
  StringColumn* strings = nullptr;
};

size_t FirstDataByte(std::string_view text, bool header) {
  const size_t start = io::CsvTextStart(text);
  return header ? io::CsvAfterNewline(text, start) : start;
}

// True when some NA token is itself a number ("-999"): then every numeric field is checked
// against the tokens before it is parsed, which the fast path otherwise skips. Tokens that read
// as NaN ("nan", "NaN", the default ones) need no such check: parsed, they are NaN anyway.
bool NaTokensLookNumeric(const std::vector<std::string>& na_values) {
  for (const std::string& na : na_values) {
    double v = 0;
    if (io::ParseCsvDouble(na, v) == io::CsvNumber::kOk && !std::isnan(v)) return true;
  }
  return false;
}

// The ISO 8601 spellings import_csv reads (runtime/io/iso_datetime.h).
bool ParseDatetime(std::string_view text, int64_t& out) { return io::ParseIsoDatetime(text, out); }

FieldError FromNumber(io::CsvNumber n) {
  switch (n) {
    case io::CsvNumber::kOk: return FieldError::kOk;
    case io::CsvNumber::kOutOfRange: return FieldError::kOutOfRange;
    case io::CsvNumber::kNotInteger: return FieldError::kNotInteger;
    case io::CsvNumber::kEmpty:
    case io::CsvNumber::kNotNumber: break;
  }
  return FieldError::kNotNumber;
}

class RangeParser {
 public:
  RangeParser(const io::CsvLayout& layout, const CsvOptions& options)
      : options_(options), na_first_(NaTokensLookNumeric(options.na_values)) {
    for (const io::ColumnSchema& c : layout.schema.columns) outputs_.emplace_back(c.name, c.dtype);
    strings_.resize(layout.schema.columns.size());
    sinks_.resize(layout.header.size());
    for (size_t o = 0; o < layout.fields.size(); ++o) {
      const io::ColumnSchema& c = layout.schema.columns[o];
      FieldSink& s = sinks_[layout.fields[o]];
      s.out = o;
      if (c.categorical) {
        s.sink = Sink::kString;
        s.i32 = &outputs_[o].Vector<int32_t>();
        s.strings = &strings_[o];
        s.strings->used = true;
      } else if (c.dtype == ElementType::kInt32) {
        s.sink = Sink::kInt32;
        s.i32 = &outputs_[o].Vector<int32_t>();
      } else if (c.dtype == ElementType::kInt64 || c.dtype == ElementType::kDatetime64) {
        s.sink = c.dtype == ElementType::kInt64 ? Sink::kInt64 : Sink::kDatetime;
        s.i64 = &outputs_[o].Vector<int64_t>();
      } else if (c.dtype == ElementType::kBool) {
        s.sink = Sink::kBool;
        s.b8 = &outputs_[o].Vector<uint8_t>();
      } else if (c.dtype == ElementType::kFloat64) {
        s.sink = Sink::kFloat64;
        s.f64 = &outputs_[o].Vector<double>();
      } else {
        s.sink = Sink::kFloat32;
        s.f32 = &outputs_[o].Vector<float>();
      }
    }
  }

  // Room for `rows` more rows (a stream's next chunk adds to what is there).
  void Reserve(size_t rows) {
    auto more = [rows](auto* v) {
      if (v != nullptr) v->reserve(v->size() + rows);
    };
    for (FieldSink& s : sinks_) {
      more(s.f32);
      more(s.f64);
      more(s.i32);
      more(s.i64);
      more(s.b8);
    }
  }

  // Timestamps that did not parse and were stored as NaT, per output column.
  const std::vector<CsvCoerced>& coerced() const { return coerced_; }

  size_t fields() const { return sinks_.size(); }
  char delimiter() const { return options_.delimiter; }
  bool quoted_newlines() const { return options_.quoted_newlines; }
  bool na_first() const { return na_first_; }
  const FieldSink& sink(size_t field) const { return sinks_[field]; }

  // Appends one field's value to its column.
  // Not inlined: the caller's loop stays small, and this is the slow path there.
  [[gnu::noinline]] FieldError Store(size_t field, std::string_view text) {
    FieldSink& s = sinks_[field];
    switch (s.sink) {
      case Sink::kSkip: return FieldError::kOk;
      case Sink::kFloat32: {
        float v = 0;
        if (!na_first_) {
          const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
          if (r.ec == std::errc() && r.ptr == text.data() + text.size()) {
            s.f32->push_back(v);
            return FieldError::kOk;
          }
        }
        if (io::IsCsvMissing(text, options_.na_values)) {
          s.f32->push_back(std::numeric_limits<float>::quiet_NaN());
          return FieldError::kOk;
        }
        const FieldError e = FromNumber(io::ParseCsvFloat(text, v));
        s.f32->push_back(v);
        return e;
      }
      case Sink::kFloat64: {
        double v = 0;
        if (!na_first_) {
          const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
          if (r.ec == std::errc() && r.ptr == text.data() + text.size()) {
            s.f64->push_back(v);
            return FieldError::kOk;
          }
        }
        if (io::IsCsvMissing(text, options_.na_values)) {
          s.f64->push_back(std::numeric_limits<double>::quiet_NaN());
          return FieldError::kOk;
        }
        const FieldError e = FromNumber(io::ParseCsvDouble(text, v));
        s.f64->push_back(v);
        return e;
      }
      case Sink::kInt32: {
        int32_t v = 0;
        if (!na_first_) {
          const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
          if (r.ec == std::errc() && r.ptr == text.data() + text.size()) {
            s.i32->push_back(v);
            return FieldError::kOk;
          }
        }
        if (io::IsCsvMissing(text, options_.na_values)) return FieldError::kMissingInt;
        const FieldError e = FromNumber(io::ParseCsvInt32(text, v));
        s.i32->push_back(v);
        return e;
      }
      case Sink::kInt64: {
        int64_t v = 0;
        if (!na_first_) {
          const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
          if (r.ec == std::errc() && r.ptr == text.data() + text.size() &&
              v != io::kMissingInt64) {
            s.i64->push_back(v);
            return FieldError::kOk;
          }
        }
        if (io::IsCsvMissing(text, options_.na_values)) {
          s.i64->push_back(io::kMissingInt64);
          return FieldError::kOk;
        }
        const FieldError e = FromNumber(io::ParseCsvInt64(text, v));
        s.i64->push_back(v);
        return e;
      }
      case Sink::kBool: {
        bool v = false;
        if (io::ParseCsvBool(text, v)) {
          s.b8->push_back(v ? 1 : 0);
          return FieldError::kOk;
        }
        return io::IsCsvMissing(text, options_.na_values) ? FieldError::kMissingBool
                                                          : FieldError::kNotBool;
      }
      case Sink::kDatetime: {
        int64_t v = 0;
        if (ParseDatetime(text, v)) {
          s.i64->push_back(v);
          return FieldError::kOk;
        }
        s.i64->push_back(io::kMissingInt64);  // NaT
        if (!io::IsCsvMissing(text, options_.na_values)) Coerce(s.out, text);
        return FieldError::kOk;
      }
      case Sink::kString: {
        if (io::IsCsvMissing(text, options_.na_values)) {
          s.i32->push_back(-1);
          return FieldError::kOk;
        }
        // Only strings (and names) may hold non-ASCII bytes: checked, or converted, here.
        if (!io::IsAscii(text)) {
          if (options_.encoding == io::TextEncoding::kLatin1) {
            s.i32->push_back(s.strings->codes.Intern(io::Latin1ToUtf8(text)));
            return FieldError::kOk;
          }
          if (io::FirstInvalidUtf8(text)) return FieldError::kNotUtf8;
        }
        s.i32->push_back(s.strings->codes.Intern(text));
        return FieldError::kOk;
      }
    }
    return FieldError::kOk;
  }

  // A field of a datetime column that is neither a timestamp nor missing: counted, and the
  // first one kept for the note the task prints.
  [[gnu::noinline]] void Coerce(size_t out, std::string_view text) {
    if (coerced_.empty()) coerced_.resize(outputs_.size());
    CsvCoerced& c = coerced_[out];
    if (c.count++ == 0) {
      c.column = outputs_[out].name();
      c.first_value = std::string(text.substr(0, 40));
      c.first_row = outputs_[out].size() - 1;  // NaT is already stored
    }
  }

  Result<io::Table> Finish() {
    io::Table table;
    // A range with no string in a string column still marks it categorical: an empty dictionary.
    for (size_t o = 0; o < outputs_.size(); ++o) {
      if (strings_[o].used) outputs_[o].set_dictionary(strings_[o].codes.TakeDictionary());
    }
    for (io::Column& c : outputs_) COUPLER_RETURN_IF_ERROR(table.AddColumn(std::move(c)));
    return table;
  }

 private:
  const CsvOptions& options_;
  const bool na_first_;
  std::vector<io::Column> outputs_;
  std::vector<StringColumn> strings_;
  std::vector<FieldSink> sinks_;  // per field of the file
  std::vector<CsvCoerced> coerced_;  // empty until a timestamp fails to parse
};

std::string FieldErrorText(FieldError e, std::string_view column, ElementType dtype,
                           bool hints) {
  const std::string col(column);
  switch (e) {
    case FieldError::kOutOfRange:
      return std::string("is out of ") + std::string(ElementTypeName(dtype)) + " range" +
             (hints ? " (set dtypes: {" + col + ": float64} for a wider type)" : "");
    case FieldError::kNotInteger:
      return dtype == ElementType::kInt64
                 ? "is not an integer" +
                       std::string(hints ? " (the column was typed int64 from the file's first "
                                           "lines; set dtypes: {" + col + ": float64} if it "
                                           "holds fractions)"
                                         : "")
                 : "is not an int32 label";
    case FieldError::kNotBool:
      return "is not true or false" +
             std::string(hints ? " (the column was typed bool from the file's first lines; set "
                                 "dtypes: {" + col + ": string} to keep it as text)"
                               : "");
    case FieldError::kNotUtf8:
      return "is not UTF-8" + std::string(hints ? " (if the file is Latin-1, set encoding: "
                                                  "latin-1)"
                                                : "");
    case FieldError::kMissingBool:
      return "is a missing value, which a bool column cannot hold" +
             std::string(hints ? " (set dtypes: {" + col + ": string})" : "");
    case FieldError::kMissingInt:
      return "is a missing value, which an int32 column cannot hold" +
             std::string(hints ? " (drop those rows first, or if it is not the label_column, "
                                 "set dtypes: {" + col + ": float32})"
                               : "");
    default:
      return "is not a number" +
             std::string(hints ? " (the column's type was taken from the file's first lines; "
                                 "if this token marks a missing value, add it to na_values; "
                                 "if the column holds text, set dtypes: {" + col + ": string})"
                               : "");
  }
}

}  // namespace

CsvRange CsvRangeBetween(std::string_view text, bool header, size_t from, size_t to) {
  const size_t size = text.size();
  const size_t first = FirstDataByte(text, header);
  const size_t begin = from == 0 ? first : std::max(io::CsvAfterNewline(text, from), first);
  const size_t end = to >= size ? size : io::CsvAfterNewline(text, to);
  return {begin, std::max(begin, end)};
}

std::vector<CsvFilePart> CsvTaskFiles(const std::vector<uint64_t>& sizes,
                                      const std::vector<bool>& compressed, size_t index,
                                      size_t count) {
  std::vector<CsvFilePart> parts;
  uint64_t total = 0;
  for (const uint64_t s : sizes) total += s;
  if (count == 0 || index >= count) return parts;
  // index * total / count without overflowing, as CsvTaskRange cuts one file.
  auto offset = [total, count](uint64_t i) {
    return total / count * i + total % count * i / count;
  };
  const uint64_t from = offset(index);
  const uint64_t to = index + 1 == count ? total : offset(index + 1);
  uint64_t start = 0;  // the file's first byte in the laid-out dataset
  for (size_t f = 0; f < sizes.size(); start += sizes[f], ++f) {
    const uint64_t stop = start + sizes[f];
    if (compressed[f]) {
      // Its first byte decides; an empty file belongs to the task its position falls in.
      const bool mine = index + 1 == count ? start >= from : (start >= from && start < to);
      if (mine && !(sizes[f] == 0 && start == total && index + 1 != count)) {
        parts.push_back({f, true, 0, sizes[f]});
      }
      continue;
    }
    if (stop <= from || start >= to) {
      // An empty plain file still has a header to check: the task its position falls in.
      if (sizes[f] == 0 && start >= from && (start < to || index + 1 == count)) {
        parts.push_back({f, false, 0, 0});
      }
      continue;
    }
    parts.push_back({f, false, std::max(from, start) - start, std::min(to, stop) - start});
  }
  return parts;
}

CsvRange CsvTaskRange(std::string_view text, bool header, size_t index, size_t count) {
  const size_t size = text.size();
  if (count == 0 || index >= count) return {size, size};
  // index * size / count without overflowing for big files.
  auto offset = [size, count](size_t i) { return size / count * i + size % count * i / count; };
  const size_t first = FirstDataByte(text, header);
  const size_t begin =
      index == 0 ? first : std::max(io::CsvAfterNewline(text, offset(index)), first);
  const size_t end = index + 1 == count ? size : io::CsvAfterNewline(text, offset(index + 1));
  return {begin, std::max(begin, end)};
}

Result<std::vector<std::string>> CsvColumnNames(std::string_view text,
                                                const CsvOptions& options) {
  COUPLER_ASSIGN_OR_RETURN(std::vector<std::string> names,
                           io::CsvHeaderNames(text, options.header, options.delimiter,
                                              options.encoding));
  if (!options.label_column.empty() &&
      std::find(names.begin(), names.end(), options.label_column) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    return InvalidArgument("label_column '" + options.label_column +
                           "' is not a column (columns: " + list + ")");
  }
  return names;
}

namespace {
Result<io::Table> ParseRange(std::string_view text, CsvRange range, const io::CsvLayout& layout,
                             const CsvOptions& options, bool hints,
                             std::vector<CsvCoerced>* coerced);
}  // namespace

Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const std::vector<std::string>& names, const CsvOptions& options) {
  io::CsvLayout layout;
  layout.header = names;
  for (size_t i = 0; i < names.size(); ++i) {
    layout.fields.push_back(i);
    const bool label = names[i] == options.label_column;
    layout.schema.columns.push_back(
        {names[i], label ? ElementType::kInt32 : ElementType::kFloat32, false});
  }
  return ParseRange(text, range, layout, options, /*hints=*/false, nullptr);
}

namespace {

// Parses the lines in text[range] into `parser`'s columns. `lines_before`: the lines of the file
// before text's first byte (a stream's earlier chunks), so errors give the file's line number.
// `hints`: errors suggest dtypes (a layout InferCsvLayout typed); the all-numeric reader's
// callers have no dtypes to set.
Status ParseLines(RangeParser& parser, std::string_view text, CsvRange range,
                  const io::CsvLayout& layout, bool hints, uint64_t lines_before,
                  size_t* unfinished = nullptr) {
  const size_t columns = layout.header.size();
  if (columns == 0) return InvalidArgument("no columns");
  range.end = std::min(range.end, text.size());
  if (range.begin < range.end) {
    // Reserving from the first line's length avoids most regrowth on uniform files.
    const size_t first = io::CsvLineAt(text, range.begin, range.end).size() + 1;
    parser.Reserve((range.end - range.begin) / first + 16);
  }

  auto line_number = [&](size_t line_begin) {
    return lines_before + io::CsvLineNumber(text, line_begin);
  };
  auto line_error = [&](size_t line_begin, const std::string& what) {
    return InvalidArgument("line " + std::to_string(line_number(line_begin)) + what);
  };
  auto field_error = [&](size_t line_begin, size_t c, std::string_view field, FieldError e) {
    const io::ColumnSchema* schema = layout.schema.Find(layout.header[c]);
    const ElementType dtype = schema != nullptr ? schema->dtype : ElementType::kFloat32;
    return line_error(line_begin, ", column '" + layout.header[c] + "' (field " +
                                      std::to_string(c + 1) + "): '" +
                                      io::PrintableField(field) + "' " +
                                      FieldErrorText(e, layout.header[c], dtype, hints));
  };
  auto count_error = [&](size_t line_begin, size_t found) {
    return line_error(line_begin, ": expected " + std::to_string(columns) + " fields, found " +
                                      std::to_string(found));
  };

  // The fast path: one memchr for the line end and one for a quote, then the fields split in
  // place; plain float32 and int32 fields are read in the scan that finds their end, known
  // strings take their code, everything else (missing values, blanks, other spellings, new
  // strings, errors) goes through Store.
  const bool na_first = parser.na_first();
  const char delimiter = parser.delimiter();
  const char* const base = text.data();
  std::vector<std::string> quoted;
  for (size_t line_begin = range.begin; line_begin < range.end;) {
    const char* const start = base + line_begin;
    const auto* nl = static_cast<const char*>(std::memchr(start, '\n', range.end - line_begin));
    const char* line_end = nl != nullptr ? nl : base + range.end;
    size_t next = nl != nullptr ? static_cast<size_t>(nl - base) + 1 : range.end;
    if (line_end > start && line_end[-1] == '\r') --line_end;
    if (line_end == start) {
      line_begin = next;
      continue;
    }
    const std::string_view line(start, static_cast<size_t>(line_end - start));
    if (std::memchr(start, '"', line.size()) == nullptr) {
      const char* p = start;
      for (size_t c = 0; c < columns; ++c) {
        const FieldSink& sink = parser.sink(c);
        const bool last = c + 1 == columns;
        if (!na_first && (sink.sink == Sink::kFloat32 || sink.sink == Sink::kInt32 ||
                          sink.sink == Sink::kInt64)) {
          // Taken only when the scan stopped exactly at this field's end: a comma, or the
          // line's end for the last field; a wrong field count falls through to be reported.
          float f = 0;
          int32_t i = 0;
          int64_t l = 0;
          const char* stop = sink.sink == Sink::kFloat32 ? ScanPlainFloat(p, line_end, f)
                             : sink.sink == Sink::kInt32 ? ScanPlainInt32(p, line_end, i)
                                                         : ScanPlainInt64(p, line_end, l);
          if (stop != nullptr &&
              (last ? stop == line_end : stop < line_end && *stop == delimiter)) {
            if (sink.sink == Sink::kFloat32) {
              sink.f32->push_back(f);
            } else if (sink.sink == Sink::kInt32) {
              sink.i32->push_back(i);
            } else {
              sink.i64->push_back(l);
            }
            p = stop + 1;
            continue;
          }
        }
        const char* q = p;
        while (q < line_end && *q != delimiter) ++q;
        if ((q == line_end) != last) {
          const auto commas =
              static_cast<size_t>(std::count(line.begin(), line.end(), delimiter));
          return count_error(line_begin, commas + 1);
        }
        const std::string_view field(p, static_cast<size_t>(q - p));
        if (sink.sink == Sink::kString) {
          const int32_t code = sink.strings->codes.Find(field);
          if (code >= 0) {  // only values, never missing tokens, are in the dictionary
            sink.i32->push_back(code);
            p = q + 1;
            continue;
          }
        }
        if (sink.sink != Sink::kSkip) {
          const FieldError e = parser.Store(c, field);
          if (e != FieldError::kOk) return field_error(line_begin, c, field, e);
        }
        p = q + 1;
      }
    } else {
      size_t open = 0;
      bool split = io::SplitCsvLine(line, quoted, &open, delimiter).ok();
      // A quoted field that holds line breaks: the record takes the next line too, and more,
      // until its quotes close.
      while (!split && parser.quoted_newlines() && next < range.end) {
        const char* more = base + next;
        const auto* nl2 = static_cast<const char*>(std::memchr(more, '\n', range.end - next));
        const char* end2 = nl2 != nullptr ? nl2 : base + range.end;
        next = nl2 != nullptr ? static_cast<size_t>(nl2 - base) + 1 : range.end;
        if (end2 > more && end2[-1] == '\r') --end2;
        split = io::SplitCsvLine(std::string_view(start, static_cast<size_t>(end2 - start)),
                                 quoted, &open, delimiter)
                    .ok();
      }
      if (!split && parser.quoted_newlines() && unfinished != nullptr) {
        *unfinished = line_begin;  // its end is in text not read yet: the caller's next piece
        return Status::Ok();
      }
      if (!split) {
        return InvalidArgument(io::CsvQuotedNewlineMessage(
            line_number(line_begin), open < columns ? layout.header[open] : "", open));
      }
      if (quoted.size() != columns) return count_error(line_begin, quoted.size());
      for (size_t c = 0; c < columns; ++c) {
        const FieldError e = parser.Store(c, quoted[c]);
        if (e != FieldError::kOk) return field_error(line_begin, c, quoted[c], e);
      }
    }
    line_begin = next;
  }
  return Status::Ok();
}

Result<io::Table> ParseRange(std::string_view text, CsvRange range, const io::CsvLayout& layout,
                             const CsvOptions& options, bool hints,
                             std::vector<CsvCoerced>* coerced) {
  RangeParser parser(layout, options);
  COUPLER_RETURN_IF_ERROR(ParseLines(parser, text, range, layout, hints, 0));
  if (coerced != nullptr) *coerced = parser.coerced();
  return parser.Finish();
}

}  // namespace

Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const io::CsvLayout& layout, const CsvOptions& options,
                                std::vector<CsvCoerced>* coerced) {
  return ParseRange(text, range, layout, options, /*hints=*/true, coerced);
}

struct CsvRowParser::Impl {
  Impl(io::CsvLayout l, CsvOptions o)
      : layout(std::move(l)), options(std::move(o)), parser(layout, options) {}
  io::CsvLayout layout;
  CsvOptions options;
  RangeParser parser;  // refers to the two above
};

CsvRowParser::CsvRowParser(io::CsvLayout layout, CsvOptions options)
    : impl_(std::make_unique<Impl>(std::move(layout), std::move(options))) {}
CsvRowParser::~CsvRowParser() = default;

Status CsvRowParser::Parse(std::string_view text, CsvRange range, uint64_t lines_before,
                           size_t* unfinished) {
  if (unfinished != nullptr) *unfinished = range.end;
  return ParseLines(impl_->parser, text, range, impl_->layout, /*hints=*/true, lines_before,
                    unfinished);
}

std::vector<CsvCoerced> CsvRowParser::coerced() const { return impl_->parser.coerced(); }

Result<io::Table> CsvRowParser::Finish() { return impl_->parser.Finish(); }

}  // namespace coupler::kernels
