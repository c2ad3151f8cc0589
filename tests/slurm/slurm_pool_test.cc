// scripts/slurm/ against a real Slurm: munged, slurmctld and slurmd of a one-node cluster
// made for each test in its own temporary directory (tests/slurm/one_node_cluster.sh), jobs
// submitted with sbatch as an operator would, the real `coupler` binary in them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <regex>
#include <set>

#include <rapidjson/document.h>

#include "runtime/io/shard_file.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

const fs::path kClusterScript = kSourceDir / "tests" / "slurm" / "one_node_cluster.sh";
const fs::path kPoolScript = kSourceDir / "scripts" / "slurm" / "coupler-pool.sbatch";
const fs::path kWorkersScript = kSourceDir / "scripts" / "slurm" / "coupler-workers.sbatch";
const fs::path kTrainScript = kSourceDir / "scripts" / "slurm" / "coupler-train.sbatch";

// The processes whose command line mentions `needle` (a test's own directory): what a test
// started and must not leave behind.
std::vector<std::string> ProcessesMentioning(const std::string& needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (name == std::to_string(getpid())) continue;
    std::string cmdline = ReadFile(entry.path() / "cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(needle) != std::string::npos) found.push_back(name + ": " + cmdline);
  }
  return found;
}

// "Submitted batch job 12" → "12".
std::string SubmittedJob(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex(R"(Submitted batch job ([0-9]+))")) ? m[1].str() : "";
}

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root: slurmd starts jobs as their users (CI runs as root)";
    }
    for (const char* program : {"munged", "slurmctld", "slurmd", "sbatch", "srun", "scancel"}) {
      if (FindProgram(program).empty()) {
        // CI installs them: a missing daemon there is a broken setup, not a reason to skip.
        if (std::getenv("CI") != nullptr) FAIL() << program << " is not installed in CI";
        GTEST_SKIP() << program << " is not installed: COUPLER_SLURM=1 scripts/install-deps.sh";
      }
    }
    cluster_dir_ = scratch_ / "slurm";
    const CommandResult r =
        RunToEnd({"/bin/bash", kClusterScript.string(), "start", cluster_dir_.string()},
                 scratch_.path(), 120s);
    started_ = true;
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    // sbatch, srun and scancel find the cluster through it; jobs inherit this environment
    // (sbatch's default --export=ALL), the coupler binary included.
    ::setenv("SLURM_CONF", (cluster_dir_ / "slurm.conf").c_str(), 1);
    ::setenv("COUPLER", kCoupler.c_str(), 1);
    // The jobs run as root here (a throwaway cluster); the pool script refuses that otherwise.
    ::setenv("COUPLER_ALLOW_ROOT", "1", 1);
  }

  void TearDown() override {
    if (!started_) return;
    const CommandResult r =
        RunToEnd({"/bin/bash", kClusterScript.string(), "stop", cluster_dir_.string()},
                 scratch_.path(), 120s);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char* pid_file : {"slurmctld.pid", "slurmd.pid", "munge/munged.pid"}) {
      EXPECT_FALSE(fs::exists(cluster_dir_ / pid_file)) << pid_file << " left behind";
    }
    // Nothing the test started lives on: no daemon, no job, no coupler process.
    std::vector<std::string> left;
    WaitUntil([&] { return (left = ProcessesMentioning(scratch_.path().string())).empty(); }, 30s);
    EXPECT_TRUE(left.empty()) << "left running: " << testing::PrintToString(left);
    for (const char* name : {"SLURM_CONF", "COUPLER", "COUPLER_STATE", "COUPLER_ALLOW_ROOT"}) {
      ::unsetenv(name);
    }
  }

  // A command (found on PATH: the harness executes a path) run to its end in the scratch dir.
  CommandResult Slurm(std::vector<std::string> argv, std::chrono::seconds timeout = 60s) {
    if (argv[0].find('/') == std::string::npos) argv[0] = FindProgram(argv[0]);
    return RunToEnd(argv, scratch_.path(), timeout, scratch_.path());
  }

  // coupler-workers.sbatch as a 2-task array joining `pool` (`worker_args`: its
  // COUPLER_WORKER_ARGS; `sbatch_args`: more for sbatch), both workers then alive. The jobs'
  // environment only carries the worker keys: this process's own clients keep theirs. Returns
  // the array's job id, "" (with a failure added) when they did not join.
  std::string StartWorkerPair(Cluster& pool, const std::string& worker_args,
                              const std::vector<std::string>& sbatch_args = {}) {
    const std::string exported = "--export=ALL,COUPLER_COORDINATOR=" + pool.endpoint() +
                                 ",COUPLER_KEYS=" + (pool.keys() / "local-worker").string() +
                                 ",COUPLER_WORKER_ARGS=" + worker_args;
    std::vector<std::string> argv = {"sbatch", "--array=1-2"};
    argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
    argv.insert(argv.end(), {exported, "--output", (scratch_ / "worker-%A_%a.out").string(),
                             kWorkersScript.string()});
    const CommandResult submitted = Slurm(argv);
    const std::string array = SubmittedJob(submitted.out);
    if (submitted.exit_code != 0 || array.empty()) {
      ADD_FAILURE() << submitted.out << submitted.err << SlurmLogs();
      return "";
    }
    const std::string first = "slurm-" + array + "_1";
    const std::string second = "slurm-" + array + "_2";
    if (!WaitUntil(
            [&] {
              auto w = pool.WorkerViews();
              return w.count(first) && w[first].state == "alive" && w.count(second) &&
                     w[second].state == "alive";
            },
            60s)) {
      ADD_FAILURE() << testing::PrintToString(pool.Workers()) << pool.Logs()
                    << "\n--- workers ---\n" << ReadFile(scratch_ / ("worker-" + array + "_1.out"))
                    << ReadFile(scratch_ / ("worker-" + array + "_2.out")) << SlurmLogs();
      return "";
    }
    return array;
  }

  std::string SlurmLogs() const {
    return "\n--- slurmctld ---\n" + ReadFile(cluster_dir_ / "log" / "slurmctld.log") +
           "\n--- slurmd ---\n" + ReadFile(cluster_dir_ / "log" / "slurmd.log");
  }

  TempDir scratch_;
  fs::path cluster_dir_;
  bool started_ = false;
};

// The example graph as shipped, with its workdir in this test's directory and its relative
// paths (data, training config) made absolute.
fs::path DigitsPipelineCopy(const fs::path& dir) {
  std::string spec = ReadFile(kSourceDir / "examples" / "digits-pipeline.yaml");
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = spec.find(from);
    if (at != std::string::npos) spec.replace(at, from.size(), to);
    return at != std::string::npos;
  };
  EXPECT_TRUE(replace("workdir: ../coupler-work/digits-pipeline", "workdir: " + (dir / "work").string()));
  EXPECT_TRUE(replace("../data/digits.csv", (kSourceDir / "data" / "digits.csv").string()));
  EXPECT_TRUE(replace("config: train-digits.yaml",
                      "config: " + (kSourceDir / "examples" / "train-digits.yaml").string()));
  const fs::path path = dir / "digits-pipeline.yaml";
  WriteFile(path, spec);
  return path;
}

// A job of `shards` naps of a second each (exec tasks over the digits' shards), its workdir in
// `dir`: long enough to be caught running, short enough to finish.
fs::path NapsSpec(const fs::path& dir, int shards) {
  const fs::path spec = dir / "naps.yaml";
  WriteFile(spec, "name: naps\n"
                  "workdir: " + (dir / "work").string() + "\n"
                  "nodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" +
                      (kSourceDir / "data" / "digits.csv").string() +
                      "], params: {shards: " + std::to_string(shards) + ", label_column: label}}\n"
                  "  - id: nap\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    params: {command: \"sleep 1; cp {input} {output}\", timeout: 120}\n");
  return spec;
}

// The train node's task logs (stdout, then stderr) of its first attempt.
std::string TrainLog(const fs::path& work) {
  std::string text;
  std::error_code ec;
  for (const char* stream : {".attempt-0.stdout", ".attempt-0.stderr"}) {
    for (const auto& e : fs::directory_iterator(work / "train" / "logs", ec)) {
      if (e.path().filename().string().ends_with(stream)) text += ReadFile(e.path());
    }
  }
  return text;
}

TEST_F(SlurmTest, APoolAllocationRunsTheDigitsPipelineWithItsTrainingAsASlurmStep) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv")) << "run scripts/fetch-digits.sh";
  const fs::path spec = DigitsPipelineCopy(scratch_.path());
  const fs::path state = scratch_ / "pool";
  ::setenv("COUPLER_STATE", state.c_str(), 1);
  const fs::path out = scratch_ / "pool.out";
  const CommandResult r =
      Slurm({"sbatch", "--wait", "--output", out.string(), kPoolScript.string(), spec.string()},
            400s);
  const std::string output = ReadFile(out);
  const std::string logs = output + "\n--- coordinator ---\n" +
                           ReadFile(state / "coordinator.log") + "\n--- workers ---\n" +
                           ReadFile(state / "workers.log");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << logs << SlurmLogs();
  EXPECT_NE(output.find("succeeded: 44/44 tasks"), std::string::npos) << logs;
  EXPECT_NE(output.find("coordinator up: workers tcp://"), std::string::npos) << logs;

  // Held-out accuracy, as evaluate committed it.
  const fs::path work = scratch_ / "work" / "latest";
  auto accuracy = io::ReadShardFile((work / "evaluate" / "part-00000.npz").string());
  ASSERT_TRUE(accuracy.ok()) << accuracy.status().ToString() << logs;
  ASSERT_NE(accuracy->Find("accuracy"), nullptr);
  EXPECT_GE(accuracy->Find("accuracy")->values<double>()[0], 0.95);

  // The group ran as one Slurm step of the pool's job: the worker says so, every rank got
  // its rank from PMIx (srun labels each line with it), and rank 0 names the step.
  const std::string train = TrainLog(work);
  EXPECT_NE(train.find("coupler: the group starts as Slurm step coupler."), std::string::npos)
      << train;
  EXPECT_TRUE(std::regex_search(train, std::regex(R"(0: .*rank 0 trains on cpu in Slurm step [0-9]+\.[0-9]+)")))
      << train;
  EXPECT_NE(train.find("1: rank 1 of 2 done"), std::string::npos) << train;

  // The worker took its slots and labels from the allocation, and the end drained the pool.
  const std::string coordinator_log = ReadFile(state / "coordinator.log");
  EXPECT_NE(coordinator_log.find("stopping: the pool is drained"), std::string::npos) << logs;
  EXPECT_NE(ReadFile(state / "workers.log").find("gangs start as its steps"), std::string::npos)
      << logs;
}

// Submitted as root, the pool script says why it will not run and starts nothing: no
// coordinator, no state.
TEST_F(SlurmTest, ThePoolScriptRefusesRootUnlessAllowed) {
  ::unsetenv("COUPLER_ALLOW_ROOT");
  const fs::path state = scratch_ / "pool";
  ::setenv("COUPLER_STATE", state.c_str(), 1);
  const fs::path out = scratch_ / "pool.out";
  const CommandResult r = Slurm({"sbatch", "--wait", "--output", out.string(), kPoolScript.string(),
                                 NapsSpec(scratch_.path(), 1).string()},
                                120s);
  const std::string output = ReadFile(out);
  EXPECT_NE(r.exit_code, 0) << r.out << r.err << output;
  EXPECT_NE(output.find("coupler-pool: refusing to run the pool as root"), std::string::npos)
      << output << SlurmLogs();
  EXPECT_NE(output.find("docs/slurm.md"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(state)) << "the refused pool made its state";
}

// A job graph that fails validation: submit exits 2 at once, before the worker step has
// registered. The script ends within its drain time with the spec's error and exit 2, instead
// of holding the allocation while its worker waits for a coordinator that has stopped.
TEST_F(SlurmTest, APoolWhoseGraphFailsValidationEndsAtOnceWithExit2) {
  const fs::path spec = scratch_ / "broken.yaml";
  WriteFile(spec, "name: broken\nnodes:\n  - {id: a, op: colum_stats}\n");
  const fs::path state = scratch_ / "pool";
  const fs::path out = scratch_ / "pool.out";
  const auto started = std::chrono::steady_clock::now();
  const CommandResult r =
      Slurm({"sbatch", "--wait", "--export=ALL,COUPLER_DRAIN_S=20,COUPLER_STATE=" + state.string(),
             "--output", out.string(), kPoolScript.string(), spec.string()},
            240s);
  const auto took = std::chrono::steady_clock::now() - started;
  const std::string output = ReadFile(out);
  ASSERT_NE(r.exit_code, -1) << "the pool held its allocation\n" << output
                             << ReadFile(state / "workers.log") << SlurmLogs();
  EXPECT_EQ(r.exit_code, 2) << output << ReadFile(state / "workers.log");
  EXPECT_NE(output.find("unknown op 'colum_stats'"), std::string::npos) << output;
  EXPECT_LT(took, std::chrono::seconds(20 + 60)) << "longer than the drain time allows\n" << output;
  std::string left;
  for (const std::string& p : ProcessesMentioning(state.string())) left += p + "\n";
  EXPECT_TRUE(left.empty()) << "left running:\n" << left;
}

TEST_F(SlurmTest, AWorkerArrayJoinsARunningCoordinatorAndAScancelledWorkerLosesNothing) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv")) << "run scripts/fetch-digits.sh";
  Cluster pool;
  ASSERT_TRUE(pool.StartCoordinator()) << pool.Logs();
  // One task at a time each, so both hold work and the cancelled one holds a running task.
  const std::string array = StartWorkerPair(pool, "--prefetch 1 --heartbeat-ms 300");
  ASSERT_FALSE(array.empty());
  const std::string first = "slurm-" + array + "_1";
  const std::string second = "slurm-" + array + "_2";

  const fs::path spec = NapsSpec(scratch_.path(), 12);
  std::string why;
  const std::string job = pool.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why;

  // Both joined workers get work; the first is cancelled while it runs a task.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto w = pool.WorkerViews();
        return w[first].tasks_done > 0 && w[second].tasks_done > 0 && w[first].running > 0;
      },
      120s))
      << testing::PrintToString(pool.Workers()) << pool.Logs();
  const CommandResult cancelled = Slurm({"scancel", array + "_1"});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;

  const auto final_status = pool.WaitJobFinished(job, 180s);
  ASSERT_TRUE(final_status) << pool.Logs();
  EXPECT_EQ(final_status->state, "succeeded") << final_status->error << pool.Logs();
  EXPECT_EQ(final_status->done, 24u);
  // Nothing it held was lost and run again: every task ran exactly once.
  EXPECT_EQ(final_status->attempts, final_status->done) << pool.Logs();
  // It drained (finished, reported, said goodbye) rather than vanished.
  EXPECT_EQ(pool.WorkerViews()[first].state, "drained")
      << testing::PrintToString(pool.Workers()) << ReadFile(scratch_ / ("worker-" + array + "_1.out"));
  ASSERT_EQ(Slurm({"scancel", array}).exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return pool.WorkerViews()[second].state == "drained"; }, 60s));
}

// Two Slurm jobs on one node (a worker array of 1 CPU each) share its address but not their
// allocations: a 2-rank gang must not run both ranks in one job's single CPU, however many
// slots its worker offers loose tasks. It waits, saying why.
TEST_F(SlurmTest, TwoWorkerJobsOnOneNodeNeverRunAGangBeyondOneJobsCpus) {
  Cluster pool;
  ASSERT_TRUE(pool.StartCoordinator()) << pool.Logs();
  const std::string array =
      StartWorkerPair(pool, "--slots 2 --heartbeat-ms 300", {"--cpus-per-task=1"});
  ASSERT_FALSE(array.empty());
  const std::string first = "slurm-" + array + "_1";
  const std::string second = "slurm-" + array + "_2";
  // Each offers 2 slots for loose tasks: 4 on the node, where the gang would once have fit.
  EXPECT_EQ(pool.WorkerViews()[first].slots, 2u);
  EXPECT_EQ(pool.WorkerViews()[second].slots, 2u);

  const fs::path spec = scratch_ / "gang.yaml";
  WriteFile(spec, "name: gang\nworkdir: " + (scratch_ / "work").string() +
                      "\nnodes:\n  - {id: g, op: mpi_exec, ranks: 2, params: {command: \"true\"}}\n");
  std::string why;
  const std::string job = pool.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why;
  std::optional<JobView> seen;
  ASSERT_TRUE(WaitUntil(
      [&] {
        seen = pool.Job(job);
        return seen && seen->node("g").reason.find("shared by several Slurm jobs") !=
                           std::string::npos;
      },
      30s))
      << (seen ? seen->state + ": " + seen->node("g").reason : "no status") << pool.Logs();
  EXPECT_EQ(seen->state, "queued");
  EXPECT_THAT(seen->node("g").reason, testing::HasSubstr("needs 2 ranks"));
  EXPECT_TRUE(seen->node("g").hosts.empty());
  EXPECT_EQ(seen->attempts, 0u);

  ASSERT_EQ(pool.Cli({"cancel", job}).exit_code, 0);
  ASSERT_EQ(Slurm({"scancel", array}).exit_code, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        auto w = pool.WorkerViews();
        return w[first].state == "drained" && w[second].state == "drained";
      },
      60s))
      << testing::PrintToString(pool.Workers());
}

// `coupler status JOB --json` through a pool's client endpoint and keys.
std::optional<JobView> PoolJob(const fs::path& state, const std::string& clients,
                               const std::string& job, const fs::path& scratch) {
  const CommandResult r = RunToEnd({kCoupler, "status", job, "--json", "--clients", clients,
                                    "--keys", (state / "keys" / "local-client").string()},
                                   scratch, 30s);
  rapidjson::Document d;
  if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError()) return std::nullopt;
  return ParseJob(d);
}

std::string ReadyLine(const fs::path& ready, const std::string& key) {
  std::smatch m;
  const std::string text = ReadFile(ready);
  return std::regex_search(text, m, std::regex("(^|\n)" + key + "=([^\n]+)")) ? m[2].str() : "";
}

TEST_F(SlurmTest, ScancelOfAPoolDrainsItsWorkersAndCommitsWhatTheyHeld) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv")) << "run scripts/fetch-digits.sh";
  const fs::path spec = NapsSpec(scratch_.path(), 20);
  const fs::path state = scratch_ / "pool";
  const std::string exported = "--export=ALL,COUPLER_STATE=" + state.string() +
                               ",COUPLER_WORKER_ARGS=--prefetch 1 --heartbeat-ms 300";
  const fs::path out = scratch_ / "pool.out";
  const CommandResult submitted =
      Slurm({"sbatch", exported, "--output", out.string(), kPoolScript.string(), spec.string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err << SlurmLogs();
  const std::string slurm_job = SubmittedJob(submitted.out);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(state / "pool.env"); }, 60s))
      << ReadFile(out) << SlurmLogs();
  const std::string clients = ReadyLine(state / "ready", "clients");
  ASSERT_FALSE(clients.empty()) << ReadFile(state / "ready");

  // Mid-job: some naps done, some running, the rest queued.
  std::optional<JobView> before;
  ASSERT_TRUE(WaitUntil(
      [&] {
        before = PoolJob(state, clients, "j-000001", scratch_.path());
        return before && before->node("nap").done >= 2 && before->running > 0;
      },
      120s))
      << ReadFile(out) << ReadFile(state / "coordinator.log");
  ASSERT_EQ(Slurm({"scancel", slurm_job}).exit_code, 0);
  ASSERT_TRUE(WaitUntil(
      [&] { return Slurm({"squeue", "-h", "-j", slurm_job}).out.find(slurm_job) == std::string::npos; },
      120s));
  const std::string output = ReadFile(out);
  const std::string coordinator_log = ReadFile(state / "coordinator.log");
  EXPECT_NE(output.find("received a stop signal"), std::string::npos) << output;
  EXPECT_NE(coordinator_log.find("stopping: the pool is drained"), std::string::npos)
      << coordinator_log << ReadFile(state / "workers.log");

  // A coordinator started on the state again finds what the drained workers finished committed:
  // at least every nap that ran at the cancel, each attempted once, the rest still to do.
  const int port = FreePortPair();
  Process::Options o;
  o.output = scratch_.path();
  o.name = "coordinator-again";
  Process again = Process::Spawn({kCoupler, "coordinator", "--state", state.string(), "--listen",
                                  "tcp://127.0.0.1:" + std::to_string(port), "--ready-file",
                                  (scratch_ / "ready-again").string(), "--http", "off"},
                                 o);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(scratch_ / "ready-again"); }, 30s)) << again.err();
  const auto after = PoolJob(state, ReadyLine(scratch_ / "ready-again", "clients"), "j-000001",
                             scratch_.path());
  ASSERT_TRUE(after) << again.err();
  EXPECT_GE(after->node("nap").done, before->node("nap").done + before->running);
  EXPECT_LT(after->done, after->total) << "the cancel came too late to test anything";
  EXPECT_EQ(after->attempts, after->done) << "a task held at the cancel was lost";
  again.Signal(SIGTERM);
  EXPECT_TRUE(again.WaitExit(30s));
}

// An mpi_exec node's {launch} inside an allocation is the gang's srun step: each rank gets
// its rank and the group's size from Slurm, and its lines reach the task log labelled.
TEST_F(SlurmTest, AnMpiExecNodesLaunchPlaceholderIsASlurmStepInsideAPool) {
  const fs::path spec = scratch_ / "launch.yaml";
  WriteFile(scratch_ / "small.csv", "x,y\n1,2\n3,4\n5,6\n");
  WriteFile(spec, "name: launch\n"
                  "workdir: " + (scratch_ / "work").string() + "\n"
                  "nodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" + (scratch_ / "small.csv").string() +
                      "], params: {shards: 2}}\n"
                  "  - id: program\n"
                  "    op: mpi_exec\n"
                  "    inputs: [import]\n"
                  "    ranks: 2\n"
                  "    params:\n"
                  "      command: \"{launch} sh -c 'echo rank $SLURM_PROCID of $SLURM_NTASKS in "
                  "step $SLURM_JOB_ID.$SLURM_STEP_ID'\"\n");
  const fs::path state = scratch_ / "pool";
  const fs::path out = scratch_ / "pool.out";
  const CommandResult r = Slurm({"sbatch", "--wait", "--export=ALL,COUPLER_STATE=" + state.string(),
                                 "--output", out.string(), kPoolScript.string(), spec.string()},
                                300s);
  ASSERT_EQ(r.exit_code, 0) << ReadFile(out) << ReadFile(state / "workers.log") << SlurmLogs();
  std::string log;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(scratch_ / "work" / "latest" / "program" / "logs", ec)) {
    if (e.path().filename().string().ends_with(".stdout")) log += ReadFile(e.path());
  }
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(0: rank 0 of 2 in step [0-9]+\.[0-9]+)"))) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(1: rank 1 of 2 in step [0-9]+\.[0-9]+)"))) << log;
}

// docs/autoscale.md's Slurm recipe, as written: the pool grows by job arrays of
// coupler-workers.sbatch and shrinks by `coupler drain`, after which each Slurm job ends.
TEST_F(SlurmTest, AutoscaleGrowsThePoolWithWorkerArraysAndDrainsThemAway) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv")) << "run scripts/fetch-digits.sh";
  Cluster pool;
  ASSERT_TRUE(pool.StartCoordinator()) << pool.Logs();
  const fs::path spec = NapsSpec(scratch_.path(), 8);
  std::string why;
  const std::string job = pool.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why;

  const std::string client_keys = (pool.keys() / "local-client").string();
  const std::string up = FindProgram("sbatch") + " --array=1-{n} --export=ALL,COUPLER_COORDINATOR=" +
                         pool.endpoint() + ",COUPLER_KEYS=" + (pool.keys() / "local-worker").string() +
                         ",COUPLER_WORKER_ARGS='--prefetch 1 --heartbeat-ms 300' --output " +
                         (scratch_ / "worker-%A_%a.out").string() + " " + kWorkersScript.string();
  const std::string down = kCoupler + " drain {worker} --coordinator " + pool.endpoint() +
                           " --keys " + client_keys;
  Process::Options o;
  o.output = scratch_.path();
  o.name = "autoscale";
  o.deadline = 300s;
  Process autoscale = Process::Spawn(
      {kCoupler, "autoscale", "--coordinator", pool.endpoint(), "--keys", client_keys, "--min",
       "0", "--max", "2", "--interval", "500ms", "--cooldown", "2s", "--launch-timeout", "60s",
       "--up", up, "--down", down},
      o);
  ASSERT_TRUE(autoscale.started());

  // Grows to 2 Slurm workers (one CPU each on this 2-CPU node), never more, and the job ends.
  size_t most = 0;
  std::set<std::string> seen;
  auto sample = [&] {
    size_t serving = 0;
    for (const auto& [id, w] : pool.WorkerViews()) {
      if (w.state == "alive" || w.state == "silent" || w.state == "draining") ++serving;
      seen.insert(id);
    }
    most = std::max(most, serving);
  };
  const auto final_status = pool.WaitJobFinished(job, 240s);
  sample();
  ASSERT_TRUE(final_status) << autoscale.out() << autoscale.err() << pool.Logs() << SlurmLogs();
  EXPECT_EQ(final_status->state, "succeeded") << final_status->error;
  EXPECT_EQ(final_status->attempts, final_status->done);
  EXPECT_THAT(autoscale.out(), testing::HasSubstr("autoscale: up 2"));
  for (const std::string& id : seen) EXPECT_TRUE(id.starts_with("slurm-")) << id;

  // Then back to 0: each worker drained, its Slurm job ended.
  ASSERT_TRUE(WaitUntil(
      [&] {
        sample();
        auto views = pool.WorkerViews();
        const bool drained = !views.empty() && std::all_of(views.begin(), views.end(), [](auto& v) {
          return v.second.state == "drained";
        });
        return drained && Slurm({"squeue", "-h"}).out.empty();
      },
      120s))
      << autoscale.out() << testing::PrintToString(pool.Workers()) << Slurm({"squeue"}).out;
  EXPECT_LE(most, 2u) << "more workers than --max";
  EXPECT_GE(seen.size(), 2u) << autoscale.out();
  EXPECT_THAT(autoscale.out(), testing::HasSubstr("autoscale: drain slurm-"));
  autoscale.Signal(SIGTERM);
  EXPECT_TRUE(autoscale.WaitExit(30s));
}

TEST_F(SlurmTest, TrainUnderSrunMatchesTrainUnderMpirunBitForBit) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv")) << "run scripts/fetch-digits.sh";
  const std::vector<std::string> args = {
      (kSourceDir / "examples" / "train-digits.yaml").string(),
      "--set", "data=" + (kSourceDir / "data" / "digits.csv").string(),
      "--set", "epochs=3",
      "--set", "checkpoint_every=0",
      "--set", "checkpoint_dir=" + (scratch_ / "checkpoints").string()};
  // The documented example: `srun --mpi=pmix coupler train CONFIG` in a 2-task allocation.
  std::vector<std::string> srun = {"sbatch", "--wait", "--ntasks=2", "--output",
                                   (scratch_ / "train.out").string(), kTrainScript.string()};
  srun.insert(srun.end(), args.begin(), args.end());
  srun.insert(srun.end(), {"--weights-out", (scratch_ / "srun.npy").string(), "--metrics-out",
                           (scratch_ / "srun.json").string()});
  const CommandResult s = Slurm(srun, 300s);
  const std::string srun_out = ReadFile(scratch_ / "train.out");
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err << srun_out << SlurmLogs();
  EXPECT_TRUE(std::regex_search(srun_out, std::regex(R"(rank 0 trains on cpu in Slurm step [0-9]+\.0)")))
      << srun_out;

  std::vector<std::string> mpirun = {COUPLER_MPIEXEC, "--allow-run-as-root", "--oversubscribe",
                                     "-np", "2", kCoupler, "train"};
  mpirun.insert(mpirun.end(), args.begin(), args.end());
  mpirun.insert(mpirun.end(), {"--weights-out", (scratch_ / "mpirun.npy").string(),
                               "--metrics-out", (scratch_ / "mpirun.json").string()});
  const CommandResult m = Slurm(mpirun, 300s);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_EQ(m.err.find("Slurm step"), std::string::npos) << m.err;

  for (const char* file : {"srun.json", "mpirun.json"}) {
    EXPECT_NE(ReadFile(scratch_ / file).find("\"world_size\":2"), std::string::npos) << file;
  }
  const std::string a = ReadFile(scratch_ / "srun.npy");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == ReadFile(scratch_ / "mpirun.npy")) << "the two launches trained different weights";
}

}  // namespace
}  // namespace coupler::itest
