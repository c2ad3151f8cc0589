// A task's processes live and die with their worker, with real processes: a worker killed with
// SIGKILL takes its exec command's background processes with it (those in the command's
// process group and one that left it); a worker whose binary was replaced on disk still
// launches `coupler train`, and one whose binary was deleted says so.
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

// A small one-rank training job over a synthetic CSV, as <dir>/upgrade.yaml.
fs::path WriteSmallTrainJob(const fs::path& dir) {
  WriteSyntheticCsv(dir / "in.csv", 200, 4);
  WriteFile(dir / "train.yaml",
            "label_column: label\ntest_fraction: 0.2\nlayers: [4, 8, 10]\noptimizer: adamw\n"
            "lr: 0.01\nepochs: 1\nglobal_batch: 32\nmicro_batch: 16\naccumulate: 2\n"
            "precision: fp32\nseed: 7\ncheckpoint_every: 100\n");
  WriteFile(dir / "upgrade.yaml",
            "name: it-upgrade\nworkdir: work\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [in.csv],"
            " params: {shards: 2, label_column: label}}\n"
            "  - {id: train, op: train, inputs: [import], ranks: 1, retries: 0,"
            " params: {config: " + (dir / "train.yaml").string() + "}}\n");
  return dir / "upgrade.yaml";
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
  EXPECT_TRUE(fs::exists(cluster.dir() / "work" / "train" / "weights.npy"));
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
