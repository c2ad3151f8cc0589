#include "worker/worker.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "kernels/device.h"
#include "runtime/logging.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/local_address.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/envelope.h"
#include "worker/host_info.h"
#include "worker/task_device.h"

namespace coupler::worker {
namespace {

// Adaptive prefetch: hold about this much work beyond the running tasks, within bounds. The
// bound is for tasks of a few microseconds (noops, tiny shards): 256 of them were 2.5 ms of
// work at 100k tasks/s per worker, less than one turn of a busy coordinator, so the worker ran
// dry between its turns; 2,048 is the 20 ms meant. Longer tasks never reach it (1 ms tasks:
// 40 for 2 slots), and queued tasks an idle worker could run are taken back (work stealing).
constexpr double kPipeDepthMs = 20.0;
constexpr uint32_t kMaxPrefetch = 2048;
// Outcomes per result message (see SendOutcomes).
constexpr size_t kMaxOutcomesPerResult = 128;
// A start is reported at most this long after the last heartbeat.
constexpr int64_t kStartReportMs = 50;
// Handshakes cut short in a row, none succeeding, before the silence warning says what that
// means: one or two are a coordinator restarting; libzmq retries several a second.
constexpr int kCutShortToExplain = 5;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Worker::Worker(WorkerOptions options) : options_(std::move(options)), ctx_(1) {}

Worker::~Worker() {
  pool_.reset();  // joins the task threads before the sockets go
  daemons_.reset();
}

int64_t Worker::NowMs() const { return SteadyMs(); }

Result<std::unique_ptr<Worker>> Worker::Create(WorkerOptions options) {
  const HostInfo host = ProbeHost();
  const std::optional<SlurmAllocation> slurm = DetectSlurm(&std::getenv);
  if (slurm) {
    SlurmDefaults d = ApplySlurmDefaults(*slurm, {options.slots, options.gpus, options.labels});
    options.slots = d.slots;
    options.gpus = std::move(d.gpus);
    options.labels = std::move(d.labels);
  }
  if (options.gang_launcher == GangLauncher::kSrun && !slurm) {
    return InvalidArgument("--gang-launcher srun: this worker runs outside a Slurm allocation "
                           "(no SLURM_JOB_ID and SLURMD_NODENAME)");
  }
  if (options.id.empty()) options.id = fmt::format("{}-{}", host.hostname, host.pid);
  if (options.slots == 0) options.slots = static_cast<uint32_t>(std::max(1, host.cpus));
  const bool adaptive = options.prefetch == 0;
  // Until tasks have been timed, one queued task per slot: enough to hide the round trip, and
  // a stage of long tasks is not dealt out deep before anyone knows they are long (with 10,
  // two workers split 16 parse tasks 8/8 up front and the faster one idled at the end). The
  // first results bring the learned depth, so short tasks batch up after one round trip.
  if (adaptive) options.prefetch = options.slots;
  std::unique_ptr<Worker> w(new Worker(options));
  // Started with its coordinator (`coupler coordinator ... &` then `coupler worker &`), it may
  // look before the coordinator has published its keys: it waits for them, as it would wait
  // for a coordinator that is down, up to --death-timeout.
  std::optional<std::chrono::milliseconds> key_wait;
  if (options.death_timeout_ms > 0) key_wait = std::chrono::milliseconds(options.death_timeout_ms);
  COUPLER_ASSIGN_OR_RETURN(
      w->keys_, net::AwaitPeerKeys(options.coordinator, net::KeyRole::kWorker, options.keys_dir,
                                   options.insecure, key_wait, [&](const Status& missing) {
                                     Logger("worker")->warn(
                                         "waiting for the coordinator at {} to publish its keys "
                                         "(is it starting, or not started yet?): {}",
                                         options.coordinator, missing.message());
                                   }));
  w->adaptive_prefetch_ = adaptive;
  w->sent_prefetch_ = options.prefetch;

  // It goes into hostfiles and mpirun's command lines: an address or a plain host name only.
  const bool plain = std::all_of(options.advertise.begin(), options.advertise.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == ':' || c == '-' || c == '_';
  });
  if (!plain) {
    return InvalidArgument("--advertise '" + options.advertise +
                           "': expected an IP address or a host name");
  }
  if (options.advertise.empty()) {
    Result<std::string> local = net::LocalAddressToward(options.coordinator);
    if (!local.ok()) {
      return local.status().WithContext("finding the address to advertise (set --advertise)");
    }
    options.advertise = *local;
  }
  w->options_.advertise = options.advertise;
  if (slurm && options.gang_launcher != GangLauncher::kMpirun) {
    Result<SlurmSteps> steps = ResolveSlurmSteps(*slurm, options.advertise);
    if (steps.ok()) {
      w->slurm_steps_ = std::move(*steps);
      Logger("worker")->info("in Slurm job {} on node {}: {} slots, gangs start as its steps "
                             "(srun --mpi=pmix)", slurm->job_id, slurm->node, options.slots);
    } else if (options.gang_launcher == GangLauncher::kSrun) {
      return steps.status().WithContext("reading the nodes of Slurm job " + slurm->job_id);
    } else {
      Logger("worker")->warn("in Slurm job {}, but its nodes cannot be read ({}): gangs start "
                             "with mpirun", slurm->job_id, steps.status().message());
    }
  }

  wire::RegisterWorker& reg = w->registration_;
  reg.worker_id = options.id;
  reg.host = host.hostname;
  reg.address = options.advertise;
  reg.pid = static_cast<uint32_t>(host.pid);
  reg.slots = options.slots;
  reg.prefetch = options.prefetch;
  reg.cpus = static_cast<uint32_t>(host.cpus);
  reg.memory_bytes = host.memory_bytes;
  reg.labels = options.labels;
  reg.protocol_version = options.protocol != 0 ? options.protocol : wire::kProtocolVersion;
  COUPLER_ASSIGN_OR_RETURN(const std::vector<int> gpus,
                           ParseGpuList(options.gpus, kernels::CudaDeviceCount()));
  std::vector<pool::GpuShareLedger::Device> shares;
  std::vector<kernels::DeviceInfo> offered;
  if (!gpus.empty()) {
    // A device the driver lists but cannot open is reported at once, not at the first task.
    COUPLER_ASSIGN_OR_RETURN(const std::vector<kernels::DeviceInfo> devices,
                             kernels::ListCudaDevices());
    for (const auto& d : devices) {
      if (std::find(gpus.begin(), gpus.end(), d.index) == gpus.end()) continue;
      reg.gpus.push_back({static_cast<uint32_t>(d.index), d.name, d.total_memory, d.free_memory, ""});
      shares.push_back({d.index, pool::ShareCapacity(d.free_memory)});
      offered.push_back(d);
    }
  }
  w->gpu_monitor_ = std::make_unique<GpuMonitor>(offered);
  // The board ids ride on the registration: dcgm-exporter's UUID label, and how the
  // coordinator tells a replaced board from the one it fenced.
  for (wire::GpuInfo& g : reg.gpus) g.uuid = w->gpu_monitor_->Uuid(g.index);
  if (Result<std::vector<wire::GpuUsage>> first = w->gpu_monitor_->Sample(); first.ok()) {
    Logger("worker")->info("sampling {} GPU(s) through NVML", first->size());
  } else if (!offered.empty()) {
    // Said once here; every heartbeat carries it, so `coupler workers` shows it too.
    Logger("worker")->warn("no GPU utilization samples: {}", first.status().message());
  }

  try {
    const std::string wake_ep = fmt::format("inproc://wake-{}", static_cast<const void*>(w.get()));
    w->wake_ = zmq::socket_t(w->ctx_, zmq::socket_type::pull);
    w->wake_.bind(wake_ep);
    TaskEnvironment env;
    env.host_address = options.advertise;
    env.task_log_bytes = options.task_log_bytes;
    // What `coupler gang-agent`, started by a gang leader's mpirun, needs to reach the
    // coordinator as this worker does (with this worker's key).
    env.gang.launcher_env.push_back("COUPLER_COORDINATOR=" + options.coordinator);
    if (!options.keys_dir.empty()) {
      env.gang.launcher_env.push_back("COUPLER_KEYS=" + options.keys_dir);
    }
    if (options.insecure) env.gang.launcher_env.push_back("COUPLER_INSECURE=1");
    env.gang.slurm = w->slurm_steps_;
    w->pool_ = std::make_unique<TaskPool>(w->ctx_, wake_ep, options.slots, shares, std::move(env));
    w->daemons_ = std::make_unique<DaemonLauncher>(w->ctx_, wake_ep);
  } catch (const zmq::error_t& e) {
    return Internal(std::string("worker wake socket: ") + e.what());
  }
  COUPLER_RETURN_IF_ERROR(w->Connect());
  return w;
}

Status Worker::Connect() {
  dealer_.close();
  monitor_ = net::HandshakeMonitor();
  COUPLER_ASSIGN_OR_RETURN(dealer_, net::ConnectDealer(ctx_, options_.coordinator,
                                                       keys_ ? &*keys_ : nullptr,
                                                       &monitor_,
                                                       "the coordinator at " + options_.coordinator));
  last_heard_ms_ = NowMs();
  Register();
  return Status::Ok();
}

void Worker::Register() {
  if (registered_before_) {
    // Their gangs ended with our registration: the coordinator forgot the reservations.
    daemons_->StopAll();
  }
  // Everything it holds goes with the registration: a restarted coordinator adopts the
  // attempts it had sent (they run on, and their results count), and names the rest in its
  // answer (OnRegistered), which are dropped then.
  registration_.holding = pool_->Held();
  for (const auto& [key, outcome] : unacked_) {
    registration_.holding.push_back({{outcome.job_id, outcome.task_id, outcome.attempt}, true});
  }
  registered_before_ = true;
  last_register_ms_ = NowMs();
  (void)SendToCoordinator(wire::Encode(registration_));
  registration_.holding.clear();
}

Status Worker::SendToCoordinator(std::string message) {
  if (options_.protocol != 0 && options_.protocol != wire::kProtocolVersion) {
    COUPLER_ASSIGN_OR_RETURN(message, wire::Reencode(message, options_.protocol));
  }
  wire::StampEpoch(message, fence_.epoch());
  return net::Send(dealer_, message);
}

void Worker::OnRegistered(const wire::Registered& registered) {
  size_t released = pool_->Release(registered.release);
  for (const wire::TaskAttempt& a : registered.release) {
    released += unacked_.erase({a.task_id, a.attempt, a.job_id});
  }
  if (released > 0) {
    // Given to others while the coordinator did not know us (it declared us dead), or never
    // recorded as sent before it restarted: running them would only run them twice.
    Logger("worker")->info("registered as {} (epoch {}): {} held attempt(s) released: the "
                           "coordinator no longer gives them to us",
                           registered.worker_id, fence_.epoch(), released);
  }
  if (unacked_.empty()) return;
  Logger("worker")->info("sending again {} result(s) not acknowledged yet", unacked_.size());
  for (auto& [key, outcome] : unacked_) unsent_.push_back(outcome);
  unacked_.clear();  // SendOutcomes keeps them again as it sends them
  SendOutcomes();
}

Status Worker::CheckRefused() {
  if (!refused_.ok()) return refused_;
  if (std::optional<Status> failed = monitor_.Poll()) {
    // A wrong server key fails every retry the same way; a refused key too.
    return *failed;
  }
  return Status::Ok();
}

void Worker::SendHeartbeat(bool draining) {
  wire::Heartbeat beat;
  beat.sender_id = options_.id;
  beat.sequence = ++beat_seq_;
  beat.running_tasks = static_cast<uint32_t>(pool_->running());
  beat.timestamp_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  beat.draining = draining;
  reported_starts_ = pool_->starts();
  beat.running = pool_->RunningTasks();
  if (Result<std::vector<wire::GpuUsage>> gpus = gpu_monitor_->Sample(); gpus.ok()) {
    beat.gpus = std::move(*gpus);
    beat.gpu_sampling = "nvml";  // the wire's word for live samples (wire::Heartbeat)
  } else {
    beat.gpu_sampling = gpus.status().message();
  }
  (void)SendToCoordinator(wire::Encode(beat));
  last_beat_ms_ = NowMs();
}

uint32_t Worker::DesiredPrefetch() const {
  const double us = pool_->mean_task_us();
  if (!adaptive_prefetch_ || us <= 0) return options_.prefetch;
  const double want = options_.slots * kPipeDepthMs * 1000.0 / us;
  return static_cast<uint32_t>(std::clamp(want, static_cast<double>(options_.slots), static_cast<double>(kMaxPrefetch)));
}

void Worker::SendOutcomes() {
  std::vector<wire::TaskOutcome> outcomes = pool_->TakeOutcomes();
  if (!unsent_.empty()) {
    outcomes.insert(outcomes.begin(), std::make_move_iterator(unsent_.begin()),
                    std::make_move_iterator(unsent_.end()));
    unsent_.clear();
  }
  // In messages of at most kMaxOutcomesPerResult: the coordinator decodes each into a vector
  // (~256 bytes an outcome) that then stays below the 128 KiB its malloc maps on its own, so
  // a busy pool's results do not map and unmap fresh pages on the coordinator's loop.
  for (size_t from = 0; from < outcomes.size(); from += kMaxOutcomesPerResult) {
    const size_t to = std::min(outcomes.size(), from + kMaxOutcomesPerResult);
    wire::TaskResult result;
    result.worker_id = options_.id;
    result.outcomes.assign(std::make_move_iterator(outcomes.begin() + from),
                           std::make_move_iterator(outcomes.begin() + to));
    const uint32_t prefetch = DesiredPrefetch();
    if (prefetch != sent_prefetch_) {
      result.prefetch = prefetch;
      sent_prefetch_ = prefetch;
      registration_.prefetch = prefetch;  // a re-registration keeps what we learned
    }
    if (Status s = SendToCoordinator(wire::Encode(result)); !s.ok()) {
      // Kept, not lost: a result the coordinator never gets would hold its task for ever.
      Logger("worker")->warn("sending {} result(s) failed, keeping them to send again: {}",
                             outcomes.size() - from, s.message());
      unsent_ = std::move(result.outcomes);
      unsent_.insert(unsent_.end(), std::make_move_iterator(outcomes.begin() + to),
                     std::make_move_iterator(outcomes.end()));
      if (result.prefetch != 0) sent_prefetch_ = 0;  // not told: tell it with the next ones
      return;
    }
    for (wire::TaskOutcome& o : result.outcomes) {
      AttemptKey key{o.task_id, o.attempt, o.job_id};
      unacked_.insert_or_assign(std::move(key), std::move(o));
    }
  }
}

void Worker::SendDaemonOutput(bool keepalive) {
  for (const wire::LaunchOutput& out : daemons_->TakeOutput(keepalive)) {
    (void)SendToCoordinator(wire::Encode(out));
  }
}

void Worker::OnMessage(const std::string& payload, bool& drain_requested) {
  // Speaking an older version (--protocol), it reads only that one, as a build of it would.
  if (options_.protocol != 0 && wire::PeekVersion(payload) != options_.protocol) {
    Logger("worker")->warn("dropped a message from the coordinator: unsupported protocol version "
                           "{} (this worker speaks {})",
                           wire::PeekVersion(payload), options_.protocol);
    return;
  }
  Result<wire::Message> msg = wire::Decode(payload);
  if (!msg.ok()) {
    Logger("worker")->warn("dropped a malformed message from the coordinator: {}",
                           msg.status().message());
    return;
  }
  // Decode read the header already: it is whole and of our version.
  const uint64_t epoch = wire::ReadHeader(payload)->epoch;
  if (const EpochFence::Verdict v = fence_.Admit(wire::TypeOf(*msg), epoch); !v.admit) {
    // Not even proof that a coordinator lives: the one we answer to may be gone.
    if (v.first_refusal) {
      Logger("worker")->warn("refusing a {} (and all else) from a coordinator of epoch {}: we "
                             "registered with epoch {}, which took its state directory over",
                             wire::MessageTypeName(wire::TypeOf(*msg)), epoch, fence_.epoch());
    }
    return;
  }
  last_heard_ms_ = NowMs();
  if (auto* assign = std::get_if<wire::TaskAssignment>(&*msg)) {
    if (draining_) {
      // Sent before the coordinator read our draining heartbeat: a worker that is leaving
      // starts no new loose task, so those go straight back, uncharged. A gang placed here
      // has its ranks' slots reserved, here and elsewhere: it runs, as a started task would.
      std::vector<wire::TaskAttempt> back;
      std::erase_if(assign->tasks, [&](const wire::TaskSpec& t) {
        if (t.kind == wire::TaskKind::kGang) return false;
        back.push_back({t.job_id, t.task_id, t.attempt});
        return true;
      });
      if (!back.empty()) (void)SendToCoordinator(wire::Encode(wire::Reclaimed{std::move(back)}));
      if (assign->tasks.empty()) return;
    }
    pool_->Submit(std::move(assign->tasks));
  } else if (const auto* cancel = std::get_if<wire::CancelJob>(&*msg)) {
    pool_->CancelJob(cancel->job_id);
  } else if (const auto* launch = std::get_if<wire::LaunchDaemon>(&*msg)) {
    // Only the coordinator reaches this socket, and it sends a launch only to a worker it
    // reserved for that gang attempt (coordinator/launch_relay.h).
    daemons_->Start(*launch);
  } else if (const auto* stop = std::get_if<wire::LaunchStop>(&*msg)) {
    daemons_->Stop(*stop);
  } else if (const auto* ack = std::get_if<wire::ResultAck>(&*msg)) {
    for (const wire::TaskAttempt& a : ack->attempts) {
      unacked_.erase({a.task_id, a.attempt, a.job_id});
    }
  } else if (const auto* reclaim = std::get_if<wire::Reclaim>(&*msg)) {
    // Another worker idles while these wait here: what has not started goes back.
    (void)SendToCoordinator(wire::Encode(wire::Reclaimed{pool_->ReleaseQueued(reclaim->attempts)}));
  } else if (const auto* registered = std::get_if<wire::Registered>(&*msg)) {
    OnRegistered(*registered);
  } else if (std::holds_alternative<wire::DrainWorker>(*msg)) {
    drain_requested = true;
  } else if (const auto* again = std::get_if<wire::RegisterAgain>(&*msg)) {
    // Every message queued during an outage gets this answer, all at once: one registration
    // answers them all.
    if (NowMs() - last_register_ms_ >= options_.heartbeat_ms) {
      Logger("worker")->info("the coordinator does not know us ({}): registering again",
                             again->reason);
      Register();
    }
  } else if (const auto* err = std::get_if<wire::Error>(&*msg)) {
    if (err->code == static_cast<uint16_t>(StatusCode::kPermissionDenied)) {
      refused_ = PermissionDenied("the coordinator refused worker " + options_.id + ": " +
                                  err->message);
    } else {
      Logger("worker")->warn("coordinator error: {}", err->message);
    }
  } else if (const auto* beat = std::get_if<wire::Heartbeat>(&*msg)) {
    // Its GPUs fenced off (an XID, an ECC error, an admin): no new task starts on them.
    pool_->SetFencedGpus(beat->fenced_gpus);
  }
  // Heartbeats and acks also prove the coordinator is alive.
}

Status Worker::ReceiveFailed(const Status& status) {
  // Its own context is shut down only as the process ends: a stop, not a failure. Any other
  // receive error leaves the worker deaf to the coordinator for good, so it stops with it (the
  // coordinator then gives up on it and requeues its tasks, as for a worker that died).
  if (net::IsContextShutDown(status)) {
    Logger("worker")->info("worker {} stopped: its sockets were shut down", options_.id);
    return Status::Ok();
  }
  Logger("worker")->error("worker {} stopping: {}", options_.id, status.message());
  return status;
}

Status Worker::Run(const std::atomic<bool>& drain) {
  auto log = Logger("worker");
  log->info("worker {} connecting to {} with {} slots", options_.id, options_.coordinator,
            options_.slots);
  bool drain_requested = false;
  int64_t idle_since_ms = -1;  // draining and holding nothing since then
  for (;;) {
    COUPLER_RETURN_IF_ERROR(CheckRefused());
    const unsigned ready =
        net::PollReadable({&dealer_, &wake_}, std::chrono::milliseconds(draining_ ? 20 : 100));
    if (ready & 2u) {
      for (;;) {
        auto wake = net::TryRecv(wake_);
        if (!wake.ok()) return ReceiveFailed(wake.status());
        if (!wake->has_value()) break;
      }
    }
    SendOutcomes();
    SendDaemonOutput(false);
    if (ready & 1u) {
      for (int i = 0; i < 1024; ++i) {
        auto m = net::TryRecv(dealer_);
        if (!m.ok()) return ReceiveFailed(m.status());
        if (!m->has_value()) break;
        OnMessage(**m, drain_requested);
      }
    }
    if (!draining_ && (drain.load() || drain_requested)) {
      draining_ = true;
      // The heartbeat first, so the coordinator knows not to deal the handed-back tasks here
      // again (one socket: it reads them in this order).
      SendHeartbeat(true);
      std::vector<wire::TaskAttempt> back = pool_->ReleaseAllQueued();
      log->info("draining: finishing {} running task(s), handing {} queued back, taking no new "
                "ones", pool_->held(), back.size());
      if (!back.empty()) (void)SendToCoordinator(wire::Encode(wire::Reclaimed{std::move(back)}));
    }
    if (draining_ && pool_->held() == 0) {
      SendOutcomes();
      // Its last results are acknowledged (on the coordinator's disk) before it leaves, or it
      // gives up waiting after the coordinator timeout: a coordinator that is down now would
      // re-run those tasks, which is all a worker that must leave can leave it.
      if (idle_since_ms < 0) idle_since_ms = NowMs();
      if (!unacked_.empty() && NowMs() - idle_since_ms < options_.coordinator_timeout_ms) {
        continue;
      }
      SendHeartbeat(true);
      break;
    }
    const int64_t now = NowMs();
    // Early after a start, so a task that kills this worker is known to have started.
    const bool new_start = pool_->starts() != reported_starts_ && now - last_beat_ms_ >= kStartReportMs;
    if (new_start || now - last_beat_ms_ >= options_.heartbeat_ms) {
      SendHeartbeat(draining_);
      SendDaemonOutput(true);
    }
    if (options_.death_timeout_ms > 0 && now - last_heard_ms_ > options_.death_timeout_ms) {
      // Its coordinator is gone for good, as far as this worker can wait: what it holds is
      // re-run by a coordinator that comes back (the attempts are lost with this worker).
      return Unavailable(fmt::format(
          "no word from the coordinator at {} for {} s (--death-timeout): stopping with {} "
          "task(s) held",
          options_.coordinator, (now - last_heard_ms_) / 1000, pool_->held()));
    }
    const bool silent = now - last_heard_ms_ > options_.coordinator_timeout_ms;
    if (silent && !silence_reported_) {
      // The socket stays: ZeroMQ reconnects by itself, and tearing it down would lose the
      // results queued in it. A coordinator that forgot us meanwhile says so (RegisterAgain), and
      // we register again then.
      log->warn("no word from the coordinator for {} ms; still trying, keeping {} task(s) and "
                "their results", now - last_heard_ms_, pool_->held());
      if (const int cut = monitor_.cut_short_since_success(); cut >= kCutShortToExplain) {
        // Something answers there and ends every handshake: a coordinator whose key set was
        // made again (our coordinator.pub is stale), or one of another --insecure setting.
        log->warn("every security handshake with {} since the last one that worked was cut short "
                  "({} so far): it does not accept this key set's coordinator.pub, which is "
                  "probably stale (copy the coordinator's current KEYS/coordinator.pub into {}), "
                  "or it runs with another --insecure setting",
                  options_.coordinator, cut,
                  options_.keys_dir.empty() ? std::string("its key set") : options_.keys_dir);
      }
    } else if (!silent && silence_reported_) {
      log->info("the coordinator is back");
    }
    silence_reported_ = silent;
  }
  // Let the last results and the goodbye leave before the socket closes.
  dealer_.set(zmq::sockopt::linger, 5000);
  dealer_.close();
  log->info("worker {} drained and stopped", options_.id);
  return Status::Ok();
}

}  // namespace coupler::worker
