// LaunchRelay: the coordinator's part in starting a gang's MPI daemons on remote hosts without
// ssh. Each gang attempt gets a fresh secret, sent to its leader only; a LaunchRequest (from the
// `coupler gang-agent` the leader's mpirun runs) is admitted only with that secret, for a live
// attempt, and for an address where the gang holds a reservation; it then goes to that worker
// as a LaunchDaemon, and the daemon's LaunchOutput is relayed back to the agent's connection.
// When the attempt ends, its daemons are stopped and their agents told; so is the agent of a
// daemon whose worker left the gang (declared dead), at once, so that mpirun ends the group
// then rather than when the agent's own silence timeout runs out. Pure logic: the event loop
// sends what it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

class LaunchRelay {
 public:
  // One reserved worker of a running gang attempt.
  struct Member {
    std::string worker_id;
    std::string address;
  };
  // The running attempt of a gang, as the scheduler knows it; nullopt: none runs.
  struct LiveGang {
    uint32_t attempt = 0;
    std::string leader;
    std::vector<Member> members;  // every reserved worker, leader included
  };
  using GangLookup =
      std::function<std::optional<LiveGang>(const std::string& job_id, uint64_t task_id)>;

  // The secret for a gang attempt about to start (sent to its leader in TaskSpec.gang_token).
  std::string IssueToken(const std::string& job_id, uint64_t task_id, uint32_t attempt);

  // Admits a launch from the connection `agent_route` authenticated as key `agent_key`
  // (`leader_key`: the key the gang's leader registered with, which the agent runs under).
  // On success: the worker to send `daemon` to. PermissionDenied / NotFound say why not.
  struct Admitted {
    std::string worker_id;
    wire::LaunchDaemon daemon;
  };
  Result<Admitted> Admit(const wire::LaunchRequest& req, const std::string& agent_route,
                         const std::string& agent_key, const std::string& leader_key,
                         const std::optional<LiveGang>& gang);

  // Output of a launch from worker `worker_id`: the agent route to relay it to, or nullopt when
  // that worker runs no such launch (dropped). An exit ends the relay.
  std::optional<std::string> Relay(const wire::LaunchOutput& out, const std::string& worker_id);

  // Ends the relays and secrets of gang attempts no longer running, and the relays of daemons
  // whose worker is no longer a member of its running attempt (the scheduler drops a member it
  // declared dead): their agents exit 255 and mpirun ends the group.
  struct Ended {
    std::vector<std::pair<std::string, wire::LaunchStop>> stops;     // worker -> stop
    std::vector<std::pair<std::string, wire::LaunchOutput>> agents;  // agent route -> exit 255
  };
  Ended Sweep(const GangLookup& lookup);

  size_t active() const { return launches_.size(); }
  // No gang attempt holds a secret: nothing to sweep (the usual case, checked per result).
  bool idle() const { return tokens_.empty() && launches_.empty(); }

 private:
  using GangKey = std::tuple<std::string, uint64_t, uint32_t>;  // job, task, attempt
  struct Launch {
    std::string agent_route;
    std::string worker_id;
    std::string host;  // the address the daemon was asked for
    GangKey gang;
  };
  std::map<GangKey, std::string> tokens_;
  std::map<uint64_t, Launch> launches_;
  uint64_t next_launch_ = 0;
};

}  // namespace coupler::coordinator
