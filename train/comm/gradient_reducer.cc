#include "train/comm/gradient_reducer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/precision/half.h"

namespace coupler::comm {
namespace {

size_t WireBytes(ElementType type) { return type == ElementType::kFloat32 ? 4 : 2; }

// Calls fn(float* data, size_t n, size_t bucket_pos) for each piece of the bucket that starts at
// element `offset` of tensor `first` and holds `count` elements.
template <typename Fn>
void ForEachPiece(std::span<const GradientTensor> tensors, size_t first, size_t offset,
                  size_t count, Fn&& fn) {
  size_t pos = 0;
  for (size_t t = first; t < tensors.size() && pos < count; ++t) {
    const size_t begin = t == first ? offset : 0;
    const size_t n = std::min(tensors[t].count - begin, count - pos);
    if (n > 0) fn(tensors[t].data + begin, n, pos);
    pos += n;
  }
}

// The bucket's first element when its pieces lie end to end in memory (one tensor, or tensors
// carved from one arena), so it can be reduced where it is; nullptr otherwise.
float* ContiguousBucket(std::span<const GradientTensor> tensors, size_t first, size_t offset,
                        size_t count) {
  float* start = nullptr;
  float* next = nullptr;
  bool contiguous = true;
  ForEachPiece(tensors, first, offset, count, [&](float* data, size_t n, size_t /*pos*/) {
    if (start == nullptr) start = data;
    contiguous = contiguous && (next == nullptr || data == next);
    next = data + n;
  });
  return contiguous ? start : nullptr;
}

}  // namespace

GradientReducer::GradientReducer(Communicator& comm, GradientReducerOptions options)
    : comm_(comm), options_(options) {}

Result<size_t> GradientReducer::AllReduceMean(std::span<const GradientTensor> tensors) {
  return Reduce(tensors, /*mean=*/true);
}

Result<size_t> GradientReducer::AllReduceSum(std::span<const GradientTensor> tensors) {
  return Reduce(tensors, /*mean=*/false);
}

Result<size_t> GradientReducer::Reduce(std::span<const GradientTensor> tensors, bool mean) {
  const size_t capacity = options_.bucket_bytes / WireBytes(options_.wire_type);
  if (capacity == 0) {
    return InvalidArgument("GradientReducer: bucket_bytes " +
                           std::to_string(options_.bucket_bytes) + " holds no element");
  }
  size_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].count > 0 && tensors[i].data == nullptr) {
      return InvalidArgument("GradientReducer: tensor " + std::to_string(i) +
                             " has null data and count " + std::to_string(tensors[i].count));
    }
    total += tensors[i].count;
  }

  size_t collectives = 0;
  size_t tensor = 0;
  size_t offset = 0;  // within tensors[tensor]
  size_t done = 0;
  while (done < total) {
    const size_t count = std::min(capacity, total - done);
    COUPLER_RETURN_IF_ERROR(ReduceBucket(tensors, tensor, offset, count, mean)
                                .WithContext("GradientReducer bucket " +
                                             std::to_string(collectives)));
    ++collectives;
    done += count;
    // Advance (tensor, offset) past the bucket, skipping empty and finished tensors.
    size_t left = count;
    while (tensor < tensors.size() && (left > 0 || offset == tensors[tensor].count)) {
      const size_t step = std::min(left, tensors[tensor].count - offset);
      offset += step;
      left -= step;
      if (offset == tensors[tensor].count) {
        ++tensor;
        offset = 0;
      }
    }
  }
  return collectives;
}

Status GradientReducer::ReduceBucket(std::span<const GradientTensor> tensors, size_t first_tensor,
                                     size_t offset, size_t count, bool mean) {
  const float inv_size = mean ? 1.0f / static_cast<float>(comm_.size()) : 1.0f;
  const ElementType wire = options_.wire_type;
  BucketMath& math = this->math();
  // Each piece's status is kept (the first error wins) since ForEachPiece cannot return early.
  Status piece_status = Status::Ok();
  auto keep = [&piece_status](Status s) {
    if (piece_status.ok()) piece_status = std::move(s);
  };
  if (options_.wire_type == ElementType::kFloat32) {
    const float size = static_cast<float>(comm_.size());
    if (float* data = ContiguousBucket(tensors, first_tensor, offset, count)) {
      // No staging copies: two passes over the bytes fewer.
      COUPLER_RETURN_IF_ERROR(comm_.AllReduce(data, data, count, wire, ReduceOp::kSum));
      return mean ? math.Divide(data, data, count, size) : Status::Ok();
    }
    COUPLER_ASSIGN_OR_RETURN(void* scratch, math.Scratch(count * sizeof(float)));
    float* buf = static_cast<float*>(scratch);
    ForEachPiece(tensors, first_tensor, offset, count,
                 [&](float* data, size_t n, size_t pos) { keep(math.Copy(buf + pos, data, n)); });
    COUPLER_RETURN_IF_ERROR(piece_status);
    COUPLER_RETURN_IF_ERROR(comm_.AllReduce(buf, buf, count, wire, ReduceOp::kSum));
    ForEachPiece(tensors, first_tensor, offset, count, [&](float* data, size_t n, size_t pos) {
      keep(mean ? math.Divide(data, buf + pos, n, size) : math.Copy(data, buf + pos, n));
    });
    return piece_status;
  }
  const ElementType format = options_.wire_type;
  COUPLER_ASSIGN_OR_RETURN(void* scratch, math.Scratch(count * sizeof(uint16_t)));
  uint16_t* buf = static_cast<uint16_t*>(scratch);
  ForEachPiece(tensors, first_tensor, offset, count, [&](float* data, size_t n, size_t pos) {
    keep(math.PackHalf(data, inv_size, buf + pos, n, format));
  });
  COUPLER_RETURN_IF_ERROR(piece_status);
  COUPLER_RETURN_IF_ERROR(comm_.AllReduce(buf, buf, count, wire, ReduceOp::kSum));
  ForEachPiece(tensors, first_tensor, offset, count, [&](float* data, size_t n, size_t pos) {
    keep(math.UnpackHalf(buf + pos, data, n, format));
  });
  return piece_status;
}

}  // namespace coupler::comm
