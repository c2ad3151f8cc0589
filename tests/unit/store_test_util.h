// Shared by the StateStore tests: a temporary state dir and sample records.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/check.h"
#include "coordinator/store/state_store.h"

namespace coupler::store::testing {

namespace fs = std::filesystem;

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "coupler-store-XXXXXX").string();
    COUPLER_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path_.string(); }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

inline std::unique_ptr<StateStore> OpenOrDie(const std::string& dir,
                                      OpenMode mode = OpenMode::kReadWrite) {
  auto store = StateStore::Open(dir, mode);
  COUPLER_CHECK_OK(store.status());
  return std::move(store).value();
}

inline JobRecord MakeJob(const std::string& id) {
  JobRecord j;
  j.id = id;
  j.name = "demo " + id;
  j.spec_text = "name: demo\nnodes: []\n";
  j.spec_path = "jobs/demo.yaml";
  j.base_dir = "/srv/jobs";
  j.priority = 3;
  j.state = "queued";
  j.submitted_ms = 1700000000000;
  j.extra = std::string("shard\0list\xff", 11);  // opaque bytes, NUL included
  return j;
}

inline TaskCommit MakeCommit(const std::string& job, uint64_t task, uint32_t attempt) {
  TaskCommit c;
  c.job_id = job;
  c.task_id = task;
  c.attempt = attempt;
  c.output_paths = {"out/part-" + std::to_string(task) + ".parquet"};
  c.rows_in = 1000 + task;
  c.rows_out = 990 + task;
  c.device = "cuda:0";
  c.kernel_ms = 1.25;
  c.bytes_processed = 1ull << 40;
  c.worker_id = "w-" + std::to_string(attempt);
  return c;
}

inline AttemptRecord MakeAttempt(const std::string& job, uint64_t task, uint32_t attempt,
                          const std::string& outcome) {
  return AttemptRecord{job, task, attempt, "w-" + std::to_string(attempt), outcome,
                       outcome == "ok" ? "" : "worker w-1 missed 3 heartbeats", 1700000001000};
}

}  // namespace coupler::store::testing
