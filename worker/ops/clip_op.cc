// clip: bound the selected float32 columns (default: all of them) to [min, max], in place, with
// the shared clip kernel on the task's backend.
#include <cmath>
#include <limits>

#include "kernels/clip.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

// Bounds beyond float32's range become infinities rather than undefined conversions.
float ToFloatBound(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

}  // namespace

Status RunClip(const OpContext& context, OpReport& report) {
  const wire::TaskParams& params = context.spec.params;
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const double lo, params.Get<double>("min"));
  COUPLER_ASSIGN_OR_RETURN(const double hi, params.Get<double>("max"));
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
      const std::span<float> column = table.column(index).values<float>();
      COUPLER_RETURN_IF_ERROR(RunKernel(report, [&](kernels::Backend backend) {
        return kernels::Clip(column, ToFloatBound(lo), ToFloatBound(hi), backend);
      }));
    }
  }
  report.rows_in = report.rows_out = table.rows();
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
