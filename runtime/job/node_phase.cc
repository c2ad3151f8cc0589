#include "runtime/job/node_phase.h"

#include "runtime/util/enum_names.h"

namespace coupler::job {
namespace {

constexpr util::EnumNames<NodePhase, kNodePhaseCount> kNames{
    {"pending", "ready", "running", "done", "failed", "cancelled"}};

}  // namespace

std::string_view NodePhaseName(NodePhase phase) { return kNames.Name(phase); }

std::optional<NodePhase> ParseNodePhase(std::string_view name) { return kNames.Parse(name); }

bool IsFinished(NodePhase phase) {
  return phase == NodePhase::kDone || phase == NodePhase::kFailed ||
         phase == NodePhase::kCancelled;
}

}  // namespace coupler::job
