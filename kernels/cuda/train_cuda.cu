// CUDA twins of the MLP's element-wise training kernels (train_kernels_cuda.h): bias + ReLU, its
// backward, bias gradients and softmax cross-entropy, over the shared element math of
// train_elementwise.h, one instantiation per storage format; block reductions for the bias
// gradient and the softmax rows. The copies and optimizer steps are in train_optimizer_cuda.cu.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <cfloat>
#include <vector>

#include "kernels/cuda/column_pass.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/train_launch.h"
#include "kernels/train_elementwise.h"
#include "kernels/train_kernels_cuda.h"

namespace coupler::kernels {
namespace {

// ---- AddBiasActivate / ReluBackward -------------------------------------------------------

template <ElementType kStorage, bool kRelu>
__global__ void AddBiasActivateKernel(Bits<kStorage>* __restrict__ y,
                                      const float* __restrict__ bias, size_t n, size_t cols) {
  using E = StorageElement<kStorage>;
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    const float v = E::Load(y[i]) + bias[i % cols];
    y[i] = E::Store(kRelu ? ReluValue(v) : v);
  }
}

// A masked gradient becomes +0 (all zero bits in every format); a kept one keeps its bits.
template <ElementType kY, ElementType kDy>
__global__ void ReluBackwardKernel(const Bits<kY>* __restrict__ y, Bits<kDy>* __restrict__ dy,
                                   size_t n) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    if (StorageElement<kY>::Load(y[i]) <= 0.0f) dy[i] = Bits<kDy>{0};
  }
}

// ---- BiasGradAccumulate -------------------------------------------------------------------

// 32 columns per tile, 8 row lanes: a warp reads 32 consecutive elements of a row (coalesced),
// the 8 lanes' partial sums meet in shared memory.
constexpr int kBiasTileCols = 32;
constexpr int kBiasRowLanes = 8;

template <ElementType kStorage>
__global__ void BiasGradKernel(const Bits<kStorage>* __restrict__ dy, size_t rows, size_t cols,
                               float* __restrict__ bias_grad) {
  __shared__ float partial[kBiasRowLanes][kBiasTileCols];
  const size_t tiles = (cols + kBiasTileCols - 1) / kBiasTileCols;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const size_t j = tile * kBiasTileCols + threadIdx.x;
    float sum = 0.0f;
    if (j < cols) {
      for (size_t r = threadIdx.y; r < rows; r += kBiasRowLanes) {
        sum += StorageElement<kStorage>::Load(dy[r * cols + j]);
      }
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
      float total = 0.0f;
      for (int lane = 0; lane < kBiasRowLanes; ++lane) total += partial[lane][threadIdx.x];
      bias_grad[j] += total;
    }
    __syncthreads();  // `partial` is reused by the next tile
  }
}

// ---- SoftmaxCrossEntropy ------------------------------------------------------------------

constexpr int kSoftmaxThreads = 256;

// One block per row (grid-stride over rows). Writes the row's loss and 1/0 for a correct argmax,
// or -1 for a label outside [0, cols).
template <ElementType kIn, ElementType kOut, bool kWriteGrad>
__global__ void SoftmaxKernel(const Bits<kIn>* __restrict__ logits,
                              const int32_t* __restrict__ labels, size_t rows, size_t cols,
                              float grad_scale, Bits<kOut>* __restrict__ dlogits,
                              double* __restrict__ row_loss, int32_t* __restrict__ row_correct) {
  using In = StorageElement<kIn>;
  __shared__ float max_value[kSoftmaxThreads];
  __shared__ size_t max_index[kSoftmaxThreads];
  __shared__ double sums[kSoftmaxThreads];
  const unsigned t = threadIdx.x;
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Bits<kIn>* row = logits + r * cols;
    // Each thread's first maximal column among its strided elements, then a tree that keeps
    // the larger value and, on ties, the smaller index: the first maximal column of the row.
    float best = -FLT_MAX;
    size_t best_index = SIZE_MAX;
    for (size_t j = t; j < cols; j += blockDim.x) {
      const float v = In::Load(row[j]);
      if (best_index == SIZE_MAX || v > best) {
        best = v;
        best_index = j;
      }
    }
    max_value[t] = best;
    max_index[t] = best_index;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) {
        const float other = max_value[t + half];
        const size_t other_index = max_index[t + half];
        const bool take = other_index != SIZE_MAX &&
                          (max_index[t] == SIZE_MAX || other > max_value[t] ||
                           (other == max_value[t] && other_index < max_index[t]));
        if (take) {
          max_value[t] = other;
          max_index[t] = other_index;
        }
      }
      __syncthreads();
    }
    const float row_max = max_value[0];
    const size_t argmax = max_index[0];

    double sum = 0.0;
    for (size_t j = t; j < cols; j += blockDim.x) sum += expf(In::Load(row[j]) - row_max);
    sums[t] = sum;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) sums[t] += sums[t + half];
      __syncthreads();
    }
    const double total = sums[0];
    const int32_t label = labels[r];
    const bool label_ok = label >= 0 && static_cast<size_t>(label) < cols;
    if (t == 0) {
      if (label_ok) {
        row_loss[r] = log(total) - (static_cast<double>(In::Load(row[label])) - row_max);
        row_correct[r] = argmax == static_cast<size_t>(label) ? 1 : 0;
      } else {
        row_loss[r] = 0.0;
        row_correct[r] = -1;
      }
    }
    if (kWriteGrad && label_ok) {
      const float inv_sum = static_cast<float>(1.0 / total);
      Bits<kOut>* out = dlogits + r * cols;
      for (size_t j = t; j < cols; j += blockDim.x) {
        const float shifted = expf(In::Load(row[j]) - row_max);
        out[j] = StorageElement<kOut>::Store(
            SoftmaxGradValue(shifted, inv_sum, j == static_cast<size_t>(label), grad_scale));
      }
    }
    __syncthreads();  // the shared arrays are reused by the next row
  }
}

}  // namespace

Status AddBiasActivateCuda(MutMatrix y, const float* bias, bool relu) {
  const size_t n = y.rows * y.cols;
  if (n == 0) return Status::Ok();
  if (y.data == nullptr || bias == nullptr) return NullPointer("AddBiasActivateCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  return DispatchStorage(y.storage, [&](auto tag) {
    constexpr ElementType kS = decltype(tag)::value;
    auto* data = static_cast<Bits<kS>*>(y.data);
    if (relu) {
      AddBiasActivateKernel<kS, true><<<blocks, kThreadsPerBlock>>>(data, bias, n, y.cols);
    } else {
      AddBiasActivateKernel<kS, false><<<blocks, kThreadsPerBlock>>>(data, bias, n, y.cols);
    }
    return CheckLaunch("AddBiasActivateKernel");
  });
}

Status ReluBackwardCuda(ConstMatrix y, MutMatrix dy) {
  if (y.rows != dy.rows || y.cols != dy.cols) {
    return InvalidArgument("ReluBackwardCuda: y is " + std::to_string(y.rows) + "x" +
                           std::to_string(y.cols) + ", dy " + std::to_string(dy.rows) + "x" +
                           std::to_string(dy.cols));
  }
  const size_t n = y.rows * y.cols;
  if (n == 0) return Status::Ok();
  if (y.data == nullptr || dy.data == nullptr) return NullPointer("ReluBackwardCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  return DispatchStorage(y.storage, [&](auto y_tag) {
    constexpr ElementType kY = decltype(y_tag)::value;
    return DispatchStorage(dy.storage, [&](auto dy_tag) {
      constexpr ElementType kDy = decltype(dy_tag)::value;
      ReluBackwardKernel<kY, kDy><<<blocks, kThreadsPerBlock>>>(
          static_cast<const Bits<kY>*>(y.data), static_cast<Bits<kDy>*>(dy.data), n);
      return CheckLaunch("ReluBackwardKernel");
    });
  });
}

Status BiasGradAccumulateCuda(ConstMatrix dy, float* bias_grad) {
  if (dy.rows == 0 || dy.cols == 0) return Status::Ok();
  if (dy.data == nullptr || bias_grad == nullptr) return NullPointer("BiasGradAccumulateCuda");
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  const size_t tiles = (dy.cols + kBiasTileCols - 1) / kBiasTileCols;
  const int blocks = static_cast<int>(std::min<size_t>(tiles, max_blocks));
  return DispatchStorage(dy.storage, [&](auto tag) {
    constexpr ElementType kS = decltype(tag)::value;
    BiasGradKernel<kS><<<blocks, dim3(kBiasTileCols, kBiasRowLanes)>>>(
        static_cast<const Bits<kS>*>(dy.data), dy.rows, dy.cols, bias_grad);
    return CheckLaunch("BiasGradKernel");
  });
}

Status SoftmaxCrossEntropyCuda(ConstMatrix logits, const int32_t* labels, float grad_scale,
                               MutMatrix* dlogits, double* loss_sum_host, size_t* correct_host) {
  if (dlogits != nullptr && (dlogits->rows != logits.rows || dlogits->cols != logits.cols)) {
    return InvalidArgument("SoftmaxCrossEntropyCuda: dlogits is " + std::to_string(dlogits->rows) +
                           "x" + std::to_string(dlogits->cols) + ", logits " +
                           std::to_string(logits.rows) + "x" + std::to_string(logits.cols));
  }
  if (loss_sum_host != nullptr) *loss_sum_host = 0.0;
  const size_t rows = logits.rows;
  if (rows == 0) return Status::Ok();
  if (logits.cols == 0) return InvalidArgument("SoftmaxCrossEntropyCuda: rows with no columns");
  if (logits.data == nullptr || labels == nullptr ||
      (dlogits != nullptr && dlogits->data == nullptr)) {
    return NullPointer("SoftmaxCrossEntropyCuda");
  }
  // Per-row results, summed on the host in row order so the loss matches the CPU twin's.
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_loss, DeviceBuffer::Allocate(rows * sizeof(double)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_correct,
                           DeviceBuffer::Allocate(rows * sizeof(int32_t)));
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  const int blocks = static_cast<int>(std::min<size_t>(rows, max_blocks));
  const ElementType out_storage = dlogits != nullptr ? dlogits->storage : ElementType::kFloat32;
  COUPLER_RETURN_IF_ERROR(DispatchStorage(logits.storage, [&](auto in_tag) {
    constexpr ElementType kIn = decltype(in_tag)::value;
    return DispatchStorage(out_storage, [&](auto out_tag) {
      constexpr ElementType kOut = decltype(out_tag)::value;
      const auto* in = static_cast<const Bits<kIn>*>(logits.data);
      if (dlogits != nullptr) {
        SoftmaxKernel<kIn, kOut, true><<<blocks, kSoftmaxThreads>>>(
            in, labels, rows, logits.cols, grad_scale, static_cast<Bits<kOut>*>(dlogits->data),
            d_loss.as<double>(), d_correct.as<int32_t>());
      } else {
        SoftmaxKernel<kIn, kOut, false><<<blocks, kSoftmaxThreads>>>(
            in, labels, rows, logits.cols, grad_scale, nullptr, d_loss.as<double>(),
            d_correct.as<int32_t>());
      }
      return CheckLaunch("SoftmaxKernel");
    });
  }));
  std::vector<double> loss(rows);
  std::vector<int32_t> correct(rows);
  COUPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(loss.data(), d_loss.as<double>(), rows * sizeof(double), cudaMemcpyDeviceToHost));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(correct.data(), d_correct.as<int32_t>(),
                                          rows * sizeof(int32_t), cudaMemcpyDeviceToHost));
  double loss_sum = 0.0;
  size_t correct_rows = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (correct[r] < 0) {
      return InvalidArgument("SoftmaxCrossEntropyCuda: label of row " + std::to_string(r) +
                             " outside [0, " + std::to_string(logits.cols) + ")");
    }
    loss_sum += loss[r];
    correct_rows += static_cast<size_t>(correct[r]);
  }
  if (loss_sum_host != nullptr) *loss_sum_host = loss_sum;
  if (correct_host != nullptr) *correct_host += correct_rows;
  return Status::Ok();
}

}  // namespace coupler::kernels
