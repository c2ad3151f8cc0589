// ShardStage: the shards a fused chain (runtime/plan/fusion.h) hands from one node to the next
// in memory. The coordinator names the output paths that stay in memory; WriteShard parks a
// table written to one of them here instead of writing the file, and ReadShard of that path
// takes it back out, so the next op gets the very columns the previous one produced (columns
// it left unread stay references into the file they came from). Each path is handed on once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/io/table.h"

namespace coupler::worker {

class ShardStage {
 public:
  explicit ShardStage(const std::vector<std::string>& in_memory_paths) {
    for (const std::string& path : in_memory_paths) tables_.emplace(path, std::nullopt);
  }

  // Is `path` one of the outputs that stay in memory?
  bool Holds(std::string_view path) const { return tables_.find(path) != tables_.end(); }

  void Put(std::string_view path, io::Table table) {
    auto it = tables_.find(path);
    if (it != tables_.end()) it->second = std::move(table);
  }

  // The table parked under `path`, moved out; nullopt when none was (the step before did not
  // write it).
  std::optional<io::Table> Take(std::string_view path) {
    auto it = tables_.find(path);
    if (it == tables_.end() || !it->second) return std::nullopt;
    std::optional<io::Table> out = std::move(it->second);
    it->second.reset();
    return out;
  }

 private:
  std::map<std::string, std::optional<io::Table>, std::less<>> tables_;
};

}  // namespace coupler::worker
