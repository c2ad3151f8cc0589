// Coordinator: the event loop. One thread owns two ZeroMQ ROUTER sockets (workers, clients),
// the Scheduler (decisions) and the StateStore (durability); it turns messages into scheduler
// calls and scheduler decisions into messages. Nothing here decides policy.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "coordinator/scheduler.h"
#include "runtime/status.h"
#include "runtime/store/state_store.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

struct CoordinatorOptions {
  std::string listen = "tcp://127.0.0.1:7100";  // workers
  std::string client_listen;                    // default: ClientEndpointFor(listen)
  std::string state_dir;                        // SQLite state; required
  int64_t heartbeat_ms = 1000;
  int64_t dead_after_ms = 5000;
  int64_t flush_every_ms = 50;                  // grouped commits: never a disk sync per task
  // A gang still gathering its ranks gives its held slots back after this long.
  int64_t gang_hold_timeout_ms = 30'000;
  size_t max_message_bytes = 64u << 20;
  std::string ready_file;  // written once bound: "workers=<endpoint>\nclients=<endpoint>\n"
};

// Where clients reach the coordinator listening for workers on `endpoint`:
// "tcp://h:7100" → "tcp://h:7101"; "ipc:///run/c" → "ipc:///run/c.clients"; "*" ports stay "*".
std::string ClientEndpointFor(const std::string& endpoint);

class Coordinator {
 public:
  // Opens the state, resumes unfinished jobs, binds both sockets.
  static Result<std::unique_ptr<Coordinator>> Create(const CoordinatorOptions& options);

  // Runs until `stop` becomes true; flushes the state before returning.
  Status Run(const std::atomic<bool>& stop);

  const std::string& worker_endpoint() const { return worker_endpoint_; }
  const std::string& client_endpoint() const { return client_endpoint_; }

 private:
  Coordinator(CoordinatorOptions options, std::unique_ptr<store::StateStore> store);
  Status Resume();
  Status Bind();

  void OnWorkerMessage(const std::string& identity, const std::string& payload);
  void OnClientMessage(const std::string& identity, const std::string& payload, bool delimiter);
  void OnResults(const std::string& worker_id, const wire::TaskResult& result);
  void OnSubmit(const std::string& identity, const wire::SubmitJob& submit, bool delimiter);
  void OnStatus(const std::string& identity, const wire::StatusRequest& req, bool delimiter);
  void OnCancel(const std::string& identity, const wire::CancelJob& req, bool delimiter);
  void OnDrain(const std::string& identity, const wire::DrainWorker& req, bool delimiter);

  void Dispatch();
  void Tick();
  void RecordLost(const std::vector<LostAttempt>& lost);
  void PersistFinishedJobs();
  void FlushStore();
  void SendToWorker(const std::string& worker_id, const std::string& payload);
  void ReplyToClient(const std::string& identity, const std::string& payload, bool delimiter);
  int64_t NowMs() const;   // monotonic, for timeouts
  static int64_t WallMs();  // Unix epoch, for records

  CoordinatorOptions options_;
  std::unique_ptr<store::StateStore> store_;
  Scheduler scheduler_;
  zmq::context_t ctx_;
  zmq::socket_t workers_;
  zmq::socket_t clients_;
  std::string worker_endpoint_;
  std::string client_endpoint_;
  std::map<std::string, JobPhase> persisted_phase_;
  std::chrono::steady_clock::time_point started_;
  int64_t last_heartbeat_ms_ = 0;
  int64_t last_reap_ms_ = 0;
  int64_t last_flush_ms_ = 0;
  uint64_t heartbeat_seq_ = 0;
  uint64_t received_ = 0;
  uint64_t dropped_ = 0;
  uint64_t next_job_number_ = 0;
  // Status requests waiting for their job to finish (long poll).
  struct Waiter {
    std::string identity;
    std::string job_id;
    int64_t deadline_ms = 0;
    bool delimiter = false;
  };
  std::vector<Waiter> waiters_;
  void AnswerWaiters(bool all_due);
  void SendStatus(const std::string& identity, const std::string& job_id, bool delimiter);
};

}  // namespace coupler::coordinator
