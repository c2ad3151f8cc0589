// Runs that never collide: each submission of a spec writes its own run directory, `--reuse`
// skips the nodes whose op, params and inputs did not change since a succeeded run, and
// `coupler retry` runs only a failed job's failed nodes and what depends on them — on a real
// coordinator and workers, keys on.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <rapidjson/document.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

// What these tests read of `coupler status JOB --json` beyond JobView: where the run is and
// which nodes were reused.
struct RunView {
  std::string state, workdir;
  uint64_t attempts = 0;
  std::map<std::string, uint64_t> node_attempts;
  std::map<std::string, bool> reused;
};

std::optional<RunView> RunOf(Cluster& c, const std::string& id) {
  CommandResult r = c.Cli({"status", id, "--json"});
  if (r.exit_code != 0) return std::nullopt;
  rapidjson::Document d;
  if (d.Parse(r.out.c_str()).HasParseError() || !d.IsObject()) return std::nullopt;
  RunView v;
  v.state = Str(d, "state");
  v.workdir = Str(d, "workdir");
  v.attempts = U64(d, "attempts");
  for (const auto& n : d["nodes"].GetArray()) {
    v.node_attempts[Str(n, "id")] = U64(n, "attempts");
    v.reused[Str(n, "id")] = n.HasMember("reused") && n["reused"].IsBool() && n["reused"].GetBool();
  }
  return v;
}

// `coupler submit SPEC [--reuse]` and its wait: the finished job's status.
std::optional<RunView> SubmitAndWait(Cluster& c, const fs::path& spec, bool reuse,
                                     std::string* id_out = nullptr) {
  std::vector<std::string> args{"submit", spec.string()};
  if (reuse) args.push_back("--reuse");
  CommandResult r = c.Cli(args);
  std::string id = r.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  EXPECT_EQ(r.exit_code, 0) << r.err << c.Logs();
  if (r.exit_code != 0 || id.empty()) return std::nullopt;
  if (id_out != nullptr) *id_out = id;
  if (!c.WaitJobFinished(id, 120s)) return std::nullopt;
  return RunOf(c, id);
}

struct FileId {
  ino_t inode = 0;
  int64_t mtime_ns = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

FileId Identify(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return {};
  return {st.st_ino, static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

void StartPool(Cluster& c, int slots = 2) {
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  c.StartWorker("w1", slots);
  c.StartWorker("w2", slots);
  ASSERT_TRUE(c.WaitWorkersAlive(2)) << c.Logs();
}

TEST(RunsTest, TwoConcurrentRunsOfOneSpecWriteDisjointOutputs) {
  Cluster c;
  StartPool(c, 3);
  WriteSyntheticCsv(c.dir() / "in.csv", 200, 3);
  const fs::path gate = c.dir() / "gate";
  const fs::path spec = c.dir() / "job.yaml";
  // The copy tasks wait for the gate, so both jobs are running at once when it opens.
  WriteFile(spec, "name: it-twice\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n"
                  "  - id: copy\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"while [ ! -e " + gate.string() +
                  " ]; do sleep 0.05; done; cp {input} {output}\"\n      timeout: 120\n");
  std::string why;
  const std::string a = c.Submit(spec, &why);
  ASSERT_FALSE(a.empty()) << why << c.Logs();
  const std::string b = c.Submit(spec, &why);
  ASSERT_FALSE(b.empty()) << why << c.Logs();
  ASSERT_TRUE(WaitUntil([&] {
    auto ja = c.Job(a), jb = c.Job(b);
    return ja && jb && ja->node("copy").running + ja->node("copy").prefetched > 0 &&
           jb->node("copy").running + jb->node("copy").prefetched > 0;
  }, 60s)) << c.Logs();
  WriteFile(gate, "");
  ASSERT_TRUE(c.WaitJobFinished(a, 120s) && c.WaitJobFinished(b, 120s)) << c.Logs();
  auto ra = RunOf(c, a), rb = RunOf(c, b);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->state, "succeeded");
  EXPECT_EQ(rb->state, "succeeded");
  EXPECT_EQ(ra->workdir, (c.dir() / "work" / "runs" / a).string());
  EXPECT_EQ(rb->workdir, (c.dir() / "work" / "runs" / b).string());
  for (const auto* r : {&*ra, &*rb}) {
    const fs::path run = r->workdir;
    for (int s = 0; s < 2; ++s) {
      const std::string part = ReadFile(run / "copy" / CommandPartName(s));
      EXPECT_FALSE(part.empty()) << run;
      EXPECT_EQ(part, ReadFile(run / "import" / PartName(s))) << run;
    }
  }
  // Separate files, not two names of one, and the newest run is `latest`.
  EXPECT_NE(Identify(fs::path(ra->workdir) / "copy" / CommandPartName(0)).inode,
            Identify(fs::path(rb->workdir) / "copy" / CommandPartName(0)).inode);
  EXPECT_EQ(fs::read_symlink(c.dir() / "work" / "latest"), fs::path("runs") / b);
}

TEST(RunsTest, APinnedRunDirIsOneRunsAtATime) {
  Cluster c;
  StartPool(c);
  WriteSyntheticCsv(c.dir() / "in.csv", 50, 2);
  const fs::path gate = c.dir() / "gate";
  const fs::path spec = c.dir() / "pinned.yaml";
  WriteFile(spec, "name: it-pinned\nworkdir: work\nrun_dir: fixed\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 1}}\n"
                  "  - id: wait\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"while [ ! -e " + gate.string() +
                  " ]; do sleep 0.05; done; cp {input} {output}\"\n      timeout: 120\n");
  std::string why;
  const std::string first = c.Submit(spec, &why);
  ASSERT_FALSE(first.empty()) << why << c.Logs();
  CommandResult second = c.Cli({"submit", spec.string()});
  EXPECT_EQ(second.exit_code, 2) << second.out << second.err;
  EXPECT_NE(second.err.find("run_dir 'fixed'"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("in use by running job " + first), std::string::npos) << second.err;
  WriteFile(gate, "");
  ASSERT_TRUE(c.WaitJobFinished(first, 120s)) << c.Logs();
  auto r = RunOf(c, first);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, "succeeded");
  EXPECT_EQ(r->workdir, (c.dir() / "work" / "fixed").string());
  EXPECT_TRUE(fs::exists(c.dir() / "work" / "fixed" / "wait" / CommandPartName(0)));
  // Once it has finished, the pinned directory takes the next run.
  auto again = SubmitAndWait(c, spec, false);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->state, "succeeded");
}

// A fused chain keeps its first nodes' shards in memory, so only its last node's are recorded;
// reusing that one leaves the others with nothing to do, so an unchanged spec runs nothing.
// A change at the chain's end runs the whole chain again (its inputs were never written).
TEST(RunsTest, ReuseOfAFusedChainRunsNothingAndAChangeAtItsEndRunsItWhole) {
  Cluster c;
  StartPool(c);
  WriteSyntheticCsv(c.dir() / "in.csv", 300, 3);
  const fs::path spec = c.dir() / "job.yaml";
  auto write_spec = [&](const std::string& expression) {
    WriteFile(spec, "name: it-reuse-fused\nworkdir: work\nnodes:\n"
                    "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n"
                    "  - {id: keep, op: filter, inputs: [import], params: {where: \"c0 > 0\"}}\n"
                    "  - {id: more, op: derive, inputs: [keep], params: {columns: {z: \"" +
                        expression + "\"}}}\n");
  };
  write_spec("c0 * 2");
  auto first = SubmitAndWait(c, spec, false);
  ASSERT_TRUE(first) << c.Logs();
  ASSERT_EQ(first->state, "succeeded") << c.Logs();
  EXPECT_FALSE(fs::exists(fs::path(first->workdir) / "keep" / PartName(0))) << "kept in memory";

  auto same = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(same) << c.Logs();
  EXPECT_EQ(same->state, "succeeded");
  EXPECT_EQ(same->attempts, 0u) << "--reuse on an unchanged fused chain ran tasks";
  for (const char* node : {"import", "keep", "more"}) EXPECT_TRUE(same->reused[node]) << node;
  EXPECT_EQ(ReadFile(fs::path(same->workdir) / "more" / PartName(1)),
            ReadFile(fs::path(first->workdir) / "more" / PartName(1)));

  write_spec("c0 * 3");
  auto changed = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(changed) << c.Logs();
  EXPECT_EQ(changed->state, "succeeded") << c.Logs();
  for (const char* node : {"import", "keep", "more"}) {
    EXPECT_FALSE(changed->reused[node]) << node;
    EXPECT_EQ(changed->node_attempts[node], 2u) << node;
  }
}

TEST(RunsTest, ReuseRunsOnlyWhatChangedByContentNotByTimestamp) {
  Cluster c;
  StartPool(c);
  const fs::path csv = c.dir() / "in.csv";
  WriteSyntheticCsv(csv, 300, 3);
  const fs::path spec = c.dir() / "job.yaml";
  auto write_spec = [&](const std::string& tail_command) {
    WriteFile(spec, "name: it-reuse\nworkdir: work\nnodes:\n"
                    "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 3}}\n"
                    "  - id: copy\n    op: exec\n    inputs: [import]\n"
                    "    params: {command: \"cp {input} {output}\"}\n"
                    "  - id: tail\n    op: exec\n    inputs: [copy]\n"
                    "    params: {command: \"" + tail_command + "\"}\n");
  };
  write_spec("cp {input} {output}");
  auto first = SubmitAndWait(c, spec, false);
  ASSERT_TRUE(first) << c.Logs();
  ASSERT_EQ(first->state, "succeeded") << c.Logs();
  EXPECT_GT(first->attempts, 0u);

  // Unchanged: nothing runs, and the outputs are in the new run's directory.
  auto same = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(same) << c.Logs();
  EXPECT_EQ(same->state, "succeeded");
  EXPECT_EQ(same->attempts, 0u) << "--reuse on an unchanged spec ran tasks";
  EXPECT_NE(same->workdir, first->workdir);
  for (const char* node : {"import", "copy", "tail"}) EXPECT_TRUE(same->reused[node]) << node;
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(ReadFile(fs::path(same->workdir) / "tail" / CommandPartName(s)),
              ReadFile(fs::path(first->workdir) / "tail" / CommandPartName(s)));
    EXPECT_FALSE(ReadFile(fs::path(same->workdir) / "tail" / CommandPartName(s)).empty());
  }
  // The reused outputs outlive the run they came from.
  fs::remove_all(first->workdir);
  EXPECT_FALSE(ReadFile(fs::path(same->workdir) / "import" / PartName(0)).empty());

  // Without --reuse everything runs again.
  auto plain = SubmitAndWait(c, spec, false);
  ASSERT_TRUE(plain);
  EXPECT_GT(plain->node_attempts["import"], 0u);

  // One node's param changed: only it (and what reads it) runs.
  write_spec("cp {input} {output} && true");
  auto changed = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(changed) << c.Logs();
  EXPECT_EQ(changed->state, "succeeded") << c.Logs();
  EXPECT_EQ(changed->node_attempts["import"], 0u);
  EXPECT_EQ(changed->node_attempts["copy"], 0u);
  EXPECT_EQ(changed->node_attempts["tail"], 3u);
  EXPECT_FALSE(changed->reused["tail"]);
  EXPECT_EQ(ReadFile(fs::path(changed->workdir) / "tail" / CommandPartName(1)),
            ReadFile(fs::path(changed->workdir) / "copy" / CommandPartName(1)));

  // The CSV touched, its bytes the same: still reused (its hash, not its timestamp, counts).
  const std::string bytes = ReadFile(csv);
  fs::last_write_time(csv, fs::last_write_time(csv) + std::chrono::seconds(5));
  auto touched = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(touched) << c.Logs();
  EXPECT_EQ(touched->attempts, 0u);

  // One byte changed (same size): the import and everything downstream of it runs.
  std::string edited = bytes;
  const size_t digit = edited.find_first_of("123456789", edited.find('\n'));
  ASSERT_NE(digit, std::string::npos);
  edited[digit] = edited[digit] == '9' ? '8' : static_cast<char>(edited[digit] + 1);
  WriteFile(csv, edited);
  auto edited_run = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(edited_run) << c.Logs();
  EXPECT_EQ(edited_run->state, "succeeded") << c.Logs();
  for (const char* node : {"import", "copy", "tail"}) {
    EXPECT_GT(edited_run->node_attempts[node], 0u) << node;
    EXPECT_FALSE(edited_run->reused[node]) << node;
  }
}

// A script kept beside the spec and named through {spec_dir} is part of its node's key: edited,
// the node runs again under --reuse; untouched, it is reused.
TEST(RunsTest, AnEditedScriptNamedThroughSpecDirRunsAgainUnderReuse) {
  Cluster c;
  StartPool(c);
  WriteSyntheticCsv(c.dir() / "in.csv", 60, 2);
  const fs::path spec = c.dir() / "job.yaml";
  const fs::path script = c.dir() / "step.sh";
  WriteFile(script, "echo run >> " + (c.dir() / "ran.log").string() + "\ncp \"$1\" \"$2\"\n");
  WriteFile(spec, "name: it-script\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n"
                  "  - id: step\n    op: exec\n    inputs: [import]\n"
                  "    params: {command: \"sh {spec_dir}/step.sh {input} {output}\"}\n");
  auto first = SubmitAndWait(c, spec, false);
  ASSERT_TRUE(first) << c.Logs();
  ASSERT_EQ(first->state, "succeeded") << c.Logs();
  auto same = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(same) << c.Logs();
  EXPECT_EQ(same->attempts, 0u) << "the script is unchanged";
  EXPECT_TRUE(same->reused["step"]);
  // The spec is untouched; only the script changes.
  WriteFile(script, "echo run >> " + (c.dir() / "ran.log").string() +
                        "\ncp \"$1\" \"$2\"  # edited\n");
  auto edited = SubmitAndWait(c, spec, true);
  ASSERT_TRUE(edited) << c.Logs();
  EXPECT_EQ(edited->state, "succeeded") << c.Logs();
  EXPECT_EQ(edited->node_attempts["import"], 0u);
  EXPECT_EQ(edited->node_attempts["step"], 2u) << "the edited script was not run";
  EXPECT_FALSE(edited->reused["step"]);
  EXPECT_EQ(ReadFile(c.dir() / "ran.log"), "run\nrun\nrun\nrun\n");  // 2 runs x 2 shards
}

TEST(RunsTest, RetryRunsOnlyTheFailedNodeAndItsDownstreamAndSurvivesARestart) {
  Cluster c;
  StartPool(c);
  WriteSyntheticCsv(c.dir() / "in.csv", 120, 2);
  const fs::path marker = c.dir() / "marker";
  const fs::path spec = c.dir() / "job.yaml";
  // `mid` fails until the marker exists; no retries, so the job fails at its first failure.
  WriteFile(spec, "name: it-retry\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n"
                  "  - id: mid\n    op: exec\n    inputs: [import]\n    retries: 0\n"
                  "    params: {command: \"test -e " + marker.string() +
                  " && cp {input} {output}\"}\n"
                  "  - id: last\n    op: exec\n    inputs: [mid]\n"
                  "    params: {command: \"cp {input} {output}\"}\n");
  std::string id;
  auto failed = SubmitAndWait(c, spec, false, &id);
  ASSERT_TRUE(failed) << c.Logs();
  ASSERT_EQ(failed->state, "failed") << c.Logs();
  EXPECT_EQ(failed->node_attempts["import"], 2u);
  EXPECT_EQ(failed->node_attempts["last"], 0u);
  const uint64_t mid_before = failed->node_attempts["mid"];
  EXPECT_GE(mid_before, 1u);
  const FileId import0 = Identify(fs::path(failed->workdir) / "import" / PartName(0));
  const FileId import1 = Identify(fs::path(failed->workdir) / "import" / PartName(1));
  ASSERT_NE(import0.inode, 0u);

  // A running or succeeded job is refused; this one is failed. Retried by a coordinator that
  // restarted meanwhile: it keeps the run directory.
  c.coordinator().Kill();
  ASSERT_TRUE(c.RestartCoordinator()) << c.Logs();
  ASSERT_TRUE(c.WaitWorkersAlive(2)) << c.Logs();
  auto restored = RunOf(c, id);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->state, "failed");
  WriteFile(marker, "");
  CommandResult retry = c.Cli({"retry", id});
  ASSERT_EQ(retry.exit_code, 0) << retry.out << retry.err << c.Logs();
  EXPECT_NE(retry.out.find("retrying " + id), std::string::npos) << retry.out;
  ASSERT_TRUE(c.WaitJobFinished(id, 120s)) << c.Logs();
  auto done = RunOf(c, id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, "succeeded") << c.Logs();
  EXPECT_EQ(done->workdir, failed->workdir);
  EXPECT_EQ(done->workdir, (c.dir() / "work" / "runs" / id).string());
  EXPECT_EQ(done->node_attempts["import"], 2u) << "a succeeded node ran again";
  EXPECT_GT(done->node_attempts["mid"], mid_before);
  EXPECT_LE(done->node_attempts["mid"], mid_before + 2);
  EXPECT_EQ(done->node_attempts["last"], 2u);
  EXPECT_EQ(Identify(fs::path(done->workdir) / "import" / PartName(0)), import0);
  EXPECT_EQ(Identify(fs::path(done->workdir) / "import" / PartName(1)), import1);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(ReadFile(fs::path(done->workdir) / "last" / CommandPartName(s)),
              ReadFile(fs::path(done->workdir) / "import" / PartName(s)));
  }

  // Now succeeded: nothing to retry. An unknown job: not found.
  CommandResult again = c.Cli({"retry", id});
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("succeeded: nothing to retry"), std::string::npos) << again.err;
  CommandResult unknown = c.Cli({"retry", "j-999999"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("no job j-999999"), std::string::npos) << unknown.err;
}

// A coordinator restarted after the retry was accepted and before its tasks ran: the retried
// tasks keep their fresh attempt budget (without it, the first failure after the restart would
// count the attempts before the retry and fail the job).
TEST(RunsTest, ARestartMidRetryKeepsTheFreshAttemptBudget) {
  Cluster c;
  StartPool(c);
  WriteSyntheticCsv(c.dir() / "in.csv", 30, 2);
  const fs::path count = c.dir() / "count";
  const fs::path spec = c.dir() / "job.yaml";
  // The command's runs 1-4 fail, the 5th succeeds; three attempts per budget (retries: 2).
  WriteFile(spec, "name: it-budget\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 1}}\n"
                  "  - id: mid\n    op: exec\n    inputs: [import]\n    retries: 2\n"
                  "    params: {command: \"n=$(cat " + count.string() + " 2>/dev/null || echo 0); "
                  "echo $((n+1)) > " + count.string() + "; [ $n -ge 4 ] && cp {input} {output}\"}\n");
  std::string id;
  auto failed = SubmitAndWait(c, spec, false, &id);
  ASSERT_TRUE(failed) << c.Logs();
  ASSERT_EQ(failed->state, "failed") << c.Logs();
  ASSERT_EQ(failed->node_attempts["mid"], 3u);
  // No live worker while the retry is accepted and stored, then the coordinator dies. (An
  // attempt sent to a worker not yet declared dead counts after the restart, as every attempt
  // in flight at a crash does: the budget of three allows for it.)
  c.worker("w1").Kill();
  c.worker("w2").Kill();
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& [wid, w] : c.Workers()) {
      if (w.first == "alive") return false;
    }
    return true;
  }, 60s)) << c.Cli({"workers"}).out << c.Logs();
  CommandResult retry = c.Cli({"retry", id});
  ASSERT_EQ(retry.exit_code, 0) << retry.out << retry.err << c.Logs();
  c.coordinator().Kill();
  ASSERT_TRUE(c.RestartCoordinator()) << c.Logs();
  auto resumed = RunOf(c, id);
  ASSERT_TRUE(resumed);
  EXPECT_TRUE(resumed->state == "queued" || resumed->state == "running") << resumed->state;
  c.StartWorker("w1", 2);
  c.StartWorker("w2", 2);
  ASSERT_TRUE(c.WaitJobFinished(id, 120s)) << c.Logs();
  auto done = RunOf(c, id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, "succeeded") << c.Logs();
  EXPECT_GE(done->node_attempts["mid"], 5u);
  EXPECT_LE(done->node_attempts["mid"], 6u);
  EXPECT_EQ(done->node_attempts["import"], 1u);
  EXPECT_EQ(ReadFile(count), "5\n");
}

TEST(RunsTest, RetryIsRefusedForARunningJobAndRunsACancelledOneToItsEnd) {
  Cluster c;
  StartPool(c);
  WriteSyntheticCsv(c.dir() / "in.csv", 20, 2);
  const fs::path gate = c.dir() / "gate";
  const fs::path spec = c.dir() / "job.yaml";
  WriteFile(spec, "name: it-busy\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 1}}\n"
                  "  - id: wait\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"while [ ! -e " + gate.string() +
                  " ]; do sleep 0.05; done; cp {input} {output}\"\n"
                  "      timeout: 120\n");
  std::string why;
  const std::string id = c.Submit(spec, &why);
  ASSERT_FALSE(id.empty()) << why << c.Logs();
  CommandResult busy = c.Cli({"retry", id});
  EXPECT_EQ(busy.exit_code, 2) << busy.out << busy.err;
  EXPECT_NE(busy.err.find("only a failed or cancelled job can be retried"), std::string::npos)
      << busy.err;
  ASSERT_EQ(c.Cli({"cancel", id}).exit_code, 0);
  ASSERT_TRUE(c.WaitJobFinished(id, 60s));
  WriteFile(gate, "");
  // Cancelled: it may be retried, and runs to its end.
  CommandResult retry = c.Cli({"retry", id, "--wait"});
  EXPECT_EQ(retry.exit_code, 0) << retry.out << retry.err << c.Logs();
  auto r = RunOf(c, id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, "succeeded");
  EXPECT_TRUE(fs::exists(fs::path(r->workdir) / "wait" / CommandPartName(0)));
}

}  // namespace
}  // namespace coupler::itest
