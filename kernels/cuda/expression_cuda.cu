// The expression interpreter on the GPU: one thread per row walks the program, its registers
// in thread-local memory as doubles (a float32 value is held exactly and every float32
// operation rounds to float32, as the CPU's loops do). Columns move in chunks, so device memory
// stays bounded whatever the shard's length.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <math_constants.h>

#include "kernels/cuda/column_pass.h"
#include "kernels/cuda/expression_cuda.h"

namespace coupler::kernels {
namespace {

using expr::Instruction;
using expr::OpCode;
using expr::ValueType;

// Rows per chunk: 8 MiB per float64 column.
constexpr size_t kChunkRows = size_t{1} << 20;

__device__ double Float(double v) { return static_cast<double>(static_cast<float>(v)); }

__device__ double Apply(const Instruction& in, const double* r, const void* const* cols,
                        size_t i) {
  const bool f32 = in.type == ValueType::kFloat32;
  const double a = r[in.src0];
  const double b = r[in.src1];
  switch (in.op) {
    case OpCode::kLoadFloat32: return static_cast<const float*>(cols[in.arg])[i];
    case OpCode::kLoadFloat64: return static_cast<const double*>(cols[in.arg])[i];
    case OpCode::kLoadInt32: return static_cast<const int32_t*>(cols[in.arg])[i];
    case OpCode::kLoadInt64: {
      const int64_t v = static_cast<const int64_t*>(cols[in.arg])[i];
      return v == INT64_MIN ? CUDART_NAN : static_cast<double>(v);  // the missing value
    }
    case OpCode::kLoadBool: return static_cast<const uint8_t*>(cols[in.arg])[i];
    case OpCode::kConst: return in.value;
    case OpCode::kToFloat64: return a;
    case OpCode::kNeg: return -a;
    case OpCode::kAbs: return fabs(a);
    case OpCode::kSqrt: return f32 ? sqrtf(static_cast<float>(a)) : sqrt(a);
    case OpCode::kLog: return f32 ? logf(static_cast<float>(a)) : log(a);
    case OpCode::kAdd: return f32 ? Float(static_cast<float>(a) + static_cast<float>(b)) : a + b;
    case OpCode::kSub: return f32 ? Float(static_cast<float>(a) - static_cast<float>(b)) : a - b;
    case OpCode::kMul:
      return f32 ? Float(__fmul_rn(static_cast<float>(a), static_cast<float>(b))) : __dmul_rn(a, b);
    case OpCode::kDiv: return f32 ? Float(static_cast<float>(a) / static_cast<float>(b)) : a / b;
    case OpCode::kClip: {
      const double hi = r[in.src2];
      double m = a < b ? b : a;
      m = m > hi ? hi : m;
      return (b != b || hi != hi) ? b + hi : m;
    }
    case OpCode::kIsNan: return a != a ? 1.0 : 0.0;
    case OpCode::kLt: return a < b ? 1.0 : 0.0;
    case OpCode::kLe: return a <= b ? 1.0 : 0.0;
    case OpCode::kGt: return a > b ? 1.0 : 0.0;
    case OpCode::kGe: return a >= b ? 1.0 : 0.0;
    case OpCode::kEq: return a == b ? 1.0 : 0.0;
    case OpCode::kNe: return a != b ? 1.0 : 0.0;
    case OpCode::kCodeEq:
      return static_cast<const int32_t*>(cols[in.arg])[i] == static_cast<int32_t>(in.value) ? 1.0 : 0.0;
    case OpCode::kCodeNe:
      return static_cast<const int32_t*>(cols[in.arg])[i] != static_cast<int32_t>(in.value) ? 1.0 : 0.0;
    case OpCode::kAnd: return (a != 0 && b != 0) ? 1.0 : 0.0;
    case OpCode::kOr: return (a != 0 || b != 0) ? 1.0 : 0.0;
    case OpCode::kNot: return a != 0 ? 0.0 : 1.0;
  }
  return 0;
}

__global__ void InterpretKernel(const Instruction* __restrict__ code, int count,
                                const void* const* __restrict__ cols, size_t n, void* out,
                                ValueType result) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    double r[expr::kMaxRegisters];
    for (int k = 0; k < count; ++k) r[code[k].dst] = Apply(code[k], r, cols, i);
    switch (result) {
      case ValueType::kBool: static_cast<uint8_t*>(out)[i] = r[0] != 0 ? 1 : 0; break;
      case ValueType::kFloat32: static_cast<float*>(out)[i] = static_cast<float>(r[0]); break;
      case ValueType::kFloat64: static_cast<double*>(out)[i] = r[0]; break;
    }
  }
}

size_t Bytes(ValueType t) { return t == ValueType::kBool ? 1 : t == ValueType::kFloat32 ? 4 : 8; }

}  // namespace

Status EvaluateExpressionCuda(const Instruction* code, size_t count, int registers,
                              const void* const* inputs, const size_t* input_bytes,
                              size_t columns, size_t rows, void* out, ValueType result) {
  (void)registers;  // the kernel's register file is sized for kMaxRegisters
  const size_t chunk = std::min(rows, kChunkRows);
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_code,
                           DeviceBuffer::Allocate(std::max<size_t>(count, 1) * sizeof(Instruction)));
  std::vector<DeviceBuffer> d_cols;
  std::vector<const void*> col_ptrs(std::max<size_t>(columns, 1), nullptr);
  for (size_t c = 0; c < columns; ++c) {
    COUPLER_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(chunk * input_bytes[c]));
    col_ptrs[c] = buffer.as<const void>();
    d_cols.push_back(std::move(buffer));
  }
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_col_ptrs,
                           DeviceBuffer::Allocate(col_ptrs.size() * sizeof(const void*)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(chunk * Bytes(result)));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_code.as<Instruction>(), code,
                                               count * sizeof(Instruction),
                                               cudaMemcpyHostToDevice, stream.get()));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_col_ptrs.as<const void*>(), col_ptrs.data(),
                                               col_ptrs.size() * sizeof(const void*),
                                               cudaMemcpyHostToDevice, stream.get()));
  for (size_t start = 0; start < rows; start += chunk) {
    const size_t n = std::min(chunk, rows - start);
    for (size_t c = 0; c < columns; ++c) {
      COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
          d_cols[c].as<uint8_t>(), static_cast<const uint8_t*>(inputs[c]) + start * input_bytes[c],
          n * input_bytes[c], cudaMemcpyHostToDevice, stream.get()));
    }
    const size_t wanted = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
    const int blocks = static_cast<int>(std::min<size_t>(wanted, static_cast<size_t>(max_blocks)));
    InterpretKernel<<<blocks, kThreadsPerBlock, 0, stream.get()>>>(
        d_code.as<const Instruction>(), static_cast<int>(count),
        d_col_ptrs.as<const void* const>(), n, d_out.as<void>(), result);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<uint8_t*>(out) + start * Bytes(result),
                                                 d_out.as<const void>(), n * Bytes(result),
                                                 cudaMemcpyDeviceToHost, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  }
  return Status::Ok();
}

}  // namespace coupler::kernels
