// What the HTTP thread serves: a copy of the coordinator's state the event loop publishes,
// never the live state. The loop builds one only while someone is asking (an HTTP request in
// the last few seconds), at most every kPublishEveryMs, so an idle page costs nothing and a
// flooding client costs the loop one snapshot per period however fast it asks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coordinator/pool_metrics.h"
#include "runtime/job/step_progress.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator::http {

struct Snapshot {
  int64_t taken_ms = 0;  // Unix epoch
  std::vector<wire::JobStatus> jobs;  // newest first, at most Coordinator::kSnapshotJobs
  std::map<std::string, uint64_t> job_counts;  // every job the state holds, by state
  std::vector<wire::WorkerStatus> workers;
  wire::CoordinatorStats stats;
  PoolMetrics metrics;
  uint64_t workers_lost_total = 0;
  // How long each of the event loop's turns took, from a wait's end to the next wait: how late
  // a message that arrived meanwhile is read.
  Histogram loop_lag{LoopLagBounds()};
  // Handshakes that failed before any key was checked (HandshakeWatch), by socket.
  uint64_t handshakes_failed_workers = 0;
  uint64_t handshakes_failed_clients = 0;
  // The job with this id, or null.
  const wire::JobStatus* FindJob(const std::string& id) const;

  // Each running tight node's latest reported step (job id -> node id -> progress), read from
  // its steps.jsonl once, by the first request that needs it, on an HTTP thread — never on
  // the event loop. Empty for a run directory this host cannot read.
  using NodeProgress = std::map<std::string, std::map<std::string, job::StepProgress>>;
  const NodeProgress& Progress() const;

  // A rendering of this snapshot made once, by the first request that needs it, and shared
  // by the rest (a scraper and a page polling one snapshot cost one rendering).
  const std::string& Cached(int which, const std::function<std::string()>& render) const;
  static constexpr int kMetrics = 0;
  static constexpr int kJobList = 1;

 private:
  mutable std::once_flag progress_once_;
  mutable NodeProgress progress_;
  mutable std::once_flag rendered_once_[2];
  mutable std::string rendered_[2];
};

class SnapshotBoard {
 public:
  // Event loop: a snapshot is wanted when a request came in the last few seconds, and due when
  // the current one is older than the publish period.
  bool Wanted(int64_t now_ms) const;
  void Publish(std::shared_ptr<const Snapshot> snapshot);

  // HTTP threads: the current snapshot when it is at most `max_age_ms` old; else it asks the
  // loop for a fresh one and waits up to `wait` for it, then returns whatever is there (null
  // only before the first publish, when the loop is stuck).
  std::shared_ptr<const Snapshot> Get(int64_t max_age_ms, std::chrono::milliseconds wait);

  static constexpr int64_t kPublishEveryMs = 250;
  static constexpr int64_t kWantedForMs = 5000;

 private:
  static int64_t WallMs();

  mutable std::mutex mu_;
  std::condition_variable published_;
  std::shared_ptr<const Snapshot> current_;
  std::atomic<int64_t> last_request_ms_{0};
};

}  // namespace coupler::coordinator::http
