// What `reuse` looks up, kept in the spec's workdir so any coordinator (an embedded
// `coupler run` with a temporary state included) finds it: which node key last succeeded in
// which run directory and with which files (reuse.json), and each dataset file's content hash
// by (path, size, mtime_ns, inode) so a large CSV is hashed once (file-hashes.json). Both files
// are replaced atomically; a missing or unreadable one is an empty index (nothing is reused).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace coupler::coordinator {

inline constexpr const char* kReuseIndexFile = "reuse.json";
inline constexpr const char* kFileHashesFile = "file-hashes.json";

// A node's outputs as a succeeded run left them: files relative to its node folder (logs/
// excluded) with their sizes.
struct NodeOutputs {
  std::string run_dir;
  std::string job_id;
  std::string node;
  std::vector<std::pair<std::string, uint64_t>> files;
};

class ReuseIndex {
 public:
  static ReuseIndex Load(const std::string& workdir_root);

  // The entry for `key` whose files are all still there with their sizes; nullopt otherwise.
  std::optional<NodeOutputs> FindIntact(const std::string& key) const;
  void Put(const std::string& key, NodeOutputs outputs) { nodes_[key] = std::move(outputs); }
  Status Save() const;

 private:
  std::string path_;
  std::map<std::string, NodeOutputs> nodes_;
};

// Loads the cache, hashes through it, and writes it back (Save) when it learnt something.
class FileHashCache {
 public:
  static FileHashCache Load(const std::string& workdir_root);
  Result<uint64_t> Hash(const std::string& path);
  Status Save() const;

 private:
  struct Entry {
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;
    uint64_t inode = 0;
    uint64_t hash = 0;
  };
  std::string path_;
  std::map<std::string, Entry> files_;
  bool changed_ = false;
};

// The regular files under a node folder, logs/ and unfinished temporaries excluded; none for a
// folder that does not exist (the node wrote nothing).
Result<std::vector<std::pair<std::string, uint64_t>>> ListNodeOutputs(const std::string& node_dir);

// After a node of a run succeeded: its key now names its outputs (the files under its folder
// in `run_dir`), for later runs to reuse.
Status RecordNodeOutputs(const std::string& workdir_root, const std::string& key,
                         const std::string& run_dir, const std::string& job_id,
                         const std::string& node);

// Makes `to_node_dir` hold `files` of `from_node_dir`: hard links (a copy where the filesystem
// refuses them), so deleting the old run leaves this one's inputs whole. A folder that is the
// same as the source is left as is.
Status LinkNodeOutputs(const std::string& from_node_dir, const std::string& to_node_dir,
                       const std::vector<std::pair<std::string, uint64_t>>& files);

}  // namespace coupler::coordinator
