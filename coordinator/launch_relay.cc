#include "coordinator/launch_relay.h"

#include <algorithm>
#include <set>

#include "runtime/util/random_token.h"

namespace coupler::coordinator {

std::string LaunchRelay::IssueToken(const std::string& job_id, uint64_t task_id, uint32_t attempt) {
  std::string token = util::RandomToken();
  tokens_[{job_id, task_id, attempt}] = token;
  return token;
}

Result<LaunchRelay::Admitted> LaunchRelay::Admit(const wire::LaunchRequest& req,
                                                 const std::string& agent_route,
                                                 const std::string& agent_key,
                                                 const std::string& leader_key,
                                                 const std::optional<LiveGang>& gang) {
  const wire::TaskAttempt& g = req.gang;
  const GangKey key{g.job_id, g.task_id, g.attempt};
  const std::string what = "job " + g.job_id + " task " + std::to_string(g.task_id) +
                           " attempt " + std::to_string(g.attempt);
  auto token = tokens_.find(key);
  if (!gang || gang->attempt != g.attempt || token == tokens_.end()) {
    return NotFound(what + " is not a running gang");
  }
  // Compared in full whatever the input, so timing tells nothing of the secret.
  unsigned diff = req.gang_token.size() != token->second.size() ? 1u : 0u;
  for (size_t i = 0; i < token->second.size(); ++i) {
    diff |= static_cast<unsigned char>(i < req.gang_token.size() ? req.gang_token[i] : 0) ^
            static_cast<unsigned char>(token->second[i]);
  }
  if (diff != 0 || agent_key != leader_key) {
    return PermissionDenied("launch for " + what + " refused: not from its leader");
  }
  // The leader's own host runs its ranks under mpirun directly; a remote host must hold a
  // reservation in this gang, and gets one daemon per attempt.
  auto member = std::find_if(gang->members.begin(), gang->members.end(), [&](const Member& m) {
    return m.address == req.host && m.worker_id != gang->leader;
  });
  if (member == gang->members.end()) {
    return PermissionDenied("launch for " + what + " refused: " + req.host +
                            " holds no reservation in that gang");
  }
  const uint64_t id = ++next_launch_;
  launches_[id] = {agent_route, member->worker_id, req.host, key};
  return Admitted{member->worker_id,
                  {id, g, req.command}};
}

std::optional<std::string> LaunchRelay::Relay(const wire::LaunchOutput& out,
                                              const std::string& worker_id) {
  auto it = launches_.find(out.launch_id);
  if (it == launches_.end() || it->second.worker_id != worker_id) return std::nullopt;
  std::string route = it->second.agent_route;
  if (out.exited) launches_.erase(it);
  return route;
}

LaunchRelay::Ended LaunchRelay::Sweep(const GangLookup& lookup) {
  Ended ended;
  std::set<GangKey> gone;
  // Live attempts, by key: their members now.
  std::map<GangKey, LiveGang> live;
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    const auto& [job, task, attempt] = it->first;
    std::optional<LiveGang> gang = lookup(job, task);
    if (gang && gang->attempt == attempt) {
      live.emplace(it->first, std::move(*gang));
      ++it;
      continue;
    }
    gone.insert(it->first);
    it = tokens_.erase(it);
  }
  std::set<std::pair<std::string, GangKey>> stopped;
  for (auto it = launches_.begin(); it != launches_.end();) {
    const Launch& l = it->second;
    std::string why;
    if (gone.count(l.gang) != 0) {
      why = "coupler: the gang's attempt ended\n";
    } else if (auto g = live.find(l.gang); g != live.end()) {
      const auto& members = g->second.members;
      const bool member = std::any_of(members.begin(), members.end(),
                                      [&](const Member& m) { return m.worker_id == l.worker_id; });
      if (!member) {
        why = "coupler: lost " + l.host + ": its worker " + l.worker_id +
              " was declared dead (no heartbeat)\n";
      }
    }
    if (why.empty()) {
      ++it;
      continue;
    }
    const auto& [job, task, attempt] = l.gang;
    if (stopped.insert({l.worker_id, l.gang}).second) {
      ended.stops.push_back({l.worker_id, {{job, task, attempt}}});
    }
    ended.agents.push_back({l.agent_route, {it->first, 2, why, true, 255}});
    it = launches_.erase(it);
  }
  return ended;
}

}  // namespace coupler::coordinator
