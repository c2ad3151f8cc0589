// GradientReducer over the in-process group: fused buckets give the same means as one
// all-reduce per tensor, cost the number of collectives the bucket size implies, and 16-bit
// wire types stay close to the fp32 result.
#include "train/comm/gradient_reducer.h"

#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "train/comm/counting_communicator.h"
#include "train/comm/in_process_communicator.h"

namespace coupler::comm {
namespace {

using Grads = std::vector<std::vector<float>>;  // one rank's tensors

Grads MakeGrads(int rank, const std::vector<size_t>& sizes) {
  Grads g;
  for (size_t t = 0; t < sizes.size(); ++t) {
    std::vector<float> v(sizes[t]);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = std::sin(static_cast<float>(t * 131 + i * 7 + static_cast<size_t>(rank) * 17)) * 0.5f +
             0.01f * static_cast<float>(rank);
    }
    g.push_back(std::move(v));
  }
  return g;
}

std::vector<GradientTensor> Views(Grads& g) {
  std::vector<GradientTensor> views;
  for (auto& v : g) views.push_back({v.data(), v.size()});
  return views;
}

struct RankOutcome {
  Grads grads;
  size_t collectives = 0;
  int counted = 0;
  Status status;
};

// Every rank reduces its own gradients with `options`; returns each rank's outcome. With
// `divide_first`, each rank divides its gradients by the ranks and the reducer only sums them
// (AllReduceSum), as the trainer does at a power-of-two group size.
std::vector<RankOutcome> RunReducer(int ranks, const std::vector<size_t>& sizes,
                                    GradientReducerOptions options, bool divide_first = false) {
  InProcessGroup group(ranks);
  std::vector<RankOutcome> out(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      RankOutcome& o = out[static_cast<size_t>(r)];
      o.grads = MakeGrads(r, sizes);
      CountingCommunicator comm(group.communicator(r));
      GradientReducer reducer(comm, options);
      if (divide_first) {
        for (auto& v : o.grads) {
          for (float& x : v) x /= static_cast<float>(ranks);
        }
      }
      auto views = Views(o.grads);
      Result<size_t> n = divide_first ? reducer.AllReduceSum(views) : reducer.AllReduceMean(views);
      o.status = n.status();
      if (n.ok()) o.collectives = *n;
      o.counted = static_cast<int>(comm.allreduces());
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// The plain loop the reducer replaces: one all-reduce per tensor, then divide by the ranks.
Grads PerTensorReference(int ranks, const std::vector<size_t>& sizes) {
  InProcessGroup group(ranks);
  std::vector<Grads> all(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Grads& g = all[static_cast<size_t>(r)];
      g = MakeGrads(r, sizes);
      Communicator& c = group.communicator(r);
      for (auto& v : g) {
        COUPLER_CHECK_OK(c.AllReduce(v.data(), v.data(), v.size(), ElementType::kFloat32, ReduceOp::kSum));
        for (float& x : v) x /= static_cast<float>(ranks);
      }
    });
  }
  for (auto& t : threads) t.join();
  return all[0];
}

TEST(CommGradientReducerTest, TwoHundredSmallTensorsCostOneCollectiveAndMatchPerTensorLoop) {
  const std::vector<size_t> sizes(200, 100);
  const Grads want = PerTensorReference(3, sizes);
  auto outcomes = RunReducer(3, sizes, {});
  for (const RankOutcome& o : outcomes) {
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_EQ(o.collectives, 1u);
    EXPECT_EQ(o.counted, 1);
    EXPECT_EQ(o.grads, want);  // same sums in the same order: bit-identical
  }
}

// What lets the trainer fold the mean into the loss gradient's scale: at a power-of-two group
// size, summing gradients divided first gives the bits of dividing the sum, in contiguous
// buckets and staged ones alike, with one collective per bucket and no other pass.
TEST(CommGradientReducerTest, SumOfDividedGradientsIsTheMeanBitForBitAtPowerOfTwoRanks) {
  const std::vector<size_t> sizes = {1000, 1, 4096, 37};
  for (int ranks : {1, 2, 4}) {
    const Grads want = PerTensorReference(ranks, sizes);
    GradientReducerOptions small_buckets;
    small_buckets.bucket_bytes = 4000;  // some buckets span tensors: staged
    for (const GradientReducerOptions& options : {GradientReducerOptions{}, small_buckets}) {
      auto outcomes = RunReducer(ranks, sizes, options, /*divide_first=*/true);
      for (const RankOutcome& o : outcomes) {
        ASSERT_TRUE(o.status.ok()) << o.status.ToString();
        EXPECT_EQ(o.counted, static_cast<int>(o.collectives));
        EXPECT_EQ(o.grads, want) << ranks << " ranks, " << options.bucket_bytes << "-byte buckets";
      }
    }
  }
}

TEST(CommGradientReducerTest, BucketSizeForcingNBucketsCostsNCollectives) {
  // 200 x 100 floats = 80,000 bytes; 16,000-byte buckets make exactly 5.
  const std::vector<size_t> sizes(200, 100);
  GradientReducerOptions options;
  options.bucket_bytes = 16'000;
  const Grads want = PerTensorReference(2, sizes);
  for (const RankOutcome& o : RunReducer(2, sizes, options)) {
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_EQ(o.collectives, 5u);
    EXPECT_EQ(o.counted, 5);
    EXPECT_EQ(o.grads, want);
  }
}

TEST(CommGradientReducerTest, UnevenAndEmptyTensorsSpanBucketsCorrectly) {
  // Tensors larger than a bucket, empty ones, and boundaries that fall mid-tensor.
  const std::vector<size_t> sizes = {0, 1, 1000, 0, 3, 257, 64, 0, 4096, 5};
  GradientReducerOptions options;
  options.bucket_bytes = 400;  // 100 floats
  size_t total = 0;
  for (size_t s : sizes) total += s;
  const Grads want = PerTensorReference(4, sizes);
  for (const RankOutcome& o : RunReducer(4, sizes, options)) {
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_EQ(o.collectives, (total + 99) / 100);
    EXPECT_EQ(o.grads, want);
  }
}

void ExpectCloseToFp32(ElementType wire, double tolerance) {
  const std::vector<size_t> sizes = {300, 7, 1024, 50};
  GradientReducerOptions options;
  options.wire_type = wire;
  options.bucket_bytes = 1000;  // 500 16-bit values: several buckets
  const Grads want = PerTensorReference(4, sizes);
  for (const RankOutcome& o : RunReducer(4, sizes, options)) {
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_EQ(o.collectives, (300u + 7 + 1024 + 50 + 499) / 500);
    for (size_t t = 0; t < sizes.size(); ++t) {
      for (size_t i = 0; i < sizes[t]; ++i) {
        const double w = want[t][i];
        const double got = o.grads[t][i];
        // Relative to the gradients' scale (inputs are ~0.5): a mean that cancels to near zero
        // keeps the absolute error of its 0.5-sized terms.
        ASSERT_LE(std::fabs(got - w), tolerance * std::max(std::fabs(w), 0.5))
            << "tensor " << t << " element " << i << ": " << got << " vs " << w;
      }
    }
  }
}

TEST(CommGradientReducerTest, Bf16WireStaysWithinOnePercent) {
  ExpectCloseToFp32(ElementType::kBFloat16, 1e-2);
}

TEST(CommGradientReducerTest, Fp16WireStaysWithinOnePercent) {
  ExpectCloseToFp32(ElementType::kFloat16, 1e-2);
}

TEST(CommGradientReducerTest, RejectsBucketThatHoldsNoElement) {
  InProcessGroup group(1);
  GradientReducerOptions options;
  options.bucket_bytes = 3;
  GradientReducer reducer(group.communicator(0), options);
  std::vector<float> v(4, 1.0f);
  std::vector<GradientTensor> views = {{v.data(), v.size()}};
  EXPECT_EQ(reducer.AllReduceMean(views).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coupler::comm
