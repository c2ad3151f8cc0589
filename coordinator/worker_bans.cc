#include "coordinator/worker_bans.h"

#include <ctime>

#include <fmt/format.h>

namespace coupler::coordinator {
namespace {

std::string Iso8601(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

void WorkerBans::Restore(const std::vector<store::BanRecord>& bans) {
  bans_.clear();
  for (const store::BanRecord& b : bans) bans_[b.worker_id] = b;
}

void WorkerBans::Add(store::BanRecord ban) {
  const std::string id = ban.worker_id;
  bans_[id] = std::move(ban);
}

void WorkerBans::Remove(const std::string& worker_id) { bans_.erase(worker_id); }

const store::BanRecord* WorkerBans::Find(const std::string& worker_id) const {
  auto it = bans_.find(worker_id);
  return it == bans_.end() ? nullptr : &it->second;
}

std::string WorkerBans::Describe(const store::BanRecord& ban) {
  return fmt::format("by '{}' at {}: {}", ban.banned_by.empty() ? "an admin" : ban.banned_by,
                     Iso8601(ban.banned_ms), ban.reason);
}

std::string WorkerBans::RefusalMessage(const store::BanRecord& ban) {
  return fmt::format("worker {} is banned ({}); an admin lifts it with `coupler worker unban {}`",
                     ban.worker_id, Describe(ban), ban.worker_id);
}

void WorkerBans::Mark(std::vector<wire::WorkerStatus>& workers) const {
  std::map<std::string, bool> listed;
  for (wire::WorkerStatus& w : workers) {
    const store::BanRecord* ban = Find(w.id);
    if (ban == nullptr) continue;
    w.state = pool::WorkerState::kBanned;
    w.ban_reason = Describe(*ban);
    listed[w.id] = true;
  }
  for (const auto& [id, ban] : bans_) {
    if (listed.count(id) > 0) continue;
    wire::WorkerStatus w;
    w.id = id;
    w.state = pool::WorkerState::kBanned;
    w.ban_reason = Describe(ban);
    workers.push_back(std::move(w));
  }
}

}  // namespace coupler::coordinator
