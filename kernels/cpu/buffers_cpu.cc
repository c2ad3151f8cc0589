// Host buffers and the gradient reducer's bucket math on host memory: the CPU side of
// kernels/cuda/train_transfer_cuda.cu, and the loops train/comm's host bucket math runs.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/train_kernels.h"
#include "runtime/precision/half.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace coupler::kernels {
namespace {

Result<ElementType> WireFormat(ElementType storage, const char* op) {
  switch (storage) {
    case ElementType::kFloat16: return ElementType::kFloat16;
    case ElementType::kBFloat16: return ElementType::kBFloat16;
    default: break;
  }
  return InvalidArgument(std::string(op) + ": the wire storage must be fp16 or bf16");
}

}  // namespace

Status FillZero(void* dst, size_t bytes) {
  if (bytes > 0) std::memset(dst, 0, bytes);
  return Status::Ok();
}

Status CopyBytes(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

// Four lanes at a time where SSE2 is there: divps rounds exactly like the scalar division (the
// same bits as a per-tensor loop), and the -O2 build does not vectorize a loop of unknown length
// by itself. 25 MiB: 1.3 ms, where the scalar loop (calling comm_.size() per element) took 5 ms,
// a tenth of the all-reduce at np=2.
Status Divide(float* out, const float* in, size_t n, float divisor) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128 d = _mm_set1_ps(divisor);
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, _mm_div_ps(_mm_loadu_ps(in + i), d));
#endif
  for (; i < n; ++i) out[i] = in[i] / divisor;
  return Status::Ok();
}

Status PackHalf(const float* in, float scale, uint16_t* out, size_t n, ElementType storage) {
  COUPLER_ASSIGN_OR_RETURN(const ElementType format, WireFormat(storage, "PackHalf"));
  for (size_t i = 0; i < n; ++i) out[i] = precision::EncodeHalf(in[i] * scale, format);
  return Status::Ok();
}

Status UnpackHalf(const uint16_t* in, float* out, size_t n, ElementType storage) {
  COUPLER_ASSIGN_OR_RETURN(const ElementType format, WireFormat(storage, "UnpackHalf"));
  for (size_t i = 0; i < n; ++i) out[i] = precision::DecodeHalf(in[i], format);
  return Status::Ok();
}

}  // namespace coupler::kernels
