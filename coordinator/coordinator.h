// Coordinator: the event loop, with the options it starts from. Its three parts: the loop
// (this class: sockets, ZAP, decoding, routing), JobControl (what clients ask of jobs) and the
// Ledger (store, event log, metrics); the Scheduler decides where work goes.
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
#include "coordinator/handshake_watch.h"
#include "coordinator/http/http_server.h"
#include "coordinator/http/loop_channel.h"
#include "coordinator/http/snapshot.h"
#include "coordinator/job_control.h"
#include "coordinator/launch_relay.h"
#include "coordinator/ledger.h"
#include "coordinator/pool_control.h"
#include "coordinator/peer_versions.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/principal.h"
#include "coordinator/retention_sweeper.h"
#include "coordinator/reuse_index.h"
#include "coordinator/run_dir_claims.h"
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
  // Finished jobs kept in memory with every detail (the newest, by their end); older ones are
  // answered from the state (their summary row, their nodes replayed from plan and commits).
  size_t keep_jobs = 1000;
  // And none that finished longer ago than this (0: no age limit).
  int64_t keep_finished_ms = 0;
  // The only folders jobs' inputs and workdirs may be under (`--data-root`, repeatable); empty:
  // anywhere but the coordinator's own folders and the system's (data_roots.h).
  std::vector<std::string> data_roots;
  // The reuse catalogue (store/reuse_store.h); empty: STATE/reuse.db. `coupler run` keeps it
  // in the user's ~/.coupler, since its state is temporary and reuse spans its runs.
  std::string reuse_catalog;
  // Start even when the state lost commits (its WAL deleted, an older copy put back), with a
  // warning; otherwise such a state is refused (store::LostCommits).
  bool accept_state_loss = false;
  // Retention while running (retention_sweeper.h): the run directories of jobs finished at
  // least this long ago, and not among the newest gc_keep_jobs finished, are removed every
  // gc_every_ms. Below 0: never (`coupler gc` does it while the coordinator is stopped).
  int64_t gc_older_than_ms = -1;
  size_t gc_keep_jobs = 0;
  int64_t gc_every_ms = 3'600'000;
};

// The address HTTP listens on by default for a coordinator whose workers connect to
// `worker_endpoint` (after binding: the port is known): "127.0.0.1:<port + 80>", port 0 when
// the workers' port is not a number.
std::string DefaultHttpListen(const std::string& worker_endpoint);

// Refuses plaintext on any address other hosts could reach. InvalidArgument names the address.
Status CheckPlaintextAllowed(const std::string& worker_endpoint, const std::string& client_endpoint);


// The event loop: one thread owns the ZeroMQ sockets (workers, clients, the HTTP side's
// requests, the admission thread's wake-ups) and the ZAP handler; it decodes each message,
// hands it to the part whose concept it is — the Scheduler (which task goes where, what an
// outcome means), JobControl (what clients ask of jobs), the Ledger (what is recorded) — and
// routes what they answer. Nothing here decides policy or writes a record itself.
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

  // The newest jobs an HTTP snapshot holds (the page, GET /api/v1/jobs); older ones are asked
  // for one by one (GET /api/v1/jobs/{id} falls back to a status request).
  static constexpr uint32_t kSnapshotJobs = 1000;

 private:
  Coordinator(CoordinatorOptions options, std::unique_ptr<store::StateStore> store);
  Status Resume();
  Status StartSecurity();
  // After StartSecurity (the keys folder is known): the reuse catalogue and the data roots.
  Status OpenIntake();
  std::string ReuseCatalogPath() const;  // --reuse-catalog, or STATE/reuse.db
  Status Bind();
  // After Bind: the in-process request socket, the token, the server (coordinator_http.cc).
  Status StartHttp();
  Status WriteReadyFile();
  // Copies what the HTTP side serves into a new snapshot, when one is wanted and due.
  void PublishSnapshot();

  // `route`: the connection's routing id; `user`: the name of its authenticated key.
  void OnWorkerMessage(const std::string& route, const std::string& user,
                       const std::string& payload);
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
  // Hands a submission to JobControl, and its ticket (if any) to the admission thread.
  void OnSubmit(const ClientRef& from, const std::string& user, const wire::SubmitJob& submit);
  // Stores and schedules the jobs the admission thread has admitted, answers their clients.
  void FinishAdmissions();
  void OnDrain(const ClientRef& from, const Principal& who, const wire::DrainWorker& req);
  void OnBan(const ClientRef& from, const Principal& who, const wire::BanWorker& req);
  void OnFenceGpu(const ClientRef& from, const Principal& who, const wire::FenceGpu& req);

  // Deals ready work (PoolControl::Dispatch) and sends it.
  void Dispatch();
  // The periodic upkeep: the pool's reaping and heartbeats, the ledger's flushes, eviction of
  // finished jobs, acknowledgements of what is on disk.
  void Tick();

  // Routing what the parts answer.
  void Deliver(Outbox& out);
  // Both stamp this coordinator's epoch into the message's header (wire::StampEpoch): every
  // message on the worker socket carries it, so a worker that registered with a newer
  // coordinator refuses it.
  void SendToWorker(const std::string& worker_id, std::string payload);
  // To one connection on the worker socket (a peer not registered, or refused).
  void SendToRoute(const std::string& route, std::string payload);
  void ReplyToClient(const ClientRef& to, const std::string& payload);
  int64_t NowMs() const;  // monotonic, for timeouts
  wire::CoordinatorStats CollectStats();

  CoordinatorOptions options_;
  std::chrono::steady_clock::time_point started_;
  // Read by the admission thread: declared before admissions_, so destroyed after it.
  std::unique_ptr<ReuseIndex> reuse_;
  DataRoots data_roots_;
  Scheduler scheduler_;
  Ledger ledger_;         // after the scheduler it reads
  JobControl control_;    // after both
  LaunchRelay launches_;
  PoolControl pool_;      // after the scheduler, the ledger and the relay it uses
  zmq::context_t ctx_;
  // ZeroMQ names ctx_'s I/O threads "<this>/ZMQbg/IO/<n>": how Bind finds the clients' one.
  int io_thread_names_ = 0;
  // Bound before the sockets and destroyed after them (members go in reverse order).
  std::optional<net::ServerKeys> server_keys_;
  std::shared_ptr<AllowLists> allow_lists_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<SessionCheck> sessions_;  // null under --insecure
  std::string keys_dir_;
  zmq::socket_t workers_;
  zmq::socket_t clients_;
  // Handshakes that fail before a key is checked (a stale coordinator.pub), on each socket.
  HandshakeWatch worker_handshakes_;
  HandshakeWatch client_handshakes_;
  zmq::socket_t admitted_;  // PULL: the admission thread pokes it when a spec is done
  // ROUTER (inproc): the HTTP threads' requests, answered by the client handlers. Routes of
  // its peers are kept with an 'h' in front, so replies find their socket (the client
  // socket's own routing ids all begin with a zero byte).
  zmq::socket_t http_requests_;
  std::unique_ptr<AdmissionQueue> admissions_;  // destroyed first: its thread uses ctx_
  // Retention (--gc-older-than): the sweeper's thread asks the claims, which outlive it.
  RunDirClaims run_dir_claims_;
  std::unique_ptr<RetentionSweeper> sweeper_;
  std::string worker_endpoint_;
  std::string client_endpoint_;
  int64_t last_heartbeat_ms_ = 0;
  int64_t last_reap_ms_ = 0;
  uint64_t received_ = 0;
  uint64_t dropped_ = 0;
  uint64_t replies_dropped_ = 0;
  // Set when a worker speaks for a newer epoch than ours: another coordinator took the state
  // over, and this one stops at once (as when the store refuses its write: the store's fence).
  Status fenced_by_worker_;

  // Declared last, so destroyed first: its threads read the board and call into the channel.
  http::SnapshotBoard board_;
  Histogram loop_lag_{LoopLagBounds()};  // each turn of Run's loop, seconds
  // Connections speaking the previous protocol version (a rolling upgrade): answered in it.
  PeerVersions worker_versions_;
  PeerVersions client_versions_;
  std::unique_ptr<http::LoopChannel> loop_channel_;
  std::unique_ptr<http::HttpServer> http_;
};

}  // namespace coupler::coordinator
