// What part of its node a task is: the coordinator's task table and the TaskSpec a worker gets
// share this one enum.
#pragma once

#include <cstdint>
#include <string>

#include <cereal/cereal.hpp>

namespace coupler::wire {

// One byte on the wire; any other value makes the message malformed.
enum class TaskKind : uint8_t {
  kMap = 0,     // one shard (shard_index) of a per-shard node, or a fixed node's i of N
  kReduce = 1,  // the reduce of a map + reduce node: input_paths are every partial
  kGang = 2,    // a whole node at once: a tight node's group, or a node over whole datasets
};
inline constexpr uint8_t kTaskKindCount = 3;

template <class Archive>
uint8_t save_minimal(const Archive&, const TaskKind& kind) {
  return static_cast<uint8_t>(kind);
}
template <class Archive>
void load_minimal(const Archive&, TaskKind& kind, const uint8_t& value) {
  if (value >= kTaskKindCount) {
    throw cereal::Exception("task kind " + std::to_string(value) + " is not 0, 1 or 2");
  }
  kind = static_cast<TaskKind>(value);
}

}  // namespace coupler::wire
