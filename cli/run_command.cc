// `coupler run JOB --workers N`: the embedded default. Starts a coordinator and N workers on
// this machine (over an ipc socket in a private temporary folder), runs the job with
// progress, prints a summary (and the accuracy of any evaluate node), and stops everything it
// started, whatever happens.
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/job_wait.h"
#include "cli/signals.h"
#include "cli/status_format.h"
#include "client/client.h"
#include "runtime/io/output_layout.h"
#include "runtime/io/shard_file.h"
#include "runtime/job/job_loader.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/curve_keys.h"
#include "runtime/process/child_process.h"

namespace coupler::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string job;
  int workers = 2;
  int slots = 1;
  std::string state;
  bool keep_state = false;
  bool reuse = false;
  std::string log_level = "warn";
};

using process::ChildProcess;

// This same executable with `args` (argv[1..]); stdout/stderr inherited.
Result<ChildProcess> SpawnSelf(std::vector<std::string> args) {
  COUPLER_ASSIGN_OR_RETURN(std::string exe, process::SelfExecutable());
  process::SpawnOptions options;
  options.argv = {std::move(exe)};
  options.argv.insert(options.argv.end(), std::make_move_iterator(args.begin()),
                      std::make_move_iterator(args.end()));
  return ChildProcess::Spawn(options);
}

// Waits for the coordinator's ready file; nullopt if it died or took too long.
std::optional<std::string> WaitReady(const fs::path& ready, ChildProcess& coordinator) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(ready);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("workers=", 0) == 0) return line.substr(8);
    }
    if (!coordinator.running()) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// Until the workers started here have joined (or one died, or 10 s passed): a job submitted
// before then is dealt out to the first worker to register alone, up to its prefetch, while
// the others, a few milliseconds behind, find its first stage taken.
void WaitForWorkers(client::Client& client, std::vector<ChildProcess>& workers) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto& w : workers) {
      if (!w.running()) return;  // its error is on stderr; the job runs on the rest
    }
    Result<std::vector<wire::WorkerStatus>> joined = client.Workers();
    if (!joined.ok()) return;
    size_t alive = 0;
    for (const auto& w : *joined) alive += w.state == pool::WorkerState::kAlive ? 1 : 0;
    if (alive >= workers.size()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void StopAll(std::vector<ChildProcess>& workers, ChildProcess& coordinator) {
  for (auto& w : workers) w.Signal(SIGTERM);
  for (auto& w : workers) {
    if (!w.WaitFor(std::chrono::seconds(10))) w.Signal(SIGKILL);
  }
  coordinator.Signal(SIGTERM);
  if (!coordinator.WaitFor(std::chrono::seconds(10))) coordinator.Signal(SIGKILL);
}

int Run(const RunArgs& a) {
  job::LoadedJob local = job::LoadJobFile(a.job);
  if (!local.ok()) {
    std::fputs(local.diags.ToString().c_str(), stderr);
    return kExitBadInput;
  }
  if (a.workers < 1 || a.slots < 1) {
    std::fprintf(stderr, "coupler: --workers and --slots must be >= 1\n");
    return kExitBadInput;
  }
  StopRequested();  // install handlers before any child exists
  char tmpl[] = "/tmp/coupler-run-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("coupler: mkdtemp");
    return kExitFailure;
  }
  const fs::path run_dir = tmpl;
  const std::string state = a.state.empty() ? (run_dir / "state").string() : a.state;
  const fs::path ready = run_dir / "ready";
  const std::string endpoint = "ipc://" + (run_dir / "coordinator").string();

  int code = kExitFailure;
  {
    // The reuse catalogue outlives the temporary state, in the user's own private folder, so
    // `--reuse` finds what earlier `coupler run`s of this user recorded.
    const std::string catalog = net::CouplerHome() + "/reuse.db";
    auto coordinator = SpawnSelf({"--log-level", a.log_level, "coordinator", "--listen", endpoint,
                                  "--state", state, "--ready-file", ready.string(),
                                  "--reuse-catalog", catalog});
    if (!coordinator.ok()) {
      std::fprintf(stderr, "coupler: %s\n", coordinator.status().message().c_str());
      return kExitFailure;
    }
    std::vector<ChildProcess> workers;
    auto ep = WaitReady(ready, *coordinator);
    if (!ep) {
      std::fprintf(stderr, "coupler: the coordinator did not start (see its errors above)\n");
    } else {
      // The local key set the coordinator made in its state at first start: named outright,
      // so a $COUPLER_KEYS meant for another coordinator cannot get in the way.
      const std::string keys = state + "/keys";
      for (int i = 0; i < a.workers; ++i) {
        auto w = SpawnSelf({"--log-level", a.log_level, "worker", "--coordinator", *ep, "--slots",
                            std::to_string(a.slots), "--id", fmt::format("local-{}", i + 1),
                            "--keys", net::LocalPeerDir(keys, net::KeyRole::kWorker)});
        if (w.ok()) workers.push_back(std::move(*w));
      }
      client::ClientSecurity security;
      security.keys_dir = net::LocalPeerDir(keys, net::KeyRole::kClient);
      auto client =
          client::Client::Connect(endpoint + ".clients", std::chrono::seconds(10), security);
      if (client.ok()) WaitForWorkers(**client, workers);
      const auto start = std::chrono::steady_clock::now();
      Result<std::string> id = client.ok() ? (*client)->Submit(a.job, 0, a.reuse) : Result<std::string>(client.status());
      if (!id.ok()) {
        std::fprintf(stderr, "coupler: %s\n", id.status().message().c_str());
        code = id.status().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure;
      } else {
        std::fprintf(stderr, "running %s on %d local worker(s) x %d slot(s)\n", id->c_str(),
                     a.workers, a.slots);
        WaitOutcome outcome = WaitForJob(**client, *id);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (outcome.final_status) std::fputs(JobSummaryText(*outcome.final_status, wall).c_str(), stdout);
        code = outcome.exit_code;
        if (code == 0 && outcome.final_status) {
          PrintAccuracy(*local.graph, outcome.final_status->workdir);
        }
      }
    }
    StopAll(workers, *coordinator);
  }
  std::error_code ec;
  if (a.keep_state || !a.state.empty()) {
    fs::remove(ready, ec);
    if (a.state.empty()) std::fprintf(stderr, "state kept in %s\n", state.c_str());
  } else {
    fs::remove_all(run_dir, ec);
  }
  return code;
}

}  // namespace

void AddRunCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* c = app.add_subcommand(
      "run", "Run a job here: a local coordinator and N workers, progress, a summary");
  c->add_option("job", args->job, "job spec (YAML or JSON)")->required();
  c->add_option("--workers", args->workers, "worker processes")->capture_default_str();
  c->add_option("--slots", args->slots, "tasks each worker runs at once")->capture_default_str();
  c->add_option("--state", args->state, "state directory (default: a temporary one)");
  c->add_flag("--keep-state", args->keep_state, "keep the temporary state directory");
  c->add_flag("--reuse", args->reuse,
              "nodes whose op, params and inputs are unchanged since a succeeded run keep its "
              "outputs instead of running (see docs/runs.md)");
  c->add_option("--child-log-level", args->log_level, "log level of the started processes")
      ->capture_default_str();
  c->callback([args, run] { *run = [args] { return Run(*args); }; });
}

}  // namespace coupler::cli
