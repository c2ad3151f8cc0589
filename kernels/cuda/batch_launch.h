// The batch kernels' device passes, over columns already on the device: what the host entry
// points (batch_cuda.h) run chunk by chunk, and what a caller holding device columns (the
// kernel benchmarks) runs on a whole column. Each enqueues on `stream`; CUDA headers here, so
// only for code compiled with CUDA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/column_stats.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::kernels {

// The element-wise launches: d_in[0..count) to d_out with `blocks` blocks of `threads`; check
// cudaGetLastError after them.
// d_out[i] = StandardizeValue(d_in[i], mean, inv_stddev); d_in may equal d_out.
void LaunchStandardize(const float* d_in, float* d_out, size_t count, int blocks, int threads,
                       cudaStream_t stream, double mean, double inv_stddev);

// d_out[i] = ClipValue(d_in[i], lo, hi); d_in and d_out must not overlap.
void LaunchClip(const float* d_in, float* d_out, size_t count, int blocks, int threads,
                cudaStream_t stream, float lo, float hi);

// d_out[i] = d_in[i] as fp16 or bf16 bits; d_in and d_out must not overlap.
void LaunchCast(const float* d_in, uint16_t* d_out, size_t count, int blocks, int threads,
                cudaStream_t stream, ElementType format);

// Device bytes for the per-block partials of up to `blocks` blocks.
size_t MomentsPartialBytes(int blocks);
// Merges the moments of d_in[0..n) into `total`, block partials in block order: enqueued on
// `stream` with up to `max_blocks` blocks, synchronized before it returns. `d_partials` holds
// MomentsPartialBytes(max_blocks). Instantiated for float and int32_t.
template <typename T>
Status MergeDeviceMoments(const T* d_in, size_t n, int max_blocks, void* d_partials,
                          cudaStream_t stream, ColumnMoments& total);

// CUB's temp storage, grown on demand: sized by CUB's first (query) call for the largest count
// this run will see, then reused, so a chunked run allocates once.
class CubScratch {
 public:
  // `query(d_temp, bytes)` is the Flagged call to be made, which CUB answers with the bytes it
  // needs when d_temp is null.
  template <typename Query>
  Status Reserve(const Query& query) {
    size_t bytes = 0;
    COUPLER_CUDA_RETURN_IF_ERROR(query(nullptr, bytes));
    // Never a null buffer: CUB reads a null d_temp_storage as another size query and would
    // silently do nothing.
    if (bytes > temp_.bytes() || temp_.as<void>() == nullptr) {
      COUPLER_ASSIGN_OR_RETURN(temp_, DeviceBuffer::Allocate(std::max<size_t>(bytes, 1)));
    }
    bytes_ = bytes;
    return Status::Ok();
  }
  void* temp() const { return temp_.as<void>(); }
  // Passed to CUB by reference, as its API wants.
  size_t& bytes() { return bytes_; }

 private:
  DeviceBuffer temp_;
  size_t bytes_ = 0;
};

// Sizes `scratch` for a filter_map over n items.
Status ReserveFilterMap(CubScratch& scratch, size_t n);
// Enqueues filter_map over device columns: flags and roots, then the in-place compaction of the
// roots; the kept count lands in *d_kept. `scratch` must already be reserved for n items.
Status LaunchFilterMap(const float* d_a, const float* d_b, size_t n, float threshold,
                       uint8_t* d_keep, float* d_value, int64_t* d_kept, int max_blocks,
                       CubScratch& scratch, cudaStream_t stream);
// Reads the kept count back; the synchronize also surfaces any fault of the kernels before it.
Result<size_t> KeptCount(const int64_t* d_kept, cudaStream_t stream);

}  // namespace coupler::kernels
