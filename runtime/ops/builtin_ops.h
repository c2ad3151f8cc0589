// The declarations of coupler's built-in ops (schema only; execution lives in worker/).
#pragma once

#include <vector>

#include "runtime/ops/op_def.h"

namespace coupler::ops {

std::vector<OpDef> BuiltinOpDefs();

}  // namespace coupler::ops
