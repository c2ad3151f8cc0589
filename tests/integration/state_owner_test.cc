// One coordinator per state directory, with real processes: a second `coupler coordinator` on a
// held --state exits 1 naming the holder and leaves the first one's jobs alone; once the holder
// is killed, a replacement takes the directory over and finishes what it admitted.
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"
#include "tests/integration/tcp_relay.h"

namespace coupler::itest {
namespace {

TEST(StateOwnerTest, ASecondCoordinatorOnAHeldStateExitsNamingTheHolder) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path spec = cluster.dir() / "owned.yaml";
  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  WriteFile(spec, "name: it-state-owner\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  const int port = FreePortPair();
  ASSERT_GT(port, 0);
  const CommandResult second = RunToEnd(
      CoordinatorArgv("tcp://127.0.0.1:" + std::to_string(port), cluster.state(),
                      cluster.dir() / "ready-2", 300, 3000, {}),
      cluster.logs(), 30s);
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  const std::string holder = "pid " + std::to_string(cluster.coordinator().pid()) + " on ";
  EXPECT_NE(second.err.find("is in use by another coordinator (" + holder), std::string::npos)
      << second.err;
  EXPECT_FALSE(fs::exists(cluster.dir() / "ready-2")) << "it never listened";

  // The holder still owns its job: a worker joins and it finishes.
  ASSERT_TRUE(cluster.coordinator().running()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  const auto finished = cluster.WaitJobFinished(job, 60s);
  ASSERT_TRUE(finished.has_value()) << cluster.Logs();
  EXPECT_EQ(finished->state, "succeeded") << cluster.Logs();

  // kill -9 leaves the lock file behind with the dead holder's name; it blocks nothing.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const CommandResult status = cluster.Cli({"status", job});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("succeeded"), std::string::npos) << status.out;
}

// A coordinator whose lock was taken over without its knowing (the lock file deleted, so a
// second one locked a new file) is fenced by the store's generation: the second one moved it at
// its start, so the first one's next commit is refused whole and it stops (exit 1) instead of
// recording a result the new owner never sent.
TEST(StateOwnerTest, ACoordinatorWhoseLockWasTakenOverCommitsNothingAndStops) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  // The exec task waits for `go`, so it finishes only after the takeover.
  const fs::path go = cluster.dir() / "go";
  const std::string job = cluster.SubmitHeldJob("it-fenced", go, "    retries: 0\n");
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  fs::remove(cluster.state() / "coordinator.lock");
  const int port = FreePortPair();
  ASSERT_GT(port, 0);
  const std::string second_ep = "tcp://127.0.0.1:" + std::to_string(port);
  Process::Options o;
  o.deadline = 120s;
  o.output = cluster.logs();
  o.name = "coordinator-second";
  Process second = Process::Spawn(
      CoordinatorArgv(second_ep, cluster.state(), cluster.dir() / "ready-2", 300, 3000, {}), o);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(cluster.dir() / "ready-2").find("clients=") !=
                                         std::string::npos; },
                        60s))
      << second.err();

  WriteFile(go, "");
  const std::optional<int> first_exit = cluster.coordinator().WaitExit(60s);
  ASSERT_TRUE(first_exit.has_value()) << "the fenced coordinator kept running\n" << cluster.Logs();
  EXPECT_EQ(*first_exit, 1);
  EXPECT_NE(cluster.coordinator().err().find("fenced: another coordinator has written"),
            std::string::npos)
      << cluster.coordinator().err();

  // The new owner has the job, with the held task not done: its result was never committed.
  const CommandResult status = RunToEnd(
      {kCoupler, "status", job, "--coordinator", second_ep}, cluster.logs(), 30s);
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("1/2 tasks done"), std::string::npos) << status.out;  // import only
  second.Kill();
}

// The same takeover, seen from the wire. The worker reaches its coordinator through an address
// that moves (a relay standing in for a virtual IP or a Service): first the old coordinator,
// then the one that took the state over, which adopts the running attempt and registers the
// worker under its newer epoch; then the address moves back. The old coordinator hears the
// worker speak for the newer epoch and stops at once (exit 1, named), before it can send or
// commit anything; the new owner commits the task's one attempt when the address comes back.
TEST(StateOwnerTest, AWorkerOfTheNewerEpochStopsTheCoordinatorWhoseStateWasTakenOver) {
  // Nobody is declared lost while the address moves: what stops the old one is the epoch.
  Cluster cluster(Cluster::Options::Timeouts(300, 60000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const int first_port = std::stoi(cluster.endpoint().substr(cluster.endpoint().rfind(':') + 1));
  TcpRelay relay(first_port);
  ASSERT_TRUE(relay.ok());
  const fs::path worker_keys = KeygenAndAuthorize(cluster, "moved", "worker", {"workers"});
  Process::Options wo;
  wo.deadline = 240s;
  wo.output = cluster.logs();
  wo.name = "worker-moved";
  Process worker = Process::Spawn({kCoupler, "--log-level", "info", "worker", "--coordinator",
                                   relay.endpoint(), "--keys", worker_keys.string(), "--id", "w1",
                                   "--slots", "1", "--heartbeat-ms", "300"},
                                  wo);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path go = cluster.dir() / "go";
  const std::string job = cluster.SubmitHeldJob("it-moved", go, "    retries: 0\n");
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  // The takeover: the lock file gone, a second coordinator on the same state.
  fs::remove(cluster.state() / "coordinator.lock");
  const int second_port = FreePortPair();
  ASSERT_GT(second_port, 0);
  const std::string second_ep = "tcp://127.0.0.1:" + std::to_string(second_port);
  Process::Options o;
  o.deadline = 120s;
  o.output = cluster.logs();
  o.name = "coordinator-second";
  Process second = Process::Spawn(
      CoordinatorArgv(second_ep, cluster.state(), cluster.dir() / "ready-2", 300, 60000, {}), o);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(cluster.dir() / "ready-2").find("clients=") !=
                                         std::string::npos; },
                        60s))
      << second.err();
  const auto held_on_second = [&]() -> std::optional<JobView> {
    const CommandResult r =
        RunToEnd({kCoupler, "status", job, "--json", "--coordinator", second_ep}, cluster.logs(),
                 30s);
    rapidjson::Document d;
    if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError()) return std::nullopt;
    return ParseJob(d);
  };

  // The address moves to the new owner: the worker registers there, the attempt adopted.
  relay.Redirect(second_port);
  // (Its status says running from the start: it restored the attempt as out, awaiting its
  // worker's report; the adoption is what the event log records.)
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFile(cluster.state() / "events.jsonl").find("\"attempt_adopted\"") !=
               std::string::npos;
      },
      60s, 50ms))
      << "the new owner never adopted the running attempt\n" << cluster.Logs() << second.err();

  // And back: the old coordinator hears a worker of the newer epoch.
  relay.Redirect(first_port);
  const std::optional<int> first_exit = cluster.coordinator().WaitExit(60s);
  ASSERT_TRUE(first_exit.has_value()) << "the fenced coordinator kept running\n" << cluster.Logs();
  EXPECT_EQ(*first_exit, 1);
  const std::string why = cluster.coordinator().err();
  EXPECT_NE(why.find("fenced: a worker speaks for coordinator epoch"), std::string::npos) << why;

  // The address returns to the owner; the held task finishes there, once.
  relay.Redirect(second_port);
  WriteFile(go, "");
  std::optional<JobView> done;
  ASSERT_TRUE(WaitUntil(
      [&] {
        done = held_on_second();
        return done && done->finished();
      },
      90s, 100ms))
      << cluster.Logs() << second.err();
  EXPECT_EQ(done->state, "succeeded") << done->error << cluster.Logs();
  EXPECT_EQ(done->node("hold").attempts, 1u) << "the held task ran again\n" << cluster.Logs();
  second.Kill();
}

// The state directory started afresh while the pool ran on: the coordinator killed, a new one
// started on the same address with the same keys and an empty --state. Its epochs count from 1
// again, below the one the worker registered under; the state's generation has not moved under
// it, so the worker's newer epoch is no takeover: the worker registers and the new coordinator
// keeps running and runs its jobs.
TEST(StateOwnerTest, AWorkerOfAnEarlierStateJoinsACoordinatorStartedOnAFreshOne) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path spec = cluster.dir() / "noop.yaml";
  WriteFile(spec, "name: it-noop\nworkdir: work\nnodes:\n  - {id: n, op: noop, params: {tasks: 3}}\n");
  const std::string first = cluster.Submit(spec);
  ASSERT_FALSE(first.empty()) << cluster.Logs();
  const auto ended = cluster.WaitJobFinished(first, 60s);
  ASSERT_TRUE(ended && ended->state == "succeeded") << cluster.Logs();
  // A restart on that state: its epoch is past the job's commits now, and the worker
  // registers under it.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s)) << cluster.Logs();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  ASSERT_TRUE(WaitUntil(
      [&] { return cluster.coordinator().err().find("worker w1 joined") != std::string::npos; },
      30s))
      << cluster.Logs();

  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s)) << cluster.Logs();
  Process::Options o;
  o.deadline = 120s;
  o.output = cluster.logs();
  o.name = "coordinator-fresh";
  Process fresh = Process::Spawn(
      CoordinatorArgv(cluster.endpoint(), cluster.dir() / "state-fresh", cluster.dir() / "ready-f",
                      300, 3000, {"--keys", cluster.keys().string()}),
      o);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(cluster.dir() / "ready-f").find("clients=") !=
                                         std::string::npos; },
                        60s))
      << fresh.err();
  ASSERT_TRUE(cluster.WaitWorkersAlive(1, 30s)) << fresh.err() << cluster.Logs();
  EXPECT_FALSE(fresh.WaitExit(1s).has_value()) << "the fresh coordinator stopped\n" << fresh.err();
  const std::string second = cluster.Submit(spec);
  ASSERT_FALSE(second.empty()) << fresh.err() << cluster.Logs();
  const auto done = cluster.WaitJobFinished(second, 60s);
  ASSERT_TRUE(done) << fresh.err();
  EXPECT_EQ(done->state, "succeeded") << done->error << fresh.err();
  fresh.Kill();
}

}  // namespace
}  // namespace coupler::itest
