// `coupler submit | status | cancel | retry | workers | drain | worker ban | worker unban`: thin
// clients of a running coordinator.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/client_args.h"
#include "cli/commands.h"
#include "cli/job_wait.h"
#include "cli/status_format.h"
#include "client/client.h"
#include "runtime/job/job_loader.h"
#include "runtime/job/job_phase.h"
#include "runtime/wire/node_progress.h"
#include "runtime/wire/status_json.h"

namespace coupler::cli {
namespace {

// The connection options, and what each command adds to them.
struct ClientArgs : ClientConnection {
  std::string job;
  std::string worker;
  std::string state;
  uint32_t limit = 20;
  int priority = 0;
  bool wait = false;
  bool json = false;
  bool reuse = false;
  std::string submission_id;
  std::string reason;
  std::vector<uint32_t> gpus;
};

int Fail(const ClientArgs& a, const Status& s) { return FailClient(a, s); }

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// --wait: progress until the job ends, then the summary (or, with --json, the status).
// `graph`: the job's graph when it was read here (submit), for its evaluate nodes' accuracy.
int WaitAndSummarize(const ClientArgs& a, client::Client& client, const std::string& id,
                     std::chrono::steady_clock::time_point start,
                     const job::JobGraph* graph = nullptr) {
  WaitOutcome outcome = WaitForJob(client, id);
  if (outcome.final_status) {
    // The same ending as `coupler run`'s, or the status document for a script.
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fputs((a.json ? wire::JobStatusJson(*outcome.final_status)
                       : JobSummaryText(*outcome.final_status, wall))
                   .c_str(),
               stdout);
    if (!a.json && outcome.exit_code == 0 && graph != nullptr) {
      PrintAccuracy(*graph, outcome.final_status->workdir, /*quiet_if_unreadable=*/true);
    }
  }
  return outcome.exit_code;
}

int Submit(const ClientArgs& a) {
  // Validate here first: the user gets file:line errors without a round trip.
  job::LoadedJob local = job::LoadJobFile(a.job);
  if (!local.ok()) {
    std::fputs(local.diags.ToString().c_str(), stderr);
    return kExitBadInput;
  }
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  const auto start = std::chrono::steady_clock::now();
  bool existing = false;
  Result<std::string> id = (*client)->Submit(a.job, a.priority, a.reuse, a.submission_id, &existing);
  if (!id.ok()) return Fail(a, id.status());
  if (existing) {
    std::fprintf(stderr, "%s was submitted before with submission id '%s': not submitted again\n",
                 id->c_str(), a.submission_id.c_str());
  }
  if (!a.wait) {
    std::printf("%s\n", id->c_str());
    return kExitOk;
  }
  if (!existing) std::fprintf(stderr, "submitted %s\n", id->c_str());
  return WaitAndSummarize(a, **client, *id, start, &*local.graph);
}

int RetryJob(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> r = (*client)->Retry(a.job);
  if (!r.ok()) return Fail(a, r.status());
  std::fprintf(a.wait ? stderr : stdout, "%s\n", r->c_str());
  if (!a.wait) return kExitOk;
  return WaitAndSummarize(a, **client, a.job, start);
}

int ShowStatus(const ClientArgs& a) {
  const std::optional<job::JobPhase> state = job::ParseJobPhase(a.state);
  if (!a.state.empty() && !state) {
    std::fprintf(stderr, "coupler: --state %s: not a job state (queued, running, succeeded, "
                 "failed, cancelled)\n", a.state.c_str());
    return kExitBadInput;
  }
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  if (!a.job.empty()) {
    Result<wire::StatusReply> reply = (*client)->Status(a.job);
    if (!reply.ok()) return Fail(a, reply.status());
    if (reply->jobs.empty()) return Fail(a, NotFound("no job " + a.job));
    const wire::JobStatus& job = reply->jobs.front();
    std::fputs((a.json ? wire::JobStatusJson(job)
                       : JobStatusText(job, WallNowMs(), wire::TightNodeProgress(job, false)))
                   .c_str(),
               stdout);
    return kExitOk;
  }
  // One more than shown: whether --limit cut the list.
  const uint32_t ask = a.limit == 0 ? 0 : a.limit + 1;
  Result<wire::StatusReply> reply = (*client)->Jobs(state, ask);
  if (!reply.ok()) return Fail(a, reply.status());
  const bool more = a.limit > 0 && reply->jobs.size() > a.limit;
  if (more) reply->jobs.resize(a.limit);
  if (a.json) {
    std::fputs(wire::StatusReplyJson(*reply).c_str(), stdout);
    return kExitOk;
  }
  std::fputs(JobListText(reply->jobs, WallNowMs(), more).c_str(), stdout);
  std::fputs(CoordinatorText(reply->coordinator).c_str(), stdout);
  return kExitOk;
}

int CancelJob(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  Result<std::string> r = (*client)->Cancel(a.job);
  if (!r.ok()) return Fail(a, r.status());
  std::printf("%s: %s\n", a.job.c_str(), r->c_str());
  return kExitOk;
}

int ListWorkers(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  auto workers = (*client)->Workers();
  if (!workers.ok()) return Fail(a, workers.status());
  std::fputs((a.json ? wire::WorkersJson(*workers) : WorkersText(*workers)).c_str(), stdout);
  return kExitOk;
}

int DrainWorker(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  auto r = (*client)->Drain(a.worker);
  if (!r.ok()) return Fail(a, r.status());
  std::printf("%s\n", r->c_str());
  return kExitOk;
}

int BanWorker(const ClientArgs& a, bool ban) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  auto r = (*client)->Ban(a.worker, a.reason, ban);
  if (!r.ok()) return Fail(a, r.status());
  std::printf("%s\n", r->c_str());
  return kExitOk;
}

int FenceGpu(const ClientArgs& a, bool fence) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(a, client.status());
  auto r = (*client)->FenceGpu(a.worker, a.gpus, a.reason, fence);
  if (!r.ok()) return Fail(a, r.status());
  std::printf("%s\n", r->c_str());
  return kExitOk;
}

CLI::App* Command(CLI::App& app, const char* name, const char* help,
                  const std::shared_ptr<ClientArgs>& args) {
  return ClientCommand(app, name, help, *args);
}

}  // namespace

void AddClientCommands(CLI::App& app, CommandBody* run) {
  auto submit = std::make_shared<ClientArgs>();
  CLI::App* s = Command(app, "submit", "Submit a job; prints its id, or waits with --wait", submit);
  s->add_option("job", submit->job, "job spec (YAML or JSON)")->required();
  s->add_option("--priority", submit->priority, "higher runs first");
  s->add_flag("--wait", submit->wait,
              "show progress, wait, print a summary (as `coupler run` does); exit 1 if the job "
              "fails");
  s->add_flag("--json", submit->json, "with --wait: print the final status as JSON instead");
  s->add_option("--submission-id", submit->submission_id,
                "an idempotency key: when the coordinator's state holds a job submitted with "
                "it, that job is the answer (and --wait waits for it) instead of a new one");
  s->add_flag("--reuse", submit->reuse,
              "nodes whose op, params and inputs are unchanged since a succeeded run keep its "
              "outputs instead of running (see docs/runs.md)");
  s->callback([submit, run] { *run = [submit] { return Submit(*submit); }; });

  auto status = std::make_shared<ClientArgs>();
  CLI::App* st = Command(app, "status", "Show jobs (all, or one) and their tasks", status);
  st->add_option("job", status->job, "job id: the job and its nodes (default: a line per job)");
  st->add_option("--state", status->state,
                 "only jobs in this state (queued, running, succeeded, failed, cancelled)");
  st->add_option("--limit", status->limit, "at most this many jobs, newest first (0: all)")
      ->capture_default_str();
  st->add_flag("--json", status->json, "print JSON");
  st->callback([status, run] { *run = [status] { return ShowStatus(*status); }; });

  auto cancel = std::make_shared<ClientArgs>();
  CLI::App* c = Command(app, "cancel", "Cancel a job: queued tasks stop, running ones are abandoned", cancel);
  c->add_option("job", cancel->job, "job id")->required();
  c->callback([cancel, run] { *run = [cancel] { return CancelJob(*cancel); }; });

  auto retry = std::make_shared<ClientArgs>();
  CLI::App* r = Command(app, "retry",
                        "Re-run a failed or cancelled job's failed nodes and what depends on "
                        "them, in place (same id, same run directory)",
                        retry);
  r->add_option("job", retry->job, "job id")->required();
  r->add_flag("--wait", retry->wait, "show progress, wait, print a summary; exit 1 if it fails");
  r->add_flag("--json", retry->json, "with --wait: print the final status as JSON instead");
  r->callback([retry, run] { *run = [retry] { return RetryJob(*retry); }; });

  auto workers = std::make_shared<ClientArgs>();
  CLI::App* w = Command(app, "workers", "List the worker pool", workers);
  w->add_flag("--json", workers->json, "print JSON");
  w->callback([workers, run] { *run = [workers] { return ListWorkers(*workers); }; });

  auto drain = std::make_shared<ClientArgs>();
  CLI::App* d = Command(app, "drain", "Stop sending work to a worker; it leaves when idle", drain);
  d->add_option("worker", drain->worker, "worker id")->required();
  d->callback([drain, run] { *run = [drain] { return DrainWorker(*drain); }; });

  // Under `coupler worker` (which runs a worker when given no subcommand): an admin's ban.
  CLI::App* worker = app.get_subcommand("worker");
  auto ban = std::make_shared<ClientArgs>();
  CLI::App* b = Command(*worker, "ban",
                        "Refuse a worker until unbanned (admin): a connected one is dropped at "
                        "once and its tasks run elsewhere; kept across coordinator restarts",
                        ban);
  b->add_option("worker", ban->worker, "worker id")->required();
  b->add_option("--reason", ban->reason, "why: shown in `coupler workers`")->required();
  b->callback([ban, run] { *run = [ban] { return BanWorker(*ban, true); }; });
  auto unban = std::make_shared<ClientArgs>();
  CLI::App* u = Command(*worker, "unban", "Lift a worker's ban (admin)", unban);
  u->add_option("worker", unban->worker, "worker id")->required();
  u->callback([unban, run] { *run = [unban] { return BanWorker(*unban, false); }; });

  // GPU fences: an XID or uncorrectable ECC error sets one by itself; an admin sets or lifts it.
  auto fence = std::make_shared<ClientArgs>();
  CLI::App* f = Command(*worker, "fence-gpu",
                        "Stop sending work to a worker's GPUs (admin); its other GPUs and CPUs "
                        "go on working; kept across restarts until `clear-gpu`",
                        fence);
  f->add_option("worker", fence->worker, "worker id")->required();
  f->add_option("--gpu", fence->gpus, "a GPU's CUDA ordinal on that worker (repeat; default: all)");
  f->add_option("--reason", fence->reason, "why: shown in `coupler workers`")->required();
  f->callback([fence, run] { *run = [fence] { return FenceGpu(*fence, true); }; });
  auto clear = std::make_shared<ClientArgs>();
  CLI::App* cl = Command(*worker, "clear-gpu",
                         "Lift the fences of a worker's GPUs (admin), whoever set them: work "
                         "goes to them again, and only errors after now fence them again",
                         clear);
  cl->add_option("worker", clear->worker, "worker id")->required();
  cl->add_option("--gpu", clear->gpus, "a GPU's CUDA ordinal on that worker (repeat; default: all)");
  cl->callback([clear, run] { *run = [clear] { return FenceGpu(*clear, false); }; });
}

}  // namespace coupler::cli
