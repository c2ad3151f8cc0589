#include "coordinator/coordinator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "coordinator/admitted_plan.h"
#include "coordinator/job_intake.h"
#include "coordinator/root_warning.h"
#include "runtime/logging.h"
#include "runtime/net/endpoint.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"

namespace coupler::coordinator {
namespace {

constexpr int64_t kReapEveryMs = 100;
constexpr int64_t kStoreRetryMs = 1000;
// Replies held for one client that does not read them; a client waits for each reply before
// its next request, so only a misbehaving one ever has more than one.
constexpr int kClientQueue = 64;
// Specs being parsed and planned at once, at most; more are refused (Unavailable) at once.
constexpr size_t kMaxPendingAdmissions = 16;

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
      store_(std::move(store)),
      events_({options_.state_dir + "/" + kEventLogFile, options_.event_log_bytes, kEventLogKeep}),
      scheduler_(options_.dead_after_ms, options_.gang_hold_timeout_ms),
      ctx_(2),  // I/O threads: the workers' socket, the clients' (Bind)
      started_(std::chrono::steady_clock::now()) {
  scheduler_.SetRetryPolicy(kDefaultRetryPolicy, [this] { return NowMs(); });
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
        c->ctx_, ep, kMaxPendingAdmissions, IntakeContext{&c->data_roots_, c->reuse_.get()});
  } catch (const zmq::error_t& e) {
    return Internal(std::string("admission queue: ") + e.what());
  }
  return c;
}

int64_t Coordinator::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started_)
      .count();
}

int64_t Coordinator::WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status Coordinator::Resume() {
  auto log = Logger("coordinator");
  // Finished jobs stay what their row says, in the store: not re-validated (their inputs may
  // be gone), not loaded. Only unfinished ones are restored to run.
  COUPLER_ASSIGN_OR_RETURN(auto records, store_->LoadUnfinishedJobs());
  COUPLER_ASSIGN_OR_RETURN(earlier_jobs_, store_->CountJobsByState());
  for (const auto& rec : records) {
    if (auto n = earlier_jobs_.find(rec.state); n != earlier_jobs_.end() && n->second > 0) --n->second;
  }
  // The start first, then what it found: the abandoned attempts below read as its doing.
  epoch_ = store_->generation();
  events_.CoordinatorStarted(epoch_, static_cast<uint64_t>(::getpid()), records.size());
  for (auto& rec : records) {
    if (!rec.submission_id.empty()) {
      job_of_submission_[rec.submission_id] = rec.id;
      submission_of_job_[rec.id] = rec.submission_id;
    }
    const std::optional<JobPhase> phase = job::ParseJobPhase(rec.state);
    COUPLER_ASSIGN_OR_RETURN(auto commits, store_->LoadCommits(rec.id));
    COUPLER_ASSIGN_OR_RETURN(auto attempts, store_->LoadAttempts(rec.id));
    COUPLER_ASSIGN_OR_RETURN(auto sent, store_->LoadSent(rec.id));
    COUPLER_ASSIGN_OR_RETURN(rec.plan, store_->LoadPlan(rec.id));
    Result<std::unique_ptr<JobState>> job = RestoreJob(rec, commits, attempts, sent);
    rec.plan.clear();  // held by the job state now; the record stays for its summary
    if (!job.ok()) {
      log->error("cannot resume job {}: {}", rec.id, job.status().message());
      const std::string failed_state(JobPhaseName(JobPhase::kFailed));
      COUPLER_RETURN_IF_ERROR(
          store_->SetJobState(rec.id, failed_state, job.status().message(), WallMs()));
      events_.JobFinished(rec.id, failed_state, std::string(job.status().message()));
      ++earlier_jobs_[failed_state];
      continue;
    }
    // What the store says, so a job whose last commits landed just before a crash (all done,
    // state still "running" on disk) gets its final state written by PersistFinishedJobs.
    persisted_phase_[rec.id] = phase == JobPhase::kRunning ? JobPhase::kRunning : JobPhase::kQueued;
    StampReadyNodes(**job);
    log->info("resuming job {} ({}): {} of {} tasks already done", rec.id, rec.name,
              (*job)->done(), (*job)->table().size());
    scheduler_.AddJob(std::move(*job));
    if (const size_t waiting = AwaitInFlight(rec.id, commits, attempts, sent); waiting > 0) {
      log->info("job {}: {} attempt(s) were in flight; waiting up to {} ms for their workers to "
                "report them", rec.id, waiting, AdoptionWaitMs());
    }
  }
  return Status::Ok();
}

std::optional<wire::JobStatus> Coordinator::StoredSummary(const std::string& job_id) {
  Result<std::optional<store::JobRecord>> rec = store_->LoadJob(job_id);
  if (!rec.ok()) {
    Logger("coordinator")->warn("cannot read job {} from the state: {}", job_id,
                                rec.status().message());
    return std::nullopt;
  }
  if (!rec->has_value()) return std::nullopt;
  wire::JobStatus summary = SummaryOf(**rec);
  // Its nodes, replayed from its admitted plan and its commits (nothing on disk is read but the
  // state, nothing is written): `coupler logs JOB NODE TASK` finds their files. A job admitted
  // before plans were kept shows its summary alone.
  if ((*rec)->plan.empty()) return summary;
  Result<AdmittedPlan> plan = DecodeAdmittedPlan((*rec)->plan);
  Result<std::vector<store::TaskCommit>> commits = store_->LoadCommits(job_id);
  if (!plan.ok() || !commits.ok()) return summary;
  std::unique_ptr<JobState> job = JobFromPlan(job_id, std::move(*plan));
  for (const store::TaskCommit& c : *commits) {
    if (c.task_id < job->table().size()) job->RestoreDone(c.task_id, c.attempt + 1);
  }
  summary.nodes = scheduler_.Status(*job).nodes;
  const bool ended = job::ParseJobPhase(summary.state).has_value() &&
                     job::IsFinished(*job::ParseJobPhase(summary.state));
  for (wire::NodeStatus& n : summary.nodes) {
    // What did not finish ended with the job (failed or cancelled); its reason is the job's.
    if (ended && n.state != "done") n.state = summary.state == "failed" ? "failed" : "cancelled";
    n.tasks_running = 0;
    n.tasks_prefetched = 0;
  }
  return summary;
}

int64_t Coordinator::AdoptionWaitMs() const {
  return std::max<int64_t>(2 * options_.dead_after_ms, 10'000);
}

size_t Coordinator::AwaitInFlight(const std::string& job_id,
                                  const std::vector<store::TaskCommit>& commits,
                                  const std::vector<store::AttemptRecord>& attempts,
                                  const std::vector<store::SentAttempt>& sent) {
  const std::vector<store::SentAttempt> in_flight = InFlightAttempts(commits, attempts, sent);
  if (in_flight.empty()) return 0;
  const std::vector<std::pair<uint64_t, uint32_t>> abandoned =
      scheduler_.AwaitAdoption(job_id, in_flight, NowMs() + AdoptionWaitMs());
  for (const auto& [task, attempt] : abandoned) {
    events_.AttemptAbandoned(EventRef(job_id, task, attempt),
                             "sent before the coordinator restarted and cannot be taken back (a "
                             "gang's ranks, or not its task's latest attempt): the task runs again");
  }
  return in_flight.size() - abandoned.size();
}

void Coordinator::AbandonUnadopted(int64_t now_ms) {
  const std::vector<LostAttempt> abandoned = scheduler_.AbandonUnadopted(now_ms);
  if (abandoned.empty()) return;
  const std::string reason = fmt::format(
      "sent before the coordinator restarted, and no worker reported holding it within {} ms: "
      "the task runs again", AdoptionWaitMs());
  for (const LostAttempt& a : abandoned) {
    events_.AttemptAbandoned(EventRef(a.job_id, a.task_id, a.attempt), reason);
  }
  Logger("coordinator")->warn("{} attempt(s) in flight before the restart were not reported by "
                              "any worker: their tasks run again", abandoned.size());
}

void Coordinator::SendResultAcks() {
  // Only once everything buffered is written: an outcome's commit (or failure) is then on disk.
  if (pending_acks_.empty() || store_->pending() > 0 || !store_error_.ok()) return;
  for (auto& [worker_id, attempts] : pending_acks_) {
    SendToWorker(worker_id, wire::Encode(wire::ResultAck{std::move(attempts)}));
  }
  pending_acks_.clear();
}

Status Coordinator::OpenIntake() {
  const std::string catalog = options_.reuse_catalog.empty()
                                  ? options_.state_dir + "/" + store::ReuseStore::kFileName
                                  : options_.reuse_catalog;
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
      if (DrainPoolForStop()) {
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
    // Drain what is waiting in bounded bursts, so one busy socket cannot starve the other.
    if (ready & 1u) {
      for (int i = 0; i < 4096; ++i) {
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
        OnWorkerMessage((*m)->identity, (*m)->user_id, (*m)->payload);
      }
    }
    if (!broken && (ready & 2u)) {
      for (int i = 0; i < 256; ++i) {
        auto m = net::TryRecvRouted(clients_);
        if (!received(m)) break;
        ++received_;
        if (!SessionAllowed(kClientsDomain, (*m)->identity, (*m)->user_id, (*m)->peer_key)) {
          RefuseRevoked((*m)->identity, (*m)->payload, (*m)->has_empty_delimiter);
          continue;
        }
        OnClientMessage((*m)->identity, PeerPrincipal((*m)->user_id, (*m)->peer_key),
                        (*m)->payload, (*m)->has_empty_delimiter);
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
    if (store_->fenced()) {
      // Another coordinator owns the state now: this one must not dispatch, answer or commit.
      failed = store_->fence();
      log->error("stopping: {}", failed.message());
      break;
    }
    Tick();
    Dispatch();
    AnswerWaiters(false);
    if (http_ && board_.Wanted(WallMs())) PublishSnapshot();
  }
  if (loop_channel_) loop_channel_->Stop();
  AnswerWaiters(true);
  FlushStore();
  log->info("stopped");
  return failed;
}

void Coordinator::Tick() {
  const int64_t now = NowMs();
  if (now - last_reap_ms_ >= kReapEveryMs) {
    last_reap_ms_ = now;
    ReapSilentWorkers(now);
    AbandonUnadopted(now);
    SweepLaunches();
  }
  if (now - last_heartbeat_ms_ >= options_.heartbeat_ms) {
    last_heartbeat_ms_ = now;
    wire::Heartbeat beat;
    beat.sender_id = "coordinator";
    beat.sequence = ++heartbeat_seq_;
    beat.timestamp_ms = static_cast<uint64_t>(WallMs());
    const std::string bytes = wire::Encode(beat);
    for (const auto& [id, w] : scheduler_.registry().workers()) {
      if (!w.gone()) SendToWorker(id, bytes);
    }
  }
  // While the store cannot write (a full disk), retry now and then rather than every loop.
  const int64_t every = store_error_.ok() ? options_.flush_every_ms : kStoreRetryMs;
  if (now - last_flush_ms_ >= every) {
    PersistFinishedJobs();
    if (store_->pending() > 0 || events_.pending_bytes() > 0) FlushStore();
  }
  SendResultAcks();
}

void Coordinator::FlushStore() {
  last_flush_ms_ = NowMs();
  if (store_->pending() > 0) NoteStoreResult(store_->Flush());
  // After the state the events describe is durable; one write per flush, never one per event.
  // A failure is the log's to report: it never holds up dispatch.
  (void)events_.Flush();
}

void Coordinator::NoteStoreResult(const Status& s) {
  auto log = Logger("coordinator");
  if (s.ok()) {
    if (!store_error_.ok()) {
      log->warn("the state store writes again: dispatch resumes");
      store_error_ = Status::Ok();
    }
    return;
  }
  if (store_error_.ok()) {
    // Once, not at every retry: the operator needs the cause, not a flood.
    log->error("cannot write the state: {}; no new task is dispatched and nothing is reported "
               "finished until it can (free space in {})",
               s.message(), options_.state_dir);
  }
  store_error_ = s;
}

void Coordinator::PersistFinishedJobs() {
  for (const auto& job : scheduler_.jobs()) {
    JobPhase& persisted = persisted_phase_[job->id()];
    if (persisted == job->phase()) continue;
    const bool finished = job->finished();
    // SetJobState writes the buffered commits in the same transaction, so a job is never
    // on disk as finished without the commits that finished it.
    if (finished && job->finished_ms() == 0) job->set_times(job->submitted_ms(), WallMs());
    store::JobCounts counts;
    counts.tasks_total = job->table().size();
    counts.tasks_done = job->done();
    counts.tasks_failed = job->failed();
    counts.attempts = job->total_attempts();
    Status s = store_->SetJobState(job->id(), std::string(JobPhaseName(job->phase())), job->error(),
                                   finished ? job->finished_ms() : 0, counts);
    NoteStoreResult(s);
    if (!s.ok()) return;  // still the old phase on disk: status keeps saying so
    persisted = job->phase();
    if (finished) {
      ++metrics_.jobs_finished[std::string(JobPhaseName(job->phase()))];
      node_ready_ms_.erase(job->id());
    }
    if (finished) {
      Logger("coordinator")->info("job {} {}: {} of {} tasks, {} attempts{}", job->id(),
                                  JobPhaseName(job->phase()), job->done(), job->table().size(),
                                  job->total_attempts(),
                                  job->error().empty() ? "" : " — " + job->error());
      events_.JobFinished(job->id(), JobPhaseName(job->phase()), job->error());
      scheduler_.ReleaseFinished(job->id());
    }
  }
}

void Coordinator::ReapSilentWorkers(int64_t now_ms) {
  // The scheduler returns only the attempts the reaped workers held: note who may go first.
  std::vector<std::string> silent;
  for (const auto& [id, w] : scheduler_.registry().workers()) {
    if (scheduler_.registry().Silent(w, now_ms)) silent.push_back(id);
  }
  const std::vector<LostAttempt> lost = scheduler_.ReapSilentWorkers(now_ms);
  for (const std::string& id : silent) {
    const WorkerEntry* w = scheduler_.registry().Find(id);
    if (w != nullptr && (w->state == WorkerState::kAlive || w->state == WorkerState::kDraining)) {
      continue;  // not given up on yet
    }
    auto drained = drain_logged_.find(id);
    // One that finished its drain left on purpose: its silence is its goodbye, not a loss.
    if (drained == drain_logged_.end() || drained->second != DrainLogged::kDrained) {
      events_.WorkerLost(id, static_cast<uint64_t>(std::count_if(
                                 lost.begin(), lost.end(),
                                 [&](const LostAttempt& l) { return l.worker_id == id; })));
    }
    if (drained != drain_logged_.end()) drain_logged_.erase(drained);
  }
  RecordLost(lost);
}

void Coordinator::RecordLost(const std::vector<LostAttempt>& lost) {
  for (const auto& l : lost) {
    const std::string reason = "worker " + l.worker_id + " was lost";
    store_->AddAttempt({l.job_id, l.task_id, l.attempt, l.worker_id, "lost", reason, WallMs()});
    NoteFailure(EventRef(l.job_id, l.task_id, l.attempt), l.worker_id, reason,
                RetryReason::kWorkerLost);
  }
  if (!lost.empty()) {
    Logger("coordinator")->warn("{} task(s) re-queued from lost worker {}", lost.size(),
                                lost.front().worker_id);
  }
}

void Coordinator::RecordSent(const std::string& worker_id, const std::vector<wire::TaskSpec>& tasks) {
  // One row per job in the message, buffered with the commits: a restart then knows every
  // attempt that was in flight, and where (cheap enough to keep dispatch at full speed).
  const WorkerEntry* worker = scheduler_.registry().Find(worker_id);
  const std::string key = worker != nullptr ? worker->key_name : std::string();
  store::SentAttempts batch;
  batch.worker_id = worker_id;
  batch.worker_key = key;
  // Looked up once per job in the message, not per task: this runs for every task sent.
  const JobState* job = nullptr;
  const std::vector<int64_t>* stamps = nullptr;
  const int64_t now = WallMs();
  for (const wire::TaskSpec& t : tasks) {
    if (t.job_id != batch.job_id && !batch.tasks.empty()) {
      store_->AddSent(std::move(batch));
      batch = {};
      batch.worker_id = worker_id;
      batch.worker_key = key;
    }
    if (job == nullptr || job->id() != t.job_id) {
      job = scheduler_.FindJob(t.job_id);
      stamps = job != nullptr ? ReadyStamps(*job) : nullptr;
    }
    if (stamps != nullptr && t.attempt == 0) {
      ObserveQueueWait(*stamps, *job, t.task_id, now, metrics_.task_queue_wait);
    }
    batch.job_id = t.job_id;
    batch.tasks.emplace_back(t.task_id, t.attempt);
  }
  if (!batch.tasks.empty()) store_->AddSent(std::move(batch));
}

LaunchRelay::GangLookup Coordinator::GangLookup() {
  return [this](const std::string& job_id, uint64_t task_id) -> std::optional<LaunchRelay::LiveGang> {
    std::optional<Scheduler::GangView> gang = scheduler_.FindRunningGang(job_id, task_id);
    if (!gang) return std::nullopt;
    LaunchRelay::LiveGang live;
    live.attempt = gang->attempt;
    live.leader = gang->workers.front().first;
    for (const auto& [id, ranks] : gang->workers) {
      const WorkerEntry* w = scheduler_.registry().Find(id);
      live.members.push_back({id, w != nullptr ? w->info.address : ""});
    }
    return live;
  };
}

void Coordinator::SweepLaunches() {
  // Runs after every result message: with no gang running, skip building the lookup.
  if (launches_.idle()) return;
  LaunchRelay::Ended ended = launches_.Sweep(GangLookup());
  for (const auto& [worker, stop] : ended.stops) SendToWorker(worker, wire::Encode(stop));
  for (const auto& [route, out] : ended.agents) SendToRoute(route, wire::Encode(out));
}

void Coordinator::Dispatch() {
  // Work finished now could not be made durable: hand out none until the store writes again.
  if (!store_error_.ok()) return;
  // Gangs first: slots they hold must not go to loose tasks in the same round.
  for (auto& [leader, spec] : scheduler_.PlaceGangs(NowMs())) {
    std::string hosts;
    for (const std::string& h : spec.gang_hosts) hosts += (hosts.empty() ? "" : ",") + h;
    Logger("coordinator")->info("job {} node {}: gang of {} ranks on {}, led by {}", spec.job_id,
                                spec.node_id, spec.ranks, hosts, leader);
    spec.gang_token = launches_.IssueToken(spec.job_id, spec.task_id, spec.attempt);
    if (const JobState* job = scheduler_.FindJob(spec.job_id); job != nullptr && spec.attempt == 0) {
      if (const std::vector<int64_t>* stamps = ReadyStamps(*job)) {
        ObserveQueueWait(*stamps, *job, spec.task_id, WallMs(), metrics_.gang_wait);
      }
    }
    events_.GangPlaced({spec.job_id, spec.node_id, spec.task_id, spec.attempt}, leader,
                       spec.gang_hosts);
    const WorkerEntry* lead = scheduler_.registry().Find(leader);
    store_->AddSent({spec.job_id, {{spec.task_id, spec.attempt}}, leader,
                     lead != nullptr ? lead->key_name : std::string()});
    wire::TaskAssignment a;
    a.tasks.push_back(std::move(spec));
    SendToWorker(leader, wire::Encode(a));
  }
  scheduler_.ReleaseDueRetries();  // back-offs that ended: their tasks may go out now
  if (!scheduler_.HasDispatchableWork()) return;
  for (auto& [id, tasks] : scheduler_.AssignBalanced()) {
    RecordSent(id, tasks);
    for (const auto& t : tasks) {
      events_.TaskAssigned({t.job_id, t.node_id, t.task_id, t.attempt}, id);
    }
    wire::TaskAssignment a;
    a.tasks = std::move(tasks);
    SendToWorker(id, wire::Encode(a));
  }
}

TaskEventRef Coordinator::EventRef(const std::string& job_id, uint64_t task, uint32_t attempt) {
  const JobState* job = scheduler_.FindJob(job_id);
  if (job == nullptr || task >= job->table().size()) return {job_id, "", task, attempt};
  return {job_id, job->plan().nodes[job->table().Describe(task).plan_node].id, task, attempt};
}

void Coordinator::NoteFailure(const TaskEventRef& ref, const std::string& worker_id,
                              const std::string& reason, RetryReason cause) {
  events_.TaskFailed(ref, worker_id, reason, RetryReasonName(cause));
  metrics_.CountFailure(cause);
  const JobState* job = scheduler_.FindJob(std::string(ref.job));
  // Whether it runs again is what the scheduler did with it: re-queued (ready) or not.
  if (job == nullptr || ref.task >= job->table().size() ||
      job->task_state(ref.task) != TaskState::kReady) {
    return;
  }
  metrics_.CountRetry(cause);
  events_.TaskRetried({ref.job, ref.node, ref.task, job->attempts(ref.task)}, RetryReasonName(cause),
                      reason);
}

void Coordinator::NoteDraining(const std::string& worker_id, std::string_view by) {
  const WorkerEntry* w = scheduler_.registry().Find(worker_id);
  // Drained too: a worker idle when it is told to drain is drained by its first beat.
  if (w == nullptr || (w->state != WorkerState::kDraining && w->state != WorkerState::kDrained)) return;
  if (drain_logged_.emplace(worker_id, DrainLogged::kDraining).second) {
    events_.WorkerDraining(worker_id, by);
  }
}

bool Coordinator::DrainPoolForStop() {
  bool left = true;
  std::vector<std::string> to_tell;
  for (const auto& [id, w] : scheduler_.registry().workers()) {
    if (w.gone()) continue;
    left = false;
    if (w.state == WorkerState::kAlive) to_tell.push_back(id);
  }
  for (const std::string& id : to_tell) {
    scheduler_.registry().SetDraining(id);
    NoteDraining(id, "stop");
    SendToWorker(id, wire::Encode(wire::DrainWorker{id}));
  }
  return left;
}

void Coordinator::NoteDrainingBeat(const std::string& worker_id) {
  NoteDraining(worker_id, "worker");
  const WorkerEntry* w = scheduler_.registry().Find(worker_id);
  // Everything sent to it is reported (results travel before the beat on its one connection):
  // it holds nothing, so it is leaving.
  if (w == nullptr || !w->inflight.empty() || w->gang_ranks > 0 || w->held > 0) return;
  DrainLogged& logged = drain_logged_[worker_id];
  if (logged == DrainLogged::kDrained) return;
  logged = DrainLogged::kDrained;
  events_.WorkerDrained(worker_id);
}

void Coordinator::SendToWorker(const std::string& worker_id, const std::string& payload) {
  const WorkerEntry* w = scheduler_.registry().Find(worker_id);
  if (w == nullptr || w->route.empty()) return;
  if (Status s = net::SendRouted(workers_, w->route, payload); !s.ok()) {
    Logger("coordinator")->warn("send to worker {}: {}", worker_id, s.message());
  }
}

void Coordinator::SendToRoute(const std::string& route, const std::string& payload) {
  if (Status s = net::SendRouted(workers_, route, payload); !s.ok()) {
    Logger("coordinator")->warn("send to an unregistered worker connection: {}", s.message());
  }
}

void Coordinator::ReplyToClient(const std::string& identity, const std::string& payload,
                                bool delimiter) {
  const bool http = !identity.empty() && identity.front() == 'h';
  zmq::socket_t& socket = http ? http_requests_ : clients_;
  const std::string_view route = http ? std::string_view(identity).substr(1) : std::string_view(identity);
  if (Status s = net::SendRouted(socket, route, payload, delimiter); !s.ok()) {
    // Counted, logged at debug only: a flooding client must not flood the log as well.
    ++replies_dropped_;
    Logger("coordinator")->debug("reply to client dropped: {}", s.message());
  }
}

}  // namespace coupler::coordinator
