#include "bench/pool_sim/sim_pool.h"

#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <optional>
#include <tuple>

#include "runtime/net/curve_keys.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/envelope.h"
#include "worker/epoch_fence.h"

namespace coupler::bench {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using AttemptKey = std::tuple<std::string, uint64_t, uint32_t>;

AttemptKey KeyOf(const wire::TaskAttempt& a) { return {a.job_id, a.task_id, a.attempt}; }
wire::TaskAttempt AttemptOf(const wire::TaskSpec& t) { return {t.job_id, t.task_id, t.attempt}; }

}  // namespace

struct SimPool::Worker {
  std::string id;
  std::string address;
  net::PeerKeys keys;
  zmq::socket_t socket;
  worker::EpochFence fence;
  std::deque<wire::TaskSpec> queued;
  struct Running {
    wire::TaskSpec spec;
    int64_t ends_ms = 0;
  };
  std::vector<Running> running;
  std::vector<wire::TaskOutcome> ready;          // finished, not sent yet
  std::map<AttemptKey, wire::TaskOutcome> unacked;  // sent, not on the coordinator's disk yet
  bool draining = false;
  std::optional<wire::Reclaimed> pending_hand_back;  // sent right after the draining heartbeat
  bool registered_once = false;
  int64_t last_beat_ms = 0;
  int64_t last_register_ms = 0;
  uint64_t beat_seq = 0;

  void Send(std::string message) {
    wire::StampEpoch(message, fence.epoch());
    try {
      (void)socket.send(zmq::buffer(message), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // The queue to the coordinator is full: what was not sent is sent again (results stay
      // unacknowledged, heartbeats come again).
    }
  }
};

SimPool::SimPool(SimPoolOptions options)
    : options_(std::move(options)), ctx_(static_cast<int>(std::max<size_t>(1, options_.threads))) {}

Result<std::unique_ptr<SimPool>> SimPool::Start(const SimPoolOptions& options) {
  if (options.workers == 0 || options.slots == 0) {
    return InvalidArgument("a simulated pool needs at least one worker with one slot");
  }
  std::unique_ptr<SimPool> pool(new SimPool(options));
  COUPLER_ASSIGN_OR_RETURN(const net::CurveKey server,
                           net::ReadKeyFile(options.keys_dir + "/coordinator.pub"));
  const std::string allow = options.keys_dir + "/authorized/workers";
  for (size_t i = 0; i < options.workers; ++i) {
    auto w = std::make_unique<Worker>();
    w->id = options.id_prefix + "-" + std::to_string(i);
    w->address = !options.address.empty()
                     ? options.address
                     : "10." + std::to_string((i >> 16) & 255) + "." +
                           std::to_string((i >> 8) & 255) + "." + std::to_string(i & 255);
    COUPLER_ASSIGN_OR_RETURN(w->keys.own, net::GenerateKey(net::KeyRole::kWorker, w->id));
    w->keys.server_public_z85 = server.public_z85;
    COUPLER_RETURN_IF_ERROR(net::WritePublicKey(allow + "/" + w->id + ".pub", w->keys.own));
    pool->workers_.push_back(std::move(w));
  }
  for (auto& w : pool->workers_) {
    COUPLER_ASSIGN_OR_RETURN(w->socket, net::ConnectDealer(pool->ctx_, options.coordinator, &w->keys));
  }
  const size_t threads = std::max<size_t>(1, std::min(options.threads, options.workers));
  std::vector<std::vector<Worker*>> dealt(threads);
  for (size_t i = 0; i < pool->workers_.size(); ++i) dealt[i % threads].push_back(pool->workers_[i].get());
  for (auto& mine : dealt) {
    pool->threads_.emplace_back([p = pool.get(), mine] { p->Serve(mine); });
  }
  return pool;
}

SimPool::~SimPool() { Stop(); }

void SimPool::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  for (auto& w : workers_) w->socket.close();
}

std::map<SimPool::TaskRef, uint32_t> SimPool::Starts() const {
  std::lock_guard<std::mutex> lock(starts_mu_);
  return starts_;
}

void SimPool::NoteStart(const wire::TaskSpec& task) {
  std::lock_guard<std::mutex> lock(starts_mu_);
  ++starts_[{task.job_id, task.node_id, task.task_id}];
}

void SimPool::Serve(std::vector<Worker*> mine) {
  auto register_worker = [&](Worker& w, int64_t now) {
    wire::RegisterWorker reg;
    reg.worker_id = w.id;
    reg.host = "sim-" + w.address;
    reg.address = w.address;
    reg.pid = static_cast<uint32_t>(::getpid());
    reg.slots = options_.slots;
    reg.prefetch = options_.prefetch;
    reg.cpus = options_.slots;
    reg.protocol_version = wire::kProtocolVersion;
    // Everything it holds, so a restarted coordinator adopts it.
    for (const Worker::Running& r : w.running) reg.holding.push_back({AttemptOf(r.spec), true});
    for (const wire::TaskSpec& t : w.queued) reg.holding.push_back({AttemptOf(t), false});
    for (const wire::TaskOutcome& o : w.ready) reg.holding.push_back({{o.job_id, o.task_id, o.attempt}, true});
    for (const auto& [key, o] : w.unacked) reg.holding.push_back({{o.job_id, o.task_id, o.attempt}, true});
    w.last_register_ms = now;
    w.Send(wire::Encode(reg));
  };
  const int64_t start = NowMs();
  for (Worker* w : mine) register_worker(*w, start);

  std::vector<zmq::pollitem_t> items;
  for (Worker* w : mine) items.push_back({static_cast<void*>(w->socket), 0, ZMQ_POLLIN, 0});
  while (!stop_.load()) {
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(2));
    } catch (const zmq::error_t&) {
      break;
    }
    const int64_t now = NowMs();
    for (size_t i = 0; i < mine.size(); ++i) {
      Worker& w = *mine[i];
      if (items[i].revents & ZMQ_POLLIN) {
        for (int n = 0; n < 256; ++n) {
          zmq::message_t m;
          zmq::recv_result_t got;
          try {
            got = w.socket.recv(m, zmq::recv_flags::dontwait);
          } catch (const zmq::error_t&) {
            break;
          }
          if (!got) break;
          const std::string_view bytes(static_cast<const char*>(m.data()), m.size());
          Result<wire::Message> msg = wire::Decode(bytes);
          if (!msg.ok()) continue;
          const uint64_t epoch = wire::ReadHeader(bytes)->epoch;
          if (!w.fence.Admit(wire::TypeOf(*msg), epoch).admit) {
            ++refused_by_epoch_;
            continue;
          }
          if (auto* assign = std::get_if<wire::TaskAssignment>(&*msg)) {
            if (w.draining) {
              // As `coupler worker` does: a leaving worker starts no new loose task.
              wire::Reclaimed back;
              std::erase_if(assign->tasks, [&](const wire::TaskSpec& t) {
                if (t.kind == wire::TaskKind::kGang) return false;
                back.released.push_back(AttemptOf(t));
                return true;
              });
              if (!back.released.empty()) w.Send(wire::Encode(back));
            }
            for (wire::TaskSpec& t : assign->tasks) w.queued.push_back(std::move(t));
          } else if (const auto* ack = std::get_if<wire::ResultAck>(&*msg)) {
            for (const wire::TaskAttempt& a : ack->attempts) w.unacked.erase(KeyOf(a));
          } else if (const auto* reg = std::get_if<wire::Registered>(&*msg)) {
            if (!w.registered_once) {
              w.registered_once = true;
              ++registered_;
            }
            for (const wire::TaskAttempt& a : reg->release) {
              const AttemptKey k = KeyOf(a);
              std::erase_if(w.queued, [&](const wire::TaskSpec& t) { return KeyOf(AttemptOf(t)) == k; });
              std::erase_if(w.running, [&](const Worker::Running& r) { return KeyOf(AttemptOf(r.spec)) == k; });
              std::erase_if(w.ready, [&](const wire::TaskOutcome& o) {
                return AttemptKey{o.job_id, o.task_id, o.attempt} == k;
              });
              w.unacked.erase(k);
            }
            // What it sent and was not acknowledged goes again.
            for (auto& [key, o] : w.unacked) w.ready.push_back(o);
            w.unacked.clear();
          } else if (std::holds_alternative<wire::RegisterAgain>(*msg)) {
            if (now - w.last_register_ms >= options_.heartbeat_ms) register_worker(w, now);
          } else if (const auto* reclaim = std::get_if<wire::Reclaim>(&*msg)) {
            wire::Reclaimed back;
            for (const wire::TaskAttempt& a : reclaim->attempts) {
              const AttemptKey k = KeyOf(a);
              const size_t before = w.queued.size();
              std::erase_if(w.queued, [&](const wire::TaskSpec& t) { return KeyOf(AttemptOf(t)) == k; });
              if (w.queued.size() != before) back.released.push_back(a);
            }
            w.Send(wire::Encode(back));
          } else if (std::holds_alternative<wire::DrainWorker>(*msg) && !w.draining) {
            // The draining heartbeat first, then everything queued handed back (worker.cc).
            w.draining = true;
            w.last_beat_ms = 0;
            wire::Reclaimed back;
            std::erase_if(w.queued, [&](const wire::TaskSpec& t) {
              if (t.kind == wire::TaskKind::kGang) return false;  // placed: it runs here
              back.released.push_back(AttemptOf(t));
              return true;
            });
            if (!back.released.empty()) w.pending_hand_back = std::move(back);
          } else if (const auto* cancel = std::get_if<wire::CancelJob>(&*msg)) {
            std::erase_if(w.queued, [&](const wire::TaskSpec& t) { return t.job_id == cancel->job_id; });
          }
        }
      }
      // Slots take queued tasks first in, first out.
      while (w.running.size() < options_.slots && !w.queued.empty()) {
        wire::TaskSpec t = std::move(w.queued.front());
        w.queued.pop_front();
        NoteStart(t);
        const bool gang = t.kind == wire::TaskKind::kGang && t.ranks > 1;
        const int64_t ms = gang && options_.gang_ms >= 0 ? options_.gang_ms : options_.task_ms;
        w.running.push_back({std::move(t), now + ms});
      }
      for (auto it = w.running.begin(); it != w.running.end();) {
        if (it->ends_ms > now) {
          ++it;
          continue;
        }
        wire::TaskOutcome o;
        o.job_id = it->spec.job_id;
        o.task_id = it->spec.task_id;
        o.attempt = it->spec.attempt;
        o.ok = true;
        o.device = "cpu";
        o.wall_ms = static_cast<double>(options_.task_ms);
        if (!it->spec.output_path.empty()) o.output_paths.push_back(it->spec.output_path);
        w.ready.push_back(std::move(o));
        it = w.running.erase(it);
      }
      if (!w.ready.empty() && w.fence.epoch() != 0) {
        wire::TaskResult result;
        result.worker_id = w.id;
        result.outcomes = std::move(w.ready);
        w.ready.clear();
        results_sent_ += result.outcomes.size();
        for (const wire::TaskOutcome& o : result.outcomes) {
          w.unacked.insert_or_assign(AttemptKey{o.job_id, o.task_id, o.attempt}, o);
        }
        w.Send(wire::Encode(result));
      }
      if (now - w.last_beat_ms >= options_.heartbeat_ms) {
        wire::Heartbeat beat;
        beat.sender_id = w.id;
        beat.sequence = ++w.beat_seq;
        beat.running_tasks = static_cast<uint32_t>(w.running.size());
        beat.draining = w.draining;
        for (const Worker::Running& r : w.running) beat.running.push_back(AttemptOf(r.spec));
        beat.gpu_sampling = "simulated worker";
        w.last_beat_ms = now;
        w.Send(wire::Encode(beat));
        if (w.pending_hand_back) {
          w.Send(wire::Encode(*w.pending_hand_back));
          w.pending_hand_back.reset();
        }
      }
    }
  }
}

}  // namespace coupler::bench
