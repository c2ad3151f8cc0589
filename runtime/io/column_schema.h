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

  friend bool operator==(const ColumnSchema&, const ColumnSchema&) = default;
};

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
