// An aggregate of group_by as a spec names it — `total: "sum(amount)"`, `rows: "size()"` — and
// what it makes of the column it reads: which functions apply to which types and the type of
// the result, as pandas' groupby(...).agg does by default. Pure: the schema pass checks specs
// with it at plan time, the worker computes with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/io/column_schema.h"
#include "runtime/status.h"

namespace coupler::relational {

// Pinned numbers: kept in plans only by name, but fixed so a reordering never changes meaning.
enum class AggregateFn : uint8_t {
  kSize = 0,     // rows in the group, NA or not
  kCount = 1,    // values that are not NA
  kSum = 2,      // of the values that are not NA; 0 when there are none (pandas' min_count=0)
  kMean = 3,     // NaN when there are no values
  kMin = 4,      // NA when there are no values
  kMax = 5,
  kStd = 6,      // sample standard deviation (ddof 1): NaN below two values
  kVar = 7,      // sample variance (ddof 1)
  kNunique = 8,  // distinct values that are not NA (strings compared by value)
  kFirst = 9,    // the first value that is not NA, in input order
  kLast = 10,    // the last value that is not NA
};
std::string_view AggregateFnName(AggregateFn fn);

struct AggregateSpec {
  std::string output;  // the output column's name
  AggregateFn fn = AggregateFn::kSize;
  std::string column;  // the column it reads; empty for size()
};

// "fn(column)" or "size()", with spaces allowed around the names. InvalidArgument naming the
// functions for anything else.
Result<AggregateSpec> ParseAggregate(std::string output, std::string_view text);

// The output column of `spec` over `input` (nullptr for size()), or InvalidArgument saying why
// the function does not apply to that column (sum of strings, mean of a timestamp...).
// sum of integers or bools is int64 and of floats float64; count, size and nunique are int64;
// mean, std and var are float64; min, max, first and last keep the column's type (a
// categorical column's first/last keep its strings; its min/max are refused).
Result<io::ColumnSchema> AggregateOutput(const AggregateSpec& spec, const io::ColumnSchema* input);

}  // namespace coupler::relational
