// Worker: one process of the pool. It connects a DEALER to the coordinator, announces what it
// offers, runs assigned tasks on `slots` threads, sends results back in batches, beats its
// heart, re-registers after a coordinator restart, and on drain (SIGTERM or `coupler drain`)
// finishes what it holds, then leaves.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include <zmq.hpp>

#include "runtime/net/curve_keys.h"
#include "runtime/net/handshake_monitor.h"
#include "runtime/status.h"
#include "runtime/wire/messages.h"
#include "worker/daemon_launcher.h"
#include "worker/epoch_fence.h"
#include "worker/gpu_monitor.h"
#include "worker/slurm_env.h"
#include "worker/task_log.h"
#include "worker/task_pool.h"

namespace coupler::worker {

struct WorkerOptions {
  std::string coordinator = "tcp://127.0.0.1:7100";
  std::string id;            // default: <host>-<pid>
  uint32_t slots = 0;        // default: the CPUs this process may use
  uint32_t prefetch = 0;     // 0: adaptive — deep for short tasks, shallow for long ones
  std::map<std::string, std::string> labels;
  std::string gpus;          // --gpus: "" or "all", "none", or ordinals "0,1" (task_device.h)
  // The address its peers reach it at (gang hostfiles, placement); empty: the local address of
  // its connection to the coordinator (runtime/net/local_address.h).
  std::string advertise;
  int64_t heartbeat_ms = 1000;
  // Silence after which it warns. It never drops its connection over silence: ZeroMQ keeps
  // reconnecting (with backoff and jitter) and what it queued meanwhile, results included, is
  // delivered when the link is back.
  int64_t coordinator_timeout_ms = 5000;
  // --death-timeout (Dask's name): a worker that hears nothing from its coordinator for this
  // long — or, at start, finds no note of its keys — stops with an error, so a batch job does
  // not hold its allocation for a coordinator that is gone. 0: wait for ever.
  int64_t death_timeout_ms = 0;
  // Security (runtime/net/key_discovery.h): a worker key set, default $COUPLER_KEYS, then the
  // local keys of a coordinator of this user on this machine; insecure: plaintext.
  std::string keys_dir;
  bool insecure = false;
  // The bound of each task log file (stdout, stderr, a rank's): the tail is kept.
  size_t task_log_bytes = kDefaultTaskLogBytes;
  // How the gangs it leads start their ranks: auto is `srun --mpi=pmix` steps inside a Slurm
  // allocation (SLURM_JOB_ID), mpirun outside (worker/slurm_env.h).
  GangLauncher gang_launcher = GangLauncher::kAuto;
  // --protocol: the wire version it speaks, kProtocolVersion or the one before (a coordinator
  // not upgraded yet: workers may be upgraded first). 0: the current one.
  uint16_t protocol = 0;
};

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> Create(WorkerOptions options);
  ~Worker();

  // Runs until drained: `drain` (set from a signal handler) or a DrainWorker message starts
  // the drain. Returns OK after a clean drain.
  Status Run(const std::atomic<bool>& drain);
  const std::string& id() const { return options_.id; }
  const std::string& address() const { return registration_.address; }

 private:
  explicit Worker(WorkerOptions options);
  Status Connect();
  void Register();
  // A refused key or registration ends the worker: retrying cannot make it authorized.
  Status CheckRefused();
  // What Run returns when a receive fails.
  Status ReceiveFailed(const Status& status);
  // Every message to the coordinator, stamped with the epoch we registered under.
  Status SendToCoordinator(std::string message);
  void SendHeartbeat(bool draining);
  void SendOutcomes();
  // Registered: drops what the coordinator released, sends again what it has not acknowledged.
  void OnRegistered(const wire::Registered& registered);
  // Relays what the gangs' MPI daemons running here wrote (and keepalives for them).
  void SendDaemonOutput(bool keepalive);
  uint32_t DesiredPrefetch() const;
  void OnMessage(const std::string& payload, bool& drain_requested);
  int64_t NowMs() const;

  WorkerOptions options_;
  std::optional<net::PeerKeys> keys_;
  zmq::context_t ctx_;
  zmq::socket_t wake_;  // PULL: task threads poke it when an outcome is ready
  net::HandshakeMonitor monitor_;
  zmq::socket_t dealer_;
  Status refused_;  // set when the coordinator refused our registration
  std::unique_ptr<TaskPool> pool_;
  std::unique_ptr<DaemonLauncher> daemons_;
  std::unique_ptr<GpuMonitor> gpu_monitor_;
  std::optional<SlurmSteps> slurm_steps_;  // set when its gangs start as Slurm steps  // samples its GPUs for each heartbeat
  // Outcomes taken from the pool that could not be queued for sending yet (the queue to the
  // coordinator was full): kept and sent first next time, never dropped.
  std::vector<wire::TaskOutcome> unsent_;
  // Outcomes sent and not acknowledged yet (wire::ResultAck), by attempt: reported as held and
  // sent again after a registration, so a coordinator that crashed before writing them still
  // gets them. Task number first: every key of a job shares its id, and comparing that string
  // first was a memcmp at every step of every insert and erase (a seventh of a busy worker).
  using AttemptKey = std::tuple<uint64_t, uint32_t, std::string>;
  std::map<AttemptKey, wire::TaskOutcome> unacked_;
  EpochFence fence_;  // the epoch registered with; what older coordinators send is dropped
  bool silence_reported_ = false;
  wire::RegisterWorker registration_;
  bool registered_before_ = false;
  int64_t last_register_ms_ = 0;
  int64_t last_heard_ms_ = 0;
  int64_t last_beat_ms_ = 0;
  uint64_t beat_seq_ = 0;
  uint64_t reported_starts_ = 0;  // pool starts the last heartbeat reported
  bool draining_ = false;  // leaving: runs what it started, hands back all else
  bool adaptive_prefetch_ = false;
  uint32_t sent_prefetch_ = 0;
};

}  // namespace coupler::worker
