// A CSV's output columns and their types, decided from the file's first lines only, so every
// import_csv task (each parses just its byte range) and the planner (before any task runs)
// reach the same answer from the same cheap read. Pure: the caller hands in the text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/column_schema.h"
#include "runtime/io/csv_dialect.h"
#include "runtime/status.h"

namespace coupler::io {

// How much of the file the types are decided from: the first kCsvSchemaSampleBytes bytes, and
// within them at most kCsvSchemaSampleLines data lines. Pass text.substr(0, kCsvSchemaSampleBytes)
// (or the whole text): a prefix shorter than that is taken to be the whole file, so its last line
// counts even without a newline; in a full-size prefix a last, cut line is ignored.
// 1 MiB and 10,000 lines: enough that a column's first missing value or first non-integer is
// usually seen, few enough that every task reads it in milliseconds.
inline constexpr size_t kCsvSchemaSampleBytes = 1024 * 1024;
inline constexpr size_t kCsvSchemaSampleLines = 10000;

// What the kernel needs besides the schema: the header and, for each output column, the index
// of the field it comes from.
struct CsvLayout {
  std::vector<std::string> header;  // every field's name, file order
  std::vector<size_t> fields;       // fields[i]: the field output column i is parsed from
  TableSchema schema;               // the output columns, in output order
};

// The types: label_column is int32; a `dtypes` entry forces float32, float64, int32, int64, bool,
// datetime (datetime64[ns]) or string; any other column is decided from its sampled fields that
// are not missing (IsCsvMissing): int64 when all are integers, else float32 when all are
// numbers (float64 when one is beyond float32), else bool when all are true/false and none is
// missing, else datetime64 when all are ISO 8601 timestamps, else string (categorical int32
// codes); a column with nothing but missing values is float32. Columns come in `columns`'
// order, or file order.
// InvalidArgument for a header problem, an unknown name in columns/dtypes/label_column (listing
// the header), a dtypes or label_column entry for a column `columns` drops, a bad type name, a
// dtypes type other than int32 for the label column, and a sampled line with the wrong field
// count or a quoted field spanning lines (naming the line).
Result<CsvLayout> InferCsvLayout(std::string_view text_prefix, const CsvOptions& options);

// InferCsvLayout's schema: what the planner asks of an import_csv node.
Result<TableSchema> InferCsvSchema(std::string_view text_prefix, const CsvOptions& options);

}  // namespace coupler::io
