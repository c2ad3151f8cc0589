#include "worker/epoch_fence.h"

namespace coupler::worker {

EpochFence::Verdict EpochFence::Admit(wire::MessageType type, uint64_t epoch) {
  if (type == wire::MessageType::kRegistered) {
    epoch_ = epoch;
    return {};
  }
  if (epoch < epoch_ && type != wire::MessageType::kRegisterAgain) {
    ++refused_;
    const bool first = epoch != last_refused_epoch_;
    last_refused_epoch_ = epoch;
    return {false, first};
  }
  return {};
}

}  // namespace coupler::worker
