// The coordinator's event log (STATE/events.jsonl) as an operator reads it: a task that fails
// once and then succeeds shows every step of its story in order, with the failure's reason; a
// drained worker shows its drain and is not reported lost; a killed one is lost, and what it
// ran is retried for that cause; a timed-out attempt is retried as a timeout; a restart shows
// itself with its epoch and names the attempts it abandoned.
#include <gtest/gtest.h>

#include <algorithm>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

struct Event {
  std::string event, job, node, worker, reason, cause, state, by;
  uint64_t task = 0, attempt = 0;
  std::string line;
  uint64_t epoch = 0;
  std::vector<std::string> fused = {};  // a fused chain's task: the nodes it runs after `node`

  // Is this the attempt of a task that runs `id`: its own node's, or a chain's it is fused in?
  bool Runs(const std::string& id) const {
    return node == id || std::find(fused.begin(), fused.end(), id) != fused.end();
  }
};

// Every line of the live file, parsed; a line that is not a JSON object fails the test.
std::vector<Event> ReadEvents(const fs::path& file) {
  std::vector<Event> events;
  std::stringstream in(ReadFile(file));
  for (std::string line; std::getline(in, line);) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    EXPECT_TRUE(!d.HasParseError() && d.IsObject()) << "not a JSON object: " << line;
    if (d.HasParseError() || !d.IsObject()) continue;
    Event e{Str(d, "event"), Str(d, "job"),   Str(d, "node"),  Str(d, "worker"),
            Str(d, "reason"), Str(d, "cause"), Str(d, "state"), Str(d, "by"),
            U64(d, "task"),  U64(d, "attempt"), line};
    e.epoch = U64(d, "epoch");
    if (d.HasMember("fused") && d["fused"].IsArray()) {
      for (const auto& v : d["fused"].GetArray()) e.fused.push_back(v.GetString());
    }
    events.push_back(std::move(e));
  }
  return events;
}

// The index of the first event at or after `from` that `match` accepts; -1 when none.
int Find(const std::vector<Event>& events, size_t from,
         const std::function<bool(const Event&)>& match) {
  for (size_t i = from; i < events.size(); ++i) {
    if (match(events[i])) return static_cast<int>(i);
  }
  return -1;
}

std::string Dump(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) out += e.line + "\n";
  return out;
}

// The log once it holds the job's job_finished (lines are written at the next state flush);
// whatever it holds after 30 s otherwise, for the failure message.
std::vector<Event> EventsUntilFinished(const Cluster& cluster, const std::string& job,
                                       bool* finished) {
  std::vector<Event> events;
  *finished = WaitUntil(
      [&] {
        events = ReadEvents(cluster.state() / "events.jsonl");
        return Find(events, 0, [&](const Event& e) {
                 return e.event == "job_finished" && e.job == job;
               }) >= 0;
      },
      30s, 50ms);
  return events;
}

TEST(EventLogTest, AFailedThenRetriedTaskAndADrainedWorkerTellTheirStoryInOrder) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "in.csv", 20, 2);
  const fs::path marker = cluster.dir() / "tried-once";
  const fs::path spec = cluster.dir() / "flaky.yaml";
  // Fails on its first attempt only: the marker it leaves tells the second one to succeed.
  WriteFile(spec, "name: it-events\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 1}\n"
                  "  - id: flaky\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 2\n"
                  "    params:\n"
                  "      command: \"if [ -e " + marker.string() + " ]; then cp {input} {output}; "
                  "else touch " + marker.string() + "; echo first-try-fails >&2; exit 1; fi\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto final_status = cluster.WaitJobFinished(job);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << cluster.Logs();
  ASSERT_EQ(final_status->node("flaky").attempts, 2u) << "the first attempt did not fail";

  // A second worker keeps the pool heard from, so w1's silence after it leaves is acted on
  // (with no worker heard at all, the coordinator suspects its own link and waits).
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  const CommandResult drain = cluster.Cli({"drain", "w1"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err << drain.out << cluster.Logs();
  const auto code = cluster.worker("w1").WaitExit(60s);
  ASSERT_TRUE(code) << "w1 did not leave after its drain\n" << cluster.Logs();
  // Past the silence timeout too: a drained worker's silence must not read as a loss.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto workers = cluster.Workers();
        return workers.count("w1") != 0 && workers["w1"].first != "draining";
      },
      60s, 100ms))
      << cluster.Logs();

  const fs::path file = cluster.state() / "events.jsonl";
  std::vector<Event> events;
  // Written on the store's flush cadence: wait for the last event rather than a time.
  ASSERT_TRUE(WaitUntil(
      [&] {
        events = ReadEvents(file);
        return Find(events, 0, [](const Event& e) { return e.event == "worker_drained"; }) >= 0;
      },
      30s, 50ms))
      << "no worker_drained in " << file << ":\n" << Dump(events) << cluster.Logs();

  const auto of_flaky = [&](const std::string& event, uint64_t attempt) {
    return [&, event, attempt](const Event& e) {
      return e.event == event && e.job == job && e.node == "flaky" && e.attempt == attempt;
    };
  };
  const int joined = Find(events, 0, [](const Event& e) {
    return e.event == "worker_joined" && e.worker == "w1";
  });
  const int submitted = Find(events, 0, [&](const Event& e) {
    return e.event == "job_submitted" && e.job == job;
  });
  ASSERT_GE(joined, 0) << Dump(events);
  ASSERT_GT(submitted, joined) << Dump(events);
  const int assigned0 = Find(events, submitted, of_flaky("task_assigned", 0));
  ASSERT_GT(assigned0, submitted) << Dump(events);
  EXPECT_EQ(events[assigned0].worker, "w1");
  const int failed0 = Find(events, assigned0, of_flaky("task_failed", 0));
  ASSERT_GT(failed0, assigned0) << Dump(events);
  EXPECT_NE(events[failed0].reason.find("first-try-fails"), std::string::npos)
      << "the failure's own words: " << events[failed0].line;
  const int retried = Find(events, failed0, of_flaky("task_retried", 1));
  ASSERT_GT(retried, failed0) << Dump(events);
  EXPECT_EQ(events[retried].cause, "failed") << events[retried].line;
  const int assigned1 = Find(events, retried, of_flaky("task_assigned", 1));
  ASSERT_GT(assigned1, retried) << Dump(events);
  const int done1 = Find(events, assigned1, of_flaky("task_done", 1));
  ASSERT_GT(done1, assigned1) << Dump(events);
  const int finished = Find(events, done1, [&](const Event& e) {
    return e.event == "job_finished" && e.job == job;
  });
  ASSERT_GT(finished, done1) << Dump(events);
  EXPECT_EQ(events[finished].state, "succeeded");
  EXPECT_EQ(Find(events, 0, of_flaky("task_done", 0)), -1) << "attempt 0 never succeeded";

  const int draining = Find(events, finished, [](const Event& e) {
    return e.event == "worker_draining" && e.worker == "w1";
  });
  ASSERT_GT(draining, finished) << Dump(events);
  EXPECT_EQ(events[draining].by, "admin") << "asked by `coupler drain`";
  const int drained = Find(events, draining, [](const Event& e) {
    return e.event == "worker_drained" && e.worker == "w1";
  });
  ASSERT_GT(drained, draining) << Dump(events);
  EXPECT_GT(Find(events, finished, [](const Event& e) {
              return e.event == "worker_joined" && e.worker == "w2";
            }),
            finished)
      << Dump(events);
  EXPECT_EQ(Find(events, 0, [](const Event& e) { return e.event == "worker_lost"; }), -1)
      << "a drained worker is not lost\n" << Dump(events);
}

TEST(EventLogTest, AKilledWorkerIsLostAndTheTaskItRanIsRetriedForThatCause) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "in.csv", 20, 2);
  const fs::path marker = cluster.dir() / "started-once";
  const fs::path spec = cluster.dir() / "lost.yaml";
  // The first attempt hangs (its worker is killed under it); the next one is quick.
  WriteFile(spec, "name: it-events-lost\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 1}\n"
                  "  - id: hang\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 2\n"
                  "    params:\n"
                  "      command: \"if [ -e " + marker.string() + " ]; then cp {input} {output}; "
                  "else touch " + marker.string() + "; sleep 120; fi\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(marker); }, 60s, 20ms)) << cluster.Logs();
  // Killed once it has reported the attempt running, as only then does the loss cost an
  // attempt: the coordinator counts every message it receives, and past our own status
  // requests two more are w1's heartbeats sent after the command started, which name it.
  const auto first = cluster.Coordinator();
  ASSERT_TRUE(first) << cluster.Logs();
  uint64_t polls = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto now = cluster.Coordinator();
        ++polls;
        return now && now->messages_received >= first->messages_received + polls + 2;
      },
      30s, 100ms))
      << cluster.Logs();
  cluster.worker("w1").Kill();
  cluster.StartWorker("w2", 1);
  const auto final_status = cluster.WaitJobFinished(job);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << cluster.Logs();

  const fs::path file = cluster.state() / "events.jsonl";
  std::vector<Event> events;
  ASSERT_TRUE(WaitUntil(
      [&] {
        events = ReadEvents(file);
        return Find(events, 0, [&](const Event& e) {
                 return e.event == "job_finished" && e.job == job;
               }) >= 0;
      },
      30s, 50ms))
      << Dump(events) << cluster.Logs();
  const int lost = Find(events, 0, [](const Event& e) {
    return e.event == "worker_lost" && e.worker == "w1";
  });
  ASSERT_GE(lost, 0) << Dump(events);
  const int failed = Find(events, lost, [&](const Event& e) {
    return e.event == "task_failed" && e.job == job && e.node == "hang" && e.worker == "w1";
  });
  ASSERT_GT(failed, lost) << Dump(events);
  const int retried = Find(events, failed, [&](const Event& e) {
    return e.event == "task_retried" && e.job == job && e.node == "hang";
  });
  ASSERT_GT(retried, failed) << Dump(events);
  EXPECT_EQ(events[retried].cause, "worker_lost") << events[retried].line;
  const int done = Find(events, retried, [&](const Event& e) {
    return e.event == "task_done" && e.job == job && e.node == "hang" && e.worker == "w2";
  });
  EXPECT_GT(done, retried) << Dump(events);
}

TEST(EventLogTest, ATimedOutAttemptIsRetriedAsATimeout) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "in.csv", 20, 2);
  const fs::path marker = cluster.dir() / "slow-once";
  const fs::path spec = cluster.dir() / "slow.yaml";
  // The first attempt outlives its 1 s limit; the next one is quick.
  WriteFile(spec, "name: it-events-timeout\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 1}\n"
                  "  - id: slow\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 2\n"
                  "    params:\n"
                  "      command: \"if [ -e " + marker.string() + " ]; then cp {input} {output}; "
                  "else touch " + marker.string() + "; sleep 60; fi\"\n"
                  "      timeout: 1\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto final_status = cluster.WaitJobFinished(job);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << cluster.Logs();

  bool finished = false;
  const std::vector<Event> events = EventsUntilFinished(cluster, job, &finished);
  ASSERT_TRUE(finished) << Dump(events) << cluster.Logs();
  const int retried = Find(events, 0, [&](const Event& e) {
    return e.event == "task_retried" && e.job == job && e.node == "slow" && e.attempt == 1;
  });
  ASSERT_GE(retried, 0) << Dump(events);
  EXPECT_EQ(events[retried].cause, "timeout") << events[retried].line;
  EXPECT_NE(events[retried].reason.find("timed out"), std::string::npos) << events[retried].line;
}

TEST(EventLogTest, ARestartRecordsItsEpochAndAdoptsTheAttemptInFlight) {
  Cluster cluster(Cluster::Options::Timeouts(300, 5000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path go = cluster.dir() / "go";
  const std::string job = cluster.SubmitHeldJob("it-events-restart", go);
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  // Released only once w1 has registered again (and reported what it holds).
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFile(cluster.state() / "events.jsonl").find("attempt_adopted") !=
               std::string::npos;
      },
      60s, 50ms))
      << cluster.Logs();
  WriteFile(go, "");
  const auto final_status = cluster.WaitJobFinished(job);
  ASSERT_TRUE(final_status) << cluster.Logs();
  EXPECT_EQ(final_status->state, "succeeded") << final_status->error << cluster.Logs();
  EXPECT_EQ(final_status->node("hold").attempts, 1u) << "the adopted attempt ran once";

  auto started = [](const Event& e) { return e.event == "coordinator_started"; };
  bool finished = false;
  const std::vector<Event> events = EventsUntilFinished(cluster, job, &finished);
  ASSERT_TRUE(finished) << Dump(events) << cluster.Logs();
  const int first = Find(events, 0, started);
  ASSERT_GE(first, 0) << Dump(events);
  const int second = Find(events, first + 1, started);
  ASSERT_GT(second, first) << Dump(events);
  EXPECT_GT(events[second].epoch, events[first].epoch) << Dump(events);
  const int adopted = Find(events, second, [&](const Event& e) {
    return e.event == "attempt_adopted" && e.job == job && e.Runs("hold");
  });
  ASSERT_GE(adopted, 0) << Dump(events);
  EXPECT_EQ(events[adopted].worker, "w1");
  EXPECT_EQ(events[adopted].attempt, 0u);
  EXPECT_LT(Find(events, second, [](const Event& e) { return e.event == "attempt_abandoned"; }), 0)
      << Dump(events);
  // Its result was taken once, from the adopted attempt.
  const int done = Find(events, adopted, [&](const Event& e) {
    return e.event == "task_done" && e.Runs("hold");
  });
  ASSERT_GE(done, 0) << Dump(events);
  EXPECT_EQ(events[done].attempt, 0u);
}

// The worker died with the coordinator: nobody reports the attempt, and the task runs again on
// `replacement` under the next attempt number: after the adoption wait when the replacement is
// another worker, at once when it is the same worker id come back (it holds nothing).
void RestartWithTheWorkerGone(const std::string& replacement, const std::string& reason) {
  Cluster cluster(Cluster::Options::Timeouts(300, 3000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path go = cluster.dir() / "go";
  const std::string job = cluster.SubmitHeldJob("it-events-abandon", go);
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  cluster.coordinator().Kill();
  cluster.worker("w1").Kill();
  WriteFile(go, "");
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  cluster.StartWorker(replacement, 1);
  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  EXPECT_EQ(final_status->state, "succeeded") << final_status->error << cluster.Logs();

  bool finished = false;
  const std::vector<Event> events = EventsUntilFinished(cluster, job, &finished);
  ASSERT_TRUE(finished) << Dump(events) << cluster.Logs();
  const int second = Find(events, Find(events, 0, [](const Event& e) {
                            return e.event == "coordinator_started";
                          }) + 1,
                          [](const Event& e) { return e.event == "coordinator_started"; });
  ASSERT_GT(second, 0) << Dump(events);
  const int abandoned = Find(events, second, [&](const Event& e) {
    return e.event == "attempt_abandoned" && e.job == job && e.Runs("hold");
  });
  ASSERT_GE(abandoned, 0) << Dump(events);
  EXPECT_EQ(events[abandoned].attempt, 0u);
  EXPECT_NE(events[abandoned].reason.find(reason), std::string::npos) << events[abandoned].reason;
  const int done = Find(events, abandoned, [&](const Event& e) {
    return e.event == "task_done" && e.Runs("hold");
  });
  ASSERT_GE(done, 0) << Dump(events);
  EXPECT_EQ(events[done].worker, replacement);
  EXPECT_EQ(events[done].attempt, 1u);
  // Only the attempt in flight is adopted or abandoned: here import and hold are one fused
  // chain's task, so that is the only one there is.
  EXPECT_LT(Find(events, second, [&](const Event& e) {
              return e.event.starts_with("attempt_") && !e.Runs("hold");
            }),
            0)
      << Dump(events);
}

TEST(EventLogTest, AnAttemptNoWorkerReportsAfterARestartIsAbandonedAndRunsAgain) {
  RestartWithTheWorkerGone("w2", "no worker reported holding it");
}

TEST(EventLogTest, AnAttemptItsRestartedWorkerDoesNotHoldRunsAgainAtOnce) {
  RestartWithTheWorkerGone("w1", "which registered again without it");
}

}  // namespace
}  // namespace coupler::itest
