// The states that travel in status replies — a job's phase, a node's, a worker's — as one byte
// each on the wire, the number the enum pins. A byte outside the enum makes the message
// malformed (Decode refuses it), never an unknown state passed on. cereal finds these by
// argument-dependent lookup, so they live in each enum's own namespace.
#pragma once

#include <cstdint>
#include <string>

#include <cereal/cereal.hpp>

#include "runtime/wire/payload_version.h"
#include "runtime/job/job_phase.h"
#include "runtime/job/node_phase.h"
#include "runtime/pool/worker_state.h"

namespace coupler::wire {

template <class E>
void LoadEnumByte(E& out, uint8_t value, uint8_t count, const char* what) {
  if (value >= count) {
    throw cereal::Exception(std::string(what) + " " + std::to_string(value) +
                            " is not one of the " + std::to_string(count) + " this build knows");
  }
  out = static_cast<E>(value);
}

}  // namespace coupler::wire

namespace coupler::job {

template <class Archive>
uint8_t save_minimal(const Archive&, const JobPhase& phase) {
  return static_cast<uint8_t>(phase);
}
template <class Archive>
void load_minimal(const Archive&, JobPhase& phase, const uint8_t& value) {
  wire::LoadEnumByte(phase, value, kJobPhaseCount, "job state");
}

template <class Archive>
uint8_t save_minimal(const Archive&, const NodePhase& phase) {
  return static_cast<uint8_t>(phase);
}
template <class Archive>
void load_minimal(const Archive&, NodePhase& phase, const uint8_t& value) {
  wire::LoadEnumByte(phase, value, kNodePhaseCount, "node state");
}

}  // namespace coupler::job

namespace coupler::pool {

template <class Archive>
uint8_t save_minimal(const Archive&, const WorkerState& state) {
  return static_cast<uint8_t>(state);
}
template <class Archive>
void load_minimal(const Archive&, WorkerState& state, const uint8_t& value) {
  wire::LoadEnumByte(state, value, kWorkerStateCount, "worker state");
}

}  // namespace coupler::pool
