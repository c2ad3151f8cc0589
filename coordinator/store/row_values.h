// How the state's rows hold values SQLite has no type for: unsigned 64-bit counters (through
// the same bits of its signed integers) and SentAttempts::tasks (a blob of LEB128 varints, task
// then attempt, pair after pair). Shared by the store's writes and reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace coupler::store {

inline int64_t ToSql(uint64_t v) { return static_cast<int64_t>(v); }
inline uint64_t FromSql(int64_t v) { return static_cast<uint64_t>(v); }

inline void PutVarint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// False when `in` ends inside a varint (a damaged row).
inline bool GetVarint(std::string_view in, size_t& at, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && at < in.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in[at++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace coupler::store
