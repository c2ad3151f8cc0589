// The rules `coupler autoscale` follows (client/scale_policy.h), on made-up looks at a pool.
#include "client/scale_policy.h"

#include <gtest/gtest.h>

namespace coupler::client {
namespace {

wire::WorkerStatus Worker(const std::string& id, const std::string& state = "alive",
                          uint32_t running = 0, uint32_t prefetched = 0) {
  wire::WorkerStatus w;
  w.id = id;
  w.state = *pool::ParseWorkerState(state);
  w.slots = 1;
  w.running = running;
  w.prefetched = prefetched;
  return w;
}

PoolObservation Look(uint32_t recommended, std::vector<wire::WorkerStatus> workers, int64_t now_ms) {
  PoolObservation o;
  o.recommended_workers = recommended;
  o.workers = std::move(workers);
  o.now_ms = now_ms;
  return o;
}

ScaleConfig Config(uint32_t min, uint32_t max) {
  ScaleConfig c;
  c.min_workers = min;
  c.max_workers = max;
  c.cooldown_up_ms = 0;
  c.cooldown_down_ms = 10'000;
  c.launch_timeout_ms = 60'000;
  c.backoff_ms = 5'000;
  c.max_backoff_ms = 40'000;
  return c;
}

TEST(ScalePolicyTest, GrowsToTheRecommendationAndCountsLaunchesUntilTheyRegister) {
  ScalePolicy p(Config(1, 6));
  ScaleDecision d = p.Decide(Look(4, {Worker("w0", "alive", 1)}, 0));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.up->n, 3u);
  EXPECT_EQ(d.up->target, 4u);
  EXPECT_EQ(d.pool, 1u);
  EXPECT_TRUE(d.drains.empty());

  // Nobody has registered yet: the three asked for count, so nothing more is asked for.
  d = p.Decide(Look(4, {Worker("w0", "alive", 1)}, 1'000));
  EXPECT_FALSE(d.up);
  EXPECT_EQ(d.pending, 3u);
  EXPECT_EQ(d.pool, 4u);

  // Two registered: one still pending, the pool is still 4.
  d = p.Decide(Look(4, {Worker("w0", "alive", 1), Worker("a1"), Worker("a2")}, 2'000));
  EXPECT_FALSE(d.up);
  EXPECT_EQ(d.pending, 1u);
  EXPECT_EQ(d.pool, 4u);

  // The advice rises: only the difference is asked for.
  d = p.Decide(Look(5, {Worker("w0", "alive", 1), Worker("a1"), Worker("a2"), Worker("a3")}, 3'000));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.pending, 0u);
  EXPECT_EQ(d.up->n, 1u);
  EXPECT_EQ(d.up->target, 5u);
}

TEST(ScalePolicyTest, StartsTheMinimumOnAnEmptyPool) {
  ScalePolicy p(Config(2, 6));
  ScaleDecision d = p.Decide(Look(0, {}, 0));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.up->n, 2u);
  EXPECT_EQ(d.wanted, 2u);
}

TEST(ScalePolicyTest, CapsAtMaxCountingPendingAndLeavingWorkers) {
  ScalePolicy p(Config(1, 3));
  ScaleDecision d = p.Decide(Look(10, {Worker("w0", "alive", 1)}, 0));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.up->n, 2u) << "1 alive + 2 = max";
  EXPECT_EQ(d.wanted, 3u);

  // Pending launches fill the room: at max, nothing more.
  d = p.Decide(Look(10, {Worker("w0", "alive", 1)}, 1'000));
  EXPECT_FALSE(d.up);
  EXPECT_EQ(d.pool, 3u);

  // A draining worker still runs, so it takes room too: 2 alive + 1 draining = 3.
  ScalePolicy q(Config(1, 3));
  d = q.Decide(Look(10, {Worker("w0", "alive", 1), Worker("w1", "alive", 1),
                         Worker("w2", "draining", 1)}, 0));
  EXPECT_FALSE(d.up);
  EXPECT_EQ(d.leaving, 1u);
  EXPECT_NE(d.hold.find("at max 3"), std::string::npos) << d.hold;
  // Silent workers may be running too.
  ScalePolicy r(Config(1, 3));
  d = r.Decide(Look(10, {Worker("w0", "alive", 1), Worker("w1", "silent", 1)}, 0));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.up->n, 1u);
}

TEST(ScalePolicyTest, DoesNotFlapInsideTheCoolDown) {
  ScalePolicy p(Config(1, 4));
  std::vector<wire::WorkerStatus> pool = {Worker("a"), Worker("b"), Worker("c")};
  // The advice drops below the pool: nothing drained for the cool-down's 10 s.
  ScaleDecision d = p.Decide(Look(1, pool, 0));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_NE(d.hold.find("cooling down"), std::string::npos) << d.hold;
  d = p.Decide(Look(1, pool, 9'999));
  EXPECT_TRUE(d.drains.empty());
  // It comes back up in the lull: the window starts again when it drops.
  d = p.Decide(Look(3, pool, 10'500));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_FALSE(d.up);
  d = p.Decide(Look(1, pool, 11'000));
  EXPECT_TRUE(d.drains.empty());
  d = p.Decide(Look(1, pool, 20'999));
  EXPECT_TRUE(d.drains.empty());
  d = p.Decide(Look(1, pool, 21'000));
  EXPECT_EQ(d.drains.size(), 2u);
}

TEST(ScalePolicyTest, ScaleUpThenQuietQueueWaitsForLaunchesAndTheCoolDown) {
  ScalePolicy p(Config(1, 4));
  ScaleDecision d = p.Decide(Look(3, {Worker("w0", "alive", 1)}, 0));
  ASSERT_TRUE(d.up);
  // The job ends before the workers come: nothing is drained while they are pending.
  d = p.Decide(Look(0, {Worker("w0")}, 20'000));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_NE(d.hold.find("waiting for 2 launched"), std::string::npos) << d.hold;
  // They register, idle: the cool-down counts from when the advice was first seen below.
  const std::vector<wire::WorkerStatus> three = {Worker("w0"), Worker("x1"), Worker("x2")};
  d = p.Decide(Look(0, three, 25'000));
  EXPECT_TRUE(d.drains.empty());
  d = p.Decide(Look(0, three, 30'000));
  ASSERT_EQ(d.drains.size(), 2u);
  EXPECT_EQ(d.drains[0].worker_id, "x2");
  EXPECT_EQ(d.drains[0].target, 2u);
  EXPECT_EQ(d.drains[1].worker_id, "x1");
  EXPECT_EQ(d.drains[1].target, 1u);
}

TEST(ScalePolicyTest, DrainsOnlyIdleWorkersAndNeverBelowMin) {
  ScalePolicy p(Config(2, 6));
  const std::vector<wire::WorkerStatus> pool = {
      Worker("a"), Worker("b", "alive", 1), Worker("c", "alive", 0, 2), Worker("d"),
      Worker("e", "silent")};
  ScaleDecision d = p.Decide(Look(0, pool, 0));
  EXPECT_TRUE(d.drains.empty());
  d = p.Decide(Look(0, pool, 10'000));
  // 5 counted, min 2: 3 too many, but only a and d are idle (b runs, c holds prefetched
  // tasks, e is not heard from).
  ASSERT_EQ(d.drains.size(), 2u);
  EXPECT_EQ(d.drains[0].worker_id, "d");
  EXPECT_EQ(d.drains[1].worker_id, "a");
  EXPECT_EQ(d.leaving, 0u);

  // Next look: a and d draining, b still busy: 3 counted, one over, none idle.
  d = p.Decide(Look(0, {Worker("a", "draining"), Worker("b", "alive", 1),
                        Worker("c", "alive", 0, 2), Worker("d", "drained"), Worker("e", "silent")},
                    11'000));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(d.leaving, 1u);
  EXPECT_EQ(d.pool, 3u);
  EXPECT_NE(d.hold.find("none idle"), std::string::npos) << d.hold;

  // c ran its tasks: it goes, and the pool stops at min.
  d = p.Decide(Look(0, {Worker("a", "drained"), Worker("b", "alive", 1), Worker("c"),
                        Worker("d", "drained"), Worker("e", "silent")},
                    12'000));
  ASSERT_EQ(d.drains.size(), 1u);
  EXPECT_EQ(d.drains[0].worker_id, "c");
  EXPECT_EQ(d.drains[0].target, 2u);
  d = p.Decide(Look(0, {Worker("b", "alive", 1), Worker("c", "drained"), Worker("e", "silent")},
                    13'000));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(d.pool, 2u);
  EXPECT_TRUE(d.hold.empty()) << d.hold;
}

TEST(ScalePolicyTest, NeverDrainsAWorkerTwice) {
  ScalePolicy p(Config(0, 6));
  ScaleDecision d = p.Decide(Look(0, {Worker("a")}, 0));
  d = p.Decide(Look(0, {Worker("a")}, 10'000));
  ASSERT_EQ(d.drains.size(), 1u);
  // The coordinator has not caught up yet (the --down command is slow): still alive, idle.
  d = p.Decide(Look(0, {Worker("a")}, 11'000));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(d.leaving, 1u);
  // Draining, as reported by the coordinator: still not asked again.
  d = p.Decide(Look(0, {Worker("a", "draining")}, 12'000));
  EXPECT_TRUE(d.drains.empty());
  // A worker someone else drains is not drained again either.
  ScalePolicy q(Config(0, 6));
  d = q.Decide(Look(0, {Worker("b", "draining")}, 0));
  d = q.Decide(Look(0, {Worker("b", "draining")}, 20'000));
  EXPECT_TRUE(d.drains.empty());
}

TEST(ScalePolicyTest, AFailedDrainCountsTheWorkerAgainAfterACoolDown) {
  ScalePolicy p(Config(0, 6));
  (void)p.Decide(Look(0, {Worker("a")}, 0));
  ScaleDecision d = p.Decide(Look(0, {Worker("a")}, 10'000));
  ASSERT_EQ(d.drains.size(), 1u);
  p.DrainFailed("a", 10'000);
  d = p.Decide(Look(0, {Worker("a")}, 11'000));
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(d.pool, 1u);
  d = p.Decide(Look(0, {Worker("a")}, 20'000));
  EXPECT_EQ(d.drains.size(), 1u);
}

TEST(ScalePolicyTest, LaunchesThatNeverRegisterTimeOutAndBackOff) {
  ScalePolicy p(Config(1, 4));
  const std::vector<wire::WorkerStatus> one = {Worker("w0", "alive", 1)};
  ScaleDecision d = p.Decide(Look(4, one, 0));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.up->n, 3u);
  d = p.Decide(Look(4, one, 59'999));
  EXPECT_FALSE(d.up);
  EXPECT_EQ(d.pending, 3u);
  // The launch timeout: reported, counted as a failure, and the next try waits the back-off.
  d = p.Decide(Look(4, one, 60'000));
  EXPECT_EQ(d.launches_timed_out, 3u);
  EXPECT_EQ(d.pending, 0u);
  EXPECT_FALSE(d.up);
  EXPECT_NE(d.hold.find("backing off after 1 failed launch"), std::string::npos) << d.hold;
  d = p.Decide(Look(4, one, 64'999));
  EXPECT_FALSE(d.up);
  d = p.Decide(Look(4, one, 65'000));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.launches_timed_out, 0u);
}

TEST(ScalePolicyTest, AFailingUpCommandBacksOffExponentiallyUntilALaunchWorks) {
  ScalePolicy p(Config(1, 4));
  const std::vector<wire::WorkerStatus> one = {Worker("w0", "alive", 1)};
  int64_t now = 0;
  int tries = 0;
  // Poll every 100 ms for 100 s with an --up command that always fails.
  for (; now <= 100'000; now += 100) {
    ScaleDecision d = p.Decide(Look(4, one, now));
    if (!d.up) continue;
    ++tries;
    p.LaunchFailed(now);
  }
  // Tries at 0, 5, 15, 35, 75 s (back-off 5, 10, 20, 40 s): five in 1,000 looks.
  EXPECT_EQ(tries, 5);
  EXPECT_EQ(p.consecutive_failures(), 5u);
  EXPECT_EQ(p.BackoffMs(5), 40'000) << "capped at max_backoff_ms";

  // A launch that works: a new worker registers and the failures are forgotten.
  now = 115'000;
  ScaleDecision d = p.Decide(Look(4, one, now));
  ASSERT_TRUE(d.up);
  d = p.Decide(Look(4, {one[0], Worker("n1")}, now + 1'000));
  EXPECT_EQ(p.consecutive_failures(), 0u);
  EXPECT_EQ(d.pending, 2u);
}

TEST(ScalePolicyTest, TheUpCoolDownPacesAGrowingQueue) {
  ScaleConfig c = Config(1, 10);
  c.cooldown_up_ms = 5'000;
  ScalePolicy p(c);
  ScaleDecision d = p.Decide(Look(2, {Worker("w0", "alive", 1)}, 0));
  ASSERT_TRUE(d.up);
  d = p.Decide(Look(6, {Worker("w0", "alive", 1), Worker("a")}, 1'000));
  EXPECT_FALSE(d.up);
  EXPECT_NE(d.hold.find("cooling down after the last scale-up"), std::string::npos) << d.hold;
  d = p.Decide(Look(6, {Worker("w0", "alive", 1), Worker("a")}, 5'000));
  ASSERT_TRUE(d.up);
  EXPECT_EQ(d.up->n, 4u);
}

TEST(ScalePolicyTest, TheFirstLookTakesThePoolAsItIs) {
  // Workers already there when it starts answer no launch of its own; new ones after do.
  ScalePolicy p(Config(1, 4));
  ScaleDecision d = p.Decide(Look(2, {Worker("w0", "alive", 1), Worker("w1", "alive", 1)}, 0));
  EXPECT_FALSE(d.up);
  EXPECT_EQ(d.pool, 2u);
  EXPECT_TRUE(d.hold.empty());
}

TEST(ScalePolicyTest, ADrainThatNeverBeginsIsForgotten) {
  ScalePolicy p(Config(0, 4));
  (void)p.Decide(Look(0, {Worker("a")}, 0));
  ScaleDecision d = p.Decide(Look(0, {Worker("a")}, 10'000));
  ASSERT_EQ(d.drains.size(), 1u);
  d = p.Decide(Look(0, {Worker("a")}, 69'999));
  EXPECT_TRUE(d.drains_forgotten.empty());
  d = p.Decide(Look(0, {Worker("a")}, 70'000));
  ASSERT_EQ(d.drains_forgotten.size(), 1u);
  EXPECT_EQ(d.drains_forgotten[0], "a");
  EXPECT_EQ(d.pool, 1u) << "it counts again";
  EXPECT_TRUE(d.drains.empty()) << "and is not asked again at once";
}

}  // namespace
}  // namespace coupler::client
