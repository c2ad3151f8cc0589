#include "runtime/io/output_layout.h"

#include <charconv>

#include "runtime/util/padded_number.h"

namespace coupler::io {

std::string NodeDir(std::string_view workdir, std::string_view node) {
  std::string dir(workdir);
  dir += '/';
  dir += node;
  return dir;
}

namespace {

// "part-00012.npy": ShardFileName, appended.
void AppendShardFileName(std::string& out, int64_t shard, ShardKind kind, ShardFormat format) {
  out += kind == ShardKind::kPartial ? "partial-" : "part-";
  util::AppendZeroPadded(out, shard, 5);
  out += format == ShardFormat::kColumns ? ".npz" : ".npy";
}

}  // namespace

std::string ShardFileName(int64_t shard, ShardKind kind, ShardFormat format) {
  std::string name;
  AppendShardFileName(name, shard, kind, format);
  return name;
}

std::string ShardPath(std::string_view workdir, std::string_view node, int64_t shard,
                      ShardKind kind, ShardFormat format) {
  // Made for every task dispatched: one allocation, no format parsed.
  std::string path;
  path.reserve(workdir.size() + node.size() + 24);
  path += workdir;
  path += '/';
  path += node;
  path += '/';
  AppendShardFileName(path, shard, kind, format);
  return path;
}

std::string ShufflePrefix(std::string_view workdir, std::string_view node, int64_t map_shard) {
  std::string prefix = NodeDir(workdir, node);
  prefix += "/shuffle/map-";
  util::AppendZeroPadded(prefix, map_shard, 5);
  return prefix;
}

std::string ShufflePartitionPath(std::string_view prefix, int64_t partition) {
  std::string path(prefix);
  path += ".p";
  util::AppendZeroPadded(path, partition, 5);
  path += ".npz";
  return path;
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
