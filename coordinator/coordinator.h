// Coordinator: the event loop. One thread owns two ZeroMQ ROUTER sockets (workers, clients),
// the Scheduler (decisions) and the StateStore (durability); it turns messages into scheduler
// calls and scheduler decisions into messages. Nothing here decides policy.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <zmq.hpp>

#include "coordinator/admission_queue.h"
#include "coordinator/data_roots.h"
#include "coordinator/event_log.h"
#include "coordinator/http/http_server.h"
#include "coordinator/http/loop_channel.h"
#include "coordinator/http/snapshot.h"
#include "coordinator/launch_relay.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/principal.h"
#include "coordinator/reuse_index.h"
#include "coordinator/scheduler.h"
#include "coordinator/store/state_store.h"
#include "coordinator/zap_handler.h"
#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

struct CoordinatorOptions {
  std::string listen = "tcp://127.0.0.1:7100";  // workers
  std::string client_listen;                    // default: net::ClientEndpointFor(listen)
  std::string state_dir;                        // SQLite state; required
  int64_t heartbeat_ms = 1000;
  int64_t dead_after_ms = 5000;
  int64_t flush_every_ms = 50;                  // grouped commits: never a disk sync per task
  // A gang still gathering its ranks gives its held slots back after this long.
  int64_t gang_hold_timeout_ms = 30'000;
  size_t max_message_bytes = 64u << 20;
  std::string ready_file;  // written once bound: "workers=<endpoint>\nclients=<endpoint>\n"
  // Security: CURVE with the key set in keys_dir (default: STATE/keys, made at first start
  // with a local worker and client key, see runtime/net/curve_keys.h). insecure: plaintext,
  // allowed on loopback addresses only.
  std::string keys_dir;
  bool insecure = false;
  // HTTP (/metrics, the page, the job API; coordinator/http/): "HOST:PORT"; empty: loopback at
  // the workers' port + 80 (7100 → 7180), left off with a warning when that port is taken;
  // "off": none. Beyond loopback it needs tls_cert/tls_key, or `insecure`.
  std::string http;
  std::string http_tls_cert;
  std::string http_tls_key;
  std::string version;  // for /metrics' build info and the API's version
  // The event log (STATE/events.jsonl, see event_log.h): bytes per file before it rotates;
  // 0 turns it off.
  uint64_t event_log_bytes = kDefaultEventLogBytes;
  // On a stop (SIGTERM, SIGINT): 0 stops at once (the workers keep what they hold, and the
  // next start adopts it: see AwaitInFlight). Above 0: the pool is drained
  // first (every worker finishes what it holds and its results are committed) for up to this
  // long. A batch scheduler's cancel signals coordinator and workers together; this keeps the
  // coordinator up while the workers finish (scripts/slurm/coupler-pool.sbatch).
  int64_t stop_drain_ms = 0;
  // The only folders jobs' inputs and workdirs may be under (`--data-root`, repeatable); empty:
  // anywhere but the coordinator's own folders and the system's (data_roots.h).
  std::vector<std::string> data_roots;
  // The reuse catalogue (store/reuse_store.h); empty: STATE/reuse.db. `coupler run` keeps it
  // in the user's ~/.coupler, since its state is temporary and reuse spans its runs.
  std::string reuse_catalog;
  // Start even when the state lost commits (its WAL deleted, an older copy put back), with a
  // warning; otherwise such a state is refused (store::LostCommits).
  bool accept_state_loss = false;
};

// The address HTTP listens on by default for a coordinator whose workers connect to
// `worker_endpoint` (after binding: the port is known): "127.0.0.1:<port + 80>", port 0 when
// the workers' port is not a number.
std::string DefaultHttpListen(const std::string& worker_endpoint);

// Refuses plaintext on any address other hosts could reach. InvalidArgument names the address.
Status CheckPlaintextAllowed(const std::string& worker_endpoint, const std::string& client_endpoint);


class Coordinator {
 public:
  // Opens the state, resumes unfinished jobs, binds both sockets.
  static Result<std::unique_ptr<Coordinator>> Create(const CoordinatorOptions& options);

  // Runs until `stop` becomes true (then drains the pool first for up to stop_drain_ms);
  // flushes the state before returning.
  Status Run(const std::atomic<bool>& stop);

  const std::string& worker_endpoint() const { return worker_endpoint_; }
  const std::string& client_endpoint() const { return client_endpoint_; }
  // The key set it serves with; empty under --insecure.
  const std::string& keys_dir() const { return keys_dir_; }
  // "http://127.0.0.1:7180", or empty when HTTP is off.
  std::string http_url() const { return http_ ? http_->url() : std::string(); }

 private:
  Coordinator(CoordinatorOptions options, std::unique_ptr<store::StateStore> store);
  Status Resume();
  // The attempts of a resumed job that were sent and had not ended when the coordinator
  // stopped wait for their workers to report them (adopted at registration); those that cannot
  // wait (gangs) are abandoned now, with an attempt_abandoned event each. Returns how many wait.
  size_t AwaitInFlight(const std::string& job_id, const std::vector<store::TaskCommit>& commits,
                       const std::vector<store::AttemptRecord>& attempts,
                       const std::vector<store::SentAttempt>& sent);
  // How long a restarted coordinator waits for its workers to report the attempts they hold:
  // long enough for a worker to reconnect (ZeroMQ's back-off reaches 5 s) and register.
  int64_t AdoptionWaitMs() const;
  // The awaited attempts no worker reported in time: abandoned, their tasks run again.
  void AbandonUnadopted(int64_t now_ms);
  // Tells each worker which of its results are on disk now (ResultAck), once nothing is left
  // buffered: until then it keeps them, to send again to a restarted coordinator.
  void SendResultAcks();
  Status StartSecurity();
  // After StartSecurity (the keys folder is known): the reuse catalogue and the data roots.
  Status OpenIntake();
  Status Bind();
  // After Bind: the in-process request socket, the token, the server (coordinator_http.cc).
  Status StartHttp();
  Status WriteReadyFile();
  // Copies what the HTTP side serves into a new snapshot, when one is wanted and due.
  void PublishSnapshot();
  // Remembers when nodes of `job` became ready (for the queue-wait histograms).
  void StampReadyNodes(const JobState& job);
  // When `job`'s nodes became ready (node_ready_ms_), or null before any did.
  const std::vector<int64_t>* ReadyStamps(const JobState& job) const;
  // Into `histogram`: how long a first attempt of `task`, sent at `now_ms`, waited since its
  // node became ready.
  static void ObserveQueueWait(const std::vector<int64_t>& stamps, const JobState& job,
                               uint64_t task, int64_t now_ms, Histogram& histogram);

  // `route`: the connection's routing id; `user`: the name of its authenticated key.
  void OnWorkerMessage(const std::string& route, const std::string& user,
                       const std::string& payload);
  void OnRegister(const std::string& route, const std::string& user,
                  const wire::RegisterWorker& reg);
  // `who`: the key (or the HTTP API) the request acts as.
  void OnClientMessage(const std::string& identity, const Principal& who,
                       const std::string& payload, bool delimiter);
  // Who a peer on a keyed socket is: its key, named `user`; Insecure() under --insecure.
  Principal PeerPrincipal(const std::string& user, const std::string& key) const;
  // Is the key of connection `route` on `domain`'s socket (`user`, `key`: what its handshake
  // gave) still on that list under that name? A refused message is counted as dropped; each
  // key's first refusal since the lists changed is logged, and a worker registered on that
  // connection is lost at once (its tasks run elsewhere; none is sent to it any more). Always
  // true under --insecure.
  bool SessionAllowed(const char* domain, const std::string& route, const std::string& user,
                      const std::string& key);
  // Answers a client whose key left its allow-list after its connection opened.
  void RefuseRevoked(const std::string& identity, const std::string& payload, bool delimiter);
  void OnResults(const std::string& worker_id, const wire::TaskResult& result);
  void OnSubmit(const std::string& identity, const std::string& user,
                const wire::SubmitJob& submit, bool delimiter);
  // Stores and schedules the jobs the admission thread has admitted, answers their clients.
  void FinishAdmissions();
  // Answers the retries of `submission_id` that waited for its admission: with `reply` (a
  // made job becomes `existing`), or with `error` when `reply` is null.
  void AnswerDuplicates(const std::string& submission_id, const wire::SubmitReply* reply,
                        const Status& error);
  void OnStatus(const std::string& identity, const wire::StatusRequest& req, bool delimiter);
  void OnCancel(const std::string& identity, const Principal& who, const wire::CancelJob& req,
                bool delimiter);
  // The unfinished job holding the pinned run directory `graph` asks for; "" if none.
  std::string RunDirHolder(const job::JobGraph& graph) const;
  void OnRetry(const std::string& identity, const Principal& who, const wire::RetryJob& req,
               bool delimiter);
  // A node of `job` finished by running: its outputs become reusable (reuse_index.h).
  void RecordReusable(const JobState& job, uint32_t plan_node);
  void OnDrain(const std::string& identity, const Principal& who, const wire::DrainWorker& req,
               bool delimiter);
  // May `who` act on a job submitted by `owner` (a principal's label; empty: admins only)?
  bool MayControl(const Principal& who, const std::string& owner);
  void ReplyError(const std::string& identity, const Status& status, wire::MessageType about,
                  bool delimiter);

  // The gang launch relay (launch_relay.h).
  void OnLaunchRequest(const std::string& route, const std::string& user,
                       const wire::LaunchRequest& req);
  void OnLaunchOutput(const std::string& worker_id, const wire::LaunchOutput& out);
  // Stops the daemons of gang attempts that ended; run every reap and after results.
  void SweepLaunches();
  LaunchRelay::GangLookup GangLookup();

  void Dispatch();
  // Records what an assignment to `worker_id` sends (see store::SentAttempts).
  void RecordSent(const std::string& worker_id, const std::vector<wire::TaskSpec>& tasks);
  void Tick();
  // Gives up on silent workers: their lost attempts, and an event for each worker.
  void ReapSilentWorkers(int64_t now_ms);
  void RecordLost(const std::vector<LostAttempt>& lost);
  void PersistFinishedJobs();
  void FlushStore();
  // Remembers whether the store could write; logs the first failure and the recovery.
  void NoteStoreResult(const Status& s);
  void SendToWorker(const std::string& worker_id, const std::string& payload);
  // To one connection on the worker socket (a peer not registered, or refused).
  void SendToRoute(const std::string& route, const std::string& payload);
  void ReplyToClient(const std::string& identity, const std::string& payload, bool delimiter);
  // The event log's name for a task's attempt (its node from the job's plan).
  TaskEventRef EventRef(const std::string& job_id, uint64_t task, uint32_t attempt);
  // A failed attempt's events: task_failed with its cause (coupler_task_failures_total), and
  // task_retried when the scheduler re-queued it (coupler_task_retries_total, same cause).
  void NoteFailure(const TaskEventRef& ref, const std::string& worker_id, const std::string& reason,
                   RetryReason cause);
  // A worker started draining (`by`: "admin" or "worker"); each is logged once per registration.
  void NoteDraining(const std::string& worker_id, std::string_view by);
  // The stop's drain: tells every worker still serving to drain (once); true when none is
  // left holding work or connected (all drained or lost).
  bool DrainPoolForStop();
  // Its heartbeat says it drains: once it holds nothing, it has drained and is leaving.
  void NoteDrainingBeat(const std::string& worker_id);
  int64_t NowMs() const;   // monotonic, for timeouts
  static int64_t WallMs();  // Unix epoch, for records

  CoordinatorOptions options_;
  std::unique_ptr<store::StateStore> store_;
  // Read by the admission thread: declared before admissions_, so destroyed after it.
  std::unique_ptr<ReuseIndex> reuse_;
  DataRoots data_roots_;
  EventLog events_;
  Scheduler scheduler_;
  LaunchRelay launches_;
  zmq::context_t ctx_;
  // Bound before the sockets and destroyed after them (members go in reverse order).
  std::optional<net::ServerKeys> server_keys_;
  std::shared_ptr<AllowLists> allow_lists_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<SessionCheck> sessions_;  // null under --insecure
  std::string keys_dir_;
  zmq::socket_t workers_;
  zmq::socket_t clients_;
  zmq::socket_t admitted_;  // PULL: the admission thread pokes it when a spec is done
  // ROUTER (inproc): the HTTP threads' requests, answered by the client handlers. Routes of
  // its peers are kept with an 'h' in front, so replies find their socket (the client
  // socket's own routing ids all begin with a zero byte).
  zmq::socket_t http_requests_;
  std::unique_ptr<AdmissionQueue> admissions_;  // destroyed first: its thread uses ctx_
  std::string worker_endpoint_;
  std::string client_endpoint_;
  std::map<std::string, JobPhase> persisted_phase_;
  // Jobs that had finished before this start stay in the state, not in memory: a coordinator
  // over 100,000 finished jobs holds what one over none does. They are read from the store
  // when asked for (one job, a page of them); only their counts by state are kept here.
  std::map<std::string, uint64_t> earlier_jobs_;
  // A job this coordinator does not run: its summary row from the store, or nullopt.
  std::optional<wire::JobStatus> StoredSummary(const std::string& job_id);
  std::chrono::steady_clock::time_point started_;
  int64_t last_heartbeat_ms_ = 0;
  int64_t last_reap_ms_ = 0;
  int64_t last_flush_ms_ = 0;
  uint64_t heartbeat_seq_ = 0;
  uint64_t received_ = 0;
  uint64_t dropped_ = 0;
  Status store_error_;  // the last write's failure; OK while the store writes
  uint64_t registrations_refused_ = 0;
  uint64_t replies_dropped_ = 0;
  uint64_t stale_outcomes_ = 0;
  // This start's epoch: the state's commit generation right after the start moved it (every
  // later commit moves it on, so any later start's is higher). Workers learn it at registration.
  uint64_t epoch_ = 0;
  // Per worker: the attempts whose outcomes it sent that are to be acknowledged once the store
  // has written what they changed (SendResultAcks).
  std::unordered_map<std::string, std::vector<wire::TaskAttempt>> pending_acks_;
  uint64_t next_job_number_ = 0;
  // The drain events logged for each worker's current registration.
  enum class DrainLogged : uint8_t { kDraining, kDrained };
  std::unordered_map<std::string, DrainLogged> drain_logged_;
  // Routing id of each worker connection -> the worker id it registered.
  std::unordered_map<std::string, std::string> route_to_worker_;
  // Status requests waiting for their job to finish (long poll).
  struct Waiter {
    std::string identity;
    std::string job_id;
    int64_t deadline_ms = 0;
    bool delimiter = false;
  };
  std::vector<Waiter> waiters_;
  void AnswerWaiters(bool all_due);

  // Retried submissions: the job each submission id made, and the requests waiting on one
  // still being admitted (answered when it is).
  std::map<std::string, std::string> job_of_submission_;
  std::map<std::string, std::string> submission_of_job_;
  struct WaitingDuplicate {
    std::string identity;
    bool delimiter = false;
  };
  std::map<std::string, std::vector<WaitingDuplicate>> admitting_submissions_;

  PoolMetrics metrics_;
  // Per job, per plan node: when it became ready (Unix ms), 0 while it is not.
  std::unordered_map<std::string, std::vector<int64_t>> node_ready_ms_;

  // Declared last, so destroyed first: its threads read the board and call into the channel.
  http::SnapshotBoard board_;
  std::unique_ptr<http::LoopChannel> loop_channel_;
  std::unique_ptr<http::HttpServer> http_;
  // The job with `job_id`, or (job_id empty) the newest `limit` jobs (0: all) in `state`
  // (empty: any), as status shows them, newest first: what a status reply and an HTTP snapshot
  // hold. Only the jobs listed are rendered; finished ones of earlier starts come from the store.
  std::vector<wire::JobStatus> CollectJobs(const std::string& job_id, const std::string& state = "",
                                           uint32_t limit = 0);
  // Every job the coordinator and its state know, by state (the jobs gauge).
  std::map<std::string, uint64_t> CountJobs() const;
  // The newest jobs an HTTP snapshot holds (the page, GET /api/v1/jobs); older ones are asked
  // for one by one (GET /api/v1/jobs/{id} falls back to a status request).
  static constexpr uint32_t kSnapshotJobs = 1000;
  wire::CoordinatorStats CollectStats();
  // `req`: one job (its id), or the jobs in req.state (empty: any), newest first, at most
  // req.limit (0: all).
  void SendStatus(const std::string& identity, const wire::StatusRequest& req, bool delimiter);
};

}  // namespace coupler::coordinator
