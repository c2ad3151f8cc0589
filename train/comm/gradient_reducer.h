// Fuses many gradient tensors into a few large all-reduces (buckets) and averages them over the
// ranks, so hundreds of small tensors cost a handful of collectives instead of one each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "train/comm/bucket_math.h"
#include "train/comm/communicator.h"

namespace coupler::comm {

struct GradientTensor {
  float* data = nullptr;
  size_t count = 0;
};

struct GradientReducerOptions {
  size_t bucket_bytes = size_t{25} << 20;  // on the wire, so 16-bit buckets hold twice the values
  // What travels on the wire: kFloat32, kFloat16 or kBFloat16. fp16/bf16 halve the bytes; values
  // are rounded to nearest even when packed and summed in float32 by the backend.
  ElementType wire_type = ElementType::kFloat32;
  // Does the bucket's element-wise work where the gradients live (borrowed, must outlive the
  // reducer); null means host memory. GPU gradients need a device one: the communicator (NCCL)
  // then sees only device pointers.
  BucketMath* math = nullptr;
};

class GradientReducer {
 public:
  // comm is borrowed and must outlive the reducer.
  explicit GradientReducer(Communicator& comm, GradientReducerOptions options = {});

  // Replaces every tensor by its mean over the ranks. The tensors are laid end to end and cut
  // into buckets of at most bucket_bytes (a large tensor spans buckets); one AllReduce per
  // bucket. Every rank must pass the same tensor sizes in the same order. Returns the number of
  // collectives issued. fp32 sums are divided after the reduce (the same bits as a per-tensor
  // loop); 16-bit values are divided before packing so fp16 sums do not overflow.
  Result<size_t> AllReduceMean(std::span<const GradientTensor> tensors);

  // The same buckets, but every tensor is replaced by its sum over the ranks: the mean when each
  // rank passed its gradients already divided by the ranks (the trainer folds that into the loss
  // gradient's scale), so no pass over the bytes divides them. In place for tensors laid end to
  // end in memory, the collective alone. 16-bit sums can overflow where the mean would not.
  Result<size_t> AllReduceSum(std::span<const GradientTensor> tensors);

 private:
  Result<size_t> Reduce(std::span<const GradientTensor> tensors, bool mean);
  Status ReduceBucket(std::span<const GradientTensor> tensors, size_t first_tensor,
                      size_t offset, size_t count, bool mean);

  BucketMath& math() { return options_.math != nullptr ? *options_.math : host_math_; }

  Communicator& comm_;
  GradientReducerOptions options_;
  HostBucketMath host_math_;
};

}  // namespace coupler::comm
