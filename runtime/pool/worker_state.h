// Where a worker is, as the coordinator keeps it and `coupler workers` shows it: "alive",
// "draining" (finishing what it holds, taking nothing new), "silent" (past the timeout, not
// given up on yet), "drained" (left cleanly after a drain), "lost" (given up on) or "banned"
// (refused by an admin until unbanned; the registry keeps it lost, the ban list says why). The
// coordinator's registry stores all but silent, which it reports for an alive worker it has not
// heard from lately. On the wire (WorkerStatus::state) one byte, numbers pinned below and never
// reused (docs/protocol.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace coupler::pool {

enum class WorkerState : uint8_t {
  kAlive = 0,
  kDraining = 1,
  kSilent = 2,
  kDrained = 3,
  kLost = 4,
  kBanned = 5,  // refused by an admin (`coupler worker ban`) until unbanned
};
inline constexpr uint8_t kWorkerStateCount = 6;

std::string_view WorkerStateName(WorkerState state);

// The state `name` spells; nullopt for anything else.
std::optional<WorkerState> ParseWorkerState(std::string_view name);

}  // namespace coupler::pool
