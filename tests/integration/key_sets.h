// What the trust tests do as an operator would: key sets made with `coupler keygen` and put on
// allow-lists, a small noop spec to submit with them, lines counted in a process's log.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {

// `coupler keygen` of a `role` key named `name` into `cluster.dir() / folder`, the cluster's
// coordinator.pub copied beside it; the folder.
inline fs::path Keygen(Cluster& cluster, const std::string& folder, const std::string& name,
                       const std::string& role) {
  const fs::path dir = cluster.dir() / folder;
  CommandResult r = RunToEnd({kCoupler, "keygen", dir.string(), "--role", role, "--name", name},
                             cluster.logs(), 30s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::copy_file(cluster.keys() / "coordinator.pub", dir / "coordinator.pub",
                fs::copy_options::overwrite_existing);
  return dir;
}

// Keygen into "keys-NAME", its public key put on each of `lists` ("workers", "clients",
// "admins").
inline fs::path KeygenAndAuthorize(Cluster& cluster, const std::string& name, const std::string& role,
                                   const std::vector<std::string>& lists) {
  const fs::path dir = Keygen(cluster, "keys-" + name, name, role);
  for (const std::string& list : lists) {
    fs::copy_file(dir / (name + ".pub"), cluster.keys() / "authorized" / list / (name + ".pub"),
                  fs::copy_options::overwrite_existing);
  }
  return dir;
}

// A one-node noop spec `name` of `tasks` tasks sleeping `sleep_ms` each, in workdir work-NAME.
inline fs::path WriteNoopSpec(Cluster& cluster, const std::string& name, int tasks, int sleep_ms) {
  const fs::path spec = cluster.dir() / (name + ".yaml");
  WriteFile(spec, "name: " + name + "\nworkdir: work-" + name + "\nnodes:\n  - id: n\n    op: noop\n" +
                      "    params: {tasks: " + std::to_string(tasks) +
                      ", sleep_ms: " + std::to_string(sleep_ms) + "}\n");
  return spec;
}

inline size_t CountLines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace coupler::itest
