#include "coordinator/worker_bans.h"

#include <fmt/format.h>

#include "runtime/util/utc_time.h"

namespace coupler::coordinator {

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
                     util::Iso8601Utc(ban.banned_ms), ban.reason);
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
