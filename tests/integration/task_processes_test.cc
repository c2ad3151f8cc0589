// A task's processes live and die with their worker, with real processes: a worker killed with
// SIGKILL takes its exec command's background processes with it (those in the command's
// process group and one that left it); an mpi_exec whose program hangs fails at its timeout
// with mpirun and every rank gone, and so does a train group; a worker whose binary was
// replaced on disk still launches `coupler train`, and one whose binary was deleted says so.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

bool HaveMpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// The pids listed in a file, one per line (a file being written may end mid-line: only whole
// lines count).
std::vector<pid_t> ReadPids(const fs::path& path) {
  std::vector<pid_t> pids;
  std::stringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    if (in.eof()) break;  // no newline yet
    if (!line.empty()) pids.push_back(static_cast<pid_t>(std::stol(line)));
  }
  return pids;
}

// True while `pid` runs a program whose command line starts with `argv0` (so a pid reused by
// someone else does not count, nor a zombie waiting for its parent).
bool Running(pid_t pid, const std::string& argv0) {
  const std::string dir = "/proc/" + std::to_string(pid);
  const std::string stat = ReadFile(dir + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') {
    return false;
  }
  const std::string cmdline = ReadFile(dir + "/cmdline");
  return cmdline.compare(0, argv0.size(), argv0) == 0;
}

// Kills, on every exit path, the processes a test's commands reported, should any outlive it.
class StrayKiller {
 public:
  void Add(pid_t pid, std::string argv0) { pids_.emplace_back(pid, std::move(argv0)); }
  ~StrayKiller() {
    for (const auto& [pid, argv0] : pids_) {
      if (Running(pid, argv0)) ::kill(pid, SIGKILL);
    }
  }

 private:
  std::vector<std::pair<pid_t, std::string>> pids_;
};

// A worker started from `binary` instead of the build's coupler, owned by the caller.
Process StartWorkerFrom(Cluster& cluster, const fs::path& binary, const std::string& id) {
  Process::Options o;
  o.deadline = 240s;
  o.output = cluster.logs();
  o.name = "worker-" + id;
  return Process::Spawn({binary.string(), "--log-level", "info", "worker", "--coordinator",
                         cluster.endpoint(), "--slots", "1", "--id", id, "--heartbeat-ms", "300"},
                        o);
}

TEST(TaskProcessesTest, AKilledWorkersExecCommandTakesEverythingItStartedWithIt) {
  Cluster::Options options;
  options.dead_after_ms = 2000;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  // One background sleep in the command's process group, one that left it with setsid.
  const fs::path pids = cluster.dir() / "pids";
  WriteSyntheticCsv(cluster.dir() / "in.csv", 10, 2);
  WriteFile(cluster.dir() / "linger.yaml",
            "name: it-linger\nworkdir: work\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 1}}\n"
            "  - id: linger\n    op: exec\n    inputs: [import]\n    params:\n"
            "      command: \"sleep 1000 & echo $! >> " + pids.string() +
                "; setsid sleep 1001 & echo $! >> " + pids.string() + "; wait\"\n");
  std::string why;
  const std::string job = cluster.Submit(cluster.dir() / "linger.yaml", &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  StrayKiller strays;
  std::vector<pid_t> started;
  ASSERT_TRUE(WaitUntil([&] { return (started = ReadPids(pids)).size() == 2; }, 60s))
      << "the command never started its sleeps\n" << cluster.Logs();
  strays.Add(started[0], "sleep");
  strays.Add(started[1], "sleep");
  ASSERT_TRUE(WaitUntil([&] { return Running(started[0], "sleep") && Running(started[1], "sleep"); },
                        30s));

  cluster.worker("w1").Signal(SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return !Running(started[0], "sleep"); }, 30s))
      << "the sleep in the command's process group outlived its worker";
  EXPECT_TRUE(WaitUntil([&] { return !Running(started[1], "sleep"); }, 30s))
      << "the sleep that left the command's process group outlived its worker";
}

TEST(TaskProcessesTest, AHungMpiExecFailsAtItsTimeoutWithMpirunAndEveryRankGone) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  // Each rank records its pid and hangs; so does mpirun (its --timeout far beyond the node's).
  const fs::path rank_pids = cluster.dir() / "rank-pids";
  const fs::path launcher_pid = cluster.dir() / "mpirun-pid";
  WriteFile(cluster.dir() / "rank.sh",
            "echo $$ >> " + rank_pids.string() + "\nexec sleep 600\n");
  const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
  WriteFile(cluster.dir() / "hang.yaml",
            "name: it-hang\nworkdir: work\nnodes:\n"
            "  - id: program\n    op: mpi_exec\n    ranks: 2\n    retries: 0\n    params:\n"
            "      timeout: 3\n"
            "      command: \"echo $$ > " + launcher_pid.string() +
                "; exec mpirun --oversubscribe" + root + " --timeout 300 -np {ranks} /bin/sh " +
                (cluster.dir() / "rank.sh").string() + "\"\n");
  std::string why;
  const std::string job = cluster.Submit(cluster.dir() / "hang.yaml", &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  StrayKiller strays;
  std::vector<pid_t> launched;
  std::vector<pid_t> ranks;
  WaitUntil([&] {
    launched = ReadPids(launcher_pid);
    ranks = ReadPids(rank_pids);
    return launched.size() == 1 && ranks.size() == 2;
  }, 60s, 20ms);
  for (const pid_t pid : launched) strays.Add(pid, "mpirun");
  for (const pid_t pid : ranks) strays.Add(pid, "sleep");

  const auto done = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(done) << cluster.Logs();
  EXPECT_EQ(done->state, "failed") << cluster.Logs();
  EXPECT_NE(done->node("program").error.find("timed out after 3 s"), std::string::npos)
      << done->node("program").error;
  // The ranks hung until the timeout, so both had started; now none of the group survives.
  ASSERT_EQ(launched.size(), 1u) << cluster.Logs();
  ASSERT_EQ(ranks.size(), 2u) << "the ranks never started within the timeout\n" << cluster.Logs();
  EXPECT_TRUE(WaitUntil([&] { return !Running(launched[0], "mpirun"); }, 30s))
      << "mpirun outlived the node's timeout";
  for (const pid_t rank : ranks) {
    EXPECT_TRUE(WaitUntil([&] { return !Running(rank, "sleep"); }, 30s))
        << "rank " << rank << " outlived the node's timeout";
  }
}

// A small training job of `ranks` ranks over a synthetic CSV, as <dir>/train-job.yaml; `extra`
// is added to the train node's params.
fs::path WriteSmallTrainJob(const fs::path& dir, int epochs = 1, int ranks = 1,
                            const std::string& extra = "") {
  WriteSyntheticCsv(dir / "in.csv", 200, 4);
  WriteFile(dir / "train.yaml",
            "label_column: label\ntest_fraction: 0.2\nlayers: [4, 8, 10]\noptimizer: adamw\n"
            "lr: 0.01\nepochs: " + std::to_string(epochs) + "\nglobal_batch: " +
                std::to_string(32 * ranks) + "\nmicro_batch: 16\naccumulate: 2\n"
            "precision: fp32\nseed: 7\ncheckpoint_every: 100\n");
  WriteFile(dir / "train-job.yaml",
            "name: it-train\nworkdir: work\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [in.csv],"
            " params: {shards: 2, label_column: label}}\n"
            "  - {id: train, op: train, inputs: [import], ranks: " + std::to_string(ranks) +
                ", retries: 0, params: {config: " + (dir / "train.yaml").string() + extra +
                "}}\n");
  return dir / "train-job.yaml";
}

// The pids of `coupler train CONFIG` ranks.
std::vector<pid_t> TrainRankPids(const fs::path& config) {
  const std::string args = std::string("train") + '\0' + config.string() + '\0';
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = ReadFile(entry.path() / "cmdline");
    const size_t arg1 = cmdline.find('\0');
    if (arg1 != std::string::npos && cmdline.compare(arg1 + 1, args.size(), args) == 0) {
      pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return pids;
}

TEST(TaskProcessesTest, ATrainGroupOverItsTimeoutFailsWithEveryRankGone) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path config = cluster.dir() / "train.yaml";
  std::string why;
  const std::string job = cluster.Submit(
      WriteSmallTrainJob(cluster.dir(), /*epochs=*/1'000'000, /*ranks=*/2, ", timeout: 3"), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  const bool started = WaitUntil([&] { return TrainRankPids(config).size() == 2; }, 60s, 20ms);
  const auto done = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(done) << cluster.Logs();
  EXPECT_EQ(done->state, "failed") << cluster.Logs();
  EXPECT_NE(done->node("train").error.find("timed out after 3 s"), std::string::npos)
      << done->node("train").error;
  EXPECT_TRUE(started) << "the ranks never ran\n" << cluster.Logs();
  EXPECT_TRUE(WaitUntil([&] { return TrainRankPids(config).empty(); }, 30s))
      << "ranks outlived the node's timeout";
  for (const pid_t pid : TrainRankPids(config)) ::kill(pid, SIGKILL);
}

TEST(TaskProcessesTest, AWorkerWhoseBinaryWasReplacedOnDiskStillLaunchesTrain) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path bin = cluster.dir() / "bin";
  fs::create_directories(bin);
  fs::copy_file(kCoupler, bin / "coupler");
  Process worker = StartWorkerFrom(cluster, bin / "coupler", "w1");
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  // An upgrade: the new build renamed over the running one, whose file is now deleted.
  fs::copy_file(kCoupler, bin / "coupler.new");
  fs::rename(bin / "coupler.new", bin / "coupler");
  ASSERT_NE(fs::read_symlink("/proc/" + std::to_string(worker.pid()) + "/exe").string().find(
                "(deleted)"),
            std::string::npos);

  std::string why;
  const std::string job = cluster.Submit(WriteSmallTrainJob(cluster.dir()), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto done = cluster.WaitJobFinished(job, 180s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();
  EXPECT_TRUE(fs::exists(cluster.dir() / "work" / "latest" / "train" / "weights.npy"));
}

TEST(TaskProcessesTest, AWorkerWhoseBinaryWasDeletedFailsTrainSayingSo) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path bin = cluster.dir() / "bin";
  fs::create_directories(bin);
  fs::copy_file(kCoupler, bin / "coupler");
  Process worker = StartWorkerFrom(cluster, bin / "coupler", "w1");
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  fs::remove(bin / "coupler");

  std::string why;
  const std::string job = cluster.Submit(WriteSmallTrainJob(cluster.dir()), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto done = cluster.WaitJobFinished(job, 180s);
  ASSERT_TRUE(done) << cluster.Logs();
  EXPECT_EQ(done->state, "failed");
  EXPECT_NE(done->node("train").error.find("the coupler binary this worker runs was deleted from " +
                                           (bin / "coupler").string()),
            std::string::npos)
      << done->node("train").error;
}

}  // namespace
}  // namespace coupler::itest
