// Tight nodes under the coordinator, with real processes: a training group that loses one
// rank's process (SIGKILL) fails as a whole, is retried with --resume from its newest
// checkpoint, and the job succeeds; two gangs of 2 ranks and a stream of loose tasks share three
// single-slot workers without deadlock, and no partial hold outlives the hold timeout by more
// than a scheduling round.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

bool HaveMpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// The pids of processes whose command line (argv, split) `matches`.
template <class Match>
std::vector<pid_t> Pids(Match matches) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string raw = ReadFile(entry.path() / "cmdline");
    std::vector<std::string> argv;
    for (size_t at = 0; at < raw.size();) {
      const size_t end = raw.find('\0', at);
      argv.push_back(raw.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (matches(argv)) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// The ranks of one group: `coupler train CONFIG ...` (mpirun's own command line names the
// config too, but not as argv[1] of a coupler binary).
std::vector<pid_t> RankPids(const fs::path& config) {
  return Pids([&](const std::vector<std::string>& argv) {
    return argv.size() >= 3 && fs::path(argv[0]).filename() == "coupler" && argv[1] == "train" &&
           argv[2] == config.string();
  });
}

// The mpirun that launched the group.
std::vector<pid_t> LauncherPids(const fs::path& config) {
  return Pids([&](const std::vector<std::string>& argv) {
    return !argv.empty() && fs::path(argv[0]).filename() == "mpirun" &&
           std::find(argv.begin(), argv.end(), config.string()) != argv.end();
  });
}

pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = -1;
  rest >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// A training config for the digits data: long enough (kEpochs x 22 steps) that a kill lands
// mid-run, with a checkpoint every 50 steps.
constexpr int kEpochs = 200;
constexpr int kStepsPerEpoch = 1438 / 64;  // 1797 rows less the 359 held out
void WriteLongTrainConfig(const fs::path& config) {
  WriteFile(config, "label_column: label\ntest_fraction: 0.2\nlayers: [64, 128, 10]\n"
                    "optimizer: adamw\nlr: 0.003\nepochs: " + std::to_string(kEpochs) + "\n"
                    "global_batch: 64\nmicro_batch: 16\naccumulate: 2\nprecision: fp32\n"
                    "seed: 1234\ncheckpoint_every: 50\n");
}

void WriteTrainSpec(const fs::path& spec, const fs::path& config) {
  WriteFile(spec, "name: it-tight\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" +
                      (kSourceDir / "data" / "digits.csv").string() + "],"
                  " params: {shards: 2, label_column: label}}\n"
                  "  - {id: train, op: train, inputs: [import], ranks: 2, retries: 2,"
                  " params: {config: " + config.string() + "}}\n");
}

bool HasCheckpoint(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() != ".tmp") return true;
  }
  return false;
}

TEST(TightGroupTest, KillingOneRankRetriesTheGroupFromItsCheckpointAndTheJobSucceeds) {
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  const fs::path config = cluster.dir() / "train.yaml";
  const fs::path spec = cluster.dir() / "kill.yaml";
  WriteLongTrainConfig(config);
  WriteTrainSpec(spec, config);
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // Both ranks run and rank 0 has written a checkpoint: kill one rank's process.
  const fs::path checkpoints = cluster.dir() / "work" / "latest" / "train" / "checkpoints";
  std::vector<pid_t> ranks;
  ASSERT_TRUE(WaitUntil(
      [&] {
        ranks = RankPids(config);
        return ranks.size() == 2 && HasCheckpoint(checkpoints);
      },
      120s, 20ms))
      << "the group never ran 2 ranks with a checkpoint\n" << cluster.Logs();
  ASSERT_EQ(::kill(ranks.back(), SIGKILL), 0);

  const auto done = cluster.WaitJobFinished(job, 240s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();
  const NodeView train = done->node("train");
  EXPECT_EQ(train.ranks, 2u);
  EXPECT_EQ(train.done, 1u);
  EXPECT_EQ(train.attempts, 2u) << "the killed group should have been retried once";

  // The retry continued from a checkpoint: it ran fewer steps than the whole schedule.
  rapidjson::Document metrics;
  const std::string text = ReadFile(cluster.dir() / "work" / "latest" / "train" / "metrics.json");
  ASSERT_FALSE(metrics.Parse(text.c_str()).HasParseError()) << text;
  ASSERT_TRUE(metrics.HasMember("steps") && metrics["steps"].IsNumber()) << text;
  const double steps = metrics["steps"].GetDouble();
  EXPECT_GT(steps, 0) << text;
  EXPECT_LE(steps, kEpochs * kStepsPerEpoch - 50) << "not resumed from a checkpoint: " << text;
  ASSERT_TRUE(metrics.HasMember("test_accuracy") && metrics["test_accuracy"].IsNumber()) << text;
  EXPECT_GE(metrics["test_accuracy"].GetDouble(), 0.9) << text;
}

// A coordinator killed (SIGKILL) while a 2-rank group runs on one worker: the worker reports
// the group's attempt when it registers with the restarted coordinator, which adopts it; the
// same rank processes run on to the end of the schedule (never resumed from a checkpoint: the
// step counter never goes back) and the node has one attempt.
TEST(TightGroupTest, AGroupOnOneWorkerRunsOnThroughACoordinatorRestart) {
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  const fs::path config = cluster.dir() / "train.yaml";
  const fs::path spec = cluster.dir() / "restart.yaml";
  WriteLongTrainConfig(config);
  WriteTrainSpec(spec, config);
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const fs::path checkpoints = cluster.dir() / "work" / "latest" / "train" / "checkpoints";
  std::vector<pid_t> ranks;
  ASSERT_TRUE(WaitUntil(
      [&] {
        ranks = RankPids(config);
        return ranks.size() == 2 && HasCheckpoint(checkpoints);
      },
      120s, 20ms))
      << "the group never ran 2 ranks with a checkpoint\n" << cluster.Logs();
  ASSERT_TRUE(cluster.Job(job));  // writes what was sent before the kill
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s)) << cluster.Logs();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();

  const auto done = cluster.WaitJobFinished(job, 240s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();
  EXPECT_EQ(done->node("train").attempts, 1u) << "the group was started again\n" << cluster.Logs();
  const std::string events = ReadFile(cluster.state() / "events.jsonl");
  EXPECT_NE(events.find("\"attempt_adopted\""), std::string::npos) << events;
  EXPECT_EQ(events.find("attempt_abandoned"), std::string::npos) << events;
  rapidjson::Document metrics;
  const std::string text = ReadFile(cluster.dir() / "work" / "latest" / "train" / "metrics.json");
  ASSERT_FALSE(metrics.Parse(text.c_str()).HasParseError()) << text;
  ASSERT_TRUE(metrics.HasMember("steps") && metrics["steps"].IsNumber()) << text;
  EXPECT_EQ(metrics["steps"].GetDouble(), kEpochs * kStepsPerEpoch)
      << "the group went back to a checkpoint: " << text;
}

// The leader worker dies (SIGKILL) mid-run: the task's supervisor stops its mpirun and the
// ranks with it, so the group's retry on other workers never races a stale copy.
TEST(TightGroupTest, ALostLeadersGroupStopsAndIsRetriedElsewhere) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv"))
      << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  Cluster::Options options;
  options.dead_after_ms = 2000;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  const fs::path config = cluster.dir() / "train.yaml";
  const fs::path spec = cluster.dir() / "leader.yaml";
  WriteLongTrainConfig(config);
  WriteTrainSpec(spec, config);
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  std::vector<pid_t> launcher;
  ASSERT_TRUE(WaitUntil(
      [&] {
        launcher = LauncherPids(config);
        return launcher.size() == 1 && RankPids(config).size() == 2;
      },
      120s, 20ms))
      << "the group never started\n" << cluster.Logs();
  // mpirun runs under its task's supervisor, a child of the worker.
  const pid_t leader_pid = ParentOf(ParentOf(launcher[0]));
  std::string leader;
  for (const char* id : {"w1", "w2"}) {
    if (cluster.worker(id).pid() == leader_pid) leader = id;
  }
  ASSERT_FALSE(leader.empty()) << "mpirun's grandparent " << leader_pid << " is not a worker";
  cluster.worker(leader).Signal(SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return LauncherPids(config).empty() && RankPids(config).empty(); },
                        30s, 50ms))
      << "the dead leader's group kept running\n" << cluster.Logs();

  // A replacement joins; the group is retried on it and the surviving worker.
  cluster.StartWorker("w3", 1);
  const auto done = cluster.WaitJobFinished(job, 240s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();
  EXPECT_EQ(done->node("train").attempts, 2u);
}

TEST(TightGroupTest, TwoGangsAndALooseStreamOnThreeSingleSlotWorkersFinish) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  constexpr int64_t kHoldTimeoutMs = 1500;
  Cluster::Options options;
  options.coordinator_args = {"--gang-hold-timeout-ms", std::to_string(kHoldTimeoutMs)};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  for (const char* id : {"w1", "w2", "w3"}) cluster.StartWorker(id, 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(3)) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  // Each gang is a real 2-rank mpirun that takes a second; the loose stream keeps every slot
  // busy, so each gang has to gather its two slots while loose tasks come and go.
  const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
  auto gang = [&](const std::string& id) {
    return "  - id: " + id + "\n    op: mpi_exec\n    inputs: [import]\n    ranks: 2\n"
           "    params:\n      command: \"mpirun --oversubscribe" + root +
           " --timeout 60 -np {ranks} --hostfile {hostfile} sleep 1 && echo " + id +
           " > {output}/done.txt\"\n";
  };
  const fs::path spec = cluster.dir() / "mixed.yaml";
  WriteFile(spec, "name: it-two-gangs\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n" +
                      gang("gang_a") + gang("gang_b") +
                      "  - {id: stream, op: noop, params: {tasks: 40, sleep_ms: 150}}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  const auto done = cluster.WaitJobFinished(job, 180s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();
  for (const char* id : {"gang_a", "gang_b"}) {
    EXPECT_EQ(done->node(id).ranks, 2u) << id;
    EXPECT_EQ(done->node(id).done, 1u) << id;
    EXPECT_EQ(done->node(id).attempts, 1u) << id;
    EXPECT_EQ(ReadFile(cluster.dir() / "work" / "latest" / id / "done.txt"), std::string(id) + "\n");
  }
  EXPECT_EQ(done->node("stream").done, 40u);
  EXPECT_EQ(done->attempts, done->total) << "a task was lost or re-run";

  // Holds are given back at the first scheduling round past the timeout.
  const auto coordinator = cluster.Coordinator();
  ASSERT_TRUE(coordinator) << cluster.Logs();
  std::printf("longest partial hold: %llu ms (timeout %lld ms)\n",
              static_cast<unsigned long long>(coordinator->longest_partial_hold_ms),
              static_cast<long long>(kHoldTimeoutMs));
  EXPECT_LE(coordinator->longest_partial_hold_ms, static_cast<uint64_t>(kHoldTimeoutMs) + 1000)
      << cluster.Logs();
  for (const auto& [id, state] : cluster.Workers()) {
    EXPECT_EQ(state.second, 0u) << id << " still runs something after the job";
  }
}

}  // namespace
}  // namespace coupler::itest
