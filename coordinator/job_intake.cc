#include "coordinator/job_intake.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "runtime/job/job_loader.h"
#include "runtime/job/validator.h"
#include "runtime/plan/planner.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

// JobRecord::extra: "workdir\t<dir>" then one "dataset\t<dir>\t<file>\t<file>..." per dataset.
std::string EncodeExtra(const std::string& workdir, const DatasetListing& datasets) {
  std::string out = "workdir\t" + workdir + "\n";
  for (const auto& [dir, files] : datasets) {
    out += "dataset\t" + dir;
    for (const auto& f : files) out += "\t" + f;
    out += "\n";
  }
  return out;
}

void DecodeExtra(const std::string& extra, std::string& workdir, DatasetListing& datasets) {
  std::istringstream in(extra);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream ls(line);
    for (std::string f; std::getline(ls, f, '\t');) fields.push_back(f);
    if (fields.size() >= 2 && fields[0] == "workdir") workdir = fields[1];
    if (fields.size() >= 2 && fields[0] == "dataset") {
      datasets[fields[1]] = std::vector<std::string>(fields.begin() + 2, fields.end());
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
        if (job::IsShardFileName(e.path().filename().string())) files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      out[in.path] = std::move(files);
    }
  }
  return out;
}

Result<job::JobGraph> LoadSpec(const std::string& text, const std::string& spec_path,
                               const std::string& cwd) {
  job::ValidationEnv env;
  env.probe = job::ProbePath;
  env.cwd = cwd;
  const std::string base_dir = fs::path(spec_path).parent_path().lexically_normal().string();
  job::LoadedJob loaded = job::LoadJobText(text, spec_path, base_dir, env);
  if (!loaded.ok()) {
    std::string msg = loaded.diags.ToString();
    if (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return InvalidArgument(msg);
  }
  return std::move(*loaded.graph);
}

}  // namespace

Result<AdmittedJob> AdmitJob(const wire::SubmitJob& submit, const std::string& job_id,
                             int64_t now_ms, const std::string& submitted_by) {
  if (submit.spec_path.empty() || !fs::path(submit.spec_path).is_absolute()) {
    return InvalidArgument("submit needs the spec's absolute path (relative inputs resolve "
                           "against its directory), got '" + submit.spec_path + "'");
  }
  COUPLER_ASSIGN_OR_RETURN(job::JobGraph graph, LoadSpec(submit.spec_text, submit.spec_path, submit.cwd));
  if (submit.priority != 0) graph.priority = submit.priority;
  COUPLER_ASSIGN_OR_RETURN(plan::Plan plan, plan::PlanJob(graph));
  DatasetListing datasets = ListDatasets(graph);

  AdmittedJob out;
  out.record.id = job_id;
  out.record.name = graph.name;
  out.record.spec_text = submit.spec_text;
  out.record.spec_path = submit.spec_path;
  out.record.base_dir = graph.base_dir;
  out.record.priority = graph.priority;
  out.record.state = "queued";
  out.record.submitted_ms = now_ms;
  out.record.extra = EncodeExtra(graph.workdir, datasets);
  out.record.submitted_by = submitted_by;
  out.job = std::make_unique<JobState>(job_id, std::move(graph), std::move(plan), std::move(datasets));
  out.job->set_times(now_ms, 0);
  out.job->set_submitted_by(submitted_by);
  return out;
}

Result<std::unique_ptr<JobState>> RestoreJob(const store::JobRecord& record,
                                             const std::vector<store::TaskCommit>& commits,
                                             const std::vector<store::AttemptRecord>& attempts) {
  std::string workdir;
  DatasetListing datasets;
  DecodeExtra(record.extra, workdir, datasets);
  job::ValidationEnv env;
  env.probe = job::ProbePath;
  job::LoadedJob loaded = job::LoadJobText(record.spec_text, record.spec_path, record.base_dir, env);
  if (!loaded.ok()) {
    return InvalidArgument("job " + record.id + " no longer validates: " + loaded.diags.ToString());
  }
  job::JobGraph graph = std::move(*loaded.graph);
  if (!workdir.empty()) graph.workdir = workdir;
  graph.priority = record.priority;
  COUPLER_ASSIGN_OR_RETURN(plan::Plan plan, plan::PlanJob(graph));
  auto job = std::make_unique<JobState>(record.id, std::move(graph), std::move(plan), std::move(datasets));

  // Attempts that ended without a commit (failed, lost) keep counting against `retries`.
  std::map<uint64_t, uint32_t> failed_attempts;
  for (const auto& a : attempts) ++failed_attempts[a.task_id];
  job->set_times(record.submitted_ms, record.finished_ms);
  job->set_submitted_by(record.submitted_by);
  for (const auto& c : commits) {
    if (c.task_id >= job->table().size()) continue;
    job->RestoreDone(c.task_id, c.attempt + 1);
    job->CountDevice(c.device.empty() ? "cpu" : c.device, false);
    failed_attempts.erase(c.task_id);
  }
  for (const auto& [task, n] : failed_attempts) {
    if (task < job->table().size()) job->RestoreAttempts(task, n);
  }
  return job;
}

}  // namespace coupler::coordinator
