// Where one node of a job is, as `coupler status` shows it: "pending" (inputs not ready),
// "ready" (released, waiting for slots), "running", "done", "failed" or "cancelled". Named and
// parsed here only; on the wire (NodeStatus::state) one byte, numbers pinned below and never
// reused (docs/protocol.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace coupler::job {

enum class NodePhase : uint8_t {
  kPending = 0,
  kReady = 1,
  kRunning = 2,
  kDone = 3,
  kFailed = 4,
  kCancelled = 5,
};
inline constexpr uint8_t kNodePhaseCount = 6;

std::string_view NodePhaseName(NodePhase phase);

// The phase `name` spells; nullopt for anything else.
std::optional<NodePhase> ParseNodePhase(std::string_view name);

// Done, failed or cancelled: the node will not change any more.
bool IsFinished(NodePhase phase);

}  // namespace coupler::job
