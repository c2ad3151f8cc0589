// import_csv's kernel: split a CSV text into N byte ranges that together hold every line exactly
// once (each task finds its own boundaries, no coordination), and parse one range into the
// columns InferCsvLayout (runtime/io/csv_schema.h) chose: float32/float64 with NaN for missing
// values, int32 (the label column), int64 and datetime64[ns] with the int64 minimum (NaT) for
// missing values, bool, and strings as categorical int32 codes (-1 = missing) with the range's
// own dictionary (first-seen order). Works on the whole file's text, typically an
// mmap; the dialect (quotes, NA tokens, number spellings) is runtime/io/csv_dialect.h's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/csv_dialect.h"
#include "runtime/io/csv_schema.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::kernels {

using io::CsvOptions;

// Fields of a datetime column that were neither an ISO 8601 timestamp nor missing: stored as
// NaT (missing), as pd.to_datetime(errors="coerce") does, and counted so the task can say so.
struct CsvCoerced {
  std::string column;       // empty when nothing was coerced in this column
  uint64_t count = 0;
  std::string first_value;  // the first such field (at most 40 bytes)
  uint64_t first_row = 0;   // its row within the range, 0-based
};

struct CsvRange {
  size_t begin = 0;  // the first byte of the first line
  size_t end = 0;    // one past the newline ending the last line (or the end of the text)
};

// Task `index` of `count` takes the index-th of `count` equal byte ranges, moved forward to line
// boundaries: it starts after the first newline at or after its start offset (task 0 at the
// first data line) and ends after the first newline at or after its end offset. Adjacent tasks
// therefore meet exactly; a line longer than a range leaves some tasks empty. Newlines inside
// quotes are not data here: the parser refuses a quoted field that spans lines.
CsvRange CsvTaskRange(std::string_view text, bool header, size_t index, size_t count);

// The column names (io::CsvHeaderNames), and InvalidArgument for a label_column that is not one.
Result<std::vector<std::string>> CsvColumnNames(std::string_view text, const CsvOptions& options);

// Parses the lines in text[range] into `layout`'s columns (in its order; other fields are
// skipped unparsed). Empty lines (and a '\r' before '\n') are skipped. InvalidArgument naming
// the 1-based line number within `text` (and the column) for a line with the wrong number of
// fields, a field that is not a number in a numeric column (with the dtypes hint), a missing
// value in an int32 or bool column, a field that is not true/false in a bool column, a value
// an int64 column cannot hold, or a quoted field still open at the end of its line. `coerced`
// (if not null) gets, per output column, the timestamps stored as NaT.
Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const io::CsvLayout& layout, const CsvOptions& options,
                                std::vector<CsvCoerced>* coerced = nullptr);

// All-numeric files (the training program's CSV reader): every column float32 and the label
// column int32, no type inference; `names` are CsvColumnNames(text, options).
Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const std::vector<std::string>& names, const CsvOptions& options);

}  // namespace coupler::kernels
