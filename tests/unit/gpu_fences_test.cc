// GPU health in placement, decided: a new XID that points at the GPU or a new uncorrectable ECC
// error fences the GPU (kept until an admin clears it, across a worker's restart, a board's
// replacement being the exception); an admin fences and clears; hot and throttled GPUs rank
// behind cool ones. Pure: samples in, records and verdicts out.
#include "coordinator/gpu_fences.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint32_t kAll = wire::kGpuTemperature | wire::kGpuPower | wire::kGpuPowerLimit |
                          wire::kGpuThrottle | wire::kGpuEcc | wire::kGpuXid;

wire::GpuUsage Sample(uint32_t index, uint64_t xids = 0, uint32_t last_xid = 0, uint64_t ecc = 0) {
  wire::GpuUsage g{index, 50, 1, 2};
  g.readings = kAll;
  g.temperature_c = 60;
  g.xid_errors = xids;
  g.last_xid = last_xid;
  g.ecc_uncorrected = ecc;
  return g;
}

std::vector<wire::GpuInfo> Boards(std::vector<std::string> uuids) {
  std::vector<wire::GpuInfo> out;
  for (size_t i = 0; i < uuids.size(); ++i) {
    out.push_back({static_cast<uint32_t>(i), "H100", 80ull << 30, 80ull << 30, uuids[i]});
  }
  return out;
}

// Observes and applies, as PoolControl does after writing the records.
GpuFences::Observed See(GpuFences& f, const std::vector<wire::GpuInfo>& gpus,
                        std::vector<wire::GpuUsage> samples) {
  GpuFences::Observed seen = f.Observe("w-1", gpus, samples, 1700000000000);
  f.Apply(seen.changed);
  return seen;
}

TEST(GpuFencesTest, ANewXidOrEccErrorFencesItsGpuUntilAnAdminClearsIt) {
  GpuFences f;
  const auto gpus = Boards({"GPU-a", "GPU-b"});
  EXPECT_THAT(See(f, gpus, {Sample(0), Sample(1)}).changed, IsEmpty()) << "nothing to keep";
  GpuFences::Observed xid = See(f, gpus, {Sample(0), Sample(1, 1, 79)});
  EXPECT_THAT(xid.fenced, ElementsAre("worker w-1 GPU 1 (GPU-b): XID 79 (GPU has fallen off the bus)"));
  EXPECT_THAT(f.Fenced("w-1"), ElementsAre(1u));
  // The same count again is not new; the fence stays, with its first reason.
  EXPECT_THAT(See(f, gpus, {Sample(0), Sample(1, 1, 79)}).fenced, IsEmpty());
  GpuFences::Observed ecc = See(f, gpus, {Sample(0, 0, 0, 2), Sample(1, 1, 79)});
  EXPECT_THAT(ecc.fenced, ElementsAre(HasSubstr("GPU 0 (GPU-a): 2 uncorrectable ECC errors (volatile count 2)")));
  EXPECT_THAT(f.Fenced("w-1"), ElementsAre(0u, 1u));

  std::vector<wire::WorkerStatus> listed(1);
  listed[0].id = "w-1";
  f.Mark(listed);
  ASSERT_EQ(listed[0].gpu_fences.size(), 2u);
  EXPECT_EQ(listed[0].gpu_fences[1].reason, "XID 79 (GPU has fallen off the bus)");
  EXPECT_EQ(listed[0].gpu_fences[1].since_ms, 1700000000000u);

  Result<std::vector<GpuFences::Record>> cleared = f.Decide({"w-1", {}, "", false}, "ops", gpus, 5);
  ASSERT_TRUE(cleared.ok()) << cleared.status().ToString();
  f.Apply(*cleared);
  EXPECT_THAT(f.Fenced("w-1"), IsEmpty());
  // The counts as they were are the new baseline: only an error after the clear fences again.
  EXPECT_THAT(See(f, gpus, {Sample(0, 0, 0, 2), Sample(1, 1, 79)}).fenced, IsEmpty());
  EXPECT_THAT(See(f, gpus, {Sample(0, 0, 0, 2), Sample(1, 3, 48)}).fenced,
              ElementsAre(HasSubstr("2 XID errors pointing at the GPU, the newest XID 48 "
                                    "(double-bit ECC error)")));
}

TEST(GpuFencesTest, AWorkerRestartIsNoNewErrorAndAReplacedBoardStartsUnfenced) {
  GpuFences f;
  See(f, Boards({"GPU-a"}), {Sample(0, 2, 79)});
  ASSERT_THAT(f.Fenced("w-1"), ElementsAre(0u));
  // Restarted: its XID count starts again at 0, then 1 is new again.
  EXPECT_THAT(See(f, Boards({"GPU-a"}), {Sample(0, 0)}).fenced, IsEmpty());
  EXPECT_THAT(f.Fenced("w-1"), ElementsAre(0u)) << "a restart does not clear a fence";
  // The board was swapped: another UUID under ordinal 0 is another GPU.
  EXPECT_THAT(See(f, Boards({"GPU-z"}), {Sample(0, 0)}).fenced, IsEmpty());
  EXPECT_THAT(f.Fenced("w-1"), IsEmpty());
  // Samples of a worker of version 15 (no readings) neither fence nor clear.
  See(f, Boards({"GPU-z"}), {Sample(0, 1, 79)});
  wire::GpuUsage old{0, 50, 1, 2};
  EXPECT_THAT(See(f, Boards({"GPU-z"}), {old}).changed, IsEmpty());
  EXPECT_THAT(f.Fenced("w-1"), ElementsAre(0u));
}

TEST(GpuFencesTest, AnAdminFencesWithAReasonAndClearingNothingOrAnUnknownGpuIsAnError) {
  GpuFences f;
  const auto gpus = Boards({"GPU-a", "GPU-b"});
  EXPECT_EQ(f.Decide({"w-1", {1}, "", true}, "ops", gpus, 1).status().code(), StatusCode::kInvalidArgument);
  Result<std::vector<GpuFences::Record>> bad = f.Decide({"w-1", {4}, "fan", true}, "ops", gpus, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "worker w-1 has no GPU 4 (its GPUs: 0, 1)");
  EXPECT_EQ(f.Decide({"w-1", {}, "", false}, "ops", gpus, 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.Decide({"w-9", {}, "x", true}, "ops", {}, 1).status().code(), StatusCode::kNotFound);
  Result<std::vector<GpuFences::Record>> fenced = f.Decide({"w-1", {1}, "fan noise", true}, "ops", gpus, 7);
  ASSERT_TRUE(fenced.ok()) << fenced.status().ToString();
  f.Apply(*fenced);
  EXPECT_THAT(f.Fenced("w-1"), ElementsAre(1u));
  // Not connected now: the GPUs recorded are the ones known.
  EXPECT_TRUE(f.Decide({"w-1", {1}, "", false}, "ops", {}, 8).ok());
}

// A peer reporting samples of GPUs it never registered (or a reason that would forge log lines)
// changes nothing: the state cannot be grown through it.
TEST(GpuFencesTest, SamplesOfUnregisteredGpusAndMultiLineReasonsAreRefused) {
  GpuFences f;
  std::vector<wire::GpuUsage> junk;
  for (uint32_t i = 2; i < 1000; ++i) junk.push_back(Sample(i, 1, 79, 1));
  GpuFences::Observed seen = See(f, Boards({"GPU-a", "GPU-b"}), junk);
  EXPECT_THAT(seen.changed, IsEmpty());
  EXPECT_THAT(f.Fenced("w-1"), IsEmpty());
  const auto gpus = Boards({"GPU-a"});
  EXPECT_EQ(f.Decide({"w-1", {0}, "fan\n[2026-12-06T00:00:00Z error] forged", true}, "ops", gpus, 1)
                .status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.Decide({"w-1", {0}, std::string(513, 'x'), true}, "ops", gpus, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(f.Decide({"w-1", {0}, std::string(512, 'x'), true}, "ops", gpus, 1).ok());
}

TEST(GpuFencesTest, HotOrPowerCappedGpusRankBehindCoolOnesAndThermalThrottlingLast) {
  wire::GpuUsage cool = Sample(0);
  wire::GpuUsage hot = Sample(1);
  hot.temperature_c = kHotCelsius;
  wire::GpuUsage capped = Sample(2);
  capped.throttle_reasons = wire::kThrottlePowerCap;
  wire::GpuUsage slowed = Sample(3);
  slowed.throttle_reasons = wire::kThrottleHwThermal;
  EXPECT_EQ(RankGpus({cool}, {}), GpuPreference::kCool);
  EXPECT_EQ(RankGpus({cool, hot}, {}), GpuPreference::kWarm);
  EXPECT_EQ(RankGpus({cool, capped}, {}), GpuPreference::kWarm);
  EXPECT_EQ(RankGpus({cool, capped, slowed}, {}), GpuPreference::kThrottled);
  // A fenced GPU takes no work: its heat does not count.
  EXPECT_EQ(RankGpus({cool, slowed}, {3}), GpuPreference::kCool);
  // No reading: nothing known against it.
  EXPECT_EQ(RankGpus({wire::GpuUsage{0, 99, 1, 2}}, {}), GpuPreference::kCool);
}

}  // namespace
}  // namespace coupler::coordinator
