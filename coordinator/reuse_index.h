// What `reuse` looks up and links: which node key last succeeded in which run directory under a
// workdir, with the identity (size, device, inode, mtime) of every file it left, and each
// dataset file's content hash (so a large CSV is hashed once). Kept in the coordinator's own
// catalogue (store/reuse_store.h), never in the workdir: the job's commands can write the
// workdir, and whatever decides what the coordinator links must be out of their reach.
//
// Linking trusts nothing in the old run's folder but what was recorded: each file is opened
// beneath that run's directory without following any symlink and linked only while it is the
// very file recorded (a file replaced, or a symlink planted after the node finished, is not
// reused: the node runs again).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/store/reuse_store.h"
#include "runtime/status.h"

namespace coupler::coordinator {

using NodeOutputs = store::ReuseEntry;

// A node that succeeded, to be recorded (ReuseIndex::Record): its outputs are listed from disk,
// so the recording happens on the intake thread (AdmissionQueue::Record), never on the loop.
struct ReuseRecord {
  std::string root;
  std::string key;
  std::string run_dir;
  std::string job_id;
  std::string node;
};

// Shared by the admission thread (lookups, hashes, links) and the event loop (recording a node
// that succeeded); every call holds one lock.
class ReuseIndex {
 public:
  // Opens the catalogue at `path` (store::ReuseStore::Open).
  static Result<std::unique_ptr<ReuseIndex>> Open(const std::string& path);

  // The entry of (root, key) whose files are all still the files recorded; nullopt otherwise.
  std::optional<NodeOutputs> FindIntact(const std::string& root, const std::string& key);

  // After `node` of a run succeeded: its key now names its outputs (the regular files under its
  // folder in `run_dir`, symlinks never), for later runs under `root` to reuse.
  Status Record(const std::string& root, const std::string& key, const std::string& run_dir,
                const std::string& job_id, const std::string& node);

  // `path`'s content hash, from the cache while its size, mtime and inode are unchanged.
  Result<uint64_t> Hash(const std::string& path);

 private:
  explicit ReuseIndex(std::unique_ptr<store::ReuseStore> store) : store_(std::move(store)) {}

  std::mutex mu_;
  std::unique_ptr<store::ReuseStore> store_;
};

// The regular files under `node`'s folder in `run_dir` (relative paths, with their identity),
// logs/, unfinished temporaries and anything that is not a regular file excluded; none for a
// folder that does not exist (the node wrote nothing). Nothing is followed through a symlink.
Result<std::vector<store::ReuseFile>> ListNodeOutputs(const std::string& run_dir,
                                                      const std::string& node);

// Makes `to_node`'s folder in `to_run_dir` hold `from`'s files: hard links (a copy where the
// filesystem refuses them), so deleting the old run leaves this one's inputs whole. Each source
// is opened beneath `from.run_dir` without following symlinks and must still be the recorded
// file (NotFound naming it otherwise). A folder that is the source itself is left as is.
Status LinkNodeOutputs(const NodeOutputs& from, const std::string& to_run_dir,
                       const std::string& to_node);

}  // namespace coupler::coordinator
