#include "coordinator/coordinator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "coordinator/admitted_plan.h"
#include "coordinator/job_intake.h"
#include "coordinator/root_warning.h"
#include "runtime/logging.h"
#include "runtime/net/endpoint.h"
#include "runtime/net/io_thread_priority.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/envelope.h"

namespace coupler::coordinator {
namespace {

constexpr int64_t kReapEveryMs = 100;
// Replies held for one client that does not read them; a client waits for each reply before
// its next request, so only a misbehaving one ever has more than one.
constexpr int kClientQueue = 64;
// Specs being parsed and planned at once, at most; more are refused (Unavailable) at once.
constexpr size_t kMaxPendingAdmissions = 16;
// One turn reads at most this many worker messages, or for this long: what they finished is
// then dispatched again before more are read, so a turn's dispatch stays small too.
constexpr int kBurstMessages = 4096;
constexpr auto kBurstTime = std::chrono::milliseconds(10);
// Clients are served at least this often during a burst.
constexpr auto kClientsEvery = std::chrono::milliseconds(2);

}  // namespace

Status CheckPlaintextAllowed(const std::string& worker_endpoint,
                             const std::string& client_endpoint) {
  for (const std::string& ep : {worker_endpoint, client_endpoint}) {
    if (!net::IsLoopback(ep)) {
      return InvalidArgument("refusing plaintext on " + ep +
                             ": --insecure is for loopback addresses only; other hosts need "
                             "keys (drop --insecure, see docs/security.md)");
    }
  }
  return Status::Ok();
}

Coordinator::Coordinator(CoordinatorOptions options, std::unique_ptr<store::StateStore> store)
    : options_(std::move(options)),
      started_(std::chrono::steady_clock::now()),
      scheduler_(options_.dead_after_ms, options_.gang_hold_timeout_ms),
      ledger_(std::move(store),
              {options_.state_dir + "/" + kEventLogFile, options_.event_log_bytes, kEventLogKeep},
              scheduler_, options_.state_dir),
      control_(scheduler_, ledger_, [this] { return CollectStats(); }),
      pool_(scheduler_, ledger_, launches_, options_.dead_after_ms),
      ctx_(2) {  // I/O threads: the workers' socket, the clients' (Bind)
  scheduler_.SetRetryPolicy(kDefaultRetryPolicy, [this] { return NowMs(); });
  // Before the context's first socket starts its threads. Three digits at most: a thread's
  // name holds 15 characters and "NNN/ZMQbg/IO/1" must fit whole.
  static std::atomic<int> contexts{0};
  io_thread_names_ = 100 + contexts.fetch_add(1) % 900;
  ctx_.set(zmq::ctxopt::thread_name_prefix, io_thread_names_);
}

Result<std::unique_ptr<Coordinator>> Coordinator::Create(const CoordinatorOptions& options) {
  if (options.state_dir.empty()) return InvalidArgument("the coordinator needs --state DIR");
  const std::string client_ep =
      options.client_listen.empty() ? net::ClientEndpointFor(options.listen) : options.client_listen;
  if (options.insecure) COUPLER_RETURN_IF_ERROR(CheckPlaintextAllowed(options.listen, client_ep));
  COUPLER_ASSIGN_OR_RETURN(
      auto store, store::StateStore::Open(options.state_dir, store::OpenMode::kReadWrite,
                                          options.accept_state_loss ? store::LostCommits::kAccept
                                                                    : store::LostCommits::kRefuse));
  std::unique_ptr<Coordinator> c(new Coordinator(options, std::move(store)));
  COUPLER_RETURN_IF_ERROR(c->Resume());
  COUPLER_RETURN_IF_ERROR(c->StartSecurity());
  COUPLER_RETURN_IF_ERROR(c->Bind());
  COUPLER_RETURN_IF_ERROR(c->StartHttp());
  COUPLER_RETURN_IF_ERROR(c->WriteReadyFile());
  COUPLER_RETURN_IF_ERROR(c->OpenIntake());
  try {
    const std::string ep = fmt::format("inproc://coupler-admitted-{}", static_cast<const void*>(c.get()));
    c->admitted_ = zmq::socket_t(c->ctx_, zmq::socket_type::pull);
    c->admitted_.bind(ep);
    c->admissions_ = std::make_unique<AdmissionQueue>(
        c->ctx_, ep, kMaxPendingAdmissions, IntakeContext{&c->data_roots_, c->reuse_.get(), options.state_dir});
    AdmissionQueue* intake = c->admissions_.get();
    c->ledger_.set_reuse_recorder([intake](ReuseRecord r) { intake->Record(std::move(r)); });
  } catch (const zmq::error_t& e) {
    return Internal(std::string("admission queue: ") + e.what());
  }
  if (options.gc_older_than_ms >= 0) {
    c->control_.set_run_dir_claims(&c->run_dir_claims_);
    c->sweeper_ = std::make_unique<RetentionSweeper>(
        SweepOptions{options.state_dir, c->ReuseCatalogPath(),
                     {options.gc_older_than_ms, options.gc_keep_jobs},
                     std::max<int64_t>(options.gc_every_ms, 1000)},
        c->run_dir_claims_);
  }
  return c;
}

int64_t Coordinator::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started_)
      .count();
}

Status Coordinator::Resume() {
  auto log = Logger("coordinator");
  COUPLER_ASSIGN_OR_RETURN(auto records, ledger_.Open(static_cast<uint64_t>(::getpid())));
  COUPLER_RETURN_IF_ERROR(pool_.RestoreBans());
  COUPLER_RETURN_IF_ERROR(pool_.RestoreGpuFences());
  store::StateStore& store = ledger_.store();
  for (auto& rec : records) {
    control_.Restored(rec);
    COUPLER_ASSIGN_OR_RETURN(store::TaskHistory history, store.LoadTaskHistory(rec.id));
    COUPLER_ASSIGN_OR_RETURN(rec.plan, store.LoadPlan(rec.id));
    Result<std::unique_ptr<JobState>> job = RestoreJob(rec, history);
    rec.plan.clear();  // held by the job state now
    if (!job.ok()) {
      log->error("cannot resume job {}: {}", rec.id, job.status().message());
      COUPLER_RETURN_IF_ERROR(ledger_.JobRestoreFailed(rec, job.status()));
      continue;
    }
    ledger_.JobRestored(**job, job::ParseJobPhase(rec.state));
    log->info("resuming job {} ({}): {} of {} tasks already done", rec.id, rec.name,
              (*job)->done(), (*job)->table().size());
    scheduler_.AddJob(std::move(*job));
    if (const size_t waiting = pool_.AwaitInFlight(rec.id, history, NowMs());
        waiting > 0) {
      log->info("job {}: {} attempt(s) were in flight; waiting up to {} ms for their workers to "
                "report them", rec.id, waiting, pool_.AdoptionWaitMs());
    }
  }
  return Status::Ok();
}

std::string Coordinator::ReuseCatalogPath() const {
  return options_.reuse_catalog.empty() ? options_.state_dir + "/" + store::ReuseStore::kFileName
                                        : options_.reuse_catalog;
}

Status Coordinator::OpenIntake() {
  const std::string catalog = ReuseCatalogPath();
  // Without its catalogue the coordinator still runs every job; only --reuse finds nothing.
  if (Result<std::unique_ptr<ReuseIndex>> index = ReuseIndex::Open(catalog); index.ok()) {
    reuse_ = std::move(*index);
  } else {
    Logger("coordinator")->warn("reuse is off: {}", index.status().message());
  }
  // What decides trust (keys, state, the reuse catalogue, the key notes) is never a job's.
  std::vector<std::string> own = {options_.state_dir, keys_dir_, net::CouplerHome()};
  if (!options_.reuse_catalog.empty()) own.push_back(options_.reuse_catalog);
  data_roots_ = DataRoots::Make(options_.data_roots, own);
  return Status::Ok();
}

Status Coordinator::StartSecurity() {
  if (options_.insecure) {
    Logger("coordinator")->warn("running --insecure: no encryption, and anyone who can reach "
                                "the sockets may run commands as this user");
    return Status::Ok();
  }
  if (options_.keys_dir.empty()) {
    COUPLER_ASSIGN_OR_RETURN(keys_dir_, net::EnsureLocalKeySet(options_.state_dir));
  } else {
    keys_dir_ = options_.keys_dir;
  }
  COUPLER_ASSIGN_OR_RETURN(net::ServerKeys keys, net::LoadServerKeys(keys_dir_));
  server_keys_ = std::move(keys);
  WarnIfRootServesNonAdminClients(*server_keys_);
  allow_lists_ = std::make_shared<AllowLists>(*server_keys_);
  control_.set_allow_lists(allow_lists_.get());
  pool_.set_allow_lists(allow_lists_.get());
  // Before any server socket binds: without a handler, libzmq would admit any key.
  COUPLER_ASSIGN_OR_RETURN(zap_, ZapHandler::Start(ctx_, allow_lists_));
  sessions_ = std::make_unique<SessionCheck>(allow_lists_);
  return Status::Ok();
}

Status Coordinator::Bind() {
  net::ServerSecurity worker_sec;
  net::ServerSecurity client_sec;
  if (server_keys_) {
    worker_sec = {&*server_keys_, kWorkersDomain};
    client_sec = {&*server_keys_, kClientsDomain};
  }
  // Each socket its own I/O thread: CURVE handshakes anyone can start on the client port (a
  // flood of unknown keys) are computed off the thread that carries the workers' traffic.
  COUPLER_ASSIGN_OR_RETURN(workers_, net::BindRouter(ctx_, options_.listen, worker_sec, 0, 1u));
  const std::string client_ep =
      options_.client_listen.empty() ? net::ClientEndpointFor(options_.listen) : options_.client_listen;
  COUPLER_ASSIGN_OR_RETURN(clients_, net::BindRouter(ctx_, client_ep, client_sec, kClientQueue, 2u));
  // Anyone who can reach the client port makes that thread do a handshake's key agreements
  // before ZAP can refuse the key: on a host whose cores are all busy, it yields to dispatch
  // (nice +10; nothing changes while a core is free). Measured: dispatch during 20,000 refused
  // handshakes 0.72 -> 0.98 of its rate alone (docs/benchmarks.md).
  if (server_keys_) {
    if (Status s = net::LowerIoThreadPriority(io_thread_names_, 1, 10); !s.ok()) {
      Logger("coordinator")->warn("the clients' I/O thread keeps its priority: {}", s.message());
    }
  }
  if (server_keys_) {
    COUPLER_RETURN_IF_ERROR(worker_handshakes_.Attach(ctx_, workers_, "workers"));
    COUPLER_RETURN_IF_ERROR(client_handshakes_.Attach(ctx_, clients_, "clients"));
  }
  worker_endpoint_ = net::LastEndpoint(workers_);
  client_endpoint_ = net::LastEndpoint(clients_);
  // So a worker or client of this user on this machine finds the keys without being told.
  for (const std::string& ep : {worker_endpoint_, client_endpoint_}) {
    if (Status s = net::PublishKeyLocation(ep, keys_dir_); !s.ok()) {
      Logger("coordinator")->warn("cannot publish where local peers find the keys: {}", s.message());
    }
  }
  return Status::Ok();
}

Status Coordinator::WriteReadyFile() {
  if (options_.ready_file.empty()) return Status::Ok();
  const std::string tmp = options_.ready_file + ".tmp";
  {
    std::ofstream out(tmp);
    out << "workers=" << worker_endpoint_ << "\nclients=" << client_endpoint_ << "\n";
    if (http_) out << "http=" << http_->url() << "\n";
    if (!out) return Internal("cannot write ready file " + tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  std::error_code ec;
  std::filesystem::rename(tmp, options_.ready_file, ec);
  if (ec) return Internal("cannot write ready file " + options_.ready_file + ": " + ec.message());
  return Status::Ok();
}

Status Coordinator::Run(const std::atomic<bool>& stop) {
  auto log = Logger("coordinator");
  log->info("listening for workers on {}, clients on {}", worker_endpoint_, client_endpoint_);
  // A socket that fails to receive is broken for good: the loop ends with its error, after the
  // same goodbye as a stop (waiters answered, the store flushed). A context shut down is a stop.
  Status failed;
  bool broken = false;
  // True when `r` holds a message; a failed receive marks the loop broken.
  auto received = [&](const auto& r) {
    if (r.ok()) return r->has_value();
    broken = true;
    if (!net::IsContextShutDown(r.status())) {
      failed = r.status();
      log->error("stopping: {}", failed.message());
    }
    return false;
  };
  // The stop's drain ends at this time (steady clock ms); 0: not stopping yet.
  int64_t stop_deadline_ms = 0;
  while (!broken) {
    if (stop.load()) {
      if (options_.stop_drain_ms <= 0) break;
      const int64_t now = NowMs();
      if (stop_deadline_ms == 0) {
        stop_deadline_ms = now + options_.stop_drain_ms;
        log->info("stopping: draining the pool first (up to {} ms)", options_.stop_drain_ms);
      }
      Outbox drain;
      const bool drained = pool_.DrainForStop(drain);
      Deliver(drain);
      if (drained) {
        log->info("stopping: the pool is drained");
        break;
      }
      if (now >= stop_deadline_ms) {
        log->warn("stopping: workers still hold work after {} ms; their attempts run again at "
                  "the next start", options_.stop_drain_ms);
        break;
      }
    }
    const unsigned ready = net::PollReadable({&workers_, &clients_, &admitted_, &http_requests_},
                                             std::chrono::milliseconds(20));
    const auto turn_began = std::chrono::steady_clock::now();
    // Clients first, and again every few milliseconds of the workers' burst: a status or a
    // submit is one message, where a pool of 1,000 workers can have thousands waiting, and
    // answering it only after all of them put the whole burst on its latency.
    auto clients_served = turn_began;
    auto serve_clients = [&](int most) {
      clients_served = std::chrono::steady_clock::now();
      for (int i = 0; i < most && !broken; ++i) {
        auto m = net::TryRecvRouted(clients_);
        if (!received(m)) break;
        ++received_;
        if (!SessionAllowed(kClientsDomain, (*m)->identity, (*m)->user_id, (*m)->peer_key)) {
          RefuseRevoked((*m)->identity, (*m)->payload, (*m)->has_empty_delimiter);
          continue;
        }
        client_versions_.Note((*m)->identity, wire::PeekVersion((*m)->payload));
        OnClientMessage((*m)->identity, PeerPrincipal((*m)->user_id, (*m)->peer_key),
                        (*m)->payload, (*m)->has_empty_delimiter);
      }
    };
    if (ready & 2u) serve_clients(256);
    // Drain what is waiting in bounded bursts, so one busy socket cannot starve the other.
    if (!broken && (ready & 1u)) {
      for (int i = 0; i < kBurstMessages && !broken; ++i) {
        if (i > 0 && i % 32 == 0) {
          // The clock is read every 32 messages, not every one.
          const auto now = std::chrono::steady_clock::now();
          if (now - turn_began >= kBurstTime) break;  // dispatch what came in, then go on
          if (now - clients_served >= kClientsEvery) serve_clients(16);
        }
        auto m = net::TryRecvRouted(workers_);
        if (!received(m)) break;
        ++received_;
        if ((*m)->frames != 2) {
          ++dropped_;
          continue;
        }
        if (!SessionAllowed(kWorkersDomain, (*m)->identity, (*m)->user_id, (*m)->peer_key)) {
          continue;
        }
        worker_versions_.Note((*m)->identity, wire::PeekVersion((*m)->payload));
        OnWorkerMessage((*m)->identity, (*m)->user_id, (*m)->payload);
      }
    }
    if (!broken && (ready & 4u)) {
      while (received(net::TryRecv(admitted_))) {
      }
      FinishAdmissions();
    }
    if (!broken && (ready & 8u)) {
      for (int i = 0; i < 64; ++i) {
        auto m = net::TryRecvRouted(http_requests_);
        if (!received(m)) break;
        OnClientMessage("h" + (*m)->identity, Principal::HttpApi(), (*m)->payload, false);
      }
    }
    if (broken) break;
    if (ledger_.store().fenced() || !fenced_by_worker_.ok()) {
      // Another coordinator owns the state now: this one must not dispatch, answer or commit.
      // What found it out says it best: a worker's newer epoch, or a refused write.
      failed = !fenced_by_worker_.ok() ? fenced_by_worker_ : ledger_.store().fence();
      log->error("stopping: {}", failed.message());
      break;
    }
    worker_handshakes_.Poll();
    client_handshakes_.Poll();
    Tick();
    serve_clients(16);  // a flush of the state may have taken a while
    Dispatch();
    Outbox answers;
    control_.AnswerWaiters(false, NowMs(), answers);
    Deliver(answers);
    if (http_ && board_.Wanted(WallClockMs())) PublishSnapshot();
    loop_lag_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - turn_began).count());
  }
  if (loop_channel_) loop_channel_->Stop();
  Outbox last;
  control_.AnswerWaiters(true, NowMs(), last);
  Deliver(last);
  ledger_.Flush(NowMs());
  log->info("stopped");
  return failed;
}

void Coordinator::Tick() {
  const int64_t now = NowMs();
  Outbox out;
  if (now - last_reap_ms_ >= kReapEveryMs) {
    last_reap_ms_ = now;
    pool_.Reap(now, out);
  }
  if (now - last_heartbeat_ms_ >= options_.heartbeat_ms) {
    last_heartbeat_ms_ = now;
    pool_.Heartbeat(WallClockMs(), out);
  }
  ledger_.Tick(now, options_.flush_every_ms);
  const int64_t finished_before =
      options_.keep_finished_ms > 0 ? WallClockMs() - options_.keep_finished_ms : 0;
  if (const auto evicted = scheduler_.EvictFinished(options_.keep_jobs, finished_before);
      !evicted.empty()) {
    ledger_.JobsEvicted(evicted);
    control_.JobsEvicted(evicted);
  }
  pool_.AcknowledgeDurable(out);
  Deliver(out);
}

void Coordinator::Dispatch() {
  Outbox out;
  pool_.Dispatch(NowMs(), out);
  Deliver(out);
}

void Coordinator::SendToWorker(const std::string& worker_id, std::string payload) {
  const WorkerEntry* w = scheduler_.registry().Find(worker_id);
  if (w == nullptr || w->route.empty()) return;
  if (!worker_versions_.Adapt(w->route, payload)) return;
  wire::StampEpoch(payload, ledger_.epoch());
  if (Status s = net::SendRouted(workers_, w->route, payload); !s.ok()) {
    Logger("coordinator")->warn("send to worker {}: {}", worker_id, s.message());
  }
}

void Coordinator::SendToRoute(const std::string& route, std::string payload) {
  if (!worker_versions_.Adapt(route, payload)) return;
  wire::StampEpoch(payload, ledger_.epoch());
  if (Status s = net::SendRouted(workers_, route, payload); !s.ok()) {
    Logger("coordinator")->warn("send to an unregistered worker connection: {}", s.message());
  }
}

void Coordinator::Deliver(Outbox& out) {
  for (Outbox::WorkerMessage& m : out.workers) SendToWorker(m.worker_id, std::move(m.payload));
  for (Outbox::RouteMessage& m : out.routes) SendToRoute(m.route, std::move(m.payload));
  for (const Outbox::ClientMessage& m : out.clients) ReplyToClient(m.to, m.payload);
  out.workers.clear();
  out.routes.clear();
  out.clients.clear();
}

void Coordinator::ReplyToClient(const ClientRef& to, const std::string& payload) {
  const std::string& identity = to.identity;
  const bool http = !identity.empty() && identity.front() == 'h';
  zmq::socket_t& socket = http ? http_requests_ : clients_;
  const std::string_view route = http ? std::string_view(identity).substr(1) : std::string_view(identity);
  std::string older;
  if (!http && client_versions_.VersionOf(identity) != wire::kProtocolVersion) {
    older = payload;
    if (!client_versions_.Adapt(identity, older)) return;
  }
  if (Status s = net::SendRouted(socket, route, older.empty() ? payload : older, to.delimiter); !s.ok()) {
    // Counted, logged at debug only: a flooding client must not flood the log as well.
    ++replies_dropped_;
    Logger("coordinator")->debug("reply to client dropped: {}", s.message());
  }
}

}  // namespace coupler::coordinator
