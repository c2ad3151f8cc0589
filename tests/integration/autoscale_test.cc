// `coupler autoscale` against a real coordinator, with --up and --down commands that start and
// drain real local workers:
//  - the pool grows to the recommendation, the job finishes with nothing lost or retried, and
//    the pool shrinks back to --min through drains, the drained workers' processes gone;
//  - with more work than --max, the pool is never seen above --max;
//  - a failing --up command is reported with its stderr and backed off, not run every poll;
//  - --once --dry-run prints the one decision and runs nothing;
//  - bad templates and bounds are refused at start with exit 2.
// The jobs' tasks wait on a gate file, so the recommendation holds still while the pool moves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

// The workers an --up script started: one pid file per worker, named by its id, holding the
// pid of `timeout` (which leads the worker's process group and ends with it).
class LaunchedWorkers {
 public:
  explicit LaunchedWorkers(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  ~LaunchedWorkers() {
    for (const auto& [id, pid] : Pids()) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
  LaunchedWorkers(const LaunchedWorkers&) = delete;
  LaunchedWorkers& operator=(const LaunchedWorkers&) = delete;

  const fs::path& dir() const { return dir_; }

  std::map<std::string, pid_t> Pids() const {
    std::map<std::string, pid_t> out;
    for (const std::string& name : ListDir(dir_)) {
      const std::string text = ReadFile(dir_ / name);
      if (!text.empty()) out[name] = static_cast<pid_t>(std::stol(text));
    }
    return out;
  }

  // Gone, or a zombie nobody reaps (its parent, the script's shell, has ended).
  static bool Exited(pid_t pid) {
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    if (stat.empty()) return true;
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
  }

 private:
  fs::path dir_;
};

// An --up script: starts $1 workers of one slot in the background, ids auto-1, auto-2, ...
// Each starts `start_delay` (sleep(1)'s syntax) after the script returns, as a batch queue's
// would: launches stay pending over several looks.
fs::path WriteUpScript(Cluster& cluster, const LaunchedWorkers& launched,
                       const std::string& start_delay = "0") {
  const fs::path script = cluster.dir() / "up.sh";
  WriteFile(script,
            "#!/bin/sh\n"
            "set -e\n"
            "k=$(ls '" + launched.dir().string() + "' | wc -l)\n"
            "i=0\n"
            "while [ $i -lt \"$1\" ]; do\n"
            "  i=$((i + 1)); k=$((k + 1)); id=auto-$k\n"
            "  (sleep " + start_delay + "; exec timeout -s KILL 240 '" + kCoupler +
                "' --log-level info worker --coordinator " +
                cluster.endpoint() + " --id $id --slots 1 --prefetch 1 --heartbeat-ms 300"
                " </dev/null >'" + cluster.logs().string() + "/worker-'$id.out"
                " 2>'" + cluster.logs().string() + "/worker-'$id.err) &\n"
            "  echo $! > '" + launched.dir().string() + "'/$id\n"
            "done\n");
  return script;
}

// A job of `tasks` exec tasks that each wait for `gate` to exist (after an import_csv node
// that makes their shards).
fs::path WriteGatedJob(Cluster& cluster, int tasks, const fs::path& gate) {
  WriteSyntheticCsv(cluster.dir() / "in.csv", 10 * tasks, 2);
  const fs::path spec = cluster.dir() / "gated.yaml";
  WriteFile(spec, "name: it-gated\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: " +
                      std::to_string(tasks) + "}}\n"
                  "  - id: wait\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 0\n"
                  "    params:\n"
                  "      command: \"while [ ! -e " + gate.string() +
                  " ]; do sleep 0.05; done; echo {shard}\"\n");
  return spec;
}

// Workers the coordinator counts as running: alive, silent (maybe still working) or draining.
size_t Running(const std::map<std::string, std::pair<std::string, uint64_t>>& workers) {
  size_t n = 0;
  for (const auto& [id, w] : workers) n += w.first != "drained" && w.first != "lost" ? 1 : 0;
  return n;
}

// Whether one line of `text` holds every one of `parts`.
bool HasLine(const std::string& text, const std::vector<std::string>& parts) {
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (std::all_of(parts.begin(), parts.end(),
                    [&](const std::string& p) { return line.find(p) != std::string::npos; })) {
      return true;
    }
  }
  return false;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Process StartAutoscale(Cluster& cluster, std::vector<std::string> args) {
  std::vector<std::string> argv{kCoupler, "--log-level", "debug", "autoscale", "--coordinator",
                                cluster.endpoint()};
  argv.insert(argv.end(), args.begin(), args.end());
  Process::Options o;
  o.deadline = 240s;
  o.output = cluster.logs();
  o.name = "autoscale";
  return Process::Spawn(argv, o);
}

// The job ended well and nothing was lost or run twice: every task done, once.
void ExpectEveryTaskDoneOnce(const std::optional<JobView>& job, const std::string& logs) {
  ASSERT_TRUE(job) << logs;
  EXPECT_EQ(job->state, "succeeded") << job->error << "\n" << logs;
  EXPECT_EQ(job->done, job->total);
  EXPECT_EQ(job->attempts, job->total) << "a task ran more than once";
  EXPECT_EQ(job->failed, 0u);
  for (const auto& [id, node] : job->nodes) {
    EXPECT_EQ(node.done, node.tasks) << id;
    EXPECT_EQ(node.attempts, node.tasks) << id;
  }
}

TEST(AutoscaleTest, GrowsToTheAdviceFinishesTheJobAndShrinksBackToMin) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w0", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  LaunchedWorkers launched(cluster.dir() / "pids");
  const fs::path up = WriteUpScript(cluster, launched);
  const fs::path gate = cluster.dir() / "gate";
  std::string why;
  const std::string job = cluster.Submit(WriteGatedJob(cluster, 3, gate), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  Process scaler = StartAutoscale(
      cluster, {"--min", "1", "--max", "4", "--up", "sh " + up.string() + " {n}", "--down",
                kCoupler + " drain {worker} --coordinator " + cluster.endpoint(),
                "--interval", "200ms", "--cooldown", "1s", "--launch-timeout", "60s"});
  ASSERT_TRUE(scaler.started());

  // Three tasks wait on the gate and every worker has one slot: the advice is 3 workers.
  size_t peak = 0;
  auto sample = [&] {
    auto workers = cluster.Workers();
    peak = std::max(peak, Running(workers));
    return workers;
  };
  ASSERT_TRUE(WaitUntil([&] { return Running(sample()) >= 3; }, 90s, 100ms))
      << scaler.out() << cluster.Logs();
  // It settles there: the line that says the pool matches the advice.
  ASSERT_TRUE(WaitUntil(
      [&] {
        sample();
        return peak > 3 || HasLine(scaler.out(), {"steady (recommended 3,",
                                                  "pool 3, wanted 3, pending 0, leaving 0"});
      },
      60s, 100ms))
      << scaler.out() << cluster.Logs();
  ASSERT_EQ(peak, 3u) << "the pool went past the advice\n" << scaler.out();
  const auto pool = cluster.Coordinator();
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->recommended_workers, 3u);

  WriteFile(gate, "");
  std::optional<JobView> final_status =
      PollUntilFinished([&] { sample(); return cluster.Job(job); }, 90s);
  ExpectEveryTaskDoneOnce(final_status, cluster.Logs());

  // Idle now: after the cool-down two workers are drained, and they leave.
  std::map<std::string, std::pair<std::string, uint64_t>> workers;
  ASSERT_TRUE(WaitUntil(
      [&] {
        workers = sample();
        return Running(workers) == 1;
      },
      90s, 100ms))
      << scaler.out() << cluster.Logs();
  EXPECT_EQ(peak, 3u) << "the pool went past the advice";
  size_t drained = 0;
  for (const auto& [id, w] : workers) {
    if (w.first == "alive") continue;
    EXPECT_EQ(w.first, "drained") << id << " left without a drain";
    drained += w.first == "drained" ? 1 : 0;
  }
  EXPECT_EQ(drained, 2u);
  // Every drained worker's process ended.
  const auto pids = launched.Pids();
  EXPECT_EQ(pids.size(), 2u);
  for (const auto& [id, pid] : pids) {
    if (workers[id].first != "drained") continue;
    EXPECT_TRUE(WaitUntil([&] { return LaunchedWorkers::Exited(pid); }, 30s)) << id;
  }
  if (workers["w0"].first == "drained") {
    EXPECT_TRUE(cluster.worker("w0").WaitExit(30s)) << "w0 was drained and did not exit";
  }
  // Each drain went through the --down command, with the worker's id put in.
  EXPECT_EQ(Count(scaler.out(), "autoscale: drain "), 2u) << scaler.out();
  EXPECT_EQ(Count(scaler.out(), "{worker}"), 0u) << "a placeholder left as written";
  for (const auto& [id, w] : workers) {
    if (w.first != "drained") continue;
    EXPECT_THAT(scaler.out(), HasSubstr("coupler drain " + id + " --coordinator")) << id;
  }

  scaler.Signal(SIGTERM);
  EXPECT_EQ(scaler.WaitExit(30s), std::optional<int>(0));
  EXPECT_THAT(scaler.out(), HasSubstr("autoscale: stopped"));
}

TEST(AutoscaleTest, NeverRunsMoreThanMax) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w0", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  LaunchedWorkers launched(cluster.dir() / "pids");
  // Workers that take a second to register, over ten looks: they must count meanwhile.
  const fs::path up = WriteUpScript(cluster, launched, "1");
  const fs::path gate = cluster.dir() / "gate";
  std::string why;
  const std::string job = cluster.Submit(WriteGatedJob(cluster, 8, gate), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // No --down: idle workers are drained through the coordinator.
  Process scaler = StartAutoscale(
      cluster, {"--min", "1", "--max", "2", "--up", "sh " + up.string() + " {n}", "--interval",
                "100ms", "--cooldown", "1s"});
  ASSERT_TRUE(scaler.started());
  size_t peak = 0;
  auto sample = [&] {
    auto workers = cluster.Workers();
    peak = std::max(peak, Running(workers));
    return workers;
  };
  // The advice is 8; the pool stops at 2 ... (the scaler's "pool 2" can come a moment before
  // this test's own look at the workers shows the second one running: wait for both.)
  ASSERT_TRUE(WaitUntil(
      [&] {
        sample();
        return peak > 2 || (peak == 2 && HasLine(scaler.out(), {"steady (recommended 8,",
                                                                "pool 2, wanted 2, pending 0, leaving 0"}));
      },
      90s, 100ms))
      << "peak " << peak << "\n" << scaler.out() << cluster.Logs();
  ASSERT_EQ(peak, 2u) << "the pool went past --max\n" << scaler.out();
  // ... and stays there for twenty more looks.
  const size_t looks = Count(scaler.err(), "look: ");
  ASSERT_TRUE(WaitUntil(
      [&] {
        sample();
        return Count(scaler.err(), "look: ") >= looks + 20;
      },
      60s, 100ms))
      << scaler.err();
  EXPECT_EQ(Running(sample()), 2u);
  EXPECT_EQ(launched.Pids().size(), 1u) << "more workers were started than --max allows";

  WriteFile(gate, "");
  std::optional<JobView> final_status =
      PollUntilFinished([&] { sample(); return cluster.Job(job); }, 120s);
  ExpectEveryTaskDoneOnce(final_status, cluster.Logs());
  ASSERT_TRUE(WaitUntil([&] { return Running(sample()) == 1; }, 90s, 100ms))
      << scaler.out() << cluster.Logs();
  EXPECT_EQ(peak, 2u) << "the pool went past --max";
  EXPECT_THAT(scaler.out(), HasSubstr("through the coordinator"));
  scaler.Signal(SIGINT);
  EXPECT_EQ(scaler.WaitExit(30s), std::optional<int>(0));
}

TEST(AutoscaleTest, AFailingUpCommandIsReportedAndBackedOff) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w0", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path gate = cluster.dir() / "gate";
  std::string why;
  const std::string job = cluster.Submit(WriteGatedJob(cluster, 3, gate), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  const fs::path attempts = cluster.dir() / "attempts";
  Process scaler = StartAutoscale(
      cluster, {"--min", "1", "--max", "3", "--up",
                "echo {n} >> " + attempts.string() + "; echo no capacity for {n} >&2; exit 1",
                "--interval", "50ms", "--backoff", "500ms"});
  ASSERT_TRUE(scaler.started());
  // Three tries: at once, 0.5 s after the first failure, 1 s after the second.
  ASSERT_TRUE(WaitUntil([&] { return Count(ReadFile(attempts), "\n") >= 3; }, 90s, 100ms))
      << scaler.out() << scaler.err() << cluster.Logs();
  scaler.Signal(SIGTERM);
  ASSERT_EQ(scaler.WaitExit(30s), std::optional<int>(0));

  const std::string err = scaler.err();
  EXPECT_THAT(err, HasSubstr("autoscale: --up command failed (exit 1): echo "));
  EXPECT_THAT(err, HasSubstr("no capacity for "));
  const std::string out = scaler.out();
  EXPECT_THAT(out, HasSubstr("no launch for 0.5s (failed 1 time in a row)"));
  EXPECT_THAT(out, HasSubstr("no launch for 1s (failed 2 times in a row)"));

  // Between two tries, looks that held back: not a try per poll.
  std::vector<std::string> decisions;  // "up" or "hold", one per look
  std::stringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("look: ");
    if (at == std::string::npos) continue;
    if (line.find("): up ") != std::string::npos) {
      decisions.push_back("up");
    } else if (line.find("): backing off after ") != std::string::npos) {
      decisions.push_back("hold");
    }
  }
  const size_t ups = static_cast<size_t>(std::count(decisions.begin(), decisions.end(), "up"));
  EXPECT_EQ(ups, static_cast<size_t>(Count(ReadFile(attempts), "\n"))) << err;
  ASSERT_GE(ups, 3u) << err;
  for (size_t i = 1; i < decisions.size(); ++i) {
    EXPECT_FALSE(decisions[i] == "up" && decisions[i - 1] == "up") << "tried again at once\n" << err;
  }
  EXPECT_EQ(decisions.front(), "up");
  EXPECT_EQ(cluster.Workers().size(), 1u);
  WriteFile(gate, "");
}

// For cron: one look, the decision printed, nothing run under --dry-run; exit 1 when the
// coordinator cannot be asked.
TEST(AutoscaleTest, OnceWithDryRunPrintsTheDecisionAndRunsNothing) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w0", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path gate = cluster.dir() / "gate";
  std::string why;
  const std::string job = cluster.Submit(WriteGatedJob(cluster, 3, gate), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto pool = cluster.Coordinator();
        return pool && pool->recommended_workers == 3;
      },
      60s, 100ms))
      << cluster.Logs();

  const fs::path ran = cluster.dir() / "ran";
  const CommandResult r = cluster.Cli({"autoscale", "--once", "--dry-run", "--min", "1", "--max",
                                       "5", "--up", "touch " + ran.string() + " # {n} {target}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("autoscale: up 2 (recommended 3, "));
  EXPECT_THAT(r.out, HasSubstr("pool 1, max 5): would run touch " + ran.string() + " # 2 3"));
  EXPECT_FALSE(fs::exists(ran)) << "--dry-run ran the command";
  WriteFile(gate, "");

  cluster.coordinator().Kill();
  const CommandResult gone =
      cluster.Cli({"autoscale", "--once", "--max", "2", "--up", "true {n}"});
  EXPECT_EQ(gone.exit_code, 1) << gone.out << gone.err;
  EXPECT_THAT(gone.err, HasSubstr("autoscale: "));
}

TEST(AutoscaleTest, BadTemplatesAndBoundsAreRefusedAtStart) {
  TempDir dir;
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{kCoupler, "autoscale"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunToEnd(argv, dir.path(), 30s);
  };
  CommandResult r = run({"--max", "3", "--up", "scale --to {count}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--up: unknown placeholder {count}"));
  EXPECT_THAT(r.err, HasSubstr("it takes {n} and {target}"));
  r = run({"--max", "3", "--up", "scale --to 3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--up must contain {n} or {target}"));
  r = run({"--max", "3", "--up", "start {n}", "--down", "kubectl scale --replicas={target}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--down must contain {worker}"));
  r = run({"--max", "3", "--up", "start {n}", "--down", "stop {worker} {n}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--down: unknown placeholder {n}"));
  r = run({"--min", "4", "--max", "3", "--up", "start {n}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--min 4 is above --max 3"));
  r = run({"--max", "3", "--up", "start {n}", "--interval", "2"});
  EXPECT_EQ(r.exit_code, 2) << "a duration needs its unit";
}

}  // namespace
}  // namespace coupler::itest
