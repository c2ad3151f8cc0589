#include "runtime/io/output_layout.h"

#include <charconv>
#include <cstdio>

namespace coupler::io {

std::string NodeDir(std::string_view workdir, std::string_view node) {
  std::string dir(workdir);
  dir += '/';
  dir += node;
  return dir;
}

std::string ShardFileName(int64_t shard, ShardKind kind, ShardFormat format) {
  char name[48];
  std::snprintf(name, sizeof(name), "%s-%05lld.%s", kind == ShardKind::kPartial ? "partial" : "part",
                static_cast<long long>(shard), format == ShardFormat::kColumns ? "npz" : "npy");
  return name;
}

std::string ShardPath(std::string_view workdir, std::string_view node, int64_t shard,
                      ShardKind kind, ShardFormat format) {
  return NodeDir(workdir, node) + '/' + ShardFileName(shard, kind, format);
}

std::string ShufflePrefix(std::string_view workdir, std::string_view node, int64_t map_shard) {
  char name[32];
  std::snprintf(name, sizeof(name), "/shuffle/map-%05lld", static_cast<long long>(map_shard));
  return NodeDir(workdir, node) + name;
}

std::string ShufflePartitionPath(std::string_view prefix, int64_t partition) {
  char name[24];
  std::snprintf(name, sizeof(name), ".p%05lld.npz", static_cast<long long>(partition));
  return std::string(prefix) + name;
}

std::string ShuffleSortedPath(std::string_view prefix) { return std::string(prefix) + ".sorted.npz"; }
std::string ShuffleSamplePath(std::string_view prefix) { return std::string(prefix) + ".sample.npz"; }

bool IsTempFileName(std::string_view name) { return name.find(kTempInfix) != std::string_view::npos; }

std::optional<long> TempWriterPid(std::string_view final_name, std::string_view name) {
  if (name.size() <= final_name.size() + kTempInfix.size() || !name.starts_with(final_name) ||
      name.substr(final_name.size(), kTempInfix.size()) != kTempInfix) {
    return std::nullopt;
  }
  const char* begin = name.data() + final_name.size() + kTempInfix.size();
  const char* end = name.data() + name.size();
  long pid = 0;
  auto [ptr, err] = std::from_chars(begin, end, pid);
  if (err != std::errc() || ptr == begin || pid <= 0) return std::nullopt;
  return pid;
}

bool IsShardFileName(std::string_view name) {
  return name.size() > 4 && (name.ends_with(".npy") || name.ends_with(".npz")) &&
         name.front() != '.' && !IsTempFileName(name);
}

}  // namespace coupler::io
