// Temporary outputs left by a killed attempt: "<output>.tmp.<pid>.<hex>[...]" whose writer
// process is gone. A retry removes them before it runs, so a node's folder ends up holding its
// shards and nothing else.
#pragma once

#include <string>

namespace coupler::worker {

// Removes temporaries of `output_path` whose pid is not a live process on this host. Returns
// how many were removed. Scans the output's folder: call it for retries, not every task.
int RemoveStaleTemps(const std::string& output_path);

}  // namespace coupler::worker
