// Where a job is in its life, and the one spelling of each phase: the coordinator's state, the
// store's rows, the wire's JobStatus::state and `coupler status` all say "queued", "running",
// "succeeded", "failed" or "cancelled", named and parsed here only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace coupler::job {

enum class JobPhase : uint8_t { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

std::string_view JobPhaseName(JobPhase phase);

// The phase `name` spells; nullopt for anything else (a newer coordinator's phase, a typo).
std::optional<JobPhase> ParseJobPhase(std::string_view name);

// Succeeded, failed or cancelled: the job will not change any more.
bool IsFinished(JobPhase phase);

}  // namespace coupler::job
