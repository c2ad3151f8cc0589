// `coupler logs JOB [NODE [TASK]] [--attempt N] [--tail N] [--follow]`: prints what a job's
// tasks printed, read from the log files under the job's workdir (runtime/job/task_logs.h), so
// it runs where that shared filesystem is mounted. The coordinator says where the workdir is,
// which nodes the job has and when it has finished.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "client/client.h"
#include "runtime/job/job_phase.h"
#include "runtime/io/unique_fd.h"
#include "runtime/job/task_logs.h"
#include "runtime/net/endpoint.h"

namespace coupler::cli {
namespace {

using namespace std::chrono_literals;

// What one file prints at most at once: a log is bounded by its writer, this bounds a reader
// of a file someone made huge by hand.
constexpr size_t kMaxPrintBytes = size_t{64} << 20;
constexpr size_t kFollowChunk = size_t{1} << 20;
constexpr auto kFollowPoll = 200ms;

struct LogsArgs {
  std::string coordinator = "tcp://127.0.0.1:7100";
  client::ClientSecurity security;
  std::string job;
  std::string node;
  std::optional<uint64_t> task;
  std::optional<uint32_t> attempt;
  size_t tail = 0;
  bool follow = false;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "coupler: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

Result<wire::JobStatus> JobOf(client::Client& client, const std::string& job) {
  COUPLER_ASSIGN_OR_RETURN(wire::StatusReply reply, client.Status(job));
  if (reply.jobs.empty()) return NotFound("no job " + job);
  return std::move(reply.jobs.front());
}

// Whether what the user asked about has ended: the node's tasks, or the whole job.
bool Ended(const wire::JobStatus& job, const std::string& node) {
  if (job::IsFinished(job.state)) return true;
  for (const wire::NodeStatus& n : job.nodes) {
    if (n.id == node) return job::IsFinished(n.state);
  }
  return false;
}

std::string Header(const job::TaskLogFile& f) {
  return "==> " + f.node + "/task " + std::to_string(f.task_id) + " attempt " +
         std::to_string(f.attempt) + " " + f.stream + " <==\n";
}

void Print(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

std::string What(const LogsArgs& a) {
  std::string what = "job " + a.job;
  if (!a.node.empty()) what += " node " + a.node;
  if (a.task) what += " task " + std::to_string(*a.task);
  if (a.attempt) what += " attempt " + std::to_string(*a.attempt);
  return what;
}

// Prints each file's tail once.
int PrintOnce(const std::vector<job::TaskLogFile>& files, const LogsArgs& a) {
  for (size_t i = 0; i < files.size(); ++i) {
    Result<std::string> text = job::ReadLogTail(files[i].path, a.tail, kMaxPrintBytes);
    if (!text.ok()) return Fail(text.status());
    Print((i == 0 ? "" : "\n") + Header(files[i]));
    Print(*text);
    if (!text->empty() && text->back() != '\n') Print("\n");
  }
  std::fflush(stdout);
  return kExitOk;
}

// Prints what every matching file holds, then what is appended to them (and files that
// appear: new tasks, a retry's attempt), until the node or job has ended.
int Follow(client::Client& client, const wire::JobStatus& first,
           const std::vector<std::string>& nodes, const LogsArgs& a) {
  std::map<std::string, uint64_t> offsets;  // path -> where its reader is
  std::string last_header;
  bool said_waiting = false;
  wire::JobStatus job = first;
  while (true) {
    // Checked before reading, so the pass after the end still prints what came last.
    const bool ended = Ended(job, a.node);
    Result<std::vector<job::TaskLogFile>> files =
        job::ListTaskLogs(job.workdir, nodes, a.node, a.task, a.attempt);
    if (!files.ok()) return Fail(files.status());
    if (files->empty() && !said_waiting && !ended) {
      std::fprintf(stderr, "coupler: no logs yet for %s; waiting\n", What(a).c_str());
      said_waiting = true;
    }
    for (const job::TaskLogFile& f : *files) {
      // A file seen for the first time with --tail: only its last lines, then what follows.
      bool cut = !offsets.contains(f.path) && a.tail > 0;
      uint64_t& offset = offsets[f.path];
      while (true) {
        const size_t limit = cut ? kMaxPrintBytes : kFollowChunk;
        Result<job::LogChunk> chunk = job::ReadLogFrom(f.path, offset, limit);
        if (!chunk.ok()) break;  // replaced between listing and reading: the next pass sees it
        offset = chunk->next_offset;
        const size_t read = chunk->text.size();
        const std::string_view text = cut ? job::LastLines(chunk->text, a.tail) : chunk->text;
        if (!text.empty() || (chunk->skipped > 0 && !cut)) {
          const std::string header = Header(f);
          if (header != last_header) {
            Print((last_header.empty() ? "" : "\n") + header);
            last_header = header;
          }
          if (chunk->skipped > 0 && !cut) Print(job::DroppedLine(chunk->skipped));
          Print(text);
        }
        cut = false;
        if (read < limit) break;
      }
    }
    std::fflush(stdout);
    if (ended) break;
    std::this_thread::sleep_for(kFollowPoll);
    Result<wire::JobStatus> now = JobOf(client, a.job);
    if (!now.ok()) return Fail(now.status());
    job = std::move(*now);
  }
  if (offsets.empty()) std::fprintf(stderr, "coupler: no logs for %s\n", What(a).c_str());
  return kExitOk;
}

// A run directory instead of a job id: the logs read straight from it, no coordinator asked —
// what a job `coupler run` ran leaves behind once its coordinator is gone. Its nodes are its
// sub-folders.
int ShowRunDirLogs(const LogsArgs& a) {
  if (a.follow) {
    return Fail(InvalidArgument("--follow needs a running job's id (and its coordinator), not a "
                                "run directory"));
  }
  std::vector<std::string> nodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(a.job, ec)) {
    if (entry.is_directory(ec)) nodes.push_back(entry.path().filename().string());
  }
  if (ec) return Fail(io::ErrnoStatus("read the run directory", a.job, ec.value()));
  std::sort(nodes.begin(), nodes.end());
  Result<std::vector<job::TaskLogFile>> files =
      job::ListTaskLogs(a.job, nodes, a.node, a.task, a.attempt);
  if (!files.ok()) return Fail(files.status());
  if (files->empty()) {
    std::fprintf(stderr, "coupler: no logs in %s\n", a.job.c_str());
    return kExitOk;
  }
  return PrintOnce(*files, a);
}

// No coordinator to ask (none there, no keys for one): `coupler run` stops its coordinator when
// the job ends, and its logs stay in the run directory, which says where to look.
int FailWithoutCoordinator(const Status& status) {
  const int code = Fail(status);
  std::fprintf(stderr, "coupler: for a job `coupler run` ran, pass its run directory (the "
                       "`outputs:` line it printed, or WORKDIR/latest) instead of the job id\n");
  return code;
}

int ShowLogs(const LogsArgs& a) {
  std::error_code ec;
  if (std::filesystem::is_directory(a.job, ec)) return ShowRunDirLogs(a);
  auto client = client::Client::Connect(net::ClientEndpointFor(a.coordinator), 10s, a.security);
  if (!client.ok()) return FailWithoutCoordinator(client.status());
  Result<wire::JobStatus> job = JobOf(**client, a.job);
  if (!job.ok()) {
    return job.status().code() == StatusCode::kNotFound ? Fail(job.status())
                                                        : FailWithoutCoordinator(job.status());
  }
  if (job->workdir.empty()) {
    return Fail(Unavailable("the coordinator did not say where job " + a.job +
                            "'s workdir is (a coordinator older than protocol 9)"));
  }
  std::vector<std::string> nodes;
  for (const wire::NodeStatus& n : job->nodes) nodes.push_back(n.id);
  Result<std::vector<job::TaskLogFile>> files =
      job::ListTaskLogs(job->workdir, nodes, a.node, a.task, a.attempt);
  if (!files.ok()) return Fail(files.status());
  if (a.follow) return Follow(**client, *job, nodes, a);
  if (files->empty()) {
    std::fprintf(stderr, "coupler: no logs yet for %s (job %s)\n", What(a).c_str(),
                 std::string(job::JobPhaseName(job->state)).c_str());
    return kExitOk;
  }
  return PrintOnce(*files, a);
}

}  // namespace

void AddLogsCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<LogsArgs>();
  CLI::App* c = app.add_subcommand(
      "logs", "Print what a job's tasks printed (each task's latest attempt, unless --attempt)");
  c->add_option("job", args->job,
                 "job id, or a run directory (`coupler run`'s outputs: line), read without a "
                 "coordinator")
      ->required();
  c->add_option("node", args->node, "only this node's tasks");
  auto task = std::make_shared<uint64_t>();
  auto attempt = std::make_shared<uint32_t>();
  CLI::Option* task_opt =
      c->add_option("task", *task, "only this task (the id `coupler status` and errors show)");
  CLI::Option* attempt_opt = c->add_option("--attempt", *attempt, "this attempt (0 first)");
  c->add_option("--tail", args->tail, "only each file's last N lines");
  c->add_flag("--follow,-f", args->follow,
              "keep printing what is appended until the node (or the job) ends");
  c->add_option("--coordinator", args->coordinator,
                "the coordinator (its worker endpoint; clients use the port + 1)")
      ->capture_default_str();
  c->add_option("--keys", args->security.keys_dir,
                "client key set: NAME.key + coordinator.pub (default: $COUPLER_KEYS, then the "
                "local keys of a coordinator of this user on this machine)");
  c->add_flag("--insecure", args->security.insecure,
              "plaintext, to a coordinator started --insecure");
  c->callback([args, task, attempt, task_opt, attempt_opt, run] {
    if (task_opt->count() > 0) args->task = *task;
    if (attempt_opt->count() > 0) args->attempt = *attempt;
    *run = [args] { return ShowLogs(*args); };
  });
}

}  // namespace coupler::cli
