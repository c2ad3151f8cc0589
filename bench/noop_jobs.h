// What the dispatch benchmarks submit and wait for: a job of `tasks` noop tasks, and the long
// poll that returns its final status.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "client/client.h"

namespace coupler::bench {

// Writes DIR/NAME.yaml: one noop node of `tasks` tasks, its workdir DIR/work. Returns the path.
inline std::string WriteNoopSpec(const std::filesystem::path& dir, const std::string& name,
                                 long tasks) {
  const std::filesystem::path p = dir / (name + ".yaml");
  std::ofstream(p) << "name: " << name << "\nworkdir: " << (dir / "work").string()
                   << "\nnodes:\n  - {id: n, op: noop, params: {tasks: " << tasks << "}}\n";
  return p.string();
}

// Long-polls the job's status: the coordinator answers when the job finishes.
inline wire::JobStatus WaitDone(client::Client& c, const std::string& id) {
  for (;;) {
    auto r = c.Status(id, std::chrono::milliseconds(5000));
    if (r.ok() && !r->jobs.empty() && r->jobs[0].state != coupler::job::JobPhase::kQueued && r->jobs[0].state != coupler::job::JobPhase::kRunning) {
      return r->jobs[0];
    }
  }
}

}  // namespace coupler::bench
