// filter_map: value = a * b (float32); keep the rows with value > threshold, carry every other
// column of those rows through, and append `out` = sqrt(value). Built from the expression
// engine: a filter program `a * b > t`, then a derive program `sqrt(a * b)` over the kept rows,
// with t the float32 that FloatThresholdFor gives (the double threshold honoured exactly).
#include "kernels/filter_map.h"
#include "worker/ops/expression_columns.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

// A column name as the expression language reads it, whatever it holds.
std::string Quoted(const std::string& name) { return "`" + name + "`"; }

}  // namespace

Status RunFilterMap(const OpContext& context, OpReport& report) {
  const wire::TaskParams& params = context.spec.params;
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::string a_name, params.Get<std::string>("a"));
  COUPLER_ASSIGN_OR_RETURN(const std::string b_name, params.Get<std::string>("b"));
  COUPLER_ASSIGN_OR_RETURN(const double threshold, params.Get<double>("threshold"));
  COUPLER_ASSIGN_OR_RETURN(const std::string out_name, params.Get<std::string>("out"));
  COUPLER_ASSIGN_OR_RETURN(io::Table table, ReadShard(input, report));
  WidenInt64ToFloat32(table, {a_name, b_name});  // integer factors multiply as float32
  auto factors = SelectColumns(table, {a_name, b_name}, ElementType::kFloat32);
  if (!factors.ok()) return factors.status().WithContext(input);
  if (table.Find(out_name) != nullptr) {
    return InvalidArgument(input + ": already has a column '" + out_name +
                           "'; choose another name with the `out` param");
  }
  if (a_name.find('`') != std::string::npos || b_name.find('`') != std::string::npos) {
    return InvalidArgument(input + ": filter_map cannot name a column holding '`'");
  }
  if (context.Cancelled()) return Cancelled();

  const std::string product = Quoted(a_name) + " * " + Quoted(b_name);
  COUPLER_ASSIGN_OR_RETURN(expr::Program keep_program,
                           CompileForShard("filter_map", product + " > 0", table,
                                           expr::Expect::kBoolean));
  // The literal's one constant becomes the exact float32 threshold (a literal in the text
  // would round to nearest, and could not spell inf or NaN).
  for (expr::Instruction& ins : keep_program.code) {
    if (ins.op == expr::OpCode::kConst) ins.value = kernels::FloatThresholdFor(threshold);
  }
  COUPLER_ASSIGN_OR_RETURN(expr::Program root_program,
                           CompileForShard("filter_map", "sqrt(" + product + ")", table,
                                           expr::Expect::kNumber));

  const size_t rows = table.rows();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<uint8_t> keep,
                           EvaluateCondition(keep_program, table, report));
  COUPLER_ASSIGN_OR_RETURN(const size_t kept, KeepRows(table, keep, report));
  COUPLER_ASSIGN_OR_RETURN(io::Column value,
                           EvaluateColumn(root_program, table, out_name, report));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(std::move(value)));
  report.rows_in = rows;
  report.rows_out = kept;
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
