#include "coordinator/job_intake.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "coordinator/admitted_plan.h"
#include "coordinator/node_keys.h"
#include "coordinator/reuse_index.h"
#include "runtime/io/content_hash.h"
#include "runtime/io/output_layout.h"
#include "runtime/job/dataset_schema.h"
#include "runtime/job/job_loader.h"
#include "runtime/job/job_phase.h"
#include "runtime/job/run_dir.h"
#include "runtime/job/validator.h"
#include "runtime/job/workdir_marker.h"
#include "runtime/logging.h"
#include "runtime/plan/broadcast_choice.h"
#include "runtime/plan/fusion.h"
#include "runtime/plan/planner.h"
#include "runtime/util/random_token.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

// A node a fused chain keeps in memory (its shards never written, so never recorded for reuse)
// whose every reader is reused has nothing to do in this run: nobody would read what it makes.
// Its key is the one those readers' runs read it under (a key covers every key upstream), so it
// counts as reused from the first reader's run. Only such a node: one whose shards a run writes
// is expected to have them in this run too, and runs when they cannot be linked. `in_memory`:
// per plan node, whether the plan's chains, made as if nothing were reused, keep its shards in
// memory. Plan nodes are by stage, so readers are decided before the nodes they read.
void SkipNodesOnlyReusedNodesRead(const job::JobGraph& graph, const plan::Plan& plan,
                                  const std::vector<bool>& in_memory, bool job_reuse,
                                  std::map<size_t, std::string>& reused) {
  std::vector<size_t> plan_of(graph.nodes.size(), SIZE_MAX);
  for (size_t p = 0; p < plan.nodes.size(); ++p) plan_of[plan.nodes[p].node_index] = p;
  std::vector<std::vector<size_t>> readers(plan.nodes.size());
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    for (const job::InputRef& in : graph.nodes[plan.nodes[p].node_index].resolved_inputs) {
      if (in.kind == job::InputRef::Kind::kNode && in.node_index < plan_of.size() &&
          plan_of[in.node_index] != SIZE_MAX) {
        readers[plan_of[in.node_index]].push_back(p);
      }
    }
  }
  for (size_t p = plan.nodes.size(); p-- > 0;) {
    const job::NodeSpec& node = graph.nodes[plan.nodes[p].node_index];
    if (reused.count(p) != 0 || readers[p].empty() || !in_memory[p] ||
        !node.reuse.value_or(job_reuse)) {
      continue;
    }
    const bool unread = std::all_of(readers[p].begin(), readers[p].end(),
                                    [&](size_t r) { return reused.count(r) != 0; });
    if (unread) reused[p] = reused.at(readers[p].front());
  }
}

// What validation saw of each path at admission. Restored jobs are validated and planned
// against it, not against the filesystem as it is after the restart: a dataset that gained
// or lost shards meanwhile, or inputs cleaned up, must not change which task is which.
using ProbeRecord = std::map<std::string, job::PathInfo>;

// What the run directory and reuse add to JobRecord::extra: "root\t<spec workdir>" (workdir
// is then the run directory), "key\t<plan node>\t<key>", "reused\t<plan node>\t<run dir>",
// and after a `coupler retry` "base\t<task>\t<attempts>" (JobState::attempt_base).
struct RunExtra {
  std::string root;
  std::vector<std::string> keys;
  std::map<size_t, std::string> reused;
  std::map<uint64_t, uint32_t> bases;
};

// JobRecord::extra of a job admitted before plans were kept: "workdir\t<dir>",
// "marker\t<token>" (workdir_marker.h), one "dataset\t<dir>\t<file>\t<file>..." per dataset,
// one "probe\t<path>\t<kind>\t<shards>" per path validation looked at, and RunExtra's lines.
// Jobs admitted now keep only "base" lines there (after a retry); the rest is their plan.
void DecodeExtra(const std::string& extra, std::string& workdir, std::string& marker,
                 DatasetListing& datasets, ProbeRecord& probes, RunExtra& run) {
  std::istringstream in(extra);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream ls(line);
    for (std::string f; std::getline(ls, f, '\t');) fields.push_back(f);
    if (fields.size() >= 2 && fields[0] == "workdir") workdir = fields[1];
    if (fields.size() >= 2 && fields[0] == "marker") marker = fields[1];
    if (fields.size() >= 2 && fields[0] == "root") run.root = fields[1];
    if (fields.size() == 3 && fields[0] == "key") {
      const size_t p = std::strtoull(fields[1].c_str(), nullptr, 10);
      if (p < 1'000'000) {
        if (run.keys.size() <= p) run.keys.resize(p + 1);
        run.keys[p] = fields[2];
      }
    }
    if (fields.size() == 3 && fields[0] == "reused") {
      run.reused[std::strtoull(fields[1].c_str(), nullptr, 10)] = fields[2];
    }
    if (fields.size() == 3 && fields[0] == "base") {
      run.bases[std::strtoull(fields[1].c_str(), nullptr, 10)] =
          static_cast<uint32_t>(std::strtoul(fields[2].c_str(), nullptr, 10));
    }
    if (fields.size() >= 2 && fields[0] == "dataset") {
      datasets[fields[1]] = std::vector<std::string>(fields.begin() + 2, fields.end());
    }
    if (fields.size() == 4 && fields[0] == "probe") {
      job::PathInfo info;
      const int kind = std::atoi(fields[2].c_str());
      info.kind = kind == 1 ? job::PathInfo::Kind::kFile
                  : kind == 2 ? job::PathInfo::Kind::kDirectory
                              : job::PathInfo::Kind::kMissing;
      info.shards = std::atoi(fields[3].c_str());
      probes[fields[1]] = info;
    }
  }
}

DatasetListing ListDatasets(const job::JobGraph& graph) {
  DatasetListing out;
  for (const auto& node : graph.nodes) {
    for (const auto& in : node.resolved_inputs) {
      if (in.kind != job::InputRef::Kind::kDirectory || out.count(in.path) != 0) continue;
      std::vector<std::string> files;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(in.path, ec)) {
        if (io::IsShardFileName(e.path().filename().string())) files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      out[in.path] = std::move(files);
    }
  }
  return out;
}

Result<job::JobGraph> LoadSpec(const std::string& text, const std::string& spec_path,
                               const std::string& cwd, const DataRoots* roots) {
  job::ValidationEnv env;
  std::optional<Status> refused;
  env.probe = [roots, &refused](const std::string& path) {
    // A refused path is not even looked at: whether it exists is not the client's to learn.
    if (roots != nullptr) {
      if (Status s = roots->Check("input", path); !s.ok()) {
        if (!refused) refused = s;
        return job::PathInfo{};
      }
    }
    return job::ProbePath(path);
  };
  // A glob or a folder of CSV files is listed only inside the data roots (the files it yields
  // are then probed, and so checked, one by one).
  env.list_files = [roots, &refused](const std::string& path)
      -> std::optional<std::vector<std::string>> {
    if (roots != nullptr) {
      // The folder listed: for a pattern, the part before its first wildcard's component.
      std::string folder = path;
      if (job::IsGlobPattern(path)) {
        folder = path.substr(0, path.find_first_of("*?["));
        folder = folder.substr(0, folder.rfind('/'));
        if (folder.empty()) folder = "/";
      }
      if (Status s = roots->Check("input", folder); !s.ok()) {
        if (!refused) refused = s;
        return std::vector<std::string>{};
      }
    }
    return job::ListDatasetFiles(path);
  };
  // No env.dataset_schema: the coordinator does not read a CSV's header for the client. Its
  // columns would come back in diagnostics ("unknown column 'x' (columns: ...)") with the
  // coordinator's rights over the file; `coupler plan` and `coupler submit` check them as the
  // user, before the spec is sent, and the import task does on a worker.
  env.cwd = cwd;
  const std::string base_dir = fs::path(spec_path).parent_path().lexically_normal().string();
  job::LoadedJob loaded = job::LoadJobText(text, spec_path, base_dir, env);
  if (refused) return *refused;
  if (!loaded.ok()) {
    std::string msg = loaded.diags.ToString();
    if (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return InvalidArgument(msg);
  }
  return std::move(*loaded.graph);
}

}  // namespace

Result<AdmittedJob> AdmitJob(const wire::SubmitJob& submit, const std::string& job_id,
                             int64_t now_ms, const std::string& submitted_by,
                             const IntakeContext& context) {
  if (submit.spec_path.empty() || !fs::path(submit.spec_path).is_absolute()) {
    return InvalidArgument("submit needs the spec's absolute path (relative inputs resolve "
                           "against its directory), got '" + submit.spec_path + "'");
  }
  COUPLER_ASSIGN_OR_RETURN(job::JobGraph graph,
                           LoadSpec(submit.spec_text, submit.spec_path, submit.cwd,
                                    context.roots));
  if (context.roots != nullptr) {
    // Every path admission reads or makes: the inputs (probed above, listed and hashed below)
    // and the workdir the run directory, its marker and reused outputs go into.
    for (const auto& node : graph.nodes) {
      for (const auto& in : node.resolved_inputs) {
        if (in.kind == job::InputRef::Kind::kNode) continue;
        COUPLER_RETURN_IF_ERROR(context.roots->Check("input", in.path));
      }
    }
    COUPLER_RETURN_IF_ERROR(context.roots->Check("workdir", graph.workdir_root));
  }
  if (submit.priority != 0) graph.priority = submit.priority;
  // Decided here, once, into the params the admitted plan records (a restart replays them).
  for (const plan::BroadcastChoice& c : plan::ChooseBroadcasts(graph)) {
    Logger("coordinator")->info("job {} join '{}': {} ({})", job_id, c.node,
                                c.broadcast ? "broadcast" : "shuffle", c.why);
  }
  COUPLER_ASSIGN_OR_RETURN(plan::Plan plan, plan::PlanJob(graph));
  DatasetListing datasets = ListDatasets(graph);
  // Each submission its own run directory (unless the spec pins one), so two runs of one spec
  // never write into each other's outputs.
  RunExtra run;
  run.root = graph.workdir_root;
  // The folder the run directory is made in, judged where its symlinks lead (a `runs` the
  // job's commands turned into a link to the state directory is refused before the mkdir),
  // and the run directory again once made.
  if (context.roots != nullptr) {
    const std::string parent = graph.run_dir.empty()
                                   ? run.root + "/" + std::string(job::kRunsFolder)
                                   : run.root + "/" + graph.run_dir;
    COUPLER_RETURN_IF_ERROR(context.roots->Check("run directory", parent));
  }
  COUPLER_ASSIGN_OR_RETURN(graph.workdir, job::ClaimRunDir(graph, job_id));
  if (context.roots != nullptr) {
    if (Status s = context.roots->Check("run directory", graph.workdir); !s.ok()) {
      std::error_code ec;
      fs::remove(graph.workdir, ec);  // only when still empty: it was made just now
      return s;
    }
  }
  const std::string marker = util::RandomToken();
  COUPLER_RETURN_IF_ERROR(job::WriteWorkdirMarker(graph.workdir, job_id, marker));
  // Every run's node keys are kept, reused or not, so a later run can reuse this one's outputs.
  // Dataset files (checked above) and the files a command names in the spec's folder, which
  // are read only where an input could be.
  auto hash = [&context](const std::string& path) -> Result<uint64_t> {
    if (context.roots != nullptr) COUPLER_RETURN_IF_ERROR(context.roots->Check("input", path));
    if (context.reuse != nullptr) return context.reuse->Hash(path);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return InvalidArgument(path + " is not a regular file");
    }
    return io::HashFile(path);
  };
  COUPLER_ASSIGN_OR_RETURN(run.keys, NodeKeys(graph, plan, datasets, hash));
  for (size_t p = 0; context.reuse != nullptr && p < plan.nodes.size(); ++p) {
    const job::NodeSpec& node = graph.nodes[plan.nodes[p].node_index];
    if (!node.reuse.value_or(graph.reuse || submit.reuse)) continue;
    std::optional<NodeOutputs> earlier = context.reuse->FindIntact(run.root, run.keys[p]);
    if (!earlier) continue;
    // Linked, not referenced: this run's folder is complete on its own, whatever becomes of
    // the earlier run. A file that changed since the check only costs the reuse: the node runs.
    if (Status s = LinkNodeOutputs(*earlier, graph.workdir, node.id); !s.ok()) {
      Logger("coordinator")->warn("job {} node {}: not reused: {}", job_id, node.id, s.message());
      continue;
    }
    run.reused[p] = earlier->run_dir;
  }
  if (!run.reused.empty()) {
    plan::Plan unreused = plan;
    plan::FuseChains(graph, unreused);
    std::vector<bool> in_memory;
    for (const plan::PlanNode& n : unreused.nodes) in_memory.push_back(n.output_in_memory);
    SkipNodesOnlyReusedNodesRead(graph, plan, in_memory, graph.reuse || submit.reuse, run.reused);
  }
  // Chains are decided once the reused nodes are known: a node an earlier run provides is done
  // before anything runs, so it starts no chain and joins none.
  std::set<size_t> unfused;
  for (const auto& [p, from] : run.reused) unfused.insert(p);
  plan::FuseChains(graph, plan, unfused);
  if (Status s = job::PointLatestAt(run.root, graph.workdir); !s.ok()) {
    Logger("coordinator")->warn("job {}: {}", job_id, s.message());
  }

  AdmittedPlan admitted;
  admitted.graph = std::move(graph);
  admitted.plan = std::move(plan);
  admitted.datasets = std::move(datasets);
  admitted.workdir_marker = marker;
  admitted.node_keys = std::move(run.keys);
  admitted.reused = std::move(run.reused);

  AdmittedJob out;
  out.record.id = job_id;
  out.record.name = admitted.graph.name;
  out.record.spec_text = submit.spec_text;
  out.record.spec_path = submit.spec_path;
  out.record.base_dir = admitted.graph.base_dir;
  out.record.priority = admitted.graph.priority;
  out.record.state = std::string(job::JobPhaseName(job::JobPhase::kQueued));
  out.record.submitted_ms = now_ms;
  out.record.submitted_by = submitted_by;
  out.record.run_dir = admitted.graph.workdir;
  out.record.plan = EncodeAdmittedPlan(admitted);
  // The job runs from the very record a restart will replay.
  out.job = JobFromPlan(job_id, std::move(admitted));
  out.job->facts().submitted_ms = now_ms;
  out.job->facts().submitted_by = submitted_by;
  return out;
}

std::unique_ptr<JobState> JobFromPlan(const std::string& job_id, AdmittedPlan admitted) {
  auto job = std::make_unique<JobState>(job_id, std::move(admitted.graph),
                                        std::move(admitted.plan), std::move(admitted.datasets));
  job->set_workdir_token(std::move(admitted.workdir_marker));
  job->facts().node_keys = std::move(admitted.node_keys);
  for (const auto& [p, from] : admitted.reused) job->MarkReused(p, from);
  return job;
}

namespace {

// A job admitted before plans were kept: validated and planned again from its spec, against
// what admission saw of each path (its `extra` lines).
Result<std::unique_ptr<JobState>> ReplanLegacyJob(const store::JobRecord& record) {
  std::string workdir;
  std::string marker;
  DatasetListing datasets;
  ProbeRecord probes;
  RunExtra run;
  DecodeExtra(record.extra, workdir, marker, datasets, probes, run);
  job::ValidationEnv env;
  if (probes.empty()) {
    env.probe = job::ProbePath;  // a job admitted before probes were recorded
  } else {
    env.probe = [&probes](const std::string& path) {
      auto it = probes.find(path);
      return it == probes.end() ? job::PathInfo{} : it->second;
    };
  }
  job::LoadedJob loaded = job::LoadJobText(record.spec_text, record.spec_path, record.base_dir, env);
  if (!loaded.ok()) {
    return InvalidArgument("job " + record.id + " no longer validates: " + loaded.diags.ToString());
  }
  AdmittedPlan admitted;
  admitted.graph = std::move(*loaded.graph);
  if (!workdir.empty()) admitted.graph.workdir = workdir;  // the run directory chosen at admission
  if (!run.root.empty()) admitted.graph.workdir_root = run.root;
  admitted.graph.priority = record.priority;
  // A `broadcast: auto` stays unresolved, so shuffles, as every join did when such a job (one
  // admitted before plans were recorded) was planned: its tasks must number as they did.
  COUPLER_ASSIGN_OR_RETURN(admitted.plan, plan::PlanJob(admitted.graph));
  admitted.datasets = std::move(datasets);
  admitted.workdir_marker = marker;
  admitted.node_keys = std::move(run.keys);
  for (const auto& [p, from] : run.reused) {
    if (p < admitted.plan.nodes.size()) admitted.reused[p] = from;
  }
  return JobFromPlan(record.id, std::move(admitted));
}

// The attempt bases a `coupler retry` recorded ("base\t<task>\t<attempts>" lines of extra).
std::map<uint64_t, uint32_t> AttemptBases(const std::string& extra) {
  std::string workdir, marker;
  DatasetListing datasets;
  ProbeRecord probes;
  RunExtra run;
  DecodeExtra(extra, workdir, marker, datasets, probes, run);
  return run.bases;
}

}  // namespace

Result<std::unique_ptr<JobState>> RestoreJob(const store::JobRecord& record,
                                             const store::TaskHistory& history) {
  const auto& [commits, attempts, sent, devices] = history;
  std::unique_ptr<JobState> job;
  if (!record.plan.empty()) {
    // Replayed, never re-derived: no parser, validator or planner runs, and nothing on disk is
    // read but the record.
    Result<AdmittedPlan> admitted = DecodeAdmittedPlan(record.plan);
    if (!admitted.ok()) {
      return admitted.status().WithContext("job " + record.id + "'s admitted plan");
    }
    admitted->graph.priority = record.priority;
    job = JobFromPlan(record.id, std::move(*admitted));
  } else {
    COUPLER_ASSIGN_OR_RETURN(job, ReplanLegacyJob(record));
  }

  // Attempts that ended without a commit (failed, lost) keep counting against `retries`.
  // Every attempt sent, failed, lost or committed counts (against `retries` too): a task goes
  // on after the highest one, so one in flight at the crash is neither forgotten nor reused,
  // and its late result is not the live attempt's.
  // Flat, by task id: a restart of a 10M-task job replays millions of rows, and trees of them
  // took seconds. 0: no attempt seen.
  const uint64_t tasks = job->table().size();
  std::vector<uint32_t> attempts_of(tasks, 0);
  for (const auto& a : attempts) {
    if (a.task_id < tasks) attempts_of[a.task_id] = std::max(attempts_of[a.task_id], a.attempt + 1);
  }
  // An attempt whose last row is its return never ran: it waits in the queue under its own
  // number again, as it did before the restart (JobState::Requeue). Only a task's highest
  // attempt sent can decide its count (a lower one's is at most its number + 1), so that one's
  // last row is all that is kept.
  struct LastSent {
    uint32_t attempt_plus_1 = 0;  // 0: none sent
    bool returned = false;
  };
  std::vector<LastSent> last_sent(tasks);
  for (const store::SentAttempt& sa : sent) {
    if (sa.task >= tasks) continue;
    LastSent& l = last_sent[sa.task];
    if (sa.attempt + 1 >= l.attempt_plus_1) l = {sa.attempt + 1, sa.returned};
  }
  for (uint64_t t = 0; t < tasks; ++t) {
    const LastSent& l = last_sent[t];
    if (l.attempt_plus_1 == 0) continue;
    const uint32_t attempt = l.attempt_plus_1 - 1;
    attempts_of[t] = std::max(attempts_of[t], l.returned ? attempt : attempt + 1);
  }
  job->facts().submitted_ms = record.submitted_ms;
  job->facts().finished_ms = record.finished_ms;
  job->facts().submitted_by = record.submitted_by;
  if (!job->workdir_token().empty() && !job->finished()) {
    // Written again in case the workdir was cleaned meanwhile; if it cannot be, workers refuse
    // the job's tasks and status says why.
    (void)job::WriteWorkdirMarker(job->graph().workdir, record.id, job->workdir_token());
  }
  static const std::string kCpu = "cpu";
  for (const auto& c : commits) {
    if (c.task_id >= tasks) continue;
    job->RestoreDone(c.task_id, std::max(c.attempt + 1, attempts_of[c.task_id]));
    const std::string& device = history.device_of(c);
    job->facts().CountDevice(device.empty() ? kCpu : device, false);
    attempts_of[c.task_id] = 0;  // counted with its commit
  }
  for (uint64_t t = 0; t < tasks; ++t) {
    if (attempts_of[t] > 0) job->RestoreAttempts(t, attempts_of[t]);
  }
  const std::map<uint64_t, uint32_t> bases = AttemptBases(record.extra);
  for (const auto& [task, base] : bases) {
    if (task < job->table().size()) job->RestoreAttemptBase(task, base);
  }
  // Attempts withdrawn by an operator (a revoked key, a ban), and committed ones whose output
  // a reduce found lost (their commits revoked: the task runs again), were never charged:
  // replayed so, those after a `coupler retry` (whose base already forgave the ones before it).
  std::map<uint64_t, uint32_t> withdrawn;
  for (const auto& a : attempts) {
    const bool uncharged = a.outcome == store::kWithdrawnOutcome || a.outcome == store::kOutputLostOutcome;
    if (!uncharged || a.task_id >= job->table().size()) continue;
    const auto base = bases.find(a.task_id);
    if (base == bases.end() || a.attempt >= base->second) ++withdrawn[a.task_id];
  }
  for (const auto& [task, n] : withdrawn) {
    job->RestoreAttemptBase(task, job->attempt_base(task) + n);
  }
  return job;
}

std::vector<store::SentAttempt> InFlightAttempts(const store::TaskHistory& history) {
  const auto& [commits, attempts, sent, devices] = history;
  // Commits come by task id (StateStore::LoadTaskHistory): a binary search, not a tree of
  // millions. Ended attempts are few (failures, losses).
  auto committed = [&](uint64_t task) {
    auto it = std::lower_bound(commits.begin(), commits.end(), task,
                               [](const store::CommittedTask& c, uint64_t t) { return c.task_id < t; });
    return it != commits.end() && it->task_id == task;
  };
  std::set<std::pair<uint64_t, uint32_t>> ended;
  for (const auto& a : attempts) ended.insert({a.task_id, a.attempt});
  // One per attempt, with where it went last: an attempt reclaimed from one worker unstarted
  // is sent again to another under the same number (rows come in the order they were written).
  // One whose last row is its return is back in the queue, in flight nowhere.
  std::map<std::pair<uint64_t, uint32_t>, const store::SentAttempt*> in_flight;
  for (const store::SentAttempt& t : sent) {
    const std::pair<uint64_t, uint32_t> key{t.task, t.attempt};
    if (!committed(t.task) && !ended.count(key)) in_flight[key] = &t;
  }
  std::vector<store::SentAttempt> out;
  for (const auto& [key, t] : in_flight) {
    if (!t->returned) out.push_back(*t);
  }
  return out;
}

std::string RunDirOf(const store::JobRecord& record) {
  if (!record.run_dir.empty()) return record.run_dir;
  std::string workdir, marker;
  DatasetListing datasets;
  ProbeRecord probes;
  RunExtra run;
  DecodeExtra(record.extra, workdir, marker, datasets, probes, run);
  return workdir;
}

wire::JobStatus SummaryOf(const store::JobRecord& rec) {
  wire::JobStatus s;
  s.id = rec.id;
  s.name = rec.name;
  if (const std::optional<job::JobPhase> phase = job::ParseJobPhase(rec.state)) {
    s.state = *phase;
  } else {
    // Only JobPhaseName writes the column; a row saying otherwise was edited by hand.
    s.state = job::JobPhase::kFailed;
    s.error = "the state store says '" + rec.state + "', which is no job state";
  }
  s.tasks_total = rec.counts.tasks_total;
  s.tasks_done = rec.counts.tasks_done;
  s.tasks_failed = rec.counts.tasks_failed;
  s.attempts = rec.counts.attempts;
  if (!rec.error.empty()) s.error = rec.error;
  s.submitted_ms = rec.submitted_ms;
  s.finished_ms = rec.finished_ms;
  s.submitted_by = rec.submitted_by;
  s.workdir = RunDirOf(rec);  // its files stay where they were: `coupler logs` still reads them
  s.submission_id = rec.submission_id;
  return s;
}

std::string ExtraAfterRetry(const std::string& extra, const JobState& job) {
  std::string out;
  std::istringstream in(extra);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("base\t")) out += line + "\n";
  }
  for (uint64_t t = 0; t < job.table().size(); ++t) {
    if (job.attempt_base(t) > 0) {
      out += "base\t" + std::to_string(t) + "\t" + std::to_string(job.attempt_base(t)) + "\n";
    }
  }
  return out;
}

Result<RetryLoad> LoadForRetry(store::StateStore& store, const std::string& job_id, bool rebuild) {
  RetryLoad out;
  COUPLER_ASSIGN_OR_RETURN(std::optional<store::JobRecord> record, store.LoadJob(job_id));
  if (!record) return Internal("job " + job_id + " is not in the store");
  out.record = std::move(*record);
  if (!rebuild) return out;
  Result<store::TaskHistory> history = store.LoadTaskHistory(job_id);
  if (!history.ok()) {
    return history.status().WithContext("cannot read job " + job_id + "'s tasks from the store");
  }
  COUPLER_ASSIGN_OR_RETURN(out.rebuilt, RestoreJob(out.record, *history));
  return out;
}

}  // namespace coupler::coordinator
