// CUDA twin of hash_partition: one grid-stride pass folds each row's key hash words with the
// CPU twin's steps (relational::KeyHashStep, PartitionOfHash, shared through shuffle_math.h),
// so every row gets the partition the CPU gives it. Integer arithmetic only: bit-exact by
// construction. The key columns travel a chunk of rows at a time, one after the other in one
// device buffer.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/column_pass.h"
#include "runtime/relational/shuffle_math.h"

namespace coupler::kernels {
namespace {

// words holds `columns` key columns of `count` rows each, column after column.
__global__ void HashPartitionKernel(const uint64_t* __restrict__ words, size_t columns,
                                    size_t count, uint32_t partitions,
                                    uint32_t* __restrict__ out) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    uint64_t h = relational::kKeyHashSeed;
    for (size_t c = 0; c < columns; ++c) h = relational::KeyHashStep(h, words[c * count + i]);
    out[i] = relational::PartitionOfHash(h, partitions);
  }
}

}  // namespace

Status HashPartitionCuda(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                         uint32_t* out, size_t n) {
  const size_t columns = words.size();
  // A chunk's words take what two float buffers of kCudaChunkElements would (256 MiB).
  const size_t chunk = std::min(n, std::max<size_t>(kCudaChunkElements / (2 * columns), 1));
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_words,
                           DeviceBuffer::Allocate(chunk * columns * sizeof(uint64_t)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(chunk * sizeof(uint32_t)));
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  for (size_t start = 0; start < n; start += chunk) {
    const size_t count = std::min(chunk, n - start);
    for (size_t c = 0; c < columns; ++c) {
      COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_words.as<uint64_t>() + c * count,
                                                   words[c].data() + start,
                                                   count * sizeof(uint64_t),
                                                   cudaMemcpyHostToDevice, stream.get()));
    }
    const size_t wanted = (count + kThreadsPerBlock - 1) / kThreadsPerBlock;
    const int blocks = static_cast<int>(std::min<size_t>(wanted, max_blocks));
    HashPartitionKernel<<<blocks, kThreadsPerBlock, 0, stream.get()>>>(
        d_words.as<const uint64_t>(), columns, count, partitions, d_out.as<uint32_t>());
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out + start, d_out.as<uint32_t>(),
                                                 count * sizeof(uint32_t),
                                                 cudaMemcpyDeviceToHost, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  }
  return Status::Ok();
}

}  // namespace coupler::kernels
