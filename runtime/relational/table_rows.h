// Row-wise work on column tables that the relational ops share: reading any column's values by
// their storage type, taking rows by index, concatenating tables whose categorical columns
// carry different dictionaries, and hashing or comparing key columns by value — a string key is
// the same key whatever code a shard's dictionary gave it. Pure, no I/O.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/io/dtype.h"
#include "runtime/io/table.h"
#include "runtime/relational/shuffle_math.h"
#include "runtime/status.h"

namespace coupler::relational {

// Calls f(values) with the loaded column's values as std::span<T> of its storage type (const T
// for a const column).
template <typename Col, typename F>
  requires std::same_as<std::remove_const_t<Col>, io::Column>
decltype(auto) VisitValues(Col& column, F&& f) {
  switch (column.dtype()) {
    case ElementType::kFloat32: return f(column.template values<float>());
    case ElementType::kInt32: return f(column.template values<int32_t>());
    case ElementType::kFloat16:
    case ElementType::kBFloat16: return f(column.template values<uint16_t>());
    case ElementType::kFloat64: return f(column.template values<double>());
    case ElementType::kInt64:
    case ElementType::kDatetime64: return f(column.template values<int64_t>());
    case ElementType::kBool: return f(column.template values<uint8_t>());
  }
  return f(column.template values<float>());
}

// The indexes of the columns `names` in `table`, in that order; InvalidArgument naming the first
// one it lacks, `what` it was wanted as ("key column", "column to sort by") and what it has.
Result<std::vector<size_t>> ColumnIndexes(const io::Table& table, const std::vector<std::string>& names,
                                          std::string_view what);

// Whether row `r` of the column is missing: NaN in a float column, code -1 in a categorical
// one, the int64 minimum in int64 and datetime64 columns; int32 and bool columns hold none.
bool IsMissing(const io::Column& column, size_t r);

// The rows `rows` of `table` (any order, repeats allowed), every column kept with its name, type
// and dictionary. `kMissingRow` (shuffle_math.h) in `rows` gives a missing value (int32 and
// bool: 0).
io::Table TakeRows(const io::Table& table, std::span<const uint32_t> rows);
// One column's rows, as TakeRows.
io::Column TakeColumnRows(const io::Column& column, std::span<const uint32_t> rows);

// The tables one after the other. Every part has the first part's columns (names and types, in
// order: InvalidArgument naming the first difference otherwise); a categorical column's codes
// are rewritten into one dictionary holding each string once, in first-seen order.
Result<io::Table> Concatenate(std::vector<io::Table> parts);

// A 64-bit word per row that a row's key hash takes for this column (shuffle_math.h's
// KeyHashStep): KeyWords, except that a string gives its text's hash, not its code.
std::vector<uint64_t> KeyHashWords(const io::Column& column);

// A stable 64-bit hash of each row's key columns by value: the same on every machine and build
// (shuffles route rows by it), equal for equal strings whatever their codes, for an int32 and an
// int64 holding the same number, and for 0.0 and -0.0. A row whose key is missing in any column
// hashes as the missing value does, the same everywhere.
std::vector<uint64_t> HashKeys(const io::Table& table, std::span<const size_t> keys);

// Whether any of the key columns is missing in row r.
bool AnyKeyMissing(const io::Table& table, std::span<const size_t> keys, size_t r);

// Rows a and b of the key columns in order: <0, 0 or >0. Numbers by value, strings by their
// text (byte order), missing values last (as pandas sorts with na_position="last").
int CompareKeys(const io::Table& table, std::span<const size_t> keys, size_t a, size_t b);

// How sort orders one key column.
struct SortKey {
  bool descending = false;
  bool missing_first = false;  // pandas' na_position="first"; missing values ignore the direction
};

// Row ra of table a against row rb of table b over their key columns (ka[i] of a against kb[i]
// of b, ordered by keys[i]): <0, 0 or >0. Strings compare by text through each table's own
// dictionary, so rows of shards with different dictionaries compare correctly.
int CompareRows(const io::Table& a, std::span<const size_t> ka, size_t ra, const io::Table& b,
                std::span<const size_t> kb, size_t rb, std::span<const SortKey> keys);

// The row numbers of `table` in the order of its key columns `k` (ordered by keys[i]), equal
// keys in input order (a stable sort).
std::vector<uint32_t> StableOrder(const io::Table& table, std::span<const size_t> k,
                                  std::span<const SortKey> keys);

// A 64-bit word per row that is equal exactly when the column's values are equal (by value: a
// categorical column's codes, once Concatenate gave the table one dictionary per column).
std::vector<uint64_t> KeyWords(const io::Column& column);

// Rows with equal key values (KeyWords) numbered as groups in order of first appearance:
// each row's group (kMissingRow for a row dropped because a key is missing, when
// `drop_missing`; otherwise missing is a key value like any other) and each group's first row.
struct RowGroups {
  std::vector<uint32_t> of_row;
  std::vector<uint32_t> first_row;
};
RowGroups GroupRows(const io::Table& table, std::span<const size_t> keys, bool drop_missing);

}  // namespace coupler::relational
