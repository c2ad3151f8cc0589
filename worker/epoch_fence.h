// Which coordinator a worker takes orders from: the newest one it registered with. Every
// message a coordinator sends carries its epoch (wire::Header::epoch, +1 at every start on a
// state directory). Once a worker has registered with epoch E, whatever a coordinator of an
// older epoch sends — assignments, gang launches, acknowledgements, cancels, even heartbeats —
// is dropped (only the registration exchange itself passes, see Admit): that coordinator lost its state directory to a newer one without knowing (its
// lock file removed, a lock lost on a shared file system), and obeying it could run a task
// twice or drop a result the owner never wrote. This is the worker's half of the fencing token;
// the coordinator's half stops it when a worker speaks for a newer epoch than its own.
#pragma once

#include <cstdint>

#include "runtime/wire/message_type.h"

namespace coupler::worker {

class EpochFence {
 public:
  struct Verdict {
    bool admit = true;
    // The first refusal of that epoch: worth a log line (later ones are counted only).
    bool first_refusal = false;
  };

  // A message of `type` stamped `epoch`. A Registered answer sets the fence to its epoch, even
  // a lower one: it answers our own registration, which carried our epoch, and a coordinator
  // that had been taken over stops on hearing a newer epoch instead of answering — so a lower
  // one is a coordinator of another state (a state directory started afresh), whose epochs
  // count from 1 again. RegisterAgain is always taken: it only makes us register. A newer
  // epoch's other messages are taken too: a restarted coordinator's heartbeats arrive before
  // our registration with it is answered.
  Verdict Admit(wire::MessageType type, uint64_t epoch);

  // The epoch registered with (0 before the first registration): what the worker stamps on
  // what it sends.
  uint64_t epoch() const { return epoch_; }
  uint64_t refused() const { return refused_; }

 private:
  uint64_t epoch_ = 0;
  uint64_t refused_ = 0;
  uint64_t last_refused_epoch_ = 0;
};

}  // namespace coupler::worker
