// A `coupler` child process for the benchmarks that run real coordinators and workers, stopped
// (SIGTERM, then SIGKILL) when it goes out of scope. COUPLER_BENCH_BINARY runs another build.
#pragma once

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "runtime/process/child_process.h"

namespace coupler::bench {

class Child {
 public:
  // `quiet`: warnings only, and stdout discarded (a CLI's replies such as "draining p3" would
  // break up the printed table); stderr stays.
  explicit Child(const std::vector<std::string>& args, bool quiet = false) {
    process::SpawnOptions options;
    // COUPLER_BENCH_BINARY: another build's coupler, for before/after rounds alternated in one
    // sitting with the same benchmark (docs/benchmarks.md).
    const char* other = std::getenv("COUPLER_BENCH_BINARY");
    options.argv = {other != nullptr && *other != '\0' ? std::string(other) : std::string(COUPLER_BINARY)};
    if (quiet) options.argv.insert(options.argv.end(), {"--log-level", "warn"});
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    if (quiet) options.stdout_path = "/dev/null";
    if (auto child = process::ChildProcess::Spawn(options); child.ok()) child_ = std::move(*child);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (child_.started()) child_.Stop(std::chrono::milliseconds(5000));
  }

  pid_t pid() const { return child_.pid(); }

  // The exit code, or nullopt if it is still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout) { return child_.WaitFor(timeout); }

  // Its peak resident set (VmHWM), in KiB; -1 when unknown.
  long PeakRssKb() const {
    std::ifstream in("/proc/" + std::to_string(child_.pid()) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

 private:
  process::ChildProcess child_;
};

}  // namespace coupler::bench
