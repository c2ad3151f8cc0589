#include "runtime/pool/worker_state.h"

#include "runtime/util/enum_names.h"

namespace coupler::pool {
namespace {

constexpr util::EnumNames<WorkerState, kWorkerStateCount> kNames{
    {"alive", "draining", "silent", "drained", "lost", "banned"}};

}  // namespace

std::string_view WorkerStateName(WorkerState state) { return kNames.Name(state); }

std::optional<WorkerState> ParseWorkerState(std::string_view name) { return kNames.Parse(name); }

}  // namespace coupler::pool
