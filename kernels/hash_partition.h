// hash_partition: the map side of a shuffle routes each row to a partition by the hash of its
// key columns (runtime/relational/key_partition.h). The CPU twin is the relational loop; the
// CUDA twin folds the same hash steps on the device (shuffle_math.h), so both give the same
// partition for every row.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::kernels {

// out[r] = the partition (of `partitions`) of the row whose key hash words are words[k][r].
// InvalidArgument for bad input (relational::CheckPartitionInput) on either backend;
// Unavailable for kCuda in a CPU-only build or without a device, before `out` is touched.
Status HashPartition(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                     std::span<uint32_t> out, Backend backend);

}  // namespace coupler::kernels
