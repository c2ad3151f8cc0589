#include "worker/ops/shard_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/io/atomic_file.h"
#include "runtime/io/dictionary_file.h"
#include "runtime/io/npy_reader.h"
#include "runtime/io/npy_writer.h"
#include "worker/ops/missing_shard.h"

namespace coupler::worker {

Result<io::Table> ReadShard(std::string_view path, OpReport& report) {
  uint64_t bytes = 0;
  auto read = io::ReadNpy(path, &bytes);
  if (!read.ok()) return ExplainMissingInput(path, read.status());  // which shard, and why
  io::Table table = std::move(read).value();
  report.bytes_read += bytes;
  const std::string sidecar = io::DictionarySidecarPath(path);
  std::error_code ec;
  if (!std::filesystem::exists(sidecar, ec)) return table;  // no categorical column
  std::ifstream in(sidecar, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) return Internal(sidecar + ": cannot read the dictionary sidecar");
  const std::string json = std::move(text).str();
  report.bytes_read += json.size();
  auto dictionaries = io::DecodeDictionaries(json);
  if (!dictionaries.ok()) return dictionaries.status().WithContext(sidecar);
  COUPLER_RETURN_IF_ERROR(
      io::AttachDictionaries(table, std::move(dictionaries).value()).WithContext(sidecar));
  return table;
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

Status WriteShard(std::string_view path, const io::Table& table, OpReport& report) {
  // The sidecar goes first and the shard last, each by an atomic rename: a reader that sees the
  // new shard sees its dictionaries. Two files cannot be replaced in one step, so a crash between
  // the renames can leave a new sidecar beside an old shard; ReadShard then finds codes outside
  // the dictionary (or a column that is not there) and refuses the pair rather than guess.
  const std::string sidecar = io::DictionarySidecarPath(path);
  if (io::HasDictionaries(table)) {
    const std::string json = io::EncodeDictionaries(table);
    const std::span<const std::byte> bytes = std::as_bytes(std::span(json.data(), json.size()));
    COUPLER_RETURN_IF_ERROR(io::WriteFileAtomic(sidecar, {&bytes, 1}, /*durable=*/false));
    report.bytes_written += json.size();
  } else {
    io::RemoveQuietly(sidecar);  // a stale one from an earlier write of this path
  }
  COUPLER_RETURN_IF_ERROR(io::WriteNpyAtomic(path, table));
  report.output_paths.emplace_back(path);
  report.bytes_written += io::NpyFileSize(table);
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
