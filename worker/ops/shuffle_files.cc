#include "worker/ops/shuffle_files.h"

#include "runtime/io/output_layout.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {

Result<io::Table> Project(io::Table&& table, const std::vector<std::string>& names,
                          std::string_view where) {
  io::Table out;
  for (const std::string& name : names) {
    io::Column* column = table.Find(name);
    if (column == nullptr) {
      return InvalidArgument(std::string(where) + ": no column '" + name + "' (the shard has " +
                             table.Describe() + ")");
    }
    if (out.Find(name) != nullptr) continue;
    COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(*column)));
  }
  return out;
}

Status WriteRuns(const OpContext& context, io::Table&& table, const std::vector<std::string>& keys,
                 int64_t partitions, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string prefix, OutputPath(context));
  if (partitions < 1) return InvalidArgument("a shuffle needs at least one partition");
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> key_index,
                           relational::ColumnIndexes(table, keys, "key column"));
  const auto count = static_cast<size_t>(partitions);
  std::vector<std::vector<uint32_t>> rows(count);
  {
    KernelTimer timer(report.kernel_ms);
    const std::vector<uint64_t> hashes = relational::HashKeys(table, key_index);
    for (size_t r = 0; r < hashes.size(); ++r) {
      // The high 32 bits times P (at most 65,536: no overflow), shifted back: a uniform pick
      // without a division per row.
      const auto p = static_cast<size_t>(((hashes[r] >> 32) * count) >> 32);
      rows[p].push_back(static_cast<uint32_t>(r));
    }
  }
  for (size_t p = 0; p < count; ++p) {
    if (context.Cancelled()) return Cancelled();
    io::Table part = relational::TakeRows(table, rows[p]);
    report.rows_out += part.rows();
    COUPLER_RETURN_IF_ERROR(
        WriteShard(io::ShufflePartitionPath(prefix, static_cast<int64_t>(p)), std::move(part), report));
  }
  return Status::Ok();
}

Result<io::Table> ReadPartition(const OpContext& context, OpReport& report) {
  const auto& inputs = context.spec.input_paths;
  if (inputs.empty()) return InvalidArgument("the reduce task has no shuffle files to read");
  std::vector<io::Table> files;
  files.reserve(inputs.size());
  for (const std::string& path : inputs) {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(io::Table file, ReadShard(path, report));
    report.rows_in += file.rows();
    files.push_back(std::move(file));
  }
  auto all = relational::Concatenate(std::move(files));
  if (!all.ok()) {
    return all.status().WithContext("the shuffle files of partition " +
                                    std::to_string(context.spec.shard_index));
  }
  return all;
}

}  // namespace coupler::worker
