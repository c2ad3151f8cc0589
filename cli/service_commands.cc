// `coupler coordinator` and `coupler worker`: the two long-running processes.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/signals.h"
#include "coordinator/coordinator.h"
#include "runtime/wire/envelope.h"
#include "runtime/util/byte_size.h"
#include "runtime/util/duration.h"
#include "worker/task_memory.h"
#include "worker/worker.h"

namespace coupler::cli {
namespace {

// A duration flag ("90s", "30m", "12h", "7d") stored as milliseconds in `*ms`, which outlives
// the parse (an options struct the command owns).
void AddDurationOption(CLI::App* c, const std::string& name, int64_t& ms,
                       const std::string& help) {
  c->add_option_function<std::string>(
      name,
      [&ms, name](const std::string& text) {
        Result<int64_t> parsed = util::ParseDuration(text, name);
        if (!parsed.ok()) throw CLI::ValidationError(std::string(parsed.status().message()));
        ms = *parsed;
      },
      help);
}


int RunCoordinator(const coordinator::CoordinatorOptions& opts) {
  if (opts.insecure) {
    std::fprintf(stderr,
                 "coupler: warning: --insecure: no encryption and no authentication; anyone "
                 "who can reach %s runs commands as this user\n",
                 opts.listen.c_str());
  }
  const std::atomic<bool>& stop = StopRequested();
  auto c = coordinator::Coordinator::Create(opts);
  if (!c.ok()) {
    std::fprintf(stderr, "coupler: %s\n", c.status().message().c_str());
    return c.status().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  const std::string http = (*c)->http_url();
  std::fprintf(stderr, "coupler coordinator: workers %s, clients %s, http %s, state %s\n",
               (*c)->worker_endpoint().c_str(), (*c)->client_endpoint().c_str(),
               http.empty() ? "off" : http.c_str(), opts.state_dir.c_str());
  Status s = (*c)->Run(stop);
  if (!s.ok()) {
    std::fprintf(stderr, "coupler: %s\n", s.message().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

int RunWorker(const worker::WorkerOptions& opts) {
  worker::RetainTaskMemory();
  const std::atomic<bool>& drain = StopRequested();
  auto w = worker::Worker::Create(opts);
  if (!w.ok()) {
    std::fprintf(stderr, "coupler: %s\n", w.status().message().c_str());
    return w.status().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  Status s = (*w)->Run(drain);
  if (!s.ok()) {
    std::fprintf(stderr, "coupler: %s\n", s.message().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void AddServiceCommands(CLI::App& app, CommandBody* run) {
  auto copts = std::make_shared<coordinator::CoordinatorOptions>();
  CLI::App* c = app.add_subcommand("coordinator", "Run the coordinator: schedules jobs over workers");
  c->add_option("--listen", copts->listen, "endpoint for workers (clients use the port + 1)")
      ->capture_default_str();
  c->add_option("--clients", copts->client_listen, "endpoint for clients (default: listen port + 1)");
  c->add_option("--state", copts->state_dir, "directory for the SQLite state (resumes from it)")
      ->required();
  c->add_option("--heartbeat-ms", copts->heartbeat_ms, "heartbeat period")->capture_default_str();
  c->add_option("--dead-after-ms", copts->dead_after_ms, "a silent worker is dead after this")
      ->capture_default_str();
  c->add_option("--gang-hold-timeout-ms", copts->gang_hold_timeout_ms,
                "a tight node still gathering its ranks gives held slots back after this")
      ->capture_default_str();
  c->add_option("--stop-drain-ms", copts->stop_drain_ms,
                "on SIGTERM/SIGINT, drain the pool first (workers finish and commit what they "
                "hold) for up to this long; 0: stop at once")
      ->capture_default_str();
  c->add_option("--keep-jobs", copts->keep_jobs,
                "finished jobs kept in memory with every detail, the newest; older ones are "
                "answered from the state (summary and nodes), so memory does not grow with history")
      ->capture_default_str();
  c->add_option("--keep-finished-ms", copts->keep_finished_ms,
                "and none that finished longer ago than this (ms; 0: no age limit)")
      ->capture_default_str();
  AddDurationOption(c, "--gc-older-than", copts->gc_older_than_ms,
                    "while running, remove the run directories (outputs, logs, checkpoints) of "
                    "jobs that finished at least this long ago (90s, 30m, 12h, 7d), as `coupler "
                    "gc` does; the jobs stay listed. Off by default");
  c->add_option("--gc-keep-jobs", copts->gc_keep_jobs,
                "with --gc-older-than: never the newest this many finished jobs")
      ->capture_default_str();
  AddDurationOption(c, "--gc-every", copts->gc_every_ms,
                    "with --gc-older-than: how often to look (default 1h; at least 1s)");
  c->add_flag(store::kAcceptStateLossFlag, copts->accept_state_loss,
              "start even though the state lost commits (its WAL deleted, an older backup put "
              "back): continue with what the database holds, forgetting the rest");
  c->add_option("--ready-file", copts->ready_file, "write the bound endpoints here once listening");
  c->add_option("--keys", copts->keys_dir,
                "coordinator key set (default: STATE/keys, created at first start)");
  c->add_option("--data-root", copts->data_roots,
                "a folder jobs' inputs and workdirs may be under (repeatable); without any: "
                "anywhere but the coordinator's own folders and system folders such as /etc "
                "(docs/security.md)");
  c->add_option("--reuse-catalog", copts->reuse_catalog,
                "the file that records which runs' outputs --reuse may link (default: "
                "STATE/reuse.db)");
  c->add_option_function<std::string>(
       "--event-log-bytes",
       [copts](const std::string& text) {
         Result<size_t> bytes = util::ParseByteSize(text);
         if (!bytes.ok()) throw CLI::ValidationError("--event-log-bytes", bytes.status().message());
         copts->event_log_bytes = *bytes;
       },
       "size of STATE/events.jsonl before it rotates (3 old files kept), e.g. 64MiB; 0: no "
       "event log")
      ->default_str("64MiB");
  c->add_flag("--insecure", copts->insecure,
              "plaintext, no authentication: loopback addresses only, for trusted machines "
              "(HTTP: allows plaintext beyond loopback; the API still needs its token)");
  c->add_option("--http", copts->http,
                "HOST:PORT for /metrics, the live page and the job API, or 'off' "
                "(default: 127.0.0.1 at the workers' port + 80)");
  auto tls = std::make_shared<std::vector<std::string>>();
  c->add_option("--http-tls", *tls, "CERT KEY: serve HTTPS (needed to listen beyond loopback)")
      ->expected(2);
  c->callback([copts, run, tls] {
    if (tls->size() == 2) {
      copts->http_tls_cert = (*tls)[0];
      copts->http_tls_key = (*tls)[1];
    }
    copts->version = COUPLER_VERSION;
    *run = [copts] { return RunCoordinator(*copts); };
  });

  auto wopts = std::make_shared<worker::WorkerOptions>();
  auto labels = std::make_shared<std::vector<std::string>>();
  CLI::App* w = app.add_subcommand("worker", "Run a worker: executes tasks for a coordinator");
  w->add_option("--coordinator", wopts->coordinator, "the coordinator's worker endpoint")
      ->capture_default_str();
  w->add_option("--id", wopts->id, "worker id (default host-pid)");
  w->add_option("--slots", wopts->slots,
                "tasks run at once (default: its CPUs; under Slurm, the allocation's CPUs on "
                "its node)");
  w->add_option("--prefetch", wopts->prefetch,
                "extra tasks held queued (default: adaptive, about 20 ms of work, at least its "
                "slots, at most 2048)");
  w->add_option("--labels", *labels, "k=v labels, e.g. interconnect=nvlink")->delimiter(',');
  w->add_option("--gpus", wopts->gpus,
                "GPUs its tasks may use: all (default; under Slurm, those the allocation "
                "gave it), none, or ordinals such as 0,1");
  w->add_option("--heartbeat-ms", wopts->heartbeat_ms, "heartbeat period")->capture_default_str();
  AddDurationOption(w, "--death-timeout", wopts->death_timeout_ms,
                    "stop (exit 1) after hearing nothing from the coordinator this long (90s, "
                    "10m), or finding no keys for it at start; default: wait for ever");
  w->add_option("--protocol", wopts->protocol,
                "wire protocol version to speak: this build's (" +
                    std::to_string(wire::kProtocolVersion) + ", the default) or the one before (" +
                    std::to_string(wire::kMinSupportedVersion) +
                    "), for a coordinator not upgraded yet (docs/operations.md, upgrades)")
      ->check(CLI::Range(static_cast<int>(wire::kMinSupportedVersion),
                         static_cast<int>(wire::kProtocolVersion)));
  w->add_option("--advertise", wopts->advertise,
                "the address other hosts reach this worker at (default: the local address of "
                "its connection to the coordinator)");
  w->add_option("--keys", wopts->keys_dir,
                "worker key set: NAME.key + coordinator.pub (default: $COUPLER_KEYS, then the "
                "local keys of a coordinator of this user on this machine)");
  w->add_flag("--insecure", wopts->insecure, "plaintext, to a coordinator started --insecure");
  auto launcher = std::make_shared<std::string>("auto");
  w->add_option("--gang-launcher", *launcher,
                "how the gangs it leads start: auto (srun --mpi=pmix inside a Slurm "
                "allocation, else mpirun), mpirun, srun")
      ->capture_default_str();
  auto log_bytes = std::make_shared<std::string>();
  w->add_option("--task-log-bytes", *log_bytes,
                "bound of each task log file, e.g. 8MiB (the default); the tail is kept");
  w->callback([w, wopts, labels, launcher, log_bytes, run] {
    // `coupler worker ban|unban ...` (client_commands.cc) chose its own body.
    if (!w->get_subcommands().empty()) return;
    Result<worker::GangLauncher> chosen = worker::ParseGangLauncher(*launcher);
    if (!chosen.ok()) throw CLI::ValidationError("--gang-launcher", chosen.status().message());
    wopts->gang_launcher = *chosen;
    if (!log_bytes->empty()) {
      Result<size_t> bytes = util::ParseByteSize(*log_bytes);
      if (!bytes.ok()) throw CLI::ValidationError("--task-log-bytes", bytes.status().message());
      if (*bytes < worker::kMinTaskLogBytes) {
        throw CLI::ValidationError("--task-log-bytes",
                                   "at least " + std::to_string(worker::kMinTaskLogBytes));
      }
      wopts->task_log_bytes = *bytes;
    }
    for (const auto& kv : *labels) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos) throw CLI::ValidationError("--labels", "expected k=v, got " + kv);
      wopts->labels[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    *run = [wopts] { return RunWorker(*wopts); };
  });
}

}  // namespace coupler::cli
