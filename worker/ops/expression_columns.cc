#include "worker/ops/expression_columns.h"

#include <memory>
#include <string>

#include "kernels/expression.h"
#include "kernels/filter_map.h"

namespace coupler::worker {
namespace {

Result<std::vector<kernels::ExpressionInput>> Inputs(const expr::Program& program,
                                                     const io::Table& table) {
  std::vector<kernels::ExpressionInput> inputs;
  for (const expr::ProgramColumn& c : program.columns) {
    const io::Column* column = table.Find(c.name);
    if (column == nullptr) return InvalidArgument("no column '" + c.name + "'");
    inputs.push_back({column->data(), column->dtype(), column->dictionary().get()});
  }
  return inputs;
}

Status Evaluate(const expr::Program& program, const io::Table& table, void* out,
                OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::vector<kernels::ExpressionInput> inputs,
                           Inputs(program, table));
  KernelTimer timer(report.kernel_ms);
  return RunKernel(report, [&](kernels::Backend backend) {
    return kernels::EvaluateExpression(program, inputs, table.rows(), out, backend);
  });
}

// After a filter, a dictionary keeps only the entries some kept row uses, in their old order,
// and the codes follow: a selective filter does not carry the whole shard's dictionary on
// (its sidecar is read by every later node).
void DropUnusedEntries(io::Column& column) {
  const io::Column::Dictionary& dictionary = *column.dictionary();
  const std::span<int32_t> codes = column.values<int32_t>();
  std::vector<int32_t> remap(dictionary.size(), -1);
  for (const int32_t c : codes) {
    if (c >= 0 && static_cast<size_t>(c) < remap.size()) remap[static_cast<size_t>(c)] = 0;
  }
  auto kept = std::make_shared<io::Column::Dictionary>();
  for (size_t i = 0; i < remap.size(); ++i) {
    if (remap[i] < 0) continue;
    remap[i] = static_cast<int32_t>(kept->size());
    kept->push_back(dictionary[i]);
  }
  if (kept->size() == dictionary.size()) return;  // every entry still used
  for (int32_t& c : codes) {
    if (c >= 0 && static_cast<size_t>(c) < remap.size()) c = remap[static_cast<size_t>(c)];
  }
  column.set_dictionary(std::move(kept));
}

template <typename T>
Status KeepColumn(io::Column& column, std::span<const uint8_t> keep, size_t kept,
                  OpReport& report) {
  std::vector<T> out(column.size());
  COUPLER_ASSIGN_OR_RETURN(const size_t n, RunKernel(report, [&](kernels::Backend backend) {
                             return kernels::Compact<T>(column.values<T>(), keep, out, backend);
                           }));
  COUPLER_CHECK(n == kept) << "compact kept " << n << " rows of '" << column.name() << "', expected "
                           << kept;
  out.resize(kept);
  std::shared_ptr<const io::Column::Dictionary> dictionary = column.dictionary();
  column = io::Column(column.name(), std::move(out), column.dtype());
  if (dictionary != nullptr) {
    column.set_dictionary(std::move(dictionary));
    DropUnusedEntries(column);
  }
  return Status::Ok();
}

}  // namespace

io::TableSchema SchemaOf(const io::Table& table) {
  io::TableSchema schema;
  for (const io::Column& c : table.columns()) {
    schema.columns.push_back({c.name(), c.dtype(), c.categorical()});
  }
  return schema;
}

Result<expr::Program> CompileForShard(std::string_view param, std::string_view text,
                                      const io::Table& table, expr::Expect expect) {
  expr::ExprResult<expr::Program> program = expr::Compile(text, SchemaOf(table), expect);
  if (!program.ok()) {
    return InvalidArgument(std::string(param) + ": " + program.error().Describe(text));
  }
  return std::move(program.value());
}

Result<std::vector<uint8_t>> EvaluateCondition(const expr::Program& program,
                                               const io::Table& table, OpReport& report) {
  COUPLER_CHECK(program.result == expr::ValueType::kBool) << "a condition must be boolean";
  std::vector<uint8_t> keep(table.rows());
  COUPLER_RETURN_IF_ERROR(Evaluate(program, table, keep.data(), report));
  return keep;
}

Result<io::Column> EvaluateColumn(const expr::Program& program, const io::Table& table,
                                  std::string name, OpReport& report) {
  if (program.result == expr::ValueType::kFloat32) {
    std::vector<float> values(table.rows());
    COUPLER_RETURN_IF_ERROR(Evaluate(program, table, values.data(), report));
    return io::Column::Float32(std::move(name), std::move(values));
  }
  COUPLER_CHECK(program.result == expr::ValueType::kFloat64) << "a column must be numeric";
  std::vector<double> values(table.rows());
  COUPLER_RETURN_IF_ERROR(Evaluate(program, table, values.data(), report));
  return io::Column::Float64(std::move(name), std::move(values));
}

Result<size_t> KeepRows(io::Table& table, std::span<const uint8_t> keep, OpReport& report) {
  size_t kept = 0;
  for (const uint8_t k : keep) kept += k != 0;
  KernelTimer timer(report.kernel_ms);
  for (size_t c = 0; c < table.num_columns(); ++c) {
    io::Column& column = table.column(c);
    switch (column.dtype()) {
      case ElementType::kFloat32:
        COUPLER_RETURN_IF_ERROR(KeepColumn<float>(column, keep, kept, report));
        break;
      case ElementType::kInt32:
        COUPLER_RETURN_IF_ERROR(KeepColumn<int32_t>(column, keep, kept, report));
        break;
      case ElementType::kFloat16:
      case ElementType::kBFloat16:
        COUPLER_RETURN_IF_ERROR(KeepColumn<uint16_t>(column, keep, kept, report));
        break;
      case ElementType::kFloat64:
        COUPLER_RETURN_IF_ERROR(KeepColumn<double>(column, keep, kept, report));
        break;
      case ElementType::kInt64:
      case ElementType::kDatetime64:
        COUPLER_RETURN_IF_ERROR(KeepColumn<int64_t>(column, keep, kept, report));
        break;
      case ElementType::kBool:
        COUPLER_RETURN_IF_ERROR(KeepColumn<uint8_t>(column, keep, kept, report));
        break;
    }
  }
  return kept;
}

}  // namespace coupler::worker
