#include "worker/daemon_launcher.h"

#include "runtime/logging.h"
#include "worker/ops/subprocess.h"

namespace coupler::worker {
namespace {

// One LaunchOutput carries at most this much; a chatty daemon is split into several.
constexpr size_t kMaxChunk = 64 * 1024;

}  // namespace

DaemonLauncher::~DaemonLauncher() {
  StopAll();
  std::list<std::unique_ptr<Daemon>> all;
  {
    std::lock_guard lock(mu_);
    all.swap(daemons_);
  }
  for (auto& d : all) {
    if (d->thread.joinable()) d->thread.join();
  }
}

void DaemonLauncher::Start(const wire::LaunchDaemon& launch) {
  Reap();
  auto daemon = std::make_unique<Daemon>();
  daemon->launch = launch;
  Daemon* raw = daemon.get();
  Logger("worker")->info("starting the MPI daemon of job {} task {} attempt {} (launch {})",
                         launch.gang.job_id, launch.gang.task_id, launch.gang.attempt,
                         launch.launch_id);
  std::lock_guard lock(mu_);
  daemons_.push_back(std::move(daemon));
  raw->thread = std::thread([this, raw] { Run(*raw); });
}

void DaemonLauncher::Stop(const wire::LaunchStop& stop) {
  std::lock_guard lock(mu_);
  for (auto& d : daemons_) {
    if (d->launch.gang == stop.gang) {
      d->stop = true;
    }
  }
}

void DaemonLauncher::StopAll() {
  std::lock_guard lock(mu_);
  for (auto& d : daemons_) d->stop = true;
}

size_t DaemonLauncher::running() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& d : daemons_) n += d->done ? 0 : 1;
  return n;
}

std::vector<wire::LaunchOutput> DaemonLauncher::TakeOutput(bool keepalive) {
  Reap();
  std::lock_guard lock(mu_);
  std::vector<wire::LaunchOutput> out;
  out.swap(pending_);
  if (keepalive) {
    for (const auto& d : daemons_) {
      if (!d->done) out.push_back({d->launch.launch_id, 1, "", false, 0});
    }
  }
  return out;
}

void DaemonLauncher::Push(wire::LaunchOutput out) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = pending_.empty();
    pending_.push_back(std::move(out));
  }
  if (!first) return;
  // A PUSH socket per call: this runs on the daemon's thread, and sockets are not shared.
  try {
    zmq::socket_t wake(ctx_, zmq::socket_type::push);
    wake.set(zmq::sockopt::linger, 0);
    wake.connect(wake_endpoint_);
    (void)wake.send(zmq::str_buffer("d"), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // The worker is shutting down; the output stays queued.
  }
}

void DaemonLauncher::Run(Daemon& daemon) {
  const uint64_t id = daemon.launch.launch_id;
  ShellCommand shell;
  shell.command = daemon.launch.command;
  shell.cancel = &daemon.stop;
  shell.on_output = [&](int stream, std::string_view data) {
    for (size_t at = 0; at < data.size(); at += kMaxChunk) {
      Push({id, static_cast<uint8_t>(stream), std::string(data.substr(at, kMaxChunk)), false, 0});
    }
  };
  Result<ShellResult> result = RunShellCommand(shell);
  wire::LaunchOutput end{id, 2, "", true, 255};
  if (!result.ok()) {
    end.data = "coupler worker: cannot start the MPI daemon: " + std::string(result.status().message()) + "\n";
  } else if (result->end == ShellResult::End::kExited) {
    end.exit_code = result->exit_status;
  } else if (result->end == ShellResult::End::kSignaled) {
    end.exit_code = 128 + result->signal;
  } else {
    end.data = "coupler worker: the MPI daemon was stopped (its gang ended)\n";
  }
  Logger("worker")->info("the MPI daemon of launch {} ended with status {}", id, end.exit_code);
  Push(std::move(end));
  daemon.done = true;
}

void DaemonLauncher::Reap() {
  std::list<std::unique_ptr<Daemon>> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = daemons_.begin(); it != daemons_.end();) {
      if ((*it)->done) {
        finished.push_back(std::move(*it));
        it = daemons_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& d : finished) {
    if (d->thread.joinable()) d->thread.join();
  }
}

}  // namespace coupler::worker
