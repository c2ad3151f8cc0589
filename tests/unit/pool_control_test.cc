// PoolControl without a coordinator: worker messages in, what to send out (an Outbox), over a
// real state store in a temporary directory and a real Scheduler. A worker is its connection:
// the route binds it, a new route makes it register again, and what it still holds stays its.
#include "coordinator/pool_control.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "coordinator/job_intake.h"
#include "runtime/wire/codec.h"
#include "tests/unit/scheduler_test_util.h"
#include "tests/unit/store_test_util.h"

namespace coupler::coordinator {
namespace {

constexpr const char* kSpec = "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 4}}\n";

class PoolControlTest : public ::testing::Test {
 protected:
  PoolControlTest()
      : scheduler_(5000),
        ledger_(store::testing::OpenOrDie(dir_.str()), {dir_.str() + "/events.jsonl", 1 << 20, 1},
                scheduler_, dir_.str()),
        pool_(scheduler_, ledger_, launches_, 5000) {
    EXPECT_TRUE(ledger_.Open(1).ok());
    scheduler_.AddJob(testing::MakeJob("j1", kSpec));
  }

  static wire::RegisterWorker Registration(const std::string& id, uint32_t slots,
                                           std::vector<wire::HeldAttempt> holding = {}) {
    wire::RegisterWorker r;
    r.worker_id = id;
    r.slots = slots;
    r.holding = std::move(holding);
    return r;
  }

  template <class T>
  static std::vector<T> Sent(const Outbox& out, const std::string& worker_id) {
    std::vector<T> found;
    for (const Outbox::WorkerMessage& m : out.workers) {
      Result<wire::Message> msg = wire::Decode(m.payload);
      EXPECT_TRUE(msg.ok());
      if (m.worker_id == worker_id && msg.ok() && std::holds_alternative<T>(*msg)) {
        found.push_back(std::get<T>(*msg));
      }
    }
    return found;
  }

  store::testing::TempDir dir_;
  Scheduler scheduler_;
  Ledger ledger_;
  LaunchRelay launches_;
  PoolControl pool_;
};

TEST_F(PoolControlTest, ARegisteredWorkerIsDealtWorkAndAnUnknownConnectionIsToldToRegister) {
  Outbox out;
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", Registration("w1", 2), 0, out));
  ASSERT_EQ(Sent<wire::Registered>(out, "w1").size(), 1u);
  pool_.Dispatch(0, out);
  const auto assigned = Sent<wire::TaskAssignment>(out, "w1");
  ASSERT_EQ(assigned.size(), 1u);
  EXPECT_EQ(assigned[0].tasks.size(), 2u);

  // A heartbeat on a connection that never registered: RegisterAgain, to that connection.
  Outbox other;
  ASSERT_TRUE(pool_.OnMessage("r9", "k1", wire::Heartbeat{}, 10, other));
  ASSERT_EQ(other.routes.size(), 1u);
  EXPECT_EQ(other.routes[0].route, "r9");
  EXPECT_TRUE(other.workers.empty());
}

// Its link was cut and made again: a new connection, the same worker process, still running
// what it was sent. Its registration keeps the attempts it reports; nothing is released.
// A job's end is one commit: its phase, the results that ended it and the counter that counts
// it (staged after the phase, the counters were a second commit for every job that finished).
TEST_F(PoolControlTest, AJobsEndIsOneCommitWithTheCounterThatCountsIt) {
  ASSERT_TRUE(
      ledger_.JobAdmitted(store::testing::MakeJob("j1"), *scheduler_.FindJob("j1"), "").ok());
  Outbox out;
  pool_.OnMessage("r1", "k1", Registration("w1", 4), 0, out);
  pool_.Dispatch(0, out);
  const auto assigned = Sent<wire::TaskAssignment>(out, "w1");
  ASSERT_EQ(assigned.size(), 1u);
  ASSERT_EQ(assigned[0].tasks.size(), 4u);
  ledger_.Tick(1, 0);  // running now, on disk
  wire::TaskResult result;
  result.worker_id = "w1";
  for (const wire::TaskSpec& t : assigned[0].tasks) {
    result.outcomes.push_back(testing::OutcomeOf(t));
    result.outcomes.back().device = "cpu";
  }
  Outbox done;
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", result, 2, done));
  ASSERT_TRUE(scheduler_.FindJob("j1")->finished());
  const uint64_t before = ledger_.store().generation();
  ledger_.Tick(3, 0);
  EXPECT_EQ(ledger_.store().generation(), before + 1);
  Result<std::map<std::string, uint64_t>> counters = ledger_.store().LoadCounters();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["jobs_finished.succeeded"], 1u);
  Result<std::optional<store::JobRecord>> row = ledger_.store().LoadJob("j1");
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, "succeeded");
}

TEST_F(PoolControlTest, AWorkerOnANewConnectionKeepsTheAttemptsItHolds) {
  Outbox out;
  pool_.OnMessage("r1", "k1", Registration("w1", 2), 0, out);
  pool_.Dispatch(0, out);
  Outbox again;
  ASSERT_TRUE(pool_.OnMessage("r2", "k1",
                              Registration("w1", 2, {{{"j1", 0, 0}, true}, {{"j1", 1, 0}, false}}),
                              100, again));
  const auto registered = Sent<wire::Registered>(again, "w1");
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_TRUE(registered[0].release.empty());
  EXPECT_EQ(scheduler_.registry().Find("w1")->inflight.size(), 2u);
  EXPECT_EQ(scheduler_.registry().Find("w1")->route, "r2");
  // The old connection is no longer the worker's.
  Outbox stale;
  pool_.OnMessage("r1", "k1", wire::Heartbeat{}, 200, stale);
  EXPECT_EQ(stale.routes.size(), 1u) << "the old connection still speaks for w1";
}

TEST_F(PoolControlTest, AnotherKeyCannotRegisterUnderATakenIdAndARevokedWorkerIsLostAtOnce) {
  Outbox out;
  pool_.OnMessage("r1", "k1", Registration("w1", 2), 0, out);
  pool_.Dispatch(0, out);
  Outbox refused;
  pool_.OnMessage("r2", "mallory", Registration("w1", 2), 10, refused);
  EXPECT_EQ(pool_.registrations_refused(), 1u);
  ASSERT_EQ(refused.routes.size(), 1u);
  EXPECT_EQ(refused.routes[0].route, "r2");
  EXPECT_EQ(scheduler_.registry().Find("w1")->route, "r1");

  pool_.Revoked("r1", "k1", 20);
  EXPECT_TRUE(scheduler_.registry().Find("w1")->gone());
  EXPECT_EQ(scheduler_.FindJob("j1")->ready_count(), 4u) << "its tasks did not go back";
}

TEST_F(PoolControlTest, TheStopsDrainTellsEachServingWorkerOnceAndEndsWhenNoneIsLeft) {
  Outbox out;
  pool_.OnMessage("r1", "k1", Registration("w1", 1), 0, out);
  Outbox first;
  EXPECT_FALSE(pool_.DrainForStop(first));
  EXPECT_EQ(Sent<wire::DrainWorker>(first, "w1").size(), 1u);
  Outbox second;
  EXPECT_FALSE(pool_.DrainForStop(second));
  EXPECT_TRUE(second.workers.empty()) << "told to drain twice";
  wire::Heartbeat last;
  last.draining = true;
  pool_.OnMessage("r1", "k1", last, 50, second);
  EXPECT_TRUE(pool_.DrainForStop(second));
}

// An error the outbox sends on `route`, decoded; nullopt when it sends none there.
std::optional<wire::Error> ErrorOn(const Outbox& out, const std::string& route) {
  for (const auto& m : out.routes) {
    if (m.route != route) continue;
    Result<wire::Message> msg = wire::Decode(m.payload);
    if (msg.ok() && std::holds_alternative<wire::Error>(*msg)) return std::get<wire::Error>(*msg);
  }
  return std::nullopt;
}

TEST_F(PoolControlTest, ABannedWorkerIsLostAtOnceToldWhyAndRefusedUntilUnbanned) {
  Outbox out;
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", Registration("w1", 2), 0, out));
  pool_.Dispatch(0, out);
  ASSERT_EQ(Sent<wire::TaskAssignment>(out, "w1").size(), 1u);

  Outbox banned;
  EXPECT_EQ(pool_.Ban({"w1", "", true}, "ops", 10, banned).code(), StatusCode::kInvalidArgument)
      << "a ban without a reason";
  ASSERT_TRUE(pool_.Ban({"w1", "bad DIMM", true}, "ops", 10, banned).ok());
  const std::optional<wire::Error> told = ErrorOn(banned, "r1");
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(told->code, static_cast<uint16_t>(StatusCode::kPermissionDenied));
  EXPECT_NE(told->message.find("bad DIMM"), std::string::npos) << told->message;
  std::vector<wire::WorkerStatus> workers = pool_.Workers(10);
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].state, pool::WorkerState::kBanned);
  EXPECT_NE(workers[0].ban_reason.find("by 'ops'"), std::string::npos) << workers[0].ban_reason;
  // Its two tasks are queued again, for another worker.
  Outbox other;
  ASSERT_TRUE(pool_.OnMessage("r2", "k2", Registration("w2", 2), 20, other));
  pool_.Dispatch(20, other);
  ASSERT_EQ(Sent<wire::TaskAssignment>(other, "w2").size(), 1u);
  EXPECT_EQ(Sent<wire::TaskAssignment>(other, "w2")[0].tasks.size(), 2u);

  // Registering again, on any connection, is refused; an id never registered can be banned too.
  Outbox again;
  ASSERT_TRUE(pool_.OnMessage("r3", "k1", Registration("w1", 2), 30, again));
  ASSERT_TRUE(ErrorOn(again, "r3").has_value());
  EXPECT_TRUE(Sent<wire::Registered>(again, "w1").empty());
  ASSERT_TRUE(pool_.Ban({"w9", "never again", true}, "ops", 30, again).ok());
  EXPECT_EQ(pool_.Workers(30).size(), 3u);

  // The bans are in the state: a new PoolControl over it restores them.
  PoolControl restarted(scheduler_, ledger_, launches_, 5000);
  ASSERT_TRUE(restarted.RestoreBans().ok());
  Outbox after_restart;
  ASSERT_TRUE(restarted.OnMessage("r4", "k1", Registration("w1", 2), 40, after_restart));
  EXPECT_TRUE(ErrorOn(after_restart, "r4").has_value());

  ASSERT_TRUE(pool_.Ban({"w1", "", false}, "ops", 50, again).ok());
  EXPECT_EQ(pool_.Ban({"w1", "", false}, "ops", 50, again).code(), StatusCode::kNotFound);
  Outbox back;
  ASSERT_TRUE(pool_.OnMessage("r5", "k1", Registration("w1", 2), 60, back));
  EXPECT_EQ(Sent<wire::Registered>(back, "w1").size(), 1u);
}

// An operator's withdrawal is no fault of the tasks': a worker whose key is revoked, or that is
// banned, while running tasks of a node with no retries gives them back ready under new
// numbers, and the job goes on (a worker death would fail it). A restart replays the
// withdrawal from the state as uncharged too.
TEST_F(PoolControlTest, TasksOfARevokedOrBannedWorkerRunAgainUnchargedEvenWithoutRetries) {
  scheduler_.FindJob("j1")->Cancel();
  scheduler_.AddJob(testing::MakeJob(
      "r0", "name: r\nnodes:\n  - {id: a, op: noop, params: {tasks: 2}, retries: 0}\n"));
  JobState& job = *scheduler_.FindJob("r0");
  auto running = [](const std::string& id) {
    wire::Heartbeat b;
    b.sender_id = id;
    b.running = {{"r0", 0, 0}, {"r0", 1, 0}};
    b.running_tasks = 2;
    return b;
  };
  Outbox out;
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", Registration("w1", 2), 0, out));
  pool_.Dispatch(0, out);
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", running("w1"), 10, out));
  pool_.Revoked("r1", "k1", 20);
  EXPECT_FALSE(job.finished()) << "a withdrawal failed a job without retries";
  EXPECT_EQ(job.ready_count(), 2u);
  EXPECT_EQ(job.attempts(0), 1u);
  EXPECT_EQ(job.attempt_base(0), 1u) << "not charged";

  // Sent again (attempt 1), to a worker then banned mid-run: still not charged.
  Outbox again;
  ASSERT_TRUE(pool_.OnMessage("r2", "k2", Registration("w2", 2), 30, again));
  pool_.Dispatch(30, again);
  wire::Heartbeat beat = running("w2");
  beat.running = {{"r0", 0, 1}, {"r0", 1, 1}};
  ASSERT_TRUE(pool_.OnMessage("r2", "k2", beat, 40, again));
  ASSERT_TRUE(pool_.Ban({"w2", "bad DIMM", true}, "ops", 50, again).ok());
  EXPECT_FALSE(job.finished());
  EXPECT_EQ(job.attempts(0), 2u);
  EXPECT_EQ(job.attempt_base(0), 2u);

  // The state holds the attempts as withdrawn; a restart replays them so.
  ASSERT_TRUE(ledger_.store().Flush().ok());
  auto attempts = ledger_.store().LoadAttempts("r0");
  ASSERT_TRUE(attempts.ok()) << attempts.status().ToString();
  ASSERT_EQ(attempts->size(), 4u);
  for (const store::AttemptRecord& a : *attempts) EXPECT_EQ(a.outcome, store::kWithdrawnOutcome);
}

// GPU health in placement, with the real store: a worker's XID fences that GPU (told to the
// worker in the coordinator's heartbeat, listed with why), a worker whose GPUs are all fenced
// gets no GPU task while a healthy GPU worker does, a cooler worker is dealt work first, the
// fence outlives a restart of the coordinator (restored from the state) and an admin clears it.
TEST_F(PoolControlTest, AnXidFencesItsGpuAcrossRestartsUntilAnAdminClearsIt) {
  scheduler_.FindJob("j1")->Cancel();  // only the GPU tasks are dealt
  scheduler_.AddJob(testing::MakeJob(
      "g1", "name: g\nnodes:\n  - {id: t, op: noop, params: {tasks: 2}, resources: {gpus: 1}}\n"));
  auto gpu_worker = [](const std::string& id) {
    wire::RegisterWorker r = Registration(id, 2);
    r.gpus = {{0, "H100", 80ull << 30, 80ull << 30, "GPU-" + id + "-0"}};
    return r;
  };
  auto beat = [](const std::string& id, uint64_t xids, uint32_t temperature) {
    wire::Heartbeat b;
    b.sender_id = id;
    wire::GpuUsage g{0, 10, 1, 2};
    g.readings = wire::kGpuXid | wire::kGpuTemperature;
    g.xid_errors = xids;
    g.last_xid = xids > 0 ? 79 : 0;
    g.temperature_c = temperature;
    b.gpus = {g};
    b.gpu_sampling = "nvml";
    return b;
  };
  Outbox out;
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", gpu_worker("w1"), 0, out));
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", beat("w1", 1, 60), 10, out));
  std::vector<wire::WorkerStatus> listed = pool_.Workers(10);
  ASSERT_EQ(listed.size(), 1u);
  ASSERT_EQ(listed[0].gpu_fences.size(), 1u);
  EXPECT_EQ(listed[0].gpu_fences[0].reason, "XID 79 (GPU has fallen off the bus)");
  Outbox beats;
  pool_.Heartbeat(1700000000000, beats);
  const auto told = Sent<wire::Heartbeat>(beats, "w1");
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].fenced_gpus, std::vector<uint32_t>{0});

  // Its only GPU is fenced: the GPU tasks wait for a healthy GPU worker, which gets them.
  Outbox dealt;
  pool_.Dispatch(20, dealt);
  EXPECT_TRUE(Sent<wire::TaskAssignment>(dealt, "w1").empty()) << "a GPU task went to w1";
  Outbox second;
  ASSERT_TRUE(pool_.OnMessage("r2", "k2", gpu_worker("w2"), 30, second));
  pool_.Dispatch(30, second);
  const auto to_w2 = Sent<wire::TaskAssignment>(second, "w2");
  ASSERT_FALSE(to_w2.empty());
  size_t gpu_tasks = 0;
  for (const wire::TaskSpec& t : to_w2[0].tasks) gpu_tasks += t.job_id == "g1" ? 1 : 0;
  EXPECT_EQ(gpu_tasks, 2u);

  // A restarted coordinator restores the fence from the state, before the worker says anything.
  PoolControl restarted(scheduler_, ledger_, launches_, 5000);
  ASSERT_TRUE(restarted.RestoreGpuFences().ok());
  Outbox again;
  ASSERT_TRUE(restarted.OnMessage("r3", "k1", gpu_worker("w1"), 40, again));
  EXPECT_EQ(scheduler_.registry().Find("w1")->fenced_gpus, std::vector<uint32_t>{0});
  EXPECT_FALSE(scheduler_.registry().Find("w1")->has_gpus());
  EXPECT_EQ(restarted.FenceGpus({"w1", {}, "", false}, "ops").code(), StatusCode::kOk);
  EXPECT_TRUE(scheduler_.registry().Find("w1")->has_gpus());
  EXPECT_EQ(restarted.FenceGpus({"w1", {}, "", false}, "ops").code(), StatusCode::kNotFound);
  // The same count after the clear is not a new error.
  ASSERT_TRUE(restarted.OnMessage("r3", "k1", beat("w1", 1, 60), 50, again));
  EXPECT_TRUE(restarted.Workers(50)[0].gpu_fences.empty());
}

TEST_F(PoolControlTest, AWorkerWithCoolGpusIsDealtWorkBeforeOneWithThrottledGpus) {
  scheduler_.AddJob(testing::MakeJob(
      "g1", "name: g\nnodes:\n  - {id: t, op: noop, params: {tasks: 1}, resources: {gpus: 1}}\n"));
  auto gpu_worker = [](const std::string& id) {
    wire::RegisterWorker r = Registration(id, 1);
    r.prefetch = 0;
    r.gpus = {{0, "H100", 80ull << 30, 80ull << 30, ""}};
    return r;
  };
  auto beat = [](const std::string& id, uint64_t throttle) {
    wire::Heartbeat b;
    b.sender_id = id;
    wire::GpuUsage g{0, 10, 1, 2};
    g.readings = wire::kGpuThrottle;
    g.throttle_reasons = throttle;
    b.gpus = {g};
    return b;
  };
  Outbox out;
  // "a-hot" comes first by id, and would be dealt first without its GPU's heat.
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", gpu_worker("a-hot"), 0, out));
  ASSERT_TRUE(pool_.OnMessage("r2", "k1", gpu_worker("b-cool"), 0, out));
  ASSERT_TRUE(pool_.OnMessage("r1", "k1", beat("a-hot", wire::kThrottleSwThermal), 10, out));
  ASSERT_TRUE(pool_.OnMessage("r2", "k1", beat("b-cool", 0), 10, out));
  scheduler_.FindJob("j1")->Cancel();  // only the GPU task is dealt
  Outbox dealt;
  pool_.Dispatch(20, dealt);
  EXPECT_TRUE(Sent<wire::TaskAssignment>(dealt, "a-hot").empty());
  ASSERT_EQ(Sent<wire::TaskAssignment>(dealt, "b-cool").size(), 1u);
}

}  // namespace
}  // namespace coupler::coordinator
