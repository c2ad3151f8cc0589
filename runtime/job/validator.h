// Validator: checks a parsed JobGraph against the op registry and the filesystem, types every
// param (defaults filled in) and resolves inputs. One diagnostic per problem, all of them.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>
#include <string>

#include "runtime/job/diagnostics.h"
#include "runtime/io/column_schema.h"
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
  // The columns an import_csv node will produce, read from its CSV (CsvHeaderSchema in
  // runtime/job/dataset_schema.h). Null, or nullopt for a node: unknown, and the expressions
  // downstream are checked when the tasks run instead. Injected like `probe`.
  std::function<std::optional<io::TableSchema>(const NodeSpec& import_node)> dataset_schema;
  // The files a dataset-file input stands for when it is a glob (`data/*.csv.gz`) or a folder:
  // the matching regular files, sorted by name (a folder: its *.csv, *.csv.gz, *.csv.zst).
  // nullopt when `abs_path` is neither (then it is probed as one path). Injected like `probe`;
  // unset: globs and folders are not expanded.
  std::function<std::optional<std::vector<std::string>>(const std::string& abs_path)> list_files;
};

// The list_files used by LoadJob: glob(3) for a pattern (*, ?, [), a listing for a folder.
std::optional<std::vector<std::string>> ListDatasetFiles(const std::string& abs_path);

// True when `path` holds a glob character (*, ? or [).
bool IsGlobPattern(std::string_view path);

// The filesystem probe used by LoadJob.
PathInfo ProbePath(const std::string& abs_path);

// Joins `path` onto `base_dir` unless it is absolute; normalizes "." and "..".
std::string ResolvePath(const std::string& base_dir, const std::string& path);

void ValidateJob(JobGraph& graph, const ValidationEnv& env, Diagnostics& diags);

}  // namespace coupler::job
