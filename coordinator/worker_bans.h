// Worker ids an admin banned (`coupler worker ban ID --reason ...`): refused at registration
// until unbanned, listed as banned in `coupler workers` with why and by whom. The bans live in
// the state (store/ban_rows.h) and a start replays them from there. Pure bookkeeping: the
// caller writes a ban to the state before it changes this, and acts on the connections.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "coordinator/store/ban_rows.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

class WorkerBans {
 public:
  void Restore(const std::vector<store::BanRecord>& bans);
  void Add(store::BanRecord ban);
  void Remove(const std::string& worker_id);
  // Null when `worker_id` is not banned.
  const store::BanRecord* Find(const std::string& worker_id) const;

  // "by admin 'ops' at 2026-12-06T18:40:00Z: bad DIMM" (what `coupler workers` shows).
  static std::string Describe(const store::BanRecord& ban);
  // What a banned worker is told, with the way out.
  static std::string RefusalMessage(const store::BanRecord& ban);

  // Marks the statuses of banned workers as banned, with the reason, and adds one for every
  // banned id the list lacks (an id banned before it ever registered, or forgotten since).
  void Mark(std::vector<wire::WorkerStatus>& workers) const;

 private:
  std::map<std::string, store::BanRecord> bans_;
};

}  // namespace coupler::coordinator
