// Content hashes of bytes and files: XXH64 (Yann Collet's xxHash, 64-bit), written here in a
// few lines. Not cryptographic: it tells "same bytes" from "changed" for the reuse of a node's
// outputs (a run's own inputs, not an adversary's), at memory speed, so a 500 MB CSV costs a
// fraction of a second rather than the seconds a byte-at-a-time hash would.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::io {

// XXH64 of `bytes` with `seed` (matches the reference implementation's XXH64()).
uint64_t Xxh64(std::string_view bytes, uint64_t seed = 0);

// XXH64 of a whole file's bytes (mapped, read front to back). NotFound when it is missing.
Result<uint64_t> HashFile(const std::string& path);

// 16 lowercase hex digits.
std::string HashHex(uint64_t hash);

}  // namespace coupler::io
