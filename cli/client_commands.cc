// `coupler submit | status | cancel | workers | drain`: thin clients of a running coordinator.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/job_wait.h"
#include "cli/status_format.h"
#include "client/client.h"
#include "coordinator/coordinator.h"
#include "runtime/job/job_loader.h"
#include "runtime/net/endpoint.h"
#include "runtime/wire/status_json.h"

namespace coupler::cli {
namespace {

struct ClientArgs {
  std::string coordinator = "tcp://127.0.0.1:7100";
  std::string job;
  std::string worker;
  int priority = 0;
  bool wait = false;
  bool json = false;
  client::ClientSecurity security;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "coupler: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

Result<std::unique_ptr<client::Client>> ConnectClient(const ClientArgs& a) {
  return client::Client::Connect(net::ClientEndpointFor(a.coordinator),
                                     std::chrono::seconds(10), a.security);
}

int Submit(const ClientArgs& a) {
  // Validate here first: the user gets file:line errors without a round trip.
  job::LoadedJob local = job::LoadJobFile(a.job);
  if (!local.ok()) {
    std::fputs(local.diags.ToString().c_str(), stderr);
    return kExitBadInput;
  }
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(client.status());
  Result<std::string> id = (*client)->Submit(a.job, a.priority);
  if (!id.ok()) return Fail(id.status());
  if (!a.wait) {
    std::printf("%s\n", id->c_str());
    return kExitOk;
  }
  std::fprintf(stderr, "submitted %s\n", id->c_str());
  WaitOutcome outcome = WaitForJob(**client, *id);
  if (outcome.final_status && a.json) std::fputs(wire::JobStatusJson(*outcome.final_status).c_str(), stdout);
  return outcome.exit_code;
}

int ShowStatus(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(client.status());
  Result<wire::StatusReply> reply = (*client)->Status(a.job);
  if (!reply.ok()) return Fail(reply.status());
  if (a.json) {
    std::fputs((a.job.empty() ? wire::StatusReplyJson(*reply) : wire::JobStatusJson(reply->jobs.at(0))).c_str(),
               stdout);
    return kExitOk;
  }
  if (reply->jobs.empty()) std::printf("no jobs\n");
  for (const auto& j : reply->jobs) std::fputs(JobStatusText(j).c_str(), stdout);
  if (a.job.empty()) std::fputs(CoordinatorText(reply->coordinator).c_str(), stdout);
  return kExitOk;
}

int CancelJob(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(client.status());
  Result<std::string> r = (*client)->Cancel(a.job);
  if (!r.ok()) return Fail(r.status());
  std::printf("%s: %s\n", a.job.c_str(), r->c_str());
  return kExitOk;
}

int ListWorkers(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(client.status());
  auto workers = (*client)->Workers();
  if (!workers.ok()) return Fail(workers.status());
  std::fputs((a.json ? wire::WorkersJson(*workers) : WorkersText(*workers)).c_str(), stdout);
  return kExitOk;
}

int DrainWorker(const ClientArgs& a) {
  auto client = ConnectClient(a);
  if (!client.ok()) return Fail(client.status());
  auto r = (*client)->Drain(a.worker);
  if (!r.ok()) return Fail(r.status());
  std::printf("%s\n", r->c_str());
  return kExitOk;
}

CLI::App* Command(CLI::App& app, const char* name, const char* help,
                  std::shared_ptr<ClientArgs> args) {
  CLI::App* c = app.add_subcommand(name, help);
  c->add_option("--coordinator", args->coordinator,
                "the coordinator (its worker endpoint; clients use the port + 1)")
      ->capture_default_str();
  c->add_option("--keys", args->security.keys_dir,
                "client key set: NAME.key + coordinator.pub (default: $COUPLER_KEYS, then the "
                "local keys of a coordinator of this user on this machine)");
  c->add_flag("--insecure", args->security.insecure, "plaintext, to a coordinator started --insecure");
  return c;
}

}  // namespace

void AddClientCommands(CLI::App& app, CommandBody* run) {
  auto submit = std::make_shared<ClientArgs>();
  CLI::App* s = Command(app, "submit", "Submit a job; prints its id, or waits with --wait", submit);
  s->add_option("job", submit->job, "job spec (YAML or JSON)")->required();
  s->add_option("--priority", submit->priority, "higher runs first");
  s->add_flag("--wait", submit->wait, "show progress and wait; exit 1 if the job fails");
  s->add_flag("--json", submit->json, "with --wait: print the final status as JSON");
  s->callback([submit, run] { *run = [submit] { return Submit(*submit); }; });

  auto status = std::make_shared<ClientArgs>();
  CLI::App* st = Command(app, "status", "Show jobs (all, or one) and their tasks", status);
  st->add_option("job", status->job, "job id (default: all jobs)");
  st->add_flag("--json", status->json, "print JSON");
  st->callback([status, run] { *run = [status] { return ShowStatus(*status); }; });

  auto cancel = std::make_shared<ClientArgs>();
  CLI::App* c = Command(app, "cancel", "Cancel a job: queued tasks stop, running ones are abandoned", cancel);
  c->add_option("job", cancel->job, "job id")->required();
  c->callback([cancel, run] { *run = [cancel] { return CancelJob(*cancel); }; });

  auto workers = std::make_shared<ClientArgs>();
  CLI::App* w = Command(app, "workers", "List the worker pool", workers);
  w->add_flag("--json", workers->json, "print JSON");
  w->callback([workers, run] { *run = [workers] { return ListWorkers(*workers); }; });

  auto drain = std::make_shared<ClientArgs>();
  CLI::App* d = Command(app, "drain", "Stop sending work to a worker; it leaves when idle", drain);
  d->add_option("worker", drain->worker, "worker id")->required();
  d->callback([drain, run] { *run = [drain] { return DrainWorker(*drain); }; });
}

}  // namespace coupler::cli
