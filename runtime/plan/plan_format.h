// How a Plan is shown: a table for people, JSON for scripts (`coupler plan --json`).
#pragma once

#include <string>

#include "runtime/plan/planner.h"

namespace coupler::plan {

std::string FormatPlanTable(const Plan& plan);

// {"job": NAME, "stages": S, "total_tasks": T, "nodes": [{"id", "op", "coupling", "tasks",
//  "ranks", "hardware", "stage", "deps": [...], "output_shards", "fused_after" (or null),
//  "output_in_memory", "columns": [{"name", "type", "nullable", "dictionary"}] or null where
//  not known}], "fused_chains": [[ids in run order], ...]}
// The table lists the fused chains (fusion.h), then each node's columns (type, nullable, dictionary) where they are known.
std::string FormatPlanJson(const Plan& plan);

}  // namespace coupler::plan
