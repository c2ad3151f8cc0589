// The worker's half of the shared-filesystem check (runtime/job/workdir_marker.h): before its
// first task of a job it reads the marker the coordinator wrote into the job's workdir, once
// per job, and remembers the answer. Called from the task threads.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

class WorkdirCheck {
 public:
  // `host_address`: the address this worker advertises, named in the refusal.
  explicit WorkdirCheck(std::string host_address) : host_address_(std::move(host_address)) {}

  // OK when the task's job workdir holds its marker (or the task carries none); Unavailable
  // "workdir W not visible on host A: coupler needs a shared filesystem (...)" otherwise.
  Status Check(const wire::TaskSpec& spec);

 private:
  std::string host_address_;
  std::mutex mu_;
  std::map<std::string, Status> seen_;  // job id -> its answer; bounded (see .cc)
};

}  // namespace coupler::worker
