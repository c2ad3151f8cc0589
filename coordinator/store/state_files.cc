#include "coordinator/store/state_files.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace coupler::store {
namespace {

namespace fs = std::filesystem;

constexpr size_t kWalHeader = 32;
constexpr size_t kFrameHeader = 24;
constexpr char kSqliteHeader[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                    'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// SQLite's WAL checksum (walChecksumBytes): pairs of 32-bit words, read big-endian when the
// magic's low bit is set, little-endian otherwise, added into a running pair.
void Checksum(const unsigned char* data, size_t n, bool big_endian, uint32_t& s0, uint32_t& s1) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint32_t a, b;
    if (big_endian) {
      a = Be32(data + i);
      b = Be32(data + i + 4);
    } else {
      std::memcpy(&a, data + i, 4);
      std::memcpy(&b, data + i + 4, 4);
    }
    s0 += a + s1;
    s1 += b + s0;
  }
}

Status Damaged(const std::string& path, const std::string& what) {
  return InvalidArgument(path + " is damaged (" + what +
                         "): SQLite would silently drop the commits after the damage. Restore "
                         "the state directory from a backup, or move it away to start afresh");
}

}  // namespace

Status CheckWal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Ok();
  std::vector<unsigned char> wal((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (wal.empty()) return Status::Ok();
  if (wal.size() < kWalHeader) return Damaged(path, "shorter than a WAL header");
  const uint32_t magic = Be32(wal.data());
  if (magic != 0x377f0682 && magic != 0x377f0683) return Damaged(path, "no WAL magic number");
  const bool big = (magic & 1) != 0;
  uint32_t s0 = 0, s1 = 0;
  Checksum(wal.data(), 24, big, s0, s1);
  if (s0 != Be32(wal.data() + 24) || s1 != Be32(wal.data() + 28)) {
    return Damaged(path, "its header fails its checksum");
  }
  const uint32_t page = Be32(wal.data() + 8);
  if (page < 512 || page > 65536 || (page & (page - 1)) != 0) return Damaged(path, "bad page size");
  const size_t frame = kFrameHeader + page;
  const unsigned char* salts = wal.data() + 16;
  size_t off = kWalHeader;
  for (; off + frame <= wal.size(); off += frame) {
    const unsigned char* f = wal.data() + off;
    if (std::memcmp(f + 8, salts, 8) != 0) return Status::Ok();  // an older generation: unused
    uint32_t c0 = s0, c1 = s1;
    Checksum(f, 8, big, c0, c1);
    Checksum(f + kFrameHeader, page, big, c0, c1);
    if (c0 != Be32(f + 16) || c1 != Be32(f + 20)) break;
    s0 = c0;
    s1 = c1;
  }
  // A frame that fails its checksum is where SQLite stops reading. At the very end that is a
  // write the crash cut short; with frames of the same generation after it, it is damage.
  for (off += frame; off + frame <= wal.size(); off += frame) {
    if (std::memcmp(wal.data() + off + 8, salts, 8) == 0) {
      return Damaged(path, "a frame fails its checksum with later frames after it");
    }
  }
  return Status::Ok();
}

Status CheckStateFiles(const std::string& dir, const std::string& db_file) {
  const fs::path db = fs::path(dir) / db_file;
  std::error_code ec;
  const bool marked = fs::exists(fs::path(dir) / kStateMarker, ec);
  const bool exists = fs::exists(db, ec);
  const uintmax_t size = exists ? fs::file_size(db, ec) : 0;
  if (marked && (!exists || size == 0)) {
    return InvalidArgument(db.string() + (exists ? " is empty (0 bytes)" : " is missing") +
                           ", but " + dir + " held coupler state (" + kStateMarker +
                           "): restore the database from a backup, or remove " + kStateMarker +
                           " to start with an empty state");
  }
  if (size > 0) {
    char header[16] = {};
    std::ifstream in(db, std::ios::binary);
    in.read(header, sizeof(header));
    if (in.gcount() != sizeof(header) || std::memcmp(header, kSqliteHeader, sizeof(header)) != 0) {
      return InvalidArgument(db.string() + " has no SQLite header (file is not a database): it "
                                           "is damaged or not coupler state. Restore it from a "
                                           "backup, or move it away");
    }
  }
  return CheckWal(db.string() + "-wal");
}

}  // namespace coupler::store
