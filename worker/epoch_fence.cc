#include "worker/epoch_fence.h"

namespace coupler::worker {

EpochFence::Verdict EpochFence::Admit(wire::MessageType type, uint64_t epoch) {
  if (epoch < epoch_) {
    ++refused_;
    const bool first = epoch != last_refused_epoch_;
    last_refused_epoch_ = epoch;
    return {false, first};
  }
  if (type == wire::MessageType::kRegistered) epoch_ = epoch;
  return {};
}

}  // namespace coupler::worker
