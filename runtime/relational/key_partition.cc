#include "runtime/relational/key_partition.h"

#include <string>

#include "runtime/relational/shuffle_math.h"
#include "runtime/relational/table_rows.h"

namespace coupler::relational {

Status CheckPartitionInput(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                           size_t out_size) {
  if (partitions < 1 || partitions > kMaxShufflePartitions) {
    return InvalidArgument("a shuffle has 1 to " + std::to_string(kMaxShufflePartitions) +
                           " partitions, not " + std::to_string(partitions));
  }
  if (words.empty()) return InvalidArgument("a shuffle routes rows by at least one key column");
  for (size_t k = 0; k < words.size(); ++k) {
    if (words[k].size() != out_size) {
      return InvalidArgument("key column " + std::to_string(k) + " has " +
                             std::to_string(words[k].size()) + " hash words for " +
                             std::to_string(out_size) + " rows");
    }
  }
  return Status::Ok();
}

Status PartitionRowsCpu(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                        std::span<uint32_t> out) {
  COUPLER_RETURN_IF_ERROR(CheckPartitionInput(words, partitions, out.size()));
  for (size_t r = 0; r < out.size(); ++r) {
    uint64_t h = kKeyHashSeed;
    for (const std::span<const uint64_t> column : words) h = KeyHashStep(h, column[r]);
    out[r] = PartitionOfHash(h, partitions);
  }
  return Status::Ok();
}

std::vector<std::vector<uint64_t>> KeyColumnsHashWords(const io::Table& table, std::span<const size_t> keys) {
  std::vector<std::vector<uint64_t>> words;
  words.reserve(keys.size());
  for (const size_t k : keys) words.push_back(KeyHashWords(table.column(k)));
  return words;
}

std::vector<std::vector<uint32_t>> RowsByPartition(std::span<const uint32_t> partition_of_row,
                                                   uint32_t partitions) {
  std::vector<std::vector<uint32_t>> rows(partitions);
  for (size_t r = 0; r < partition_of_row.size(); ++r) {
    rows[partition_of_row[r]].push_back(static_cast<uint32_t>(r));
  }
  return rows;
}

}  // namespace coupler::relational
