// cast: the selected float32 columns (default: all of them) become float16 or bfloat16 columns
// of the same name and position, rounded to nearest even by the shared cast kernel.
#include "kernels/cast.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {

Status RunCast(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::string dtype, context.spec.params.Get<std::string>("dtype"));
  ElementType format;
  ElementType target;
  if (dtype == "float16" || dtype == "fp16") {
    format = ElementType::kFloat16;
    target = ElementType::kFloat16;
  } else if (dtype == "bfloat16" || dtype == "bf16") {
    format = ElementType::kBFloat16;
    target = ElementType::kBFloat16;
  } else {
    return InvalidArgument("param 'dtype' is '" + dtype + "', expected float16 or bfloat16");
  }
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> columns,
                           context.spec.params.Optional<std::vector<std::string>>("columns"));
  const std::vector<std::string> names = columns.value_or(std::vector<std::string>{});
  COUPLER_ASSIGN_OR_RETURN(io::Table table,
                           ReadShard(input, report, NamedOrOfType(names, ElementType::kFloat32)));
  auto selected = SelectColumns(table, names, ElementType::kFloat32);
  if (!selected.ok()) return selected.status().WithContext(input);
  if (context.Cancelled()) return Cancelled();
  {
    KernelTimer timer(report.kernel_ms);
    for (const size_t index : *selected) {
      io::Column& column = table.column(index);
      std::vector<uint16_t> bits(column.size());
      COUPLER_RETURN_IF_ERROR(RunKernel(report, [&](kernels::Backend backend) {
        return kernels::Cast(column.values<float>(), bits, format, backend);
      }));
      column = io::Column(column.name(), std::move(bits), target);
    }
  }
  report.rows_in = report.rows_out = table.rows();
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
