// Taking a worker out, as an operator does on a bad day, against real processes with keys from
// `coupler keygen`: `coupler worker ban` drops a connected worker at once (its tasks finish
// elsewhere), refuses it across a coordinator restart until `unban`, and only an admin may; a
// worker's key rotated under the same id is accepted once the old key has left the list; and a
// revoked worker leading a gang is gone at once, the gang finishing on the workers left.
#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

fs::path WorkersList(Cluster& cluster) { return cluster.keys() / "authorized" / "workers"; }

TEST(WorkerBanTest, ABannedWorkerIsDroppedAtOnceAndRefusedAcrossARestartUntilUnbanned) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  Process& w1 = cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const std::string job = cluster.Submit(WriteNoopSpec(cluster, "banned-mid-job", 40, 300));
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { auto st = cluster.Job(job); return st && st->done >= 2; }, 60s, 50ms))
      << cluster.Logs();

  // A key that is no admin may not ban.
  const fs::path plain = KeygenAndAuthorize(cluster, "plain", "client", {"clients"});
  CommandResult refused = cluster.Cli({"worker", "ban", "w1", "--reason", "x", "--keys", plain.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("admin"));
  CommandResult no_reason = cluster.Cli({"worker", "ban", "w1"});
  EXPECT_NE(no_reason.exit_code, 0);
  EXPECT_THAT(no_reason.err, HasSubstr("--reason"));

  CommandResult ban = cluster.Cli({"worker", "ban", "w1", "--reason", "bad DIMM, ticket 42"});
  ASSERT_EQ(ban.exit_code, 0) << ban.err;
  EXPECT_THAT(ban.out, HasSubstr("banned w1"));
  // The worker is told, and stops; its tasks wait for another worker.
  EXPECT_TRUE(WaitUntil([&] { return !w1.running(); }, 20s, 100ms)) << cluster.Logs();
  EXPECT_THAT(w1.err(), HasSubstr("bad DIMM, ticket 42"));
  EXPECT_THAT(w1.err(), HasSubstr("coupler worker unban w1"));
  CommandResult listed = cluster.Cli({"workers"});
  EXPECT_THAT(listed.out, HasSubstr("banned"));
  EXPECT_THAT(listed.out, HasSubstr("bad DIMM, ticket 42"));
  cluster.StartWorker("w2", 2);
  std::optional<JobView> st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->done, 40u);

  // The ban is in the state: after kill -9 and a restart, w1 is still refused, and told why.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  Process& again = cluster.StartWorker("w1", 2);
  const std::optional<int> code = again.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << "a banned worker kept running\n" << cluster.Logs();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(again.err(), HasSubstr("is banned"));
  EXPECT_THAT(cluster.Cli({"workers", "--json"}).out, HasSubstr("\"state\":\"banned\""));

  CommandResult unban = cluster.Cli({"worker", "unban", "w1"});
  ASSERT_EQ(unban.exit_code, 0) << unban.err;
  EXPECT_EQ(cluster.Cli({"worker", "unban", "w1"}).exit_code, 2) << "no longer banned: not found";
  cluster.StartWorker("w1", 2);
  EXPECT_TRUE(WaitUntil([&] { return cluster.Workers()["w1"].first == "alive"; }, 30s, 100ms))
      << cluster.Logs();
}

TEST(WorkerBanTest, AWorkerKeyRotatedUnderTheSameIdIsAcceptedOnceTheOldKeyIsGone) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path old_keys = KeygenAndAuthorize(cluster, "node-1", "worker", {"workers"});
  Process& first = cluster.StartWorker("w1", 1, {"--keys", old_keys.string()});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  first.Signal(SIGKILL);
  ASSERT_TRUE(first.WaitExit(30s).has_value());

  // The new key is listed beside the old one: the id still belongs to the old key.
  const fs::path new_keys = KeygenAndAuthorize(cluster, "node-1-2027", "worker", {"workers"});
  Process& early = cluster.StartWorker("w1", 1, {"--keys", new_keys.string()});
  EXPECT_TRUE(WaitUntil([&] { return !early.running(); }, 30s, 100ms)) << cluster.Logs();
  EXPECT_THAT(early.err(), HasSubstr("which is still allowed"));

  // The old key leaves the list: the id moves to the new key.
  fs::remove(WorkersList(cluster) / "node-1.pub");
  cluster.StartWorker("w1", 1, {"--keys", new_keys.string()});
  // The killed first w1 may still be listed alive (its heartbeats are not late yet): the
  // registration under the new key is what to wait for.
  EXPECT_TRUE(WaitUntil(
      [&] { return cluster.coordinator().err().find("moves from key 'node-1'") != std::string::npos; },
      30s, 100ms))
      << cluster.Logs();
  EXPECT_TRUE(WaitUntil([&] { return cluster.Workers()["w1"].first == "alive"; }, 30s, 100ms))
      << cluster.Logs();
  const std::string job = cluster.Submit(WriteNoopSpec(cluster, "after-rotation", 4, 0));
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  std::optional<JobView> st = cluster.WaitJobFinished(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
}

TEST(WorkerBanTest, ARevokedGangLeaderIsGoneAndItsGangFinishesOnTheWorkersLeft) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path leader_keys = KeygenAndAuthorize(cluster, "node-1", "worker", {"workers"});
  cluster.StartWorker("w1", 2, {"--keys", leader_keys.string()});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path hold = cluster.dir() / "release";
  const fs::path spec = cluster.dir() / "gang.yaml";
  WriteFile(spec, "name: it-revoked-leader\nworkdir: work\nnodes:\n"
                  "  - id: g\n    op: mpi_exec\n    ranks: 2\n    params:\n"
                  "      command: \"while [ ! -e " + hold.string() + " ]; do sleep 0.05; done\"\n"
                  "      timeout: 120\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  // The gang runs on w1 alone (its only worker), w1 leading it.
  ASSERT_TRUE(WaitUntil([&] { return cluster.Workers()["w1"].second == 2; }, 60s, 100ms)) << cluster.Logs();
  cluster.StartWorker("w2", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  fs::remove(WorkersList(cluster) / "node-1.pub");
  EXPECT_TRUE(WaitUntil([&] { return cluster.Workers()["w1"].first == "lost"; }, 20s, 100ms))
      << "the revoked leader is still alive\n" << cluster.Logs();
  // The gang goes to w2, never back to the revoked worker.
  EXPECT_TRUE(WaitUntil([&] { return cluster.Workers()["w2"].second == 2; }, 60s, 100ms)) << cluster.Logs();
  WriteFile(hold, "");
  std::optional<JobView> st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(cluster.Workers()["w1"].second, 0u);
}

}  // namespace
}  // namespace coupler::itest

namespace coupler::itest {
namespace {

// A worker holding a stale coordinator.pub (the coordinator's key set was remade): the worker
// says why it hears nothing (every handshake cut short: its coordinator.pub is stale) and stops
// at its --death-timeout, and the coordinator, which no ZAP request ever reaches for it, counts
// the failed handshakes and says which file to hand out.
TEST(WorkerBanTest, AWorkerWithAStaleCoordinatorKeyStopsAndTheCoordinatorCountsAndSaysSo) {
  Cluster::Options o;
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path keys = KeygenAndAuthorize(cluster, "node-9", "worker", {"workers"});
  // Another key in coordinator.pub's place: what a worker keeps after the coordinator's
  // key set was made again.
  const fs::path other = cluster.dir() / "keys-other-coordinator";
  CommandResult made = RunToEnd({kCoupler, "keygen", other.string(), "--role", "coordinator"}, cluster.logs(), 30s);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  fs::copy_file(other / "coordinator.pub", keys / "coordinator.pub", fs::copy_options::overwrite_existing);
  // It retries (a coordinator restarting cuts handshakes short too), says why once it is
  // silent, and stops at its --death-timeout.
  Process& w = cluster.StartWorker("w9", 1, {"--keys", keys.string(), "--death-timeout", "8s"});
  const std::optional<int> code = w.WaitExit(60s);
  ASSERT_TRUE(code.has_value()) << "a worker with a stale coordinator key kept retrying\n" << cluster.Logs();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(w.err(), HasSubstr("was cut short"));
  EXPECT_THAT(w.err(), HasSubstr("coordinator.pub, which is probably stale"));
  EXPECT_TRUE(WaitUntil([&] { return cluster.coordinator().err().find("failed on the workers socket") != std::string::npos; },
                        30s, 200ms))
      << cluster.Logs();
  EXPECT_THAT(cluster.coordinator().err(), HasSubstr("coordinator.pub"));
  const std::string token = ReadFile(cluster.state() / "metrics-token");
  std::string metrics;
  EXPECT_TRUE(WaitUntil(
      [&] {
        metrics = RunToEnd({FindProgram("curl"), "-sS", "-H", "Authorization: Bearer " + token.substr(0, token.find('\n')),
                            cluster.HttpUrl() + "/metrics"},
                           cluster.logs(), 30s)
                      .out;
        return metrics.find("coupler_handshakes_failed_total{socket=\"workers\"} 0") == std::string::npos &&
               metrics.find("coupler_handshakes_failed_total{socket=\"workers\"} ") != std::string::npos;
      },
      30s, 500ms))
      << metrics;
}

}  // namespace
}  // namespace coupler::itest
