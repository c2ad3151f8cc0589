// The bounds every spec reader enforces, in one place. A spec within them cannot exhaust the
// stack or the memory of whoever reads it (the coordinator reads every submitted spec), and
// always fits in one wire message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/status.h"

namespace coupler::job {

// Well under the wire's 64 MiB message cap, so a spec refused for its size is refused with
// this reason and never dropped by the transport.
inline constexpr uint64_t kMaxSpecBytes = uint64_t{16} << 20;

// Nesting of lists and mappings, flow ([ {) and block (indentation, "- ") together. A real
// spec nests about 5 deep; the cap keeps every reader's stack use small and fixed.
inline constexpr int kMaxSpecDepth = 64;

// Values in the document tree, aliases expanded.
inline constexpr size_t kMaxSpecValues = 4'000'000;

// Values that YAML anchors and aliases may copy in all: the copy an anchor (&name) keeps and
// each copy an alias (*name) pastes. Hand-written reuse (`resources: *gpu`) stays far below
// it; an alias bomb reaches it in a few hundred bytes, and is refused before those copies
// are made.
inline constexpr size_t kMaxAliasedValues = 100'000;

// One wording for every reader that refuses a spec for its nesting.
std::string NestingTooDeepMessage();

// InvalidArgument "spec is 70.0 MiB, over the 16 MiB limit" when `bytes` > kMaxSpecBytes.
Status CheckSpecSize(uint64_t bytes);

}  // namespace coupler::job
