#include "coordinator/http/snapshot.h"

#include "runtime/wire/node_progress.h"

namespace coupler::coordinator::http {

const wire::JobStatus* Snapshot::FindJob(const std::string& id) const {
  for (const wire::JobStatus& j : jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

const Snapshot::NodeProgress& Snapshot::Progress() const {
  std::call_once(progress_once_, [&] {
    for (const wire::JobStatus& j : jobs) {
      if (j.state != job::JobPhase::kRunning) continue;
      auto nodes = wire::TightNodeProgress(j, /*running_only=*/true);
      if (!nodes.empty()) progress_[j.id] = std::move(nodes);
    }
  });
  return progress_;
}

const std::string& Snapshot::Cached(int which, const std::function<std::string()>& render) const {
  std::call_once(rendered_once_[which], [&] { rendered_[which] = render(); });
  return rendered_[which];
}

int64_t SnapshotBoard::WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool SnapshotBoard::Wanted(int64_t now_ms) const {
  if (now_ms - last_request_ms_.load(std::memory_order_relaxed) > kWantedForMs) return false;
  std::lock_guard lock(mu_);
  return current_ == nullptr || now_ms - current_->taken_ms >= kPublishEveryMs;
}

void SnapshotBoard::Publish(std::shared_ptr<const Snapshot> snapshot) {
  {
    std::lock_guard lock(mu_);
    current_ = std::move(snapshot);
  }
  published_.notify_all();
}

std::shared_ptr<const Snapshot> SnapshotBoard::Get(int64_t max_age_ms,
                                                   std::chrono::milliseconds wait) {
  const int64_t now = WallMs();
  last_request_ms_.store(now, std::memory_order_relaxed);
  std::unique_lock lock(mu_);
  auto fresh = [&] { return current_ != nullptr && WallMs() - current_->taken_ms <= max_age_ms; };
  if (!fresh()) published_.wait_for(lock, wait, fresh);
  return current_;
}

}  // namespace coupler::coordinator::http
