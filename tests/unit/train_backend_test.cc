// The trainer's math through a TrainBackend and its kernel table on the CPU: the reducer's
// bucket math over the table gives the host path's exact bits, the model's buffers are reached
// through explicit copies, unscaling and the finiteness verdict come from one call, and a run
// records its device.
#include "kernels/cpu/onednn_gemm.h"
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "train/comm/gradient_reducer.h"
#include "train/comm/in_process_communicator.h"
#include "train/memory/memory_budget.h"
#include "tests/unit/train_test_util.h"
#include "train/backend/backend_bucket_math.h"
#include "train/backend/train_backend.h"
#include "train/model/mlp.h"
#include "train/model/optimizer.h"

namespace coupler::train {
namespace {

// Two ranks reduce the same two tensors (apart in memory, so the bucket is staged) with the
// default host math and with the backend's math; the results must be bit-identical.
std::vector<std::vector<float>> ReduceTwoRanks(ElementType wire, bool backend_math) {
  comm::InProcessGroup group(2);
  std::vector<std::vector<float>> a(2), b(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    a[r].resize(37);
    b[r].resize(91);
    for (size_t i = 0; i < a[r].size(); ++i) a[r][i] = 0.1f * static_cast<float>(i) + r;
    for (size_t i = 0; i < b[r].size(); ++i) b[r][i] = -0.37f * static_cast<float>(i) / (r + 1);
    threads.emplace_back([&, r] {
      TrainBackend backend;
      memory::MemoryBudget budget;
      BackendBucketMath math(backend, budget);
      comm::GradientReducerOptions options;
      options.bucket_bytes = 64 * 4;  // several buckets, one spanning both tensors
      options.wire_type = wire;
      if (backend_math) options.math = &math;
      comm::GradientReducer reducer(group.communicator(r), options);
      const comm::GradientTensor tensors[] = {{a[r].data(), a[r].size()},
                                              {b[r].data(), b[r].size()}};
      auto done = reducer.AllReduceMean(tensors);
      ASSERT_TRUE(done.ok()) << done.status().ToString();
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::vector<float>> out;
  for (int r = 0; r < 2; ++r) {
    out.push_back(a[r]);
    out.back().insert(out.back().end(), b[r].begin(), b[r].end());
  }
  return out;
}

TEST(TrainBackendTest, BackendBucketMathMatchesTheHostPathBitForBit) {
  for (auto wire : {ElementType::kFloat32, ElementType::kBFloat16,
                    ElementType::kFloat16}) {
    const auto host = ReduceTwoRanks(wire, false);
    const auto hooked = ReduceTwoRanks(wire, true);
    ASSERT_EQ(host.size(), hooked.size());
    for (size_t r = 0; r < host.size(); ++r) {
      ASSERT_EQ(host[r].size(), hooked[r].size());
      for (size_t i = 0; i < host[r].size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(host[r][i]), std::bit_cast<uint32_t>(hooked[r][i]))
            << "wire " << static_cast<int>(wire) << " rank " << r << " element " << i;
      }
    }
    // The mean of the two ranks' first elements: (0 + 1) / 2.
    EXPECT_NEAR(hooked[0][1], (0.1f + 1.1f) / 2.0f, 1e-2f);
  }
}

TEST(TrainBackendTest, ModelParamsTravelThroughExplicitCopies) {
  TrainBackend backend;
  memory::MemoryBudget budget(0, &backend.store());
  auto mlp = Mlp::Create({4, 6, 3}, ElementType::kBFloat16, budget, backend, 11, 2);
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  std::vector<float> host(mlp->num_params());
  ASSERT_TRUE(mlp->ParamsToHost(host.data()).ok());
  // Weights drawn, biases zero (layer 0: 24 weights then 6 biases).
  EXPECT_NE(host[0], 0.0f);
  for (size_t i = 24; i < 30; ++i) EXPECT_EQ(host[i], 0.0f) << i;
  // The same seed draws the same weights.
  memory::MemoryBudget other_budget;
  auto again = Mlp::Create({4, 6, 3}, ElementType::kBFloat16, other_budget, backend, 11, 2);
  ASSERT_TRUE(again.ok());
  std::vector<float> host_again(again->num_params());
  ASSERT_TRUE(again->ParamsToHost(host_again.data()).ok());
  EXPECT_EQ(host, host_again);

  for (float& v : host) v *= 2.0f;
  ASSERT_TRUE(mlp->ParamsFromHost(host.data()).ok());
  EXPECT_EQ(mlp->params()[0], host[0]);
}

TEST(TrainBackendTest, UnscaleAndFinitenessInOneCall) {
  TrainBackend backend;
  std::vector<float> g = {2.0f, -4.0f, 8.0f};
  const kernels::TrainKernelTable& k = backend.kernels();
  bool finite = false;
  ASSERT_TRUE(k.unscale_all_finite(g.data(), g.size(), 0.5f, &finite).ok());
  EXPECT_TRUE(finite);
  EXPECT_EQ(g, (std::vector<float>{1.0f, -2.0f, 4.0f}));
  bool untouched = false;
  ASSERT_TRUE(k.all_finite(g.data(), g.size(), &untouched).ok());
  EXPECT_EQ(g, (std::vector<float>{1.0f, -2.0f, 4.0f}));
  g[1] = std::numeric_limits<float>::infinity();
  bool not_finite = true;
  ASSERT_TRUE(k.unscale_all_finite(g.data(), g.size(), 1.0f, &not_finite).ok());
  EXPECT_FALSE(not_finite);
}

TEST(TrainBackendTest, OptimizerStateRoundTripsThroughTheHost) {
  TrainBackend backend;
  memory::MemoryBudget budget;
  OptimizerSettings settings;
  auto opt = ParameterOptimizer::Create(settings, 5, budget, backend);
  ASSERT_TRUE(opt.ok()) << opt.status().ToString();
  EXPECT_EQ(opt->state_size(), 10u);  // AdamW: two moments
  std::vector<float> state(10);
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<float>(i) * 0.25f;
  ASSERT_TRUE(opt->StateFromHost(state).ok());
  auto back = opt->StateToHost();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, state);
  EXPECT_EQ(opt->StateFromHost(std::vector<float>(3)).code(), StatusCode::kInvalidArgument);
}

TEST(TrainBackendTest, TheReportAndMetricsRecordTheDeviceAndCommunicator) {
  TrainerOptions options;
  options.config = testing::SmallConfig();
  options.config.epochs = 1;
  options.config.micro_batch = 16;
  options.config.accumulate = 2;
  options.progress_interval_s = 1e9;
  const Split split = SplitDataset(testing::TeacherDataset(256, 8, 3, 5), 0.25, 7);
  comm::InProcessGroup group(1);
  auto report = RunTraining(options, split, TrainCommunicators::Host(group.communicator(0)));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->device, "cpu");
  EXPECT_EQ(report->communicator, "mpi");
  // fp32 on the CPU: oneDNN's matmul, named with the instruction set it chose here.
  EXPECT_EQ(report->gemm, kernels::OneDnnBuilt() ? "onednn " + std::string(kernels::OneDnnIsa())
                                                 : "openblas");
}

}  // namespace
}  // namespace coupler::train
