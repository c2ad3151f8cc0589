#include "worker/ops/shard_io.h"

#include <algorithm>

#include "runtime/io/shard_file.h"
#include "worker/ops/missing_shard.h"
#include "worker/ops/shard_stage.h"

namespace coupler::worker {

Result<io::Table> ReadShard(std::string_view path, OpReport& report,
                            const io::ColumnWanted& wanted) {
  if (report.stage != nullptr && report.stage->Holds(path)) {
    std::optional<io::Table> table = report.stage->Take(path);
    if (!table) {
      return Internal(std::string(path) + ": the fused step before this one handed no shard on");
    }
    // What the previous op left unread is still in its file: load what this op computes with.
    for (size_t i = 0; i < table->num_columns(); ++i) {
      io::Column& column = table->column(i);
      if (column.loaded()) continue;
      if (wanted && !wanted({column.name(), column.dtype(), column.categorical()})) continue;
      uint64_t bytes = 0;
      COUPLER_RETURN_IF_ERROR(io::LoadStoredColumn(column, &bytes));
      report.bytes_read += bytes;
    }
    return std::move(*table);
  }
  uint64_t bytes = 0;
  auto read = io::ReadShardFile(path, wanted, &bytes);
  if (!read.ok()) return ExplainMissingInput(path, read.status());  // which shard, and why
  report.bytes_read += bytes;
  return read;
}

Status LoadColumns(io::Table& table, const std::vector<std::string>& names, OpReport& report) {
  for (const std::string& name : names) {
    io::Column* column = table.Find(name);
    if (column == nullptr || column->loaded()) continue;
    uint64_t bytes = 0;
    COUPLER_RETURN_IF_ERROR(io::LoadStoredColumn(*column, &bytes));
    report.bytes_read += bytes;
  }
  return Status::Ok();
}

Status RunMapOrReduce(const OpContext& context, OpReport& report, OpBody map, OpBody reduce) {
  switch (context.spec.kind) {
    case wire::TaskKind::kMap: return map(context, report);
    case wire::TaskKind::kReduce: return reduce(context, report);
    case wire::TaskKind::kGang: break;
  }
  return InvalidArgument("a " + context.spec.op + " task is a map or a reduce, not a gang");
}

Status ForEachPartial(const OpContext& context, OpReport& report, std::string_view what,
                      const std::function<Status(size_t, const std::string&, const io::Table&)>&
                          visit) {
  const auto& inputs = context.spec.input_paths;
  if (inputs.empty()) return InvalidArgument("the reduce task has no " + std::string(what));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(inputs[i], report));
    COUPLER_RETURN_IF_ERROR(visit(i, inputs[i], table));
    report.rows_in += table.rows();
  }
  return Status::Ok();
}

Status WriteShard(std::string_view path, io::Table&& table, OpReport& report) {
  if (report.stage != nullptr && report.stage->Holds(path)) {
    COUPLER_RETURN_IF_ERROR(table.Validate());  // what the writer would have refused
    report.stage->Put(path, std::move(table));
    return Status::Ok();
  }
  uint64_t bytes = 0;
  COUPLER_RETURN_IF_ERROR(io::WriteNpzAtomic(path, table, &bytes));
  report.output_paths.emplace_back(path);
  report.bytes_written += bytes;
  return Status::Ok();
}

Result<std::string> InputPath(const OpContext& context, size_t index, std::string_view expected) {
  const auto& inputs = context.spec.input_paths;
  if (index >= inputs.size()) {
    return InvalidArgument("expected input_paths " + std::string(expected) + ", got " +
                           std::to_string(inputs.size()) + " path(s)");
  }
  return inputs[index];
}

Result<std::string> OutputPath(const OpContext& context) {
  if (context.spec.output_path.empty()) return InvalidArgument("the task has no output_path");
  return context.spec.output_path;
}

void WidenInt64ToFloat32(io::Table& table, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    io::Column* column = table.Find(name);
    if (column == nullptr || column->dtype() != ElementType::kInt64) continue;
    std::vector<float> widened(column->size());
    const std::span<const int64_t> values = column->values<int64_t>();
    for (size_t r = 0; r < widened.size(); ++r) {
      widened[r] = static_cast<float>(io::Int64AsDouble(values[r]));
    }
    *column = io::Column::Float32(name, std::move(widened));
  }
}

io::ColumnWanted NamedOrOfType(const std::vector<std::string>& names, ElementType dtype) {
  return [names, dtype](const io::ColumnInfo& c) {
    if (names.empty()) return c.dtype == dtype && !c.categorical;
    return std::find(names.begin(), names.end(), c.name) != names.end();
  };
}

Result<std::vector<size_t>> SelectColumns(const io::Table& table,
                                          const std::vector<std::string>& names,
                                          ElementType dtype) {
  std::vector<size_t> selected;
  if (names.empty()) {
    for (size_t i = 0; i < table.num_columns(); ++i) {
      if (table.column(i).dtype() == dtype) selected.push_back(i);
    }
    return selected;
  }
  for (const std::string& name : names) {
    size_t index = 0;
    while (index < table.num_columns() && table.column(index).name() != name) ++index;
    if (index == table.num_columns()) {
      return InvalidArgument("no column '" + name + "' (the shard has " + table.Describe() + ")");
    }
    const ElementType actual = table.column(index).dtype();
    if (actual != dtype) {
      return InvalidArgument("column '" + name + "' is " + std::string(ElementTypeName(actual)) +
                             "; this op needs " + std::string(ElementTypeName(dtype)));
    }
    selected.push_back(index);
  }
  return selected;
}

}  // namespace coupler::worker
