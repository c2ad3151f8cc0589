// A JobState from spec text, for the scheduler's tests: parsed, validated and planned as the
// coordinator does it, with no datasets on disk (noop and mpi_exec nodes need none).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "coordinator/job_state.h"
#include "runtime/plan/planner.h"
#include "tests/unit/spec_test_util.h"

namespace coupler::coordinator::testing {

inline std::unique_ptr<JobState> MakeJob(const std::string& id, const std::string& yaml) {
  job::LoadedJob j = job::testing::Load(yaml);
  EXPECT_TRUE(j.ok()) << j.diags.ToString();
  auto plan = plan::PlanJob(*j.graph);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return std::make_unique<JobState>(id, std::move(*j.graph), std::move(*plan), DatasetListing{});
}

// What a worker reports for the attempt `spec` sent it: success, or a failure with `error`.
inline wire::TaskOutcome OutcomeOf(const wire::TaskSpec& spec, bool ok = true,
                                   std::string error = "") {
  wire::TaskOutcome o;
  o.job_id = spec.job_id;
  o.task_id = spec.task_id;
  o.attempt = spec.attempt;
  o.ok = ok;
  o.error = std::move(error);
  return o;
}

}  // namespace coupler::coordinator::testing
