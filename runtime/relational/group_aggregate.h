// group_by's arithmetic on one partition's rows: rows with equal keys form a group, each
// aggregate is computed over the group's rows in input order, and the groups come out sorted
// by their keys — pandas' groupby(keys, sort=True, dropna=...).agg(...).reset_index(). Pure.
#pragma once

#include <string>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/relational/aggregate_spec.h"
#include "runtime/relational/group_fold.h"
#include "runtime/status.h"

namespace coupler::relational {

struct GroupByOptions {
  std::vector<std::string> keys;
  std::vector<AggregateSpec> aggregates;
  // pandas' default: a row whose key is missing in any key column belongs to no group. false:
  // missing keys form groups of their own, sorted last.
  bool drop_missing_keys = true;
};

// The key columns (values and dictionaries kept), then one column per aggregate, in order.
// `rows` holds at least the key and aggregated columns (categorical ones with one dictionary
// each, as Concatenate leaves them). InvalidArgument for a column it lacks or a function that
// does not apply to its type (AggregateOutput). The numeric aggregates are folded where `fold`
// runs them.
Result<io::Table> GroupAggregate(const io::Table& rows, const GroupByOptions& options,
                                 const GroupFold& fold = {});

// The columns group_by reads: the keys, then each aggregate's column once.
std::vector<std::string> GroupByColumns(const GroupByOptions& options);

}  // namespace coupler::relational
