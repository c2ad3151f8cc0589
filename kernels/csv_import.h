// import_csv's kernel: split a CSV text into N byte ranges that together hold every line exactly
// once (each task finds its own boundaries, no coordination), and parse one range into float32
// columns (the label column as int32). Works on the whole file's text, typically an mmap.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::kernels {

struct CsvOptions {
  bool header = true;        // the first line names the columns; else c0, c1, ...
  std::string label_column;  // parsed as int32; empty: none
};

struct CsvRange {
  size_t begin = 0;  // the first byte of the first line
  size_t end = 0;    // one past the newline ending the last line (or the end of the text)
};

// Task `index` of `count` takes the index-th of `count` equal byte ranges, moved forward to line
// boundaries: it starts after the first newline at or after its start offset (task 0 at the
// first data line) and ends after the first newline at or after its end offset. Adjacent tasks
// therefore meet exactly; a line longer than a range leaves some tasks empty.
CsvRange CsvTaskRange(std::string_view text, bool header, size_t index, size_t count);

// The column names: the header line's fields (trimmed, quotes removed), or c0..cN-1 for the N
// fields of the first line. InvalidArgument for an empty text, an empty or duplicate name, or
// a label_column that is not a column.
Result<std::vector<std::string>> CsvColumnNames(std::string_view text, const CsvOptions& options);

// Parses the lines in text[range]. Empty lines (and a '\r' before '\n') are skipped. A line with
// the wrong number of fields or a field that is not a number is InvalidArgument naming the
// 1-based line number within `text` and the column.
Result<io::Table> ParseCsvRange(std::string_view text, CsvRange range,
                                const std::vector<std::string>& names, const CsvOptions& options);

}  // namespace coupler::kernels
