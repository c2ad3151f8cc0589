// Where one submission of a spec writes: its run directory under the spec's workdir.
// Layout (one place names it, like output_layout.h does for the files inside a run):
//   {workdir}/runs/{job_id}/{node}/part-NNNNN.npz   each submission its own run (the default;
//                                                   runs/{job_id}.2, .3... when that folder
//                                                   exists: another coordinator's j-000001)
//   {workdir}/{run_dir}/{node}/...                  a spec's `run_dir:` pins one ('.': workdir)
//   {workdir}/latest -> runs/{job_id}               the newest run (a symlink, swapped atomically)
//   {workdir}/reuse.json, {workdir}/file-hashes.json   what `reuse` looks up (reuse_index.h)
#pragma once

#include <string>
#include <string_view>

#include "runtime/job/job_graph.h"
#include "runtime/status.h"

namespace coupler::job {

inline constexpr std::string_view kRunsFolder = "runs";
inline constexpr std::string_view kLatestLink = "latest";

// Creates and returns the run directory of job `job_id` of `graph` (graph.workdir_root,
// graph.run_dir): absolute, normalized. An unpinned one is claimed by mkdir, which only one
// caller can win: job ids count per coordinator state, so two `coupler run`s (each with its
// own temporary state, both j-000001) still get separate folders.
Result<std::string> ClaimRunDir(const JobGraph& graph, std::string_view job_id);

// Points {root}/latest at `run_dir` (relative when it lies under root), replacing the link in
// one rename, so a reader never finds it missing. A `latest` that is not a symlink (a folder
// the user made) is left alone: InvalidArgument naming it.
Status PointLatestAt(const std::string& root, const std::string& run_dir);

}  // namespace coupler::job
