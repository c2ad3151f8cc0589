#include "kernels/hash_partition.h"

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "runtime/relational/key_partition.h"

namespace coupler::kernels {

Status HashPartition(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                     std::span<uint32_t> out, Backend backend) {
  switch (backend) {
    case Backend::kCpu:
      return relational::PartitionRowsCpu(words, partitions, out);  // checks its input
    case Backend::kCuda: {
      COUPLER_RETURN_IF_ERROR(relational::CheckPartitionInput(words, partitions, out.size()));
      if (!BuiltWithCuda()) {
        return Unavailable("hash_partition: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (out.empty()) return Status::Ok();
      const Status status = HashPartitionCuda(words, partitions, out.data(), out.size());
      return status.ok() ? status : status.WithContext("hash_partition (cuda)");
    }
  }
  return InvalidArgument("hash_partition: unknown backend");
}

}  // namespace coupler::kernels
