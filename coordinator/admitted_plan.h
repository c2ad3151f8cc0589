// AdmittedPlan: everything admission decided about a job, as one versioned record written with
// the job. A restart decodes it into the job's state as it was admitted — the validated graph,
// the plan that numbered its tasks, the dataset shards listed, the node keys and reuse, the
// workdir marker — without running the parser, the validator or the planner again. So a release
// that plans differently never renumbers a restored job's tasks under their commits, and inputs
// that changed on disk after admission never change which task is which.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/task_specs.h"
#include "runtime/job/job_graph.h"
#include "runtime/plan/planner.h"
#include "runtime/status.h"

namespace coupler::coordinator {

struct AdmittedPlan {
  // The graph as validated, params typed and inputs resolved; its workdir is the job's run
  // directory. What only diagnostics read (raw params, source positions) is not kept.
  job::JobGraph graph;
  plan::Plan plan;
  DatasetListing datasets;       // the shard files of each dataset directory, listed once
  std::string workdir_marker;    // the token of the marker in the run directory
  std::vector<std::string> node_keys;     // per plan node; empty when not computed
  std::map<size_t, std::string> reused;   // plan node -> the run directory its outputs came from
};

// The record: "CPLP", a u16 format version (kAdmittedPlanVersion), then the fields in cereal's
// binary layout, enums as pinned numbers (admitted_plan.cc lists them). Version 2 added the
// fused chains (runtime/plan/fusion.h) and `keep`; a version-1 record still decodes, unfused.
// A record of a version this build does not know is refused by name, never half read.
inline constexpr uint16_t kAdmittedPlanVersion = 2;
std::string EncodeAdmittedPlan(const AdmittedPlan& plan);
// Internal for a record that is damaged, of another format or version, or not self-consistent
// (a plan node naming a graph node that is not there).
Result<AdmittedPlan> DecodeAdmittedPlan(std::string_view bytes);

}  // namespace coupler::coordinator
