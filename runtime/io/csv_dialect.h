// The CSV dialect import_csv reads, in one place so the planner (which types a CSV's columns
// before any task runs) and the parsing kernel agree: the options, line boundaries, RFC 4180
// field splitting (quotes, doubled quotes), header names, missing-value tokens and number
// spelling. Pure functions over text; no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/text_encoding.h"
#include "runtime/job/param_value.h"
#include "runtime/status.h"

namespace coupler::io {

// pandas' default NA tokens (read_csv's list in pandas 1.5, Debian 12's): NULL from SQL
// exports, #N/A from spreadsheets, nan/NaN from numpy, and the rest. The empty field is always
// missing, whatever na_values says (it cannot be a number, and a spec list cannot hold an empty
// name).
std::vector<std::string> DefaultCsvNaValues();

// The tokens an import reads as missing: the defaults plus `extra` (a node's `na_values`), or
// `extra` alone when keep_default is false (`keep_default_na: false`), as pandas combines them.
std::vector<std::string> CsvNaTokens(const std::vector<std::string>& extra, bool keep_default);

struct CsvOptions {
  bool header = true;        // the first line names the columns; else c0, c1, ...
  std::string label_column;  // parsed as int32; empty: none
  // Keep only these columns, in this list's order; empty: every column, in file order.
  std::vector<std::string> columns;
  // Forced types, column -> float32 | float64 | int32 | int64 | bool | datetime | string; other
  // columns are inferred.
  job::ParamMap dtypes;
  // Fields that mean "missing" (besides the empty field): CsvNaTokens of the node's params.
  std::vector<std::string> na_values = DefaultCsvNaValues();
  char delimiter = ',';  // ';' for European exports, '\t' for TSV
  // UTF-8 is checked (in strings and names, the only fields that may hold non-ASCII bytes);
  // Latin-1 is converted to UTF-8.
  TextEncoding encoding = TextEncoding::kUtf8;
  // Quoted fields may hold line breaks (RFC 4180). Tasks then cannot split a file at newlines,
  // so each file is read whole by one task.
  bool quoted_newlines = false;
};

// The options' delimiter and encoding from a node's `delimiter` and `encoding` params:
// InvalidArgument for a delimiter that is not one character (or is a quote or a line break)
// and for an unknown encoding.
Status SetCsvDialect(CsvOptions& options, const std::string& delimiter,
                     const std::string& encoding);

// Where the text starts: past a UTF-8 byte-order mark (Excel writes one).
size_t CsvTextStart(std::string_view text);

// One past the first '\n' at or after `from`; the text's end when there is none.
size_t CsvAfterNewline(std::string_view text, size_t from);

// The line starting at `begin` (ending at the next '\n' or `limit`), without '\n' or "\r\n".
std::string_view CsvLineAt(std::string_view text, size_t begin, size_t limit);

// The 1-based line number of `offset`; counts newlines, so it is for error messages only.
size_t CsvLineNumber(std::string_view text, size_t offset);

// Blanks (space, tab) off both ends.
std::string_view CsvTrimBlanks(std::string_view s);

// Splits one line (no newline) into its fields, RFC 4180 style: a field whose first non-blank
// character is '"' is quoted; inside it commas are data and "" is one quote; blanks around the
// quotes are dropped, anything else after the closing quote is kept as text (pandas does the
// same). A quote inside an unquoted field is an ordinary character. A quoted field still open
// at the end of the line is InvalidArgument: tasks split a file at newlines, so a quoted field
// must not hold a line break; `field_index` (if not null) gets the 0-based field that was open.
Status SplitCsvLine(std::string_view line, std::vector<std::string>& fields,
                    size_t* field_index = nullptr, char delimiter = ',');

// The message for a quoted field that spans lines, shared by the schema pass and the kernel.
std::string CsvQuotedNewlineMessage(size_t line, std::string_view column, size_t field);

// The column names: the header line's fields (blanks trimmed, quotes removed), or c0..cN-1 for
// the N fields of the first line. InvalidArgument for an empty text, an empty or duplicate name
// (naming line 1 and the column), or a name that is not UTF-8 (Latin-1 names are converted).
Result<std::vector<std::string>> CsvHeaderNames(std::string_view text, bool header,
                                                char delimiter = ',',
                                                TextEncoding encoding = TextEncoding::kUtf8);

// `field` for an error message: bytes that are not UTF-8 as \xNN, at most `max` bytes.
std::string PrintableField(std::string_view field, size_t max = 40);

// True for the empty field and for a field equal to one of `na_values` (blanks trimmed).
bool IsCsvMissing(std::string_view field, const std::vector<std::string>& na_values);

// How a numeric field failed to parse.
enum class CsvNumber { kOk, kEmpty, kNotNumber, kOutOfRange, kNotInteger };

// Number spellings import_csv accepts: what std::from_chars reads (no locale, no hex), with
// blanks or quotes around it and an optional leading '+'. Underflow rounds to a subnormal or
// zero; overflow of the target type is kOutOfRange.
CsvNumber ParseCsvFloat(std::string_view field, float& out);
CsvNumber ParseCsvDouble(std::string_view field, double& out);

// An int64: an optional sign and digits (blanks, quotes and a leading '+' allowed, as for
// floats), or a float spelling of a whole number that int64 holds exactly; kNotInteger for 4.5,
// kOutOfRange beyond int64 (and for the int64 minimum, which marks a missing value).
CsvNumber ParseCsvInt64(std::string_view field, int64_t& out);

// True and False as pandas reads them: true/True/TRUE and false/False/FALSE (blanks and quotes
// around allowed). False for anything else.
bool ParseCsvBool(std::string_view field, bool& out);

// An int32, or a float spelling of a whole number ("3.0", as tools that write every number as a
// float do); kNotInteger for 4.5 or a value outside int32.
CsvNumber ParseCsvInt32(std::string_view field, int32_t& out);

}  // namespace coupler::io
