// The zip checksum (CRC-32, zlib's) of a buffer of any size, continuing `crc`: zlib takes at
// most a uInt of bytes per call, so larger buffers go through it a GiB at a time. Shared by the
// .npz reader and the writers of shards, which must agree byte for byte.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>

namespace coupler::io {

inline uint32_t ZipCrc(uint32_t crc, const void* data, uint64_t size) {
  const auto* bytes = static_cast<const Bytef*>(data);
  while (size > 0) {
    const auto n = static_cast<uInt>(std::min<uint64_t>(size, uint64_t{1} << 30));
    crc = static_cast<uint32_t>(::crc32(crc, bytes, n));
    bytes += n;
    size -= n;
  }
  return crc;
}

}  // namespace coupler::io
