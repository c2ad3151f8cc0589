// A node's reuse key: what must be unchanged for its outputs from an earlier run to stand for
// this run's — its op, its params as validated (typed), its ranks and coupling, the keys of
// the nodes it reads, the content hashes of the dataset files it reads, and for a command op
// (exec, mpi_exec) the content of the files its command names inside the spec's folder (the
// script `{spec_dir}/score.py` a user edits between runs). Pure: the file hashes come from the
// caller (reuse_index.h caches them).
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
// is an error naming it (validation saw it, so it vanished since). A word of a command that
// names no file that can be hashed (an output path, a folder) adds nothing.
// The words of a command that name a path inside `folder` (absolute, normalized), in order,
// shell quotes removed: what a command op's key hashes.
std::vector<std::string> CommandFilesUnder(std::string_view command, std::string_view folder);

Result<std::vector<std::string>> NodeKeys(const job::JobGraph& graph, const plan::Plan& plan,
                                          const DatasetListing& datasets, const FileHasher& hash);

}  // namespace coupler::coordinator
