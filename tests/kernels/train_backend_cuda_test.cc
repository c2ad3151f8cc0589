// The trainer's CUDA backend against its CPU backend: a few optimizer steps of the same MLP on
// the same batches must leave the same fp32 master weights (relative 1e-4), and the device
// memory budget must refuse what does not fit. Skipped without a CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/device.h"
#include "train/memory/memory_budget.h"
#include "train/backend/train_backend.h"
#include "train/model/mlp.h"
#include "train/model/optimizer.h"

namespace coupler::train {
namespace {

constexpr size_t kRows = 64;

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Batch MakeBatch(size_t features, size_t classes, uint64_t seed) {
  Batch b;
  b.x.resize(kRows * features);
  b.y.resize(kRows);
  uint64_t state = seed;
  for (float& v : b.x) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(state >> 40) * 0x1p-24f * 2.0f - 1.0f;
  }
  for (size_t r = 0; r < kRows; ++r) b.y[r] = static_cast<int32_t>((r * 7 + seed) % classes);
  return b;
}

// Trains `steps` steps on `backend` and returns the masters; fails the test on any error.
std::vector<float> Train(TrainBackend& backend, Optimizer kind, int steps) {
  const std::vector<size_t> layers = {16, 64, 32, 5};
  std::vector<float> out;
  memory::MemoryBudget budget(0, &backend.store());
  auto mlp = Mlp::Create(layers, ElementType::kFloat32, budget, backend, 3);
  EXPECT_TRUE(mlp.ok()) << mlp.status().ToString();
  if (!mlp.ok()) return out;
  OptimizerSettings settings;
  settings.kind = kind;
  settings.weight_decay = 1e-4f;
  auto opt = ParameterOptimizer::Create(settings, mlp->num_params(), budget, backend);
  EXPECT_TRUE(opt.ok()) << opt.status().ToString();
  EXPECT_TRUE(mlp->ReserveActivations(kRows).ok());
  auto x = budget.Allocate(kRows * layers[0] * sizeof(float), memory::MemoryKind::kData, "x");
  auto y = budget.Allocate(kRows * sizeof(int32_t), memory::MemoryKind::kData, "y");
  EXPECT_TRUE(x.ok() && y.ok());
  if (!opt.ok() || !x.ok() || !y.ok()) return out;
  for (int step = 0; step < steps; ++step) {
    const Batch batch = MakeBatch(layers[0], layers.back(), static_cast<uint64_t>(step) + 1);
    EXPECT_TRUE(backend.CopyFromHost(x->data(), batch.x.data(), batch.x.size() * 4).ok());
    EXPECT_TRUE(backend.CopyFromHost(y->data(), batch.y.data(), batch.y.size() * 4).ok());
    EXPECT_TRUE(mlp->ZeroGrads().ok());
    auto loss = mlp->ForwardBackward(x->as<float>(), y->as<int32_t>(), kRows, 1.0f / kRows);
    EXPECT_TRUE(loss.ok()) << loss.status().ToString();
    bool finite = false;
    EXPECT_TRUE(backend.kernels().all_finite(mlp->grads(), mlp->num_params(), &finite).ok() &&
                finite);
    EXPECT_TRUE(opt->Step(mlp->params(), mlp->grads(), 0.01f).ok());
  }
  out.resize(mlp->num_params());
  EXPECT_TRUE(mlp->ParamsToHost(out.data()).ok());
  return out;
}

double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0;
  double den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST(TrainBackendCudaTest, FewStepsMatchTheCpuBackend) {
  if (!kernels::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  auto cuda = TrainBackend::CreateCuda(0, size_t{256} << 20);
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  TrainBackend cpu;
  for (Optimizer kind : {Optimizer::kAdamW, Optimizer::kSgd}) {
    const std::vector<float> on_cpu = Train(cpu, kind, 5);
    const std::vector<float> on_gpu = Train(**cuda, kind, 5);
    ASSERT_EQ(on_cpu.size(), on_gpu.size());
    ASSERT_FALSE(on_cpu.empty());
    EXPECT_LT(RelativeDifference(on_gpu, on_cpu), 1e-4) << OptimizerName(kind);
  }
}

TEST(TrainBackendCudaTest, TheDevicePoolBacksTheBudgetAndRunsOut) {
  if (!kernels::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  auto cuda = TrainBackend::CreateCuda(0, size_t{1} << 20);
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  memory::MemoryBudget budget(0, &(*cuda)->store());
  auto fits = budget.Allocate(size_t{512} << 10, memory::MemoryKind::kMaster, "masters");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  std::vector<float> back(16, 1.0f);
  ASSERT_TRUE((*cuda)->CopyToHost(back.data(), fits->data(), back.size() * 4).ok());
  for (float v : back) EXPECT_EQ(v, 0.0f) << "device buffers start zeroed";
  auto too_big = budget.Allocate(size_t{768} << 10, memory::MemoryKind::kActivation, "acts");
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("on cuda:0"), std::string::npos)
      << too_big.status().message();
}

}  // namespace
}  // namespace coupler::train
