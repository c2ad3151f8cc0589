// join's arithmetic on one partition: the rows of the left and right inputs whose keys are
// equal, as pandas' merge(left, right, on=keys, how=..., suffixes=...) pairs them, plus the
// semi and anti joins (the left rows with, or without, a match). Pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/column_schema.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::relational {

// Pinned numbers, as AggregateFn's.
enum class JoinHow : uint8_t { kInner = 0, kLeft = 1, kRight = 2, kOuter = 3, kSemi = 4, kAnti = 5 };
std::optional<JoinHow> ParseJoinHow(std::string_view how);
std::string_view JoinHowName(JoinHow how);

struct JoinOptions {
  std::vector<std::string> on;  // key columns, named alike on both sides
  JoinHow how = JoinHow::kInner;
  std::array<std::string, 2> suffixes = {"_x", "_y"};  // for other columns both sides have
};

// The output's columns, as pandas' merge orders them: the left side's, a key where the left has
// it (once; for a right or outer join, the key of whichever side has the row), then the right
// side's other columns (none for semi and anti), a name both sides have taking the suffixes. A side whose rows may be missing (the right of a
// left join, both of an outer) turns int32 and bool columns into float64 (NaN for missing), as
// pandas does; int64 keeps its type and its missing value. InvalidArgument for a key either side
// lacks, or keys whose types cannot be compared (a string and a number).
Result<io::TableSchema> JoinSchema(const io::TableSchema& left, const io::TableSchema& right,
                                   const JoinOptions& options);

// Keys match by value — strings whatever their codes, an int32 3 with an int64 3, a missing key
// with a missing key (pandas' merge matches NaN with NaN). Rows come out in the left side's order,
// each left row followed by its matches in the right side's order; a right join follows the
// right side's order; an outer join's right rows without a match come last.
Result<io::Table> Join(const io::Table& left, const io::Table& right, const JoinOptions& options);

}  // namespace coupler::relational
