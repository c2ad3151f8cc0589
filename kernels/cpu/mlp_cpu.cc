// CPU loops of the MLP's elementwise kernels: bias + ReLU, its backward, bias gradients, softmax
// cross-entropy and the fp32 <-> 16-bit copies. Each loop is instantiated per storage format
// (storage_access.h) so the conversions inline and simple loops vectorize.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/storage_access.h"
#include "kernels/train_kernels.h"
#include "runtime/check.h"

namespace coupler::kernels {
namespace {

constexpr size_t kBlock = 16;  // see kernels/cpu/column_loop.h

// Zero where v < 0, so NaN passes through: an overflow in the forward pass reaches the loss
// (and the loss scaler) instead of hiding as zero activations. Blended with a bit mask because
// a float ternary lets GCC sink the bias add into a branch it will not if-convert under
// -ftrapping-math, leaving the fp32 loop scalar (see runtime/precision/half.h).
inline float Relu(float v) {
  const uint32_t negative = 0u - static_cast<uint32_t>(v < 0.0f);
  return precision::Float32FromBits(precision::Float32Bits(v) & ~negative);
}

template <typename Format>
void AddBiasRow(typename Format::Bits* __restrict row, const float* __restrict bias, size_t cols,
                bool relu) {
  size_t j = 0;
  if (relu) {
    for (; j + kBlock <= cols; j += kBlock) {
      for (size_t i = j; i < j + kBlock; ++i) {
        row[i] = Format::Store(Relu(Format::Load(row[i]) + bias[i]));
      }
    }
    for (; j < cols; ++j) row[j] = Format::Store(Relu(Format::Load(row[j]) + bias[j]));
  } else {
    for (; j + kBlock <= cols; j += kBlock) {
      for (size_t i = j; i < j + kBlock; ++i) {
        row[i] = Format::Store(Format::Load(row[i]) + bias[i]);
      }
    }
    for (; j < cols; ++j) row[j] = Format::Store(Format::Load(row[j]) + bias[j]);
  }
}

// y and dy may be stored differently (9 instantiations). A masked gradient becomes +0, which is
// all zero bits in every format; a kept one keeps its bits untouched rather than taking a
// widen-and-round trip.
template <typename YFormat, typename DyFormat>
void ReluBackwardLoop(const typename YFormat::Bits* __restrict y,
                      typename DyFormat::Bits* __restrict dy, size_t n) {
  using DyBits = typename DyFormat::Bits;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = i; j < i + kBlock; ++j) {
      dy[j] = YFormat::Load(y[j]) <= 0.0f ? DyBits{0} : dy[j];
    }
  }
  for (; i < n; ++i) dy[i] = YFormat::Load(y[i]) <= 0.0f ? DyBits{0} : dy[i];
}

template <typename Format>
void BiasGradRow(const typename Format::Bits* __restrict row, size_t cols,
                 float* __restrict bias_grad) {
  size_t j = 0;
  for (; j + kBlock <= cols; j += kBlock) {
    for (size_t i = j; i < j + kBlock; ++i) bias_grad[i] += Format::Load(row[i]);
  }
  for (; j < cols; ++j) bias_grad[j] += Format::Load(row[j]);
}

// One row of softmax cross-entropy. `shifted` is scratch of cols floats. Returns the row's loss.
template <typename InFormat, typename OutFormat>
double SoftmaxRow(const typename InFormat::Bits* logits, size_t cols, int32_t label,
                  float grad_scale, typename OutFormat::Bits* dlogits, float* shifted,
                  size_t* correct) {
  // Subtracting the row max keeps every exp() in (0, 1], so even logits of 1e4 cannot
  // overflow; the first maximal column is the argmax.
  float row_max = InFormat::Load(logits[0]);
  size_t argmax = 0;
  for (size_t j = 1; j < cols; ++j) {
    const float v = InFormat::Load(logits[j]);
    if (v > row_max) {
      row_max = v;
      argmax = j;
    }
  }
  if (correct != nullptr && argmax == static_cast<size_t>(label)) ++*correct;

  double sum = 0.0;
  for (size_t j = 0; j < cols; ++j) {
    shifted[j] = std::exp(InFormat::Load(logits[j]) - row_max);
    sum += shifted[j];
  }
  // -log softmax[label] = log(sum) - (x[label] - max), without forming the tiny probability.
  const double loss =
      std::log(sum) - (static_cast<double>(InFormat::Load(logits[label])) - row_max);
  if (dlogits != nullptr) {
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (size_t j = 0; j < cols; ++j) {
      dlogits[j] = OutFormat::Store(shifted[j] * inv_sum * grad_scale);
    }
    // Computed apart from the loop so it stays branch-free; p - 1 in fp32 as the others.
    dlogits[label] = OutFormat::Store((shifted[label] * inv_sum - 1.0f) * grad_scale);
  }
  return loss;
}

}  // namespace

Status AddBiasActivate(MutMatrix y, const float* bias, bool relu) {
  if (y.rows == 0 || y.cols == 0) return Status::Ok();
  COUPLER_CHECK(y.data != nullptr && bias != nullptr) << "AddBiasActivate: null input";
  // Rows narrower than a block (a classifier's logits) would be all remainder, one element at a
  // time: take kBlock rows at once as one run against the bias repeated kBlock times. Each
  // element still gets its own bias by the same add.
  float repeated[kBlock * kBlock];
  const bool narrow = y.cols < kBlock;
  if (narrow) {
    for (size_t t = 0; t < kBlock * y.cols; ++t) repeated[t] = bias[t % y.cols];
  }
  WithFormat(y.storage, [&](auto format) {
    using Format = decltype(format);
    auto* data = Elements<Format>(y.data);
    size_t r = 0;
    if (narrow) {
      for (; r + kBlock <= y.rows; r += kBlock) {
        AddBiasRow<Format>(data + r * y.cols, repeated, kBlock * y.cols, relu);
      }
    }
    for (; r < y.rows; ++r) AddBiasRow<Format>(data + r * y.cols, bias, y.cols, relu);
  });
  return Status::Ok();
}

Status ReluBackward(ConstMatrix y, MutMatrix dy) {
  COUPLER_CHECK(y.rows == dy.rows && y.cols == dy.cols)
      << "ReluBackward: y is " << y.rows << "x" << y.cols << ", dy " << dy.rows << "x" << dy.cols;
  const size_t n = y.rows * y.cols;
  if (n == 0) return Status::Ok();
  COUPLER_CHECK(y.data != nullptr && dy.data != nullptr) << "ReluBackward: null input";
  WithFormat(y.storage, [&](auto y_format) {
    using YFormat = decltype(y_format);
    WithFormat(dy.storage, [&](auto dy_format) {
      using DyFormat = decltype(dy_format);
      ReluBackwardLoop<YFormat, DyFormat>(Elements<YFormat>(y.data), Elements<DyFormat>(dy.data),
                                          n);
    });
  });
  return Status::Ok();
}

Status BiasGradAccumulate(ConstMatrix dy, float* bias_grad) {
  if (dy.rows == 0 || dy.cols == 0) return Status::Ok();
  COUPLER_CHECK(dy.data != nullptr && bias_grad != nullptr) << "BiasGradAccumulate: null input";
  WithFormat(dy.storage, [&](auto format) {
    using Format = decltype(format);
    const auto* data = Elements<Format>(dy.data);
    for (size_t r = 0; r < dy.rows; ++r) {
      BiasGradRow<Format>(data + r * dy.cols, dy.cols, bias_grad);
    }
  });
  return Status::Ok();
}

Status SoftmaxCrossEntropy(ConstMatrix logits, const int32_t* labels, float grad_scale,
                           MutMatrix* dlogits, double* loss_sum, size_t* correct) {
  if (dlogits != nullptr) {
    COUPLER_CHECK(dlogits->rows == logits.rows && dlogits->cols == logits.cols)
        << "SoftmaxCrossEntropy: dlogits is " << dlogits->rows << "x" << dlogits->cols
        << ", logits " << logits.rows << "x" << logits.cols;
  }
  if (logits.rows == 0) {
    if (loss_sum != nullptr) *loss_sum = 0.0;
    return Status::Ok();
  }
  COUPLER_CHECK(logits.cols > 0 && logits.data != nullptr && labels != nullptr)
      << "SoftmaxCrossEntropy: empty rows or null input";
  const size_t cols = logits.cols;
  for (size_t r = 0; r < logits.rows; ++r) {
    COUPLER_CHECK(labels[r] >= 0 && static_cast<size_t>(labels[r]) < cols)
        << "SoftmaxCrossEntropy: label " << labels[r] << " of row " << r << " outside [0, " << cols
        << ")";
  }
  thread_local std::vector<float> shifted;
  if (shifted.size() < cols) shifted.resize(cols);

  double loss = 0.0;
  WithFormat(logits.storage, [&](auto in_format) {
    using InFormat = decltype(in_format);
    const auto* in = Elements<InFormat>(logits.data);
    // Evaluation passes no dlogits; any format serves, since nothing is written.
    const ElementType out_storage = dlogits != nullptr ? dlogits->storage : ElementType::kFloat32;
    WithFormat(out_storage, [&](auto out_format) {
      using OutFormat = decltype(out_format);
      typename OutFormat::Bits* out = nullptr;
      if (dlogits != nullptr) {
        COUPLER_CHECK(dlogits->data != nullptr) << "SoftmaxCrossEntropy: null dlogits data";
        out = Elements<OutFormat>(dlogits->data);
      }
      for (size_t r = 0; r < logits.rows; ++r) {
        loss += SoftmaxRow<InFormat, OutFormat>(in + r * cols, cols, labels[r], grad_scale,
                                                out == nullptr ? nullptr : out + r * cols,
                                                shifted.data(), correct);
      }
    });
  });
  if (loss_sum != nullptr) *loss_sum = loss;
  return Status::Ok();
}

Status RoundCopy(const float* src, void* dst, ElementType storage, size_t n) {
  if (n == 0) return Status::Ok();
  COUPLER_CHECK(src != nullptr && dst != nullptr) << "RoundCopy: null buffer";
  WithFormat(storage, [&](auto format) {
    using Format = decltype(format);
    RoundRow<Format>(src, Elements<Format>(dst), n);
  });
  return Status::Ok();
}

Status WidenCopy(const void* src, ElementType storage, float* dst, size_t n) {
  if (n == 0) return Status::Ok();
  COUPLER_CHECK(src != nullptr && dst != nullptr) << "WidenCopy: null buffer";
  WithFormat(storage, [&](auto format) {
    using Format = decltype(format);
    WidenRow<Format>(Elements<Format>(src), dst, n);
  });
  return Status::Ok();
}

Status Scale(float* x, size_t n, float s) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = i; j < i + kBlock; ++j) x[j] *= s;
  }
  for (; i < n; ++i) x[i] *= s;
  return Status::Ok();
}

// Tests the exponent bits (all ones for inf and NaN) rather than std::isfinite, so the loop is
// plain integer work that vectorizes and is unaffected by -ffinite-math-only.
Status AllFinite(const float* x, size_t n, bool* finite) {
  uint32_t non_finite = 0;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = i; j < i + kBlock; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &x[j], sizeof(bits));
      non_finite |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
    }
    // Checking once per block keeps the inner loop branch-free yet stops early on overflow.
    if (non_finite != 0) {
      *finite = false;
      return Status::Ok();
    }
  }
  for (; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    non_finite |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
  }
  *finite = non_finite == 0;
  return Status::Ok();
}

Status SumSquares(const float* x, size_t n, double* sum) {
  // Four running sums in a fixed order: the same bits every time, and a chain the CPU can
  // overlap (one sum would wait on each add).
  double part[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (size_t j = 0; j < 4; ++j) {
      const double v = x[i + j];
      part[j] += v * v;
    }
  }
  for (; i < n; ++i) part[0] += static_cast<double>(x[i]) * x[i];
  *sum = (part[0] + part[1]) + (part[2] + part[3]);
  return Status::Ok();
}

Status UnscaleAllFinite(float* x, size_t n, float s, bool* finite) {
  COUPLER_RETURN_IF_ERROR(Scale(x, n, s));
  return AllFinite(x, n, finite);
}

}  // namespace coupler::kernels
