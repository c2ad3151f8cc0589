#include "worker/ops/shuffle_files.h"

#include <span>

#include "kernels/hash_partition.h"
#include "runtime/io/output_layout.h"
#include "runtime/relational/key_partition.h"
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
  if (partitions < 1 || partitions > relational::kMaxShufflePartitions) {
    return InvalidArgument("a shuffle has 1 to " + std::to_string(relational::kMaxShufflePartitions) +
                           " partitions, not " + std::to_string(partitions));
  }
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> key_index,
                           relational::ColumnIndexes(table, keys, "key column"));
  const auto count = static_cast<uint32_t>(partitions);
  std::vector<std::vector<uint32_t>> rows;
  {
    KernelTimer timer(report.kernel_ms);
    const std::vector<std::vector<uint64_t>> words = relational::KeyColumnsHashWords(table, key_index);
    const std::vector<std::span<const uint64_t>> columns(words.begin(), words.end());
    std::vector<uint32_t> partition_of_row(table.rows());
    COUPLER_RETURN_IF_ERROR(RunKernel(report, [&](kernels::Backend backend) {
      return kernels::HashPartition(columns, count, partition_of_row, backend);
    }));
    rows = relational::RowsByPartition(partition_of_row, count);
  }
  for (uint32_t p = 0; p < count; ++p) {
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
