// JobParser: YAML (or JSON) text → JobGraph, checking structure only — the keys, their types
// and their shapes. Op-specific checks (params, inputs, cycles) are the validator's.
#pragma once

#include <optional>
#include <string_view>

#include "runtime/job/diagnostics.h"
#include "runtime/job/job_graph.h"

namespace coupler::job {

// Adds a diagnostic per structural problem. Returns the graph when the text was YAML with a
// mapping at the top (possibly with errors recorded), nullopt when nothing usable was found.
std::optional<JobGraph> ParseJobSpec(std::string_view text, Diagnostics& diags);

}  // namespace coupler::job
