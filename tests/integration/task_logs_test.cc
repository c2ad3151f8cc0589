// Task logs end to end: what an exec command prints per shard is what `coupler logs JOB NODE
// TASK` shows, --follow prints lines as they come and ends with the job, a tight group's ranks
// each have their own output, and a command printing without end leaves a log within the
// worker's --task-log-bytes.
#include "runtime/job/task_logs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

bool HaveMpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// A job spec in the cluster's folder, submitted and run to its end.
std::optional<JobView> RunJob(Cluster& cluster, const std::string& name, const std::string& yaml,
                              std::string& job, std::chrono::seconds timeout = 120s) {
  const fs::path spec = cluster.dir() / (name + ".yaml");
  WriteFile(spec, yaml);
  std::string why;
  job = cluster.Submit(spec, &why);
  EXPECT_FALSE(job.empty()) << why << cluster.Logs();
  if (job.empty()) return std::nullopt;
  return cluster.WaitJobFinished(job, timeout);
}

std::string SmallImport(Cluster& cluster, int shards) {
  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  return "  - {id: import, op: import_csv, inputs: [" + (cluster.dir() / "in.csv").string() +
         "], params: {shards: " + std::to_string(shards) + ", label_column: label}}\n";
}

TEST(TaskLogsTest, LogsShowWhatEachShardsCommandPrinted) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::string job;
  const auto done =
      RunJob(cluster, "echo",
             "name: it-logs-echo\nworkdir: work\nnodes:\n" + SmallImport(cluster, 2) +
                 "  - id: echo\n    op: exec\n    inputs: [import]\n    params:\n"
                 "      command: \"echo hello from shard {shard}; echo a warning >&2\"\n",
             job);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << cluster.Logs();

  // All of the node: each task's stdout and stderr under a header naming it.
  const CommandResult all = cluster.Cli({"logs", job, "echo"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const std::regex block(
      R"(==> echo/task ([0-9]+) attempt 0 stdout <==\nhello from shard ([0-9])\n)");
  std::map<std::string, std::string> task_of_shard;
  for (auto it = std::sregex_iterator(all.out.begin(), all.out.end(), block);
       it != std::sregex_iterator(); ++it) {
    task_of_shard[(*it)[2]] = (*it)[1];
  }
  ASSERT_EQ(task_of_shard.size(), 2u) << all.out;
  EXPECT_NE(all.out.find("attempt 0 stderr <==\na warning\n"), std::string::npos) << all.out;

  // One task: only its own lines.
  const CommandResult one = cluster.Cli({"logs", job, "echo", task_of_shard.at("1")});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "==> echo/task " + task_of_shard.at("1") +
                         " attempt 0 stdout <==\n"
                         "hello from shard 1\n\n==> echo/task " +
                         task_of_shard.at("1") + " attempt 0 stderr <==\na warning\n");
  // An in-process op's attempt has a log too: its summary line.
  const CommandResult import = cluster.Cli({"logs", job, "import", "--tail", "1"});
  ASSERT_EQ(import.exit_code, 0) << import.err;
  EXPECT_TRUE(std::regex_search(
      import.out,
      std::regex(
          R"(import_csv task [0-9]+ \(shard 0\) attempt 0: rows in [0-9]+, rows out [0-9]+, device cpu, .*; ok\n)")))
      << import.out;

  // The errors a user meets.
  const CommandResult no_node = cluster.Cli({"logs", job, "nope"});
  EXPECT_EQ(no_node.exit_code, 2);
  EXPECT_EQ(no_node.err, "coupler: the job has no node 'nope'; its nodes: import, echo\n");
  const CommandResult no_task = cluster.Cli({"logs", job, "echo", "999"});
  EXPECT_EQ(no_task.exit_code, 0) << no_task.err;
  EXPECT_EQ(no_task.out, "");
  EXPECT_NE(no_task.err.find("no logs yet for job " + job + " node echo task 999"),
            std::string::npos)
      << no_task.err;
  const CommandResult no_job = cluster.Cli({"logs", "j-999999"});
  EXPECT_EQ(no_job.exit_code, 2);
  EXPECT_NE(no_job.err.find("j-999999"), std::string::npos) << no_job.err;
}

// A job that finished before the coordinator's last start keeps its nodes: replayed from its
// admitted plan and commits, so `coupler logs` still finds what its tasks printed, and status
// shows each node done (a restart used to leave it "its nodes: (none)").
// `coupler run` stops its coordinator when the job ends; its logs stay in the run directory,
// which `coupler logs` reads given in place of the job id (before, it could only ask a
// coordinator, and answered with a message about keys). A job id with no coordinator says so.
TEST(TaskLogsTest, ARunsLogsAreReadFromItsRunDirectoryOnceItsCoordinatorIsGone) {
  TempDir scratch;
  {
    std::ofstream csv(scratch.path() / "small.csv");
    csv << "x,label\n";
    for (int r = 0; r < 40; ++r) csv << r * 0.5 << "," << r % 2 << "\n";
    std::ofstream spec(scratch.path() / "small.yaml");
    spec << "name: small\nworkdir: out\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [small.csv], params: {shards: 2, label_column: label}}\n"
            "  - {id: stats, op: column_stats, inputs: [import]}\n";
  }
  const CommandResult run = RunToEnd({kCoupler, "run", "small.yaml", "--workers", "1"},
                                     scratch.path(), 120s, scratch.path());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::smatch outputs;
  ASSERT_TRUE(std::regex_search(run.out, outputs, std::regex(R"(outputs: (\S+))"))) << run.out;
  const std::string dir = outputs[1];

  const CommandResult all = RunToEnd({kCoupler, "logs", dir}, scratch.path());
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("==> import/task "), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("==> stats/task "), std::string::npos) << all.out;
  const CommandResult stats =
      RunToEnd({kCoupler, "logs", (scratch.path() / "out" / "latest").string(), "stats"}, scratch.path());
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("==> stats/task "), std::string::npos) << stats.out;
  EXPECT_EQ(stats.out.find("==> import/"), std::string::npos) << stats.out;
  const CommandResult follow = RunToEnd({kCoupler, "logs", dir, "--follow"}, scratch.path());
  EXPECT_EQ(follow.exit_code, 2) << follow.err;
  EXPECT_NE(follow.err.find("--follow needs a running job"), std::string::npos) << follow.err;
  const CommandResult by_id =
      RunToEnd({kCoupler, "logs", "j-000001", "--coordinator", "tcp://127.0.0.1:1", "--insecure"},
               scratch.path());
  EXPECT_NE(by_id.exit_code, 0);
  EXPECT_NE(by_id.err.find("pass its run directory"), std::string::npos) << by_id.err;
}

TEST(TaskLogsTest, AJobFinishedBeforeARestartKeepsItsNodesAndLogs) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::string job;
  const auto done =
      RunJob(cluster, "echo-restart",
             "name: it-logs-restart\nworkdir: work\nnodes:\n" + SmallImport(cluster, 2) +
                 "  - id: echo\n    op: exec\n    inputs: [import]\n    params:\n"
                 "      command: \"echo kept across restarts {shard}\"\n",
             job);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << cluster.Logs();

  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const auto after = cluster.Job(job);
  ASSERT_TRUE(after) << cluster.Logs();
  EXPECT_EQ(after->state, "succeeded");
  ASSERT_EQ(after->nodes.size(), 2u);
  EXPECT_EQ(after->node("echo").state, "done");
  EXPECT_EQ(after->node("echo").done, 2u);
  const CommandResult logs = cluster.Cli({"logs", job, "echo"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_NE(logs.out.find("kept across restarts 0"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("kept across restarts 1"), std::string::npos) << logs.out;
}

// With --keep-jobs 1 the coordinator keeps one finished job in memory: an older one, evicted,
// is answered from the state with its nodes (status, the list newest first, `coupler logs`).
TEST(TaskLogsTest, AJobEvictedFromMemoryKeepsItsNodesAndLogs) {
  Cluster::Options options;
  options.coordinator_args = {"--keep-jobs", "1"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::vector<std::string> jobs;
  for (int i = 0; i < 3; ++i) {
    std::string job;
    const auto done =
        RunJob(cluster, "echo-evict-" + std::to_string(i),
               "name: it-evict\nworkdir: work\nnodes:\n" + SmallImport(cluster, 2) +
                   "  - id: echo\n    op: exec\n    inputs: [import]\n    params:\n"
                   "      command: \"echo evicted " + std::to_string(i) + " {shard}\"\n",
               job);
    ASSERT_TRUE(done) << cluster.Logs();
    ASSERT_EQ(done->state, "succeeded") << done->error << cluster.Logs();
    jobs.push_back(job);
  }
  // The first job left memory (at most a flush later): status still shows its nodes.
  const auto first = cluster.Job(jobs[0]);
  ASSERT_TRUE(first) << cluster.Logs();
  EXPECT_EQ(first->state, "succeeded");
  ASSERT_EQ(first->nodes.size(), 2u);
  EXPECT_EQ(first->node("echo").done, 2u);
  const CommandResult logs = cluster.Cli({"logs", jobs[0], "echo"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_NE(logs.out.find("evicted 0 1"), std::string::npos) << logs.out;
  const CommandResult list = cluster.Cli({"status", "--json", "--limit", "0"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const std::string& job : jobs) EXPECT_NE(list.out.find(job), std::string::npos) << list.out;
  EXPECT_LT(list.out.find(jobs[2]), list.out.find(jobs[0])) << "newest first: " << list.out;
}

TEST(TaskLogsTest, FollowPrintsLinesAsTheyComeAndEndsWithTheJob) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path go = cluster.dir() / "go";
  const fs::path spec = cluster.dir() / "ticks.yaml";
  // The command waits for the follower to have started, so --follow must see lines appended.
  WriteFile(spec, "name: it-logs-follow\nworkdir: work\nnodes:\n" + SmallImport(cluster, 1) +
                      "  - id: ticks\n    op: exec\n    inputs: [import]\n    params:\n"
                      "      timeout: 120\n"
                      "      command: \"echo tick 1; while [ ! -e " +
                      go.string() +
                      " ]; do sleep 0.05; done; echo tick 2; sleep 0.3; echo tick 3\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const fs::path logs = cluster.dir() / "work" / "latest" / "ticks" / "logs";
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const std::string& name : ListDir(logs)) {
          if (name.ends_with(".stdout") && ReadFile(logs / name) == "tick 1\n") return true;
        }
        return false;
      },
      60s))
      << cluster.Logs();
  // Lets the command go on once the follower is (most likely) reading; if the follower starts
  // later it still prints every line, so this delay can make the test weaker, never flaky.
  std::thread release([&] {
    std::this_thread::sleep_for(1s);
    WriteFile(go, "");
  });
  const CommandResult followed = cluster.Cli({"logs", job, "ticks", "--follow"}, 120s);
  release.join();
  ASSERT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_TRUE(std::regex_match(
      followed.out,
      std::regex(R"(==> ticks/task [0-9]+ attempt 0 stdout <==\ntick 1\ntick 2\ntick 3\n)")))
      << followed.out;
  const auto done = cluster.WaitJobFinished(job);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, "succeeded");
}

TEST(TaskLogsTest, ACommandPrintingWithoutEndStaysWithinTheBound) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1, {"--task-log-bytes", "64KiB"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::string job;
  const auto done =
      RunJob(cluster, "flood",
             "name: it-logs-flood\nworkdir: work\nnodes:\n" + SmallImport(cluster, 1) +
                 "  - id: flood\n    op: exec\n    inputs: [import]\n    retries: 0\n"
                 "    params: {command: yes, timeout: 2}\n",
             job);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "failed") << cluster.Logs();
  EXPECT_NE(done->error.find("timed out after 2 s"), std::string::npos) << done->error;

  const fs::path logs = cluster.dir() / "work" / "latest" / "flood" / "logs";
  std::vector<std::string> names = ListDir(logs);
  ASSERT_EQ(names.size(), 1u) << ::testing::PrintToString(names);  // yes prints no stderr
  const fs::path out = logs / names[0];
  ASSERT_TRUE(names[0].ends_with(".attempt-0.stdout")) << names[0];
  EXPECT_LE(fs::file_size(out), 65536u);
  const std::string kept = ReadFile(out);
  const std::optional<job::DroppedMark> mark = job::ParseDroppedLine(kept);
  ASSERT_TRUE(mark) << kept.substr(0, 100);
  EXPECT_GT(mark->dropped, 65536u);  // yes printed far more in 2 s

  const CommandResult tail = cluster.Cli({"logs", job, "flood", "--tail", "3"});
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  EXPECT_TRUE(std::regex_match(
      tail.out, std::regex(R"(==> flood/task [0-9]+ attempt 0 stdout <==\ny\ny\ny\n)")))
      << tail.out;
}

TEST(TaskLogsTest, EachRankOfATightGroupHasItsOwnOutput) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
  std::string job;
  const auto done = RunJob(
      cluster, "group",
      "name: it-logs-group\nworkdir: work\nnodes:\n"
      "  - {id: import, op: import_csv, inputs: [" +
          csv.string() +
          "],"
          " params: {shards: 2, label_column: label}}\n"
          "  - {id: stats, op: column_stats, inputs: [import]}\n"
          "  - {id: standardize, op: standardize, inputs: [import, stats]}\n"
          "  - id: train\n    op: train\n    inputs: [standardize]\n    ranks: 2\n"
          "    params: {config: " +
          (kSourceDir / "examples" / "train-digits.yaml").string() +
          ", epochs: 1}\n"
          "  - id: program\n    op: mpi_exec\n    ranks: 2\n    params:\n"
          "      command: \"mpirun --oversubscribe" +
          root +
          " --timeout 60 -np {ranks} --hostfile {hostfile} --output-filename $COUPLER_RANK_LOGS"
          " sh -c 'echo rank $OMPI_COMM_WORLD_RANK says hello'\"\n",
      job, 180s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << cluster.Logs();

  // The user's own MPI program: rank 1's line in rank 1's file, both in mpirun's combined output.
  const CommandResult program = cluster.Cli({"logs", job, "program"});
  ASSERT_EQ(program.exit_code, 0) << program.err;
  EXPECT_TRUE(std::regex_search(
      program.out,
      std::regex(R"(==> program/task [0-9]+ attempt 0 rank\.1/stdout <==\nrank 1 says hello\n)")))
      << program.out;
  EXPECT_TRUE(std::regex_search(
      program.out,
      std::regex(R"(==> program/task [0-9]+ attempt 0 stdout <==\n(rank [01] says hello\n){2})")))
      << program.out;

  // The train group: each rank's own output; rank 0 reports the result on stdout (the group's
  // one result line), rank 1 where it ran on its stderr.
  const CommandResult train = cluster.Cli({"logs", job, "train"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_TRUE(std::regex_search(
      train.out,
      std::regex(R"(==> train/task [0-9]+ attempt 0 rank\.0/stdout <==\ntest_accuracy )")))
      << train.out;
  const size_t rank1_err = train.out.find("attempt 0 rank.1/stderr <==\n");
  ASSERT_NE(rank1_err, std::string::npos) << train.out;
  const std::string rank1 = train.out.substr(rank1_err, train.out.find("==> ", rank1_err) - rank1_err);
  EXPECT_NE(rank1.find("rank 1 of 2 done: "), std::string::npos) << train.out;
  EXPECT_EQ(train.out.find("rank.1/stdout <==\nrank 1 of 2 done"), std::string::npos)
      << "rank 1's line on stdout, beside rank 0's result: " << train.out;
}

}  // namespace
}  // namespace coupler::itest
