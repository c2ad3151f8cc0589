#include "runtime/job/job_phase.h"

#include <array>
#include <cstddef>

namespace coupler::job {
namespace {

// Indexed by JobPhase.
constexpr std::array<std::string_view, 5> kPhaseNames = {"queued", "running", "succeeded",
                                                         "failed", "cancelled"};

}  // namespace

std::string_view JobPhaseName(JobPhase phase) {
  const auto index = static_cast<size_t>(phase);
  return index < kPhaseNames.size() ? kPhaseNames[index] : kPhaseNames[0];
}

std::optional<JobPhase> ParseJobPhase(std::string_view name) {
  for (size_t i = 0; i < kPhaseNames.size(); ++i) {
    if (kPhaseNames[i] == name) return static_cast<JobPhase>(i);
  }
  return std::nullopt;
}

bool IsFinished(JobPhase phase) {
  return phase == JobPhase::kSucceeded || phase == JobPhase::kFailed ||
         phase == JobPhase::kCancelled;
}

}  // namespace coupler::job
