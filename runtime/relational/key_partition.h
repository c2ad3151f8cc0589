// A shuffle's routing: each row's partition from its key columns' hash words (KeyHashWords), the
// CPU loop of it, and the checks both twins make. A worker with a GPU runs the CUDA twin
// (kernels/hash_partition.h); both give the partition HashKeys' hash picks
// (shuffle_math.h's PartitionOfHash), so a row lands in one partition whatever ran its map. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::relational {

// The most partitions a shuffle has (the routing's multiply-shift is exact up to 2^32; the
// planner allows far fewer).
inline constexpr uint32_t kMaxShufflePartitions = 65536;

// InvalidArgument unless 1 <= partitions <= kMaxShufflePartitions, there is at least one key
// column, and every column of words and `out` have the same length.
Status CheckPartitionInput(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                           size_t out_size);

// out[r] = the partition of row r: the key hash folded from words[0][r], words[1][r], ... then
// PartitionOfHash. Checks CheckPartitionInput first.
Status PartitionRowsCpu(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                        std::span<uint32_t> out);

// The hash words of `table`'s key columns `keys`, one vector per key (KeyHashWords).
std::vector<std::vector<uint64_t>> KeyColumnsHashWords(const io::Table& table, std::span<const size_t> keys);

// The rows of each partition, in row order, from each row's partition.
std::vector<std::vector<uint32_t>> RowsByPartition(std::span<const uint32_t> partition_of_row,
                                                   uint32_t partitions);

}  // namespace coupler::relational
