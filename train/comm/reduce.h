// Element-wise reduction of host buffers, shared by the backends that reduce on the CPU (the
// in-process group, MPI's user op for fp16/bf16), so every backend rounds exactly alike.
#pragma once

#include <cstddef>
#include <span>

#include "train/comm/communicator.h"

namespace coupler::comm {

// out[i] = op(inputs[0][i], inputs[1][i], ...) in input order. fp16/bf16 accumulate in
// float32 and round once to nearest even; integer sums wrap. out may alias any input.
void ReduceBuffers(std::span<const void* const> inputs, void* out, size_t count, ElementType type,
                   ReduceOp op);

}  // namespace coupler::comm
