// What is retried, and where, with real processes and keys on: a CSV that does not parse fails
// after one attempt whatever `retries:` says; a command that fails once runs again on the other
// worker; a killed worker's task runs on the other; a shard an exec did not write is named,
// with why, by the task that reads it; a failed gang's error is its program's last lines, said
// once by `coupler status`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

// A script printing the id of the worker running it: its ancestors' command lines hold
// `coupler ... worker ... --id ID` (the task supervisor is a fork of the worker).
constexpr const char* kWorkerIdScript = R"(p=$$
while [ "$p" -gt 1 ]; do
  if tr '\0' '\n' < /proc/$p/cmdline 2>/dev/null | grep -qx worker; then
    tr '\0' '\n' < /proc/$p/cmdline | grep -A1 -x -- --id | tail -n1
    exit 0
  fi
  p=$(cut -d' ' -f4 /proc/$p/stat)
done
echo unknown
)";

std::vector<std::string> Lines(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(ReadFile(p));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

class RetryPolicyTest : public ::testing::Test {
 protected:
  void StartTwoWorkers() {
    ASSERT_TRUE(cluster_.StartCoordinator()) << cluster_.Logs();
    cluster_.StartWorker("w1", 1);
    cluster_.StartWorker("w2", 1);
    ASSERT_TRUE(cluster_.WaitWorkersAlive(2)) << cluster_.Logs();
    WriteFile(cluster_.dir() / "worker_id.sh", kWorkerIdScript);
  }
  std::string Dir() const { return cluster_.dir().string(); }

  Cluster cluster_{Cluster::Options::Timeouts(300, 1500)};
};

TEST_F(RetryPolicyTest, ACsvThatDoesNotParseFailsAfterOneAttemptWithTheParseError) {
  ASSERT_TRUE(cluster_.StartCoordinator()) << cluster_.Logs();
  cluster_.StartWorker("w1", 2);
  ASSERT_TRUE(cluster_.WaitWorkersAlive(1)) << cluster_.Logs();
  {
    std::ofstream csv(cluster_.dir() / "bad.csv");
    csv << "x0,x1\n";
    for (int r = 0; r < 50; ++r) csv << r << ".5," << r * 2 << ".25\n";
    csv << "7.5,abc\n";
  }
  const fs::path spec = cluster_.dir() / "bad.yaml";
  WriteFile(spec, "name: it-parse-error\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [bad.csv]\n"
                  "    retries: 3\n"
                  "    params: {shards: 1, dtypes: {x1: float32}}\n");  // else x1 is text
  std::string why;
  const std::string job = cluster_.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster_.Logs();
  const auto st = cluster_.WaitJobFinished(job, 90s);
  ASSERT_TRUE(st) << cluster_.Logs();
  EXPECT_EQ(st->state, "failed");
  EXPECT_EQ(st->node("import").attempts, 1u) << "retries: 3, but the same bytes fail the same way";
  EXPECT_EQ(st->attempts, 1u);
  EXPECT_NE(st->error.find("line 52"), std::string::npos) << st->error;
  EXPECT_NE(st->error.find("'abc'"), std::string::npos) << st->error;
  EXPECT_NE(st->error.find("not retried"), std::string::npos) << st->error;
  EXPECT_NE(st->node("import").error.find("'abc'"), std::string::npos) << st->node("import").error;
  // The event log says why it was not retried.
  const std::string events = ReadFile(cluster_.state() / "events.jsonl");
  EXPECT_NE(events.find("\"cause\":\"invalid_data\""), std::string::npos) << events;
  EXPECT_EQ(events.find("\"event\":\"task_retried\""), std::string::npos) << events;
}

TEST_F(RetryPolicyTest, ACommandThatFailsOnceRunsAgainOnTheOtherWorker) {
  StartTwoWorkers();
  WriteSyntheticCsv(cluster_.dir() / "in.csv", 40, 2);
  // The first attempt, wherever it runs, fails; any later one copies its input.
  WriteFile(cluster_.dir() / "flaky.sh",
            "w=$(sh " + Dir() + "/worker_id.sh)\n"
            "echo \"$w\" >> " + Dir() + "/attempts.log\n"
            "if [ ! -e " + Dir() + "/failed-once ]; then\n"
            "  echo \"$w\" > " + Dir() + "/failed-once\n"
            "  echo \"transient trouble on $w\" >&2\n"
            "  exit 1\n"
            "fi\n"
            "cp \"$1\" \"$2\"\n");
  const fs::path spec = cluster_.dir() / "flaky.yaml";
  WriteFile(spec, "name: it-flaky\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 1}\n"
                  "  - id: flaky\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 3\n"
                  "    params:\n"
                  "      command: \"sh " + Dir() + "/flaky.sh {input} {output}\"\n");
  std::string why;
  const std::string job = cluster_.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster_.Logs();
  const auto st = cluster_.WaitJobFinished(job, 90s);
  ASSERT_TRUE(st) << cluster_.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << cluster_.Logs();
  EXPECT_EQ(st->node("flaky").attempts, 2u);
  const std::vector<std::string> ran_on = Lines(cluster_.dir() / "attempts.log");
  ASSERT_EQ(ran_on.size(), 2u);
  EXPECT_TRUE(ran_on[0] == "w1" || ran_on[0] == "w2") << ran_on[0];
  EXPECT_NE(ran_on[1], ran_on[0]) << "the retry went back to the worker that failed it";
  EXPECT_EQ(ReadFile(cluster_.dir() / "work" / "flaky" / CommandPartName(0)),
            ReadFile(cluster_.dir() / "work" / "import" / PartName(0)));
}

// A command says "do not retry me" by its exit status: 65 (COUPLER_NO_RETRY_EXIT in its
// environment), a code listed in no_retry_exit_codes, or one missing from retry_on_exit_codes.
// Each fails after one attempt, whatever `retries:` says, and the error says why.
TEST_F(RetryPolicyTest, ACommandsExitStatusCanSayNotToRetryIt) {
  ASSERT_TRUE(cluster_.StartCoordinator()) << cluster_.Logs();
  cluster_.StartWorker("w1", 1);
  ASSERT_TRUE(cluster_.WaitWorkersAlive(1)) << cluster_.Logs();
  WriteSyntheticCsv(cluster_.dir() / "in.csv", 20, 2);
  struct Case {
    std::string name, exit, params, why;
  };
  const std::vector<Case> cases = {
      {"own", "\"$COUPLER_NO_RETRY_EXIT\"", "", "exit status 65 asks not to be retried"},
      {"listed", "3", ", no_retry_exit_codes: [3, 4]", "exit status 3 is in no_retry_exit_codes"},
      {"unlisted", "1", ", retry_on_exit_codes: [75]",
       "exit status 1 is not in retry_on_exit_codes"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const fs::path log = cluster_.dir() / (k.name + ".log");
    WriteFile(cluster_.dir() / (k.name + ".sh"),
              "echo attempt >> " + log.string() + "\necho 'bad field: colour' >&2\nexit " +
                  k.exit + "\n");
    const fs::path spec = cluster_.dir() / (k.name + ".yaml");
    WriteFile(spec, "name: it-exit-" + k.name + "\nworkdir: work-" + k.name + "\nnodes:\n"
                    "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 1}}\n"
                    "  - id: step\n    op: exec\n    inputs: [import]\n    retries: 3\n"
                    "    params: {command: \"sh " + Dir() + "/" + k.name + ".sh\"" + k.params +
                    "}\n");
    std::string why;
    const std::string job = cluster_.Submit(spec, &why);
    ASSERT_FALSE(job.empty()) << why << cluster_.Logs();
    const auto st = cluster_.WaitJobFinished(job, 60s);
    ASSERT_TRUE(st) << cluster_.Logs();
    EXPECT_EQ(st->state, "failed");
    EXPECT_EQ(st->node("step").attempts, 1u) << st->error;
    EXPECT_EQ(Lines(log).size(), 1u);
    EXPECT_NE(st->error.find("not retried"), std::string::npos) << st->error;
    EXPECT_NE(st->error.find(k.why), std::string::npos) << st->error;
    EXPECT_NE(st->error.find("bad field: colour"), std::string::npos) << st->error;
  }
}

TEST_F(RetryPolicyTest, AKilledWorkersTaskRunsOnTheOtherWorker) {
  StartTwoWorkers();
  WriteSyntheticCsv(cluster_.dir() / "in.csv", 40, 2);
  // The first attempt says where it runs and then hangs until its worker is killed (or, should
  // it outlive its worker, until the test's folder is gone).
  WriteFile(cluster_.dir() / "hang.sh",
            "w=$(sh " + Dir() + "/worker_id.sh)\n"
            "echo \"$w\" >> " + Dir() + "/attempts.log\n"
            "if [ ! -e " + Dir() + "/started ]; then\n"
            "  echo \"$w\" > " + Dir() + "/started.tmp && mv " + Dir() + "/started.tmp " +
                Dir() + "/started\n"
            "  i=0\n"
            "  while [ -d " + Dir() + " ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
            "  exit 1\n"
            "fi\n"
            "cp \"$1\" \"$2\"\n");
  const fs::path spec = cluster_.dir() / "hang.yaml";
  WriteFile(spec, "name: it-lost\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 1}\n"
                  "  - id: hang\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 1\n"
                  "    params:\n"
                  "      command: \"sh " + Dir() + "/hang.sh {input} {output}\"\n");
  std::string why;
  const std::string job = cluster_.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster_.Logs();
  const fs::path started = cluster_.dir() / "started";
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(started); }, 60s, 20ms)) << cluster_.Logs();
  const std::vector<std::string> first = Lines(started);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(first[0] == "w1" || first[0] == "w2") << first[0];
  const std::string other = first[0] == "w1" ? "w2" : "w1";
  // The coordinator must have heard it running (charged as a lost attempt, not a queued one).
  ASSERT_TRUE(WaitUntil([&] {
    auto s = cluster_.Job(job);
    return s && s->node("hang").running == 1;
  }, 30s, 20ms)) << cluster_.Logs();
  cluster_.worker(first[0]).Kill();

  const auto st = cluster_.WaitJobFinished(job, 90s);
  ASSERT_TRUE(st) << cluster_.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << cluster_.Logs();
  EXPECT_EQ(st->node("hang").attempts, 2u);
  const std::vector<std::string> ran_on = Lines(cluster_.dir() / "attempts.log");
  ASSERT_EQ(ran_on.size(), 2u);
  EXPECT_EQ(ran_on[1], other);
  EXPECT_EQ(cluster_.Workers()[first[0]].first, "lost");
}

TEST_F(RetryPolicyTest, AShardAnExecDidNotWriteIsNamedWithWhyDownstream) {
  StartTwoWorkers();
  WriteSyntheticCsv(cluster_.dir() / "in.csv", 60, 2);
  const fs::path spec = cluster_.dir() / "gap.yaml";
  WriteFile(spec, "name: it-gap\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 2}\n"
                  "  - id: clean\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    params:\n"
                  "      command: \"[ {shard} = 1 ] || cp {input} {output}\"\n"
                  "  - id: stats\n"
                  "    op: column_stats\n"
                  "    inputs: [clean]\n"
                  "    retries: 2\n");
  std::string why;
  const std::string job = cluster_.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster_.Logs();
  const auto st = cluster_.WaitJobFinished(job, 90s);
  ASSERT_TRUE(st) << cluster_.Logs();
  EXPECT_EQ(st->state, "failed");
  EXPECT_EQ(st->node("clean").state, "done");
  const std::string& error = st->node("stats").error;
  EXPECT_NE(error.find("input shard 1 of node 'clean' ("), std::string::npos) << error;
  EXPECT_NE(error.find(CommandPartName(1) + ") is missing: its exec task exited 0 without writing "
                       "{output} (command: [ {shard} = 1 ] || cp {input} {output})"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("No such file"), std::string::npos) << error;
  EXPECT_NE(st->error.find("input shard 1 of node 'clean'"), std::string::npos) << st->error;
  // No retry can make the shard appear: the reading task fails after one attempt.
  EXPECT_NE(error.find("failed after 1 attempt"), std::string::npos) << error;
}

TEST_F(RetryPolicyTest, AFailedGangsErrorIsItsProgramsLastLinesSaidOnceInStatus) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  StartTwoWorkers();
  // 30 lines of stderr from each rank, then mpirun's own banner blocks about the exit.
  const fs::path spec = cluster_.dir() / "gang.yaml";
  WriteFile(spec, "name: it-gang-error\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: train\n"
                  "    op: mpi_exec\n"
                  "    ranks: 2\n"
                  "    retries: 0\n"
                  "    params:\n"
                  "      command: \"{launch} sh -c 'for i in $(seq 30); do echo \\\"bad line $i\\\" >&2;"
                  " done; exit 3'\"\n"
                  "      timeout: 60\n");
  std::string why;
  const std::string job = cluster_.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster_.Logs();
  const auto st = cluster_.WaitJobFinished(job, 90s);
  ASSERT_TRUE(st) << cluster_.Logs();
  ASSERT_EQ(st->state, "failed");
  const std::string error = st->node("train").error;
  EXPECT_NE(error.find("mpi_exec (2 ranks) exited with status 3: bad line 28 | bad line 29 | "
                       "bad line 30"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("bad line 27"), std::string::npos) << error;
  EXPECT_EQ(error.find("mpirun"), std::string::npos) << "mpirun's banner: " << error;
  EXPECT_EQ(error.find("mpi_exec: mpi_exec"), std::string::npos) << error;

  const CommandResult status = cluster_.Cli({"status", job});
  ASSERT_EQ(status.exit_code, 0) << status.out << status.err;
  size_t said = 0;
  for (size_t at = status.out.find("bad line 30"); at != std::string::npos;
       at = status.out.find("bad line 30", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 1u) << status.out;
  EXPECT_NE(status.out.find("error: node 'train': task 0 (gang) failed after 1 attempt: "
                            "mpi_exec (2 ranks)"),
            std::string::npos)
      << status.out;
}

}  // namespace
}  // namespace coupler::itest
