// derive: adds (or replaces) columns computed by expressions, `columns: {name: "x0 * x1 + 1"}`,
// in the spec's order, so a later entry may read an earlier one.
#include "worker/ops/expression_columns.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {

Status RunDerive(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const job::ParamMap columns,
                           context.spec.params.Get<job::ParamMap>("columns"));
  // Nothing is read up front: each expression loads the columns it names, and the rest go to
  // the output as they are on disk.
  COUPLER_ASSIGN_OR_RETURN(io::Table table,
                           ReadShard(input, report, [](const io::ColumnInfo&) { return false; }));
  report.rows_in = table.rows();
  for (const job::ParamEntry& entry : columns) {
    if (context.Cancelled()) return Cancelled();
    auto program = CompileForShard("columns." + entry.key, entry.value, table,
                                   expr::Expect::kNumber);
    if (!program.ok()) return program.status().WithContext(input);
    std::vector<std::string> used;
    for (const expr::ProgramColumn& c : program->columns) used.push_back(c.name);
    COUPLER_RETURN_IF_ERROR(LoadColumns(table, used, report));
    COUPLER_ASSIGN_OR_RETURN(io::Column column,
                             EvaluateColumn(*program, table, entry.key, report));
    io::Column* existing = table.Find(entry.key);
    if (existing != nullptr) {
      *existing = std::move(column);  // replaced in place: the column keeps its position
    } else {
      COUPLER_RETURN_IF_ERROR(table.AddColumn(std::move(column)));
    }
  }
  report.rows_out = table.rows();
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
