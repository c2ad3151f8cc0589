// import_csv's kernel: split a CSV text into N byte ranges that together hold every line exactly
// once (each task finds its own boundaries, no coordination), and parse one range into the
// columns InferCsvLayout (runtime/io/csv_schema.h) chose: float32/float64 with NaN for missing
// values, int32 (the label column), int64 and datetime64[ns] with the int64 minimum (NaT) for
// missing values, bool, and strings as categorical int32 codes (-1 = missing) with the range's
// own dictionary (first-seen order). Works on the whole file's text, typically an
// mmap; the dialect (quotes, NA tokens, number spellings) is runtime/io/csv_dialect.h's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

// The lines of `text` a task reading bytes [from, to) of it takes: from the first line starting
// after `from` (the first data line when `from` is 0) to the end of the line holding `to - 1`.
// CsvTaskRange is this over equal byte ranges.
CsvRange CsvRangeBetween(std::string_view text, bool header, size_t from, size_t to);

// A dataset of several files (plain or compressed), split among `count` tasks without any
// coordination, as one file is: the files' on-disk sizes laid end to end are cut into `count`
// equal byte ranges. A plain file's part of task `index`'s range is read by lines
// (CsvRangeBetween over [begin, end)); a compressed file cannot be entered in the middle, so
// the task whose range holds its first byte reads it whole. Every line is read exactly once.
struct CsvFilePart {
  size_t file = 0;        // index into the dataset's files
  bool whole = false;     // a compressed file, read whole
  uint64_t begin = 0;     // plain files: bytes [begin, end) of the file
  uint64_t end = 0;
};
std::vector<CsvFilePart> CsvTaskFiles(const std::vector<uint64_t>& sizes,
                                      const std::vector<bool>& compressed, size_t index,
                                      size_t count);

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

// A parser that keeps its columns (and string dictionaries) across calls, for a dataset read in
// pieces: byte ranges of several files, or the decompressed chunks of a .gz/.zst stream. Every
// piece is parsed into the same columns, one dictionary per string column.
class CsvRowParser {
 public:
  CsvRowParser(io::CsvLayout layout, CsvOptions options);
  ~CsvRowParser();
  CsvRowParser(const CsvRowParser&) = delete;
  CsvRowParser& operator=(const CsvRowParser&) = delete;

  // Parses the lines in text[range], as ParseCsvRange does; `lines_before` is the number of
  // the file's lines before text's first byte, so errors name the file's line. With
  // quoted_newlines and `unfinished` given, a record whose quoted field is still open at the
  // range's end is not an error: parsing stops before it and *unfinished is its offset (else
  // range.end), for the caller to pass again with the text that follows.
  Status Parse(std::string_view text, CsvRange range, uint64_t lines_before = 0,
               size_t* unfinished = nullptr);
  // Timestamps stored as NaT so far, per output column.
  std::vector<CsvCoerced> coerced() const;
  // The columns; call once, last.
  Result<io::Table> Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// All-numeric files (the training program's CSV reader): every column float32 and the label
// column int32, no type inference; `names` are CsvColumnNames(text, options).
Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const std::vector<std::string>& names, const CsvOptions& options);

}  // namespace coupler::kernels
