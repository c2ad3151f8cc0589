// filter: keeps the rows where `where` (a boolean expression over the shard's columns) holds,
// every column carried through in order, categorical dictionaries included.
#include "worker/ops/expression_columns.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {

Status RunFilter(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::string where, context.spec.params.Get<std::string>("where"));
  COUPLER_ASSIGN_OR_RETURN(io::Table table, ReadShard(input, report));
  auto program = CompileForShard("where", where, table, expr::Expect::kBoolean);
  if (!program.ok()) return program.status().WithContext(input);
  if (context.Cancelled()) return Cancelled();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<uint8_t> keep,
                           EvaluateCondition(*program, table, report));
  report.rows_in = table.rows();
  COUPLER_ASSIGN_OR_RETURN(report.rows_out, KeepRows(table, keep, report));
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
