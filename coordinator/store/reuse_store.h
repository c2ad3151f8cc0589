// The reuse catalogue on disk: which node key last succeeded in which run directory, with the
// identity of every file it left, and the content hashes of dataset files. It is what decides
// which files the coordinator links into a new run, so it lives where only coordinators of its
// owner write (a 0600 SQLite file in a 0700 folder: the state directory, or the user's own
// ~/.coupler for `coupler run`, whose state is temporary) and never in a job's workdir, which
// the job's commands can write.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/store/sqlite_db.h"
#include "runtime/status.h"

namespace coupler::store {

// A file a succeeded node left, as the coordinator saw it when it recorded the node: its path
// relative to the node's folder and what makes it that very file (a later run links it only
// while all of these still match).
struct ReuseFile {
  std::string path;
  uint64_t bytes = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t mtime_ns = 0;

  friend bool operator==(const ReuseFile&, const ReuseFile&) = default;
};

// One node key's latest success under one workdir root.
struct ReuseEntry {
  std::string root;     // the spec's workdir (where runs/ lives)
  std::string key;      // node_keys.h
  std::string run_dir;  // absolute, as the coordinator made it
  std::string job_id;
  std::string node;
  std::vector<ReuseFile> files;
};

// A dataset file's content hash, valid while its size, mtime and inode are unchanged.
struct FileHashEntry {
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  uint64_t hash = 0;
};

// Not thread-safe: callers serialize (coordinator/reuse_index.h holds the lock).
class ReuseStore {
 public:
  static constexpr const char* kFileName = "reuse.db";

  // Opens (creating, 0600, in a folder made 0700) the catalogue at `path`.
  static Result<std::unique_ptr<ReuseStore>> Open(const std::string& path);

  ReuseStore(const ReuseStore&) = delete;
  ReuseStore& operator=(const ReuseStore&) = delete;
  ~ReuseStore();

  Result<std::optional<ReuseEntry>> Find(const std::string& root, const std::string& key);
  // Replaces the entry of (root, key) and its files, in one transaction.
  Status Put(const ReuseEntry& entry);
  // Does any entry name `run_dir` (its outputs may be linked into a later run)?
  Result<bool> Records(const std::string& run_dir);

  Result<std::optional<FileHashEntry>> FindHash(const std::string& path);
  Status PutHashes(const std::vector<FileHashEntry>& entries);

 private:
  explicit ReuseStore(SqliteDb db);
  Status Prepare();

  SqliteDb db_;  // first: destroyed after the statements that borrow it
  SqliteStatement find_node_;
  SqliteStatement find_files_;
  SqliteStatement find_run_dir_;
  SqliteStatement put_node_;
  SqliteStatement delete_files_;
  SqliteStatement put_file_;
  SqliteStatement find_hash_;
  SqliteStatement put_hash_;
};

}  // namespace coupler::store
