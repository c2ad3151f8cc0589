// A node's reuse key: what must be unchanged for its outputs from an earlier run to stand for
// this run's — its op, its params as validated (typed), its ranks and coupling, the keys of
// the nodes it reads, and the content hashes of the dataset files it reads. Pure: the file
// hashes come from the caller (reuse_index.h caches them).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/task_specs.h"
#include "runtime/job/job_graph.h"
#include "runtime/plan/planner.h"
#include "runtime/status.h"

namespace coupler::coordinator {

using FileHasher = std::function<Result<uint64_t>(const std::string& path)>;

// One key (32 hex digits) per plan node, in plan order. A dataset file that cannot be hashed
// is an error naming it (validation saw it, so it vanished since).
Result<std::vector<std::string>> NodeKeys(const job::JobGraph& graph, const plan::Plan& plan,
                                          const DatasetListing& datasets, const FileHasher& hash);

}  // namespace coupler::coordinator
