// filter_map: value = a * b (float32); keep the rows with value > threshold, carry every other
// column of those rows through, and append `out` = sqrt(value).
#include "kernels/filter_map.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

template <typename T>
Status CompactColumn(io::Column& column, std::span<const uint8_t> keep, size_t kept,
                     OpReport& report) {
  std::vector<T> out(column.size());
  COUPLER_ASSIGN_OR_RETURN(const size_t n, RunKernel(report, [&](kernels::Backend backend) {
                             return kernels::Compact<T>(column.values<T>(), keep, out, backend);
                           }));
  COUPLER_CHECK(n == kept) << "compact kept " << n << " rows, filter_map " << kept;
  out.resize(kept);
  auto dictionary = column.dictionary();  // kept rows keep their codes, so their strings
  column = io::Column(column.name(), std::move(out), column.dtype());
  column.set_dictionary(std::move(dictionary));
  return Status::Ok();
}

Status CompactAny(io::Column& column, std::span<const uint8_t> keep, size_t kept,
                  OpReport& report) {
  switch (column.dtype()) {
    case ElementType::kFloat32: return CompactColumn<float>(column, keep, kept, report);
    case ElementType::kInt32: return CompactColumn<int32_t>(column, keep, kept, report);
    case ElementType::kFloat16:
    case ElementType::kBFloat16: return CompactColumn<uint16_t>(column, keep, kept, report);
    case ElementType::kFloat64: return CompactColumn<double>(column, keep, kept, report);
    case ElementType::kInt64: break;
  }
  return Internal("unknown dtype");
}

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
  auto factors = SelectColumns(table, {a_name, b_name}, ElementType::kFloat32);
  if (!factors.ok()) return factors.status().WithContext(input);
  if (table.Find(out_name) != nullptr) {
    return InvalidArgument(input + ": already has a column '" + out_name +
                           "'; choose another name with the `out` param");
  }
  if (context.Cancelled()) return Cancelled();

  const size_t rows = table.rows();
  std::vector<uint8_t> keep(rows);
  std::vector<float> value(rows);
  size_t kept = 0;
  {
    KernelTimer timer(report.kernel_ms);
    const std::span<const float> a = table.column((*factors)[0]).values<float>();
    const std::span<const float> b = table.column((*factors)[1]).values<float>();
    COUPLER_ASSIGN_OR_RETURN(kept, RunKernel(report, [&](kernels::Backend backend) {
                               return kernels::FilterMap(a, b, threshold, keep, value, backend);
                             }));
    for (size_t c = 0; c < table.num_columns(); ++c) {
      COUPLER_RETURN_IF_ERROR(CompactAny(table.column(c), keep, kept, report));
    }
  }
  value.resize(kept);
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Float32(out_name, std::move(value))));
  report.rows_in = rows;
  report.rows_out = kept;
  return WriteShard(output, table, report);
}

}  // namespace coupler::worker
