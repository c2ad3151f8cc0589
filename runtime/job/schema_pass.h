// The column pass of validation: derives each node's output columns (io::TableSchema) from its
// inputs, where they are known, and type-checks every expression against them (filter's
// `where`, derive's `columns`, select's names), so a misspelt column is a plan-time error with
// the spec's file:line and the place inside the expression.
#pragma once

#include "runtime/job/diagnostics.h"
#include "runtime/job/job_graph.h"
#include "runtime/job/validator.h"

namespace coupler::job {

// `graph` has passed the rest of ValidateJob (inputs resolved, params typed, no cycle). Sets
// each node's output_schema.
void CheckColumnSchemas(JobGraph& graph, const ValidationEnv& env, Diagnostics& diags);

}  // namespace coupler::job
