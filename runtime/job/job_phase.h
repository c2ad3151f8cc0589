// Where a job is in its life, and the one spelling of each phase: the coordinator's state, the
// store's rows and `coupler status` all say "queued", "running", "succeeded", "failed" or
// "cancelled", named and parsed here only. On the wire (JobStatus::state) a phase is its number,
// one byte, pinned below: numbers are never reused or reordered (docs/protocol.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace coupler::job {

enum class JobPhase : uint8_t {
  kQueued = 0,
  kRunning = 1,
  kSucceeded = 2,
  kFailed = 3,
  kCancelled = 4,
};
inline constexpr uint8_t kJobPhaseCount = 5;

std::string_view JobPhaseName(JobPhase phase);

// The phase `name` spells; nullopt for anything else (a newer coordinator's phase, a typo).
std::optional<JobPhase> ParseJobPhase(std::string_view name);

// Succeeded, failed or cancelled: the job will not change any more.
bool IsFinished(JobPhase phase);

}  // namespace coupler::job
