// What the expression ops (filter, select, derive, filter_map) share over a shard in memory:
// its schema for the compiler, a compiled program run on its columns (through RunKernel, so the
// CUDA twin runs where the task was placed), and keeping a subset of rows in every column with
// categorical dictionaries carried along.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/expr/program.h"
#include "runtime/io/column_schema.h"
#include "runtime/io/table.h"
#include "runtime/status.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

io::TableSchema SchemaOf(const io::Table& table);

// Compiles `text` against the shard; the error names the param and the place in the text.
Result<expr::Program> CompileForShard(std::string_view param, std::string_view text,
                                      const io::Table& table, expr::Expect expect);

// keep[i] = the boolean program's value on row i.
Result<std::vector<uint8_t>> EvaluateCondition(const expr::Program& program,
                                               const io::Table& table, OpReport& report);

// A numeric program's values as a column named `name` (float32 or float64, the program's type).
Result<io::Column> EvaluateColumn(const expr::Program& program, const io::Table& table,
                                  std::string name, OpReport& report);

// Keeps the rows with keep[i] != 0 in every column, in order; returns how many. A dictionary
// keeps only the entries the kept rows use (in their old order), the codes renumbered to match.
Result<size_t> KeepRows(io::Table& table, std::span<const uint8_t> keep, OpReport& report);

}  // namespace coupler::worker
