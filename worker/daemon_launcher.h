// DaemonLauncher: the remote end of a gang's launch. When the leader's mpirun starts its MPI
// daemon on this host (through `coupler gang-agent` and the coordinator, see LaunchRequest in
// runtime/wire/worker_messages.h), the coordinator sends this worker a LaunchDaemon: the daemon
// runs here under a supervisor (its whole process tree dies with it, a LaunchStop or this
// worker), and what it writes and how it exits flow back as LaunchOutput. One thread per
// daemon; a gang has at most one daemon per host.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

class DaemonLauncher {
 public:
  // `wake_endpoint`: the worker's inproc PULL, poked when output is ready to send.
  DaemonLauncher(zmq::context_t& ctx, std::string wake_endpoint)
      : ctx_(ctx), wake_endpoint_(std::move(wake_endpoint)) {}
  ~DaemonLauncher();  // stops and joins every daemon
  DaemonLauncher(const DaemonLauncher&) = delete;
  DaemonLauncher& operator=(const DaemonLauncher&) = delete;

  void Start(const wire::LaunchDaemon& launch);
  // Ends the daemons of one gang attempt.
  void Stop(const wire::LaunchStop& stop);
  // Ends every daemon (the coordinator forgot this worker: their gangs are gone).
  void StopAll();

  // Output and exits since the last call, plus an empty keepalive chunk for each daemon still
  // running when `keepalive` is set (their agents treat a silent host as lost).
  std::vector<wire::LaunchOutput> TakeOutput(bool keepalive);
  size_t running() const;

 private:
  struct Daemon {
    wire::LaunchDaemon launch;
    std::atomic<bool> stop{false};
    std::atomic<bool> done{false};
    std::thread thread;
  };
  void Run(Daemon& daemon);
  void Push(wire::LaunchOutput out);
  void Reap();  // joins finished threads

  zmq::context_t& ctx_;
  std::string wake_endpoint_;
  mutable std::mutex mu_;
  std::list<std::unique_ptr<Daemon>> daemons_;
  std::vector<wire::LaunchOutput> pending_;
};

}  // namespace coupler::worker
