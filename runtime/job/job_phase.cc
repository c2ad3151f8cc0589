#include "runtime/job/job_phase.h"

#include "runtime/util/enum_names.h"

namespace coupler::job {
namespace {

constexpr util::EnumNames<JobPhase, kJobPhaseCount> kNames{
    {"queued", "running", "succeeded", "failed", "cancelled"}};

}  // namespace

std::string_view JobPhaseName(JobPhase phase) { return kNames.Name(phase); }

std::optional<JobPhase> ParseJobPhase(std::string_view name) { return kNames.Parse(name); }

bool IsFinished(JobPhase phase) {
  return phase == JobPhase::kSucceeded || phase == JobPhase::kFailed ||
         phase == JobPhase::kCancelled;
}

}  // namespace coupler::job
