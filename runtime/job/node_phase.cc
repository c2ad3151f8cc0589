#include "runtime/job/node_phase.h"

#include <array>
#include <cstddef>

namespace coupler::job {
namespace {

// Indexed by NodePhase.
constexpr std::array<std::string_view, kNodePhaseCount> kNames = {
    "pending", "ready", "running", "done", "failed", "cancelled"};

}  // namespace

std::string_view NodePhaseName(NodePhase phase) {
  const auto index = static_cast<size_t>(phase);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

std::optional<NodePhase> ParseNodePhase(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<NodePhase>(i);
  }
  return std::nullopt;
}

bool IsFinished(NodePhase phase) {
  return phase == NodePhase::kDone || phase == NodePhase::kFailed ||
         phase == NodePhase::kCancelled;
}

}  // namespace coupler::job
