// What a node's output shards hold, known before any task runs: each column's name and element
// type, and whether it is categorical (int32 codes with a dictionary). The planner derives it
// node by node (a CSV's header and first lines, then each op's effect), so an expression naming
// a column that will not exist is refused at plan time rather than after the import ran.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/dtype.h"

namespace coupler::io {

struct ColumnSchema {
  std::string name;
  ElementType dtype = ElementType::kFloat32;
  bool categorical = false;  // int32 codes into a dictionary beside the shard

  // Whether the column can hold a missing value, which its type decides: NaN in a float column,
  // code -1 in a categorical one, the int64 minimum (NaT) in int64 and datetime64 columns. An
  // int32 column (a label) and a bool column hold none: a missing value fails the import.
  bool nullable() const { return IsNullable(dtype, categorical); }
  static bool IsNullable(ElementType dtype, bool categorical) {
    return categorical || (dtype != ElementType::kInt32 && dtype != ElementType::kBool);
  }

  friend bool operator==(const ColumnSchema&, const ColumnSchema&) = default;
};

// The columns column_stats summarizes (and so standardize rescales) when none are named: the
// numbers a model takes as features, float32 and int64, as pandas' describe() takes its
// numbers. Not int32 (labels), not categorical codes, bools, timestamps or float64 (stats).
inline bool IsSummarizedByDefault(ElementType dtype, bool categorical) {
  return !categorical && (dtype == ElementType::kFloat32 || dtype == ElementType::kInt64);
}

struct TableSchema {
  std::vector<ColumnSchema> columns;

  // nullptr when there is no such column.
  const ColumnSchema* Find(std::string_view name) const {
    for (const ColumnSchema& c : columns) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }
  friend bool operator==(const TableSchema&, const TableSchema&) = default;
};

}  // namespace coupler::io
