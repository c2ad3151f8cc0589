// A job for fault tests across hosts: import_csv into shards, then one exec task per shard that
// logs which worker ran it and copies its shard, so a test can tell what ran where and how often
// (hostnames cannot tell hosts apart; a worker started with WorkerTag(id) can).
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {

// The environment that makes a worker's exec tasks log `id` (pass to StartWorker's env).
inline std::map<std::string, std::string> WorkerTag(const std::string& id) {
  return {{"COUPLER_TEST_WORKER", id}};
}

// SPEC_DIR/NAME.yaml: SPEC_DIR/NAME.csv imported into `shards` shards under SPEC_DIR/NAME-work,
// then node `copy`, whose every task appends "SHARD WORKER" to `log`, sleeps `sleep_s` and
// copies its shard. Returns the spec's path.
inline fs::path WriteLoggedCopyJob(const fs::path& spec_dir, const std::string& name, int shards,
                                   const fs::path& log, const std::string& sleep_s) {
  WriteSyntheticCsv(spec_dir / (name + ".csv"), 20 * shards, 3);
  const fs::path spec = spec_dir / (name + ".yaml");
  WriteFile(spec, "name: " + name + "\nworkdir: " + name + "-work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" + name + ".csv], params: {shards: " +
                  std::to_string(shards) + "}}\n"
                  "  - id: copy\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"echo {shard} $COUPLER_TEST_WORKER >> " + log.string() +
                  " && sleep " + sleep_s + " && cp {input} {output}\"\n      timeout: 120\n");
  return spec;
}

// The run folder of a WriteLoggedCopyJob: its workdir's newest run (docs/runs.md).
inline fs::path LoggedJobWork(const fs::path& spec_dir, const std::string& name) {
  return spec_dir / (name + "-work") / "latest";
}

// Each run a WriteLoggedCopyJob's log records, in order: (shard, worker id).
inline std::vector<std::pair<int, std::string>> LoggedRuns(const fs::path& log) {
  std::vector<std::pair<int, std::string>> runs;
  std::stringstream in(ReadFile(log));
  for (std::string line; std::getline(in, line);) {
    std::stringstream fields(line);
    int shard = -1;
    std::string worker;
    if (fields >> shard >> worker) runs.emplace_back(shard, worker);
  }
  return runs;
}

// shard -> how many times it ran, over every run in the log.
inline std::map<int, int> RunsPerShard(const std::vector<std::pair<int, std::string>>& runs) {
  std::map<int, int> n;
  for (const auto& [shard, worker] : runs) ++n[shard];
  return n;
}

// The workers that ran anything.
inline std::set<std::string> WorkersThatRan(const std::vector<std::pair<int, std::string>>& runs) {
  std::set<std::string> out;
  for (const auto& [shard, worker] : runs) out.insert(worker);
  return out;
}

// "" when the copy node's folder holds exactly parts 0..shards-1, each equal to the import's
// shard; otherwise what differs.
inline std::string CheckCopiedShards(const fs::path& work, int shards) {
  std::vector<std::string> expected;
  for (int s = 0; s < shards; ++s) expected.push_back(CommandPartName(s));
  std::string out;
  if (ListDir(work / "copy") != expected) {
    out += "copy/ holds:";
    for (const auto& n : ListDir(work / "copy")) out += " " + n;
    out += "\n";
  }
  for (int s = 0; s < shards; ++s) {
    const std::string original = ReadFile(work / "import" / PartName(s));
    if (original.empty()) out += "import shard " + std::to_string(s) + " is empty or missing\n";
    if (ReadFile(work / "copy" / CommandPartName(s)) != original) {
      out += "copy shard " + std::to_string(s) + " differs from its input\n";
    }
  }
  return out;
}

}  // namespace coupler::itest
