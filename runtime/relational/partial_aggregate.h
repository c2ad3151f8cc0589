// group_by's combiner: a map task folds its shard's rows into one row of partial state per
// group (count, sum, mean and M2, min, max, first, last), so a shuffle carries one row per key
// and map task instead of every row, and a reduce merges those rows (Chan et al. for M2) into
// the same answer GroupAggregate gives from the rows themselves. nunique cannot be folded so
// (its distinct values would have to travel): a group_by with it ships rows. Pure.
#pragma once

#include "runtime/io/table.h"
#include "runtime/relational/group_aggregate.h"
#include "runtime/relational/group_fold.h"
#include "runtime/status.h"

namespace coupler::relational {

// Whether every aggregate folds into a partial state (all but nunique).
bool CanCombine(const GroupByOptions& options);

// The key columns (one row per group, in order of first appearance; a missing key drops the
// row when options.drop_missing_keys), then the state columns of each aggregate; the numeric
// states folded where `fold` runs them.
Result<io::Table> PartialAggregate(const io::Table& rows, const GroupByOptions& options,
                                   const GroupFold& fold = {});

// Partial tables of one partition, concatenated in map order (Concatenate), merged: the keys
// sorted, then each aggregate's value, exactly as GroupAggregate lays them out.
Result<io::Table> MergePartials(const io::Table& partials, const GroupByOptions& options);

}  // namespace coupler::relational
