// PoolControl without a coordinator: worker messages in, what to send out (an Outbox), over a
// real state store in a temporary directory and a real Scheduler. A worker is its connection:
// the route binds it, a new route makes it register again, and what it still holds stays its.
#include "coordinator/pool_control.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace coupler::coordinator
