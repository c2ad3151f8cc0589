// Validator: checks a parsed JobGraph against the op registry and the filesystem, types every
// param (defaults filled in) and resolves inputs. One diagnostic per problem, all of them.
#pragma once

#include <functional>
#include <string>

#include "runtime/job/diagnostics.h"
#include "runtime/job/job_graph.h"
#include "runtime/ops/op_registry.h"

namespace coupler::job {

struct PathInfo {
  enum class Kind { kMissing, kFile, kDirectory };
  Kind kind = Kind::kMissing;
  int shards = 0;  // *.npy files directly inside, for directories
};

struct ValidationEnv {
  const ops::OpRegistry* registry = &ops::OpRegistry::Builtin();
  // Looks at an absolute path. Injected so validation is testable without a filesystem.
  std::function<PathInfo(const std::string& abs_path)> probe;
  std::string base_dir;  // relative paths resolve against this (the spec file's directory)
  std::string cwd;       // the default workdir ./coupler-work/<name> resolves here; empty: ours
};

// The filesystem probe used by LoadJob.
PathInfo ProbePath(const std::string& abs_path);

// Joins `path` onto `base_dir` unless it is absolute; normalizes "." and "..".
std::string ResolvePath(const std::string& base_dir, const std::string& path);

void ValidateJob(JobGraph& graph, const ValidationEnv& env, Diagnostics& diags);

}  // namespace coupler::job
