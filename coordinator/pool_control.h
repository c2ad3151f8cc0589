// PoolControl: what the workers say, decided — the pool's side of the coordinator as
// JobControl is the clients'. It binds connections to worker ids (a worker is its connection,
// never the ids inside its messages), registers and re-registers workers (adopting the attempts
// they still hold), takes heartbeats, results, reclaims and gang-launch traffic, gives up on the
// silent, deals ready work, drains the pool for a stop and acknowledges what is on disk. It asks
// the Scheduler what each of those means, records through the Ledger, and returns what to send
// in an Outbox: it never touches a socket, so the event loop (Coordinator) routes what it
// answers and stamps the epoch, and a test drives it with messages and a clock.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "coordinator/job_control.h"
#include "coordinator/gpu_fences.h"
#include "coordinator/launch_relay.h"
#include "coordinator/ledger.h"
#include "coordinator/scheduler.h"
#include "coordinator/store/records.h"
#include "coordinator/worker_bans.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

class AllowLists;

class PoolControl {
 public:
  // `dead_after_ms`: a worker's timeout, which sets how long a restart waits for adoptions.
  PoolControl(Scheduler& scheduler, Ledger& ledger, LaunchRelay& launches, int64_t dead_after_ms);

  // A decoded message from connection `route`, authenticated as the key named `user`. False
  // when it is of no use here (counted as dropped by the loop).
  bool OnMessage(const std::string& route, const std::string& user, const wire::Message& msg,
                 int64_t now_ms, Outbox& out);

  // A resumed job's attempts that were sent and had not ended when the coordinator stopped
  // wait for their workers to report them (adopted at registration); those that cannot wait
  // (gangs across workers) are abandoned now, with an attempt_abandoned event each. Returns how
  // many wait.
  size_t AwaitInFlight(const std::string& job_id, const store::TaskHistory& history,
                       int64_t now_ms);
  // How long a restarted coordinator waits for its workers to report the attempts they hold:
  // long enough for a worker to reconnect (ZeroMQ's back-off reaches 5 s) and register.
  int64_t AdoptionWaitMs() const;

  // The periodic upkeep: silent workers given up on, attempts nobody adopted abandoned, ended
  // gangs' daemons stopped, and queued work taken back from busy workers for idle ones.
  void Reap(int64_t now_ms, Outbox& out);
  // The coordinator's heartbeat to every worker still here (`wall_ms`: its wall clock).
  void Heartbeat(int64_t wall_ms, Outbox& out);
  // Tells each worker which of its results are on disk now (ResultAck), once nothing is left
  // buffered: until then it keeps them, to send again to a restarted coordinator.
  void AcknowledgeDurable(Outbox& out);
  // Deals gangs, then loose tasks, to the workers with room (none while the store cannot
  // write: work finished then could not be made durable).
  void Dispatch(int64_t now_ms, Outbox& out);

  // The stop's drain: tells every worker still serving to drain (once); true when none is left
  // holding work or connected (all drained or lost).
  bool DrainForStop(Outbox& out);
  // An admin's drain of one worker: false when there is no such worker.
  bool Drain(const wire::DrainWorker& req, Outbox& out);
  // The key of connection `route` left its allow-list: the worker registered on it is lost now,
  // not at its heartbeat timeout (until then it would still be sent tasks).
  void Revoked(const std::string& route, const std::string& user, int64_t now_ms);

  uint64_t registrations_refused() const { return registrations_refused_; }

  // An admin's ban or unban (BanWorker), `by`: the admin key's name. Written to the state
  // first (an error, and nothing changed, when it cannot be); a connected worker of that id is
  // lost now (its tasks run elsewhere) and told why, and its registrations are refused.
  Status Ban(const wire::BanWorker& req, const std::string& by, int64_t now_ms, Outbox& out);
  // At start: the bans the state holds.
  Status RestoreBans();
  // An admin's FenceGpu (`coupler worker fence-gpu|clear-gpu`), `by`: the admin key's name.
  // Written to the state first (an error, and nothing changed, when it cannot be); the worker
  // is told its fenced GPUs at the next heartbeat.
  Status FenceGpus(const wire::FenceGpu& req, const std::string& by);
  // At start: the GPU fences and error baselines the state holds.
  Status RestoreGpuFences();
  // For `coupler status`: a line per fenced GPU of a worker still serving, with the way out.
  void AppendFenceWarnings(std::vector<std::string>& warnings) const;
  // The pool as `coupler workers` shows it: the registry's workers, banned ones marked.
  std::vector<wire::WorkerStatus> Workers(int64_t now_ms) const;
  // The workers allow-list, so a worker id may move to a new key once its old key has left
  // authorized/workers/ (key rotation). Null (no keys, --insecure): ids stay with their key.
  void set_allow_lists(const AllowLists* lists) { allow_lists_ = lists; }

 private:
  void OnRegister(const std::string& route, const std::string& user,
                  const wire::RegisterWorker& reg, int64_t now_ms, Outbox& out);
  void OnResults(const std::string& worker_id, const wire::TaskResult& result);
  // Its heartbeat says it drains: once it holds nothing, it has drained and is leaving.
  void NoteDrainingBeat(const std::string& worker_id);
  // A heartbeat's GPU samples against the fences (pool_control_gpus.cc): a new XID or ECC
  // error fences its GPU, recorded in the state.
  void ObserveGpuHealth(const std::string& worker_id, const wire::Heartbeat& beat);
  // Copies the fences of `worker_id` to its registry entry, where placement reads them.
  void SyncFences(const std::string& worker_id);
  // Gives up on silent workers: their lost attempts, and an event for each worker.
  void ReapSilentWorkers(int64_t now_ms);
  // The awaited attempts no worker reported in time: abandoned, their tasks run again.
  void AbandonUnadopted(int64_t now_ms);

  // The gang launch relay (launch_relay.h).
  void OnLaunchRequest(const std::string& route, const std::string& user,
                       const wire::LaunchRequest& req, Outbox& out);
  void OnLaunchOutput(const std::string& worker_id, const wire::LaunchOutput& launched,
                      Outbox& out);
  // Stops the daemons of gang attempts that ended; run every reap and after results.
  void SweepLaunches(Outbox& out);
  LaunchRelay::GangLookup GangLookup();

  Scheduler& scheduler_;
  Ledger& ledger_;
  LaunchRelay& launches_;
  int64_t dead_after_ms_;
  // Routing id of each worker connection -> the worker id it registered.
  std::unordered_map<std::string, std::string> route_to_worker_;
  uint64_t registrations_refused_ = 0;
  uint64_t heartbeat_seq_ = 0;
  WorkerBans bans_;
  GpuFences gpu_fences_;
  const AllowLists* allow_lists_ = nullptr;
};

}  // namespace coupler::coordinator
