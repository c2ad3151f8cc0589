// LoadJobFile: the one call that turns a spec file into a validated JobGraph — read, parse,
// validate against the filesystem and the op registry — or the diagnostics saying why not.
#pragma once

#include <optional>
#include <string>

#include "runtime/job/diagnostics.h"
#include "runtime/job/job_graph.h"
#include "runtime/job/validator.h"

namespace coupler::job {

struct LoadedJob {
  std::optional<JobGraph> graph;  // set only when there are no diagnostics
  Diagnostics diags;
  bool ok() const { return graph.has_value() && diags.empty(); }
};

LoadedJob LoadJobFile(const std::string& path);

// For specs that arrive as text (a submitted job): `display_name` labels the diagnostics,
// relative paths resolve against `base_dir`.
LoadedJob LoadJobText(std::string_view text, const std::string& display_name,
                      const std::string& base_dir, const ValidationEnv& env);

}  // namespace coupler::job
