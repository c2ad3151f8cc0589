#include "runtime/pool/worker_state.h"

#include <array>
#include <cstddef>

namespace coupler::pool {
namespace {

// Indexed by WorkerState.
constexpr std::array<std::string_view, kWorkerStateCount> kNames = {"alive", "draining", "silent",
                                                                    "drained", "lost"};

}  // namespace

std::string_view WorkerStateName(WorkerState state) {
  const auto index = static_cast<size_t>(state);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

std::optional<WorkerState> ParseWorkerState(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<WorkerState>(i);
  }
  return std::nullopt;
}

}  // namespace coupler::pool
