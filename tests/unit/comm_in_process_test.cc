// The in-process Communicator: ranks as threads over the shared rendezvous. Checks every
// collective's values against a reference, fp16/bf16 rounding, and that a missing rank ends
// the group with DeadlineExceeded naming it instead of hanging.
#include "train/comm/in_process_communicator.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/precision/half.h"
#include "tests/comm_test_values.h"

namespace coupler::comm {
namespace {

using testing::Load;
using testing::Store;
using testing::Value;


// Runs fn(comm) on one thread per rank and returns each rank's Status.
std::vector<Status> RunRanks(InProcessGroup& group, int ranks_to_run,
                             const std::function<Status(Communicator&)>& fn) {
  std::vector<Status> results(static_cast<size_t>(ranks_to_run));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks_to_run; ++r) {
    threads.emplace_back([&, r] { results[static_cast<size_t>(r)] = fn(group.communicator(r)); });
  }
  for (auto& t : threads) t.join();
  return results;
}


constexpr ElementType kAllTypes[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                  ElementType::kInt32,   ElementType::kInt64,   ElementType::kFloat64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin};

TEST(CommInProcessTest, AllReduceMatchesReferenceForEveryTypeAndOp) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 37;
  for (ElementType type : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(ElementTypeName(type)) + " " + std::string(ReduceOpName(op)) +
                     (in_place ? " in place" : ""));
        InProcessGroup group(kRanks);
        const size_t bytes = kCount * ElementSize(type);
        std::vector<std::vector<unsigned char>> send(kRanks, std::vector<unsigned char>(bytes));
        std::vector<std::vector<unsigned char>> recv(kRanks, std::vector<unsigned char>(bytes));
        for (int r = 0; r < kRanks; ++r) {
          for (size_t i = 0; i < kCount; ++i) Store(type, Value(r, i), send[r].data(), i);
        }
        auto results = RunRanks(group, kRanks, [&](Communicator& c) {
          const auto r = static_cast<size_t>(c.rank());
          void* out = in_place ? send[r].data() : recv[r].data();
          return c.AllReduce(send[r].data(), out, kCount, type, op);
        });
        for (int r = 0; r < kRanks; ++r) {
          ASSERT_TRUE(results[r].ok()) << results[r].ToString();
          const void* out = in_place ? send[r].data() : recv[r].data();
          for (size_t i = 0; i < kCount; ++i) {
            double want = Value(0, i);
            for (int q = 1; q < kRanks; ++q) {
              const double v = Value(q, i);
              want = op == ReduceOp::kSum ? want + v : op == ReduceOp::kMax ? std::max(want, v)
                                                                            : std::min(want, v);
            }
            ASSERT_EQ(Load(type, out, i), want) << "rank " << r << " element " << i;
          }
        }
      }
    }
  }
}

TEST(CommInProcessTest, HalfSumsAccumulateInFloat32AndRoundOnce) {
  // 1 + 2^-11 + 2^-11: rounding after each add (ties to even) would stay at 1.0; summing in
  // float32 and rounding once gives 1 + 2^-10, the next fp16 value.
  InProcessGroup group(3);
  std::vector<uint16_t> values = {precision::FloatToHalfBits(1.0f),
                                  precision::FloatToHalfBits(0x1p-11f),
                                  precision::FloatToHalfBits(0x1p-11f)};
  std::vector<uint16_t> out(3);
  auto results = RunRanks(group, 3, [&](Communicator& c) {
    const auto r = static_cast<size_t>(c.rank());
    return c.AllReduce(&values[r], &out[r], 1, ElementType::kFloat16, ReduceOp::kSum);
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[r].ok()) << results[r].ToString();
    EXPECT_EQ(out[r], 0x3C01) << "rank " << r;
  }
  // bf16 rounds 1 + 1/3 (float sum) to nearest even once.
  std::vector<uint16_t> bf(3, precision::FloatToBf16Bits(1.0f / 3.0f + 1e-3f));
  auto bf_results = RunRanks(group, 3, [&](Communicator& c) {
    return c.AllReduce(&bf[c.rank()], &bf[c.rank()], 1, ElementType::kBFloat16, ReduceOp::kSum);
  });
  const float x = precision::Bf16BitsToFloat(precision::FloatToBf16Bits(1.0f / 3.0f + 1e-3f));
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(bf_results[r].ok());
    EXPECT_EQ(bf[r], precision::FloatToBf16Bits(x + x + x));
  }
}

TEST(CommInProcessTest, BroadcastCopiesRootBufferToEveryRank) {
  constexpr int kRanks = 4;
  InProcessGroup group(kRanks);
  std::vector<std::vector<int64_t>> bufs(kRanks, std::vector<int64_t>(5));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < 5; ++i) bufs[r][i] = r * 100 + static_cast<int64_t>(i);
  }
  auto results = RunRanks(group, kRanks, [&](Communicator& c) {
    return c.Broadcast(bufs[c.rank()].data(), 5, ElementType::kInt64, /*root=*/2);
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(results[r].ok()) << results[r].ToString();
    EXPECT_EQ(bufs[r], (std::vector<int64_t>{200, 201, 202, 203, 204})) << "rank " << r;
  }
  int x = 0;
  EXPECT_EQ(group.communicator(0).Broadcast(&x, 1, ElementType::kInt32, 4).code(),
            StatusCode::kInvalidArgument);
}

TEST(CommInProcessTest, BarrierReleasesNoRankBeforeAllArrive) {
  constexpr int kRanks = 4;
  InProcessGroup group(kRanks);
  std::atomic<int> arrived{0};
  std::atomic<int> early{0};
  auto results = RunRanks(group, kRanks, [&](Communicator& c) {
    // Stagger arrivals so a barrier that did not wait would be caught.
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * c.rank()));
    arrived.fetch_add(1);
    Status s = c.Barrier();
    if (arrived.load() != kRanks) early.fetch_add(1);
    return s;
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(early.load(), 0);
}

TEST(CommInProcessTest, MissingRankGivesDeadlineExceededNamingIt) {
  InProcessGroup group(3, std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  float value = 1.0f;
  // Rank 2 never calls.
  auto results = RunRanks(group, 2, [&](Communicator& c) {
    float out = 0;
    return c.AllReduce(&value, &out, 1, ElementType::kFloat32, ReduceOp::kSum);
  });
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
    EXPECT_NE(s.message().find("AllReduce"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("rank 2 did not arrive"), std::string::npos) << s.message();
  }
  // The group is finished: the late rank and any later call fail fast instead of hanging.
  const Status late = group.communicator(2).Barrier();
  EXPECT_EQ(late.code(), StatusCode::kAborted) << late.ToString();
  EXPECT_NE(late.message().find("rank 2 did not arrive"), std::string::npos) << late.message();
}

TEST(CommInProcessTest, MismatchedCollectivesAreInvalidArgument) {
  InProcessGroup group(2);
  auto results = RunRanks(group, 2, [&](Communicator& c) {
    int32_t v[2] = {1, 2};
    return c.AllReduce(v, v, c.rank() == 0 ? 2 : 1, ElementType::kInt32, ReduceOp::kSum);
  });
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("mismatch"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace coupler::comm
