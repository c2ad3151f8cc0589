#include "runtime/relational/group_aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/relational/table_rows.h"

namespace coupler::relational {
namespace {

// One aggregate's output column over the groups (in group-id order).
Result<io::Column> Aggregate(const io::Table& rows, const RowGroups& g, const AggregateSpec& spec,
                             const io::ColumnSchema& out_schema, const GroupFold& fold) {
  const size_t groups = g.first_row.size();
  const size_t n = rows.rows();
  if (spec.fn == AggregateFn::kSize) {
    std::vector<int64_t> size(groups, 0);
    for (size_t r = 0; r < n; ++r) {
      if (g.of_row[r] != kMissingRow) ++size[g.of_row[r]];
    }
    return io::Column::Int64(spec.output, std::move(size));
  }
  const io::Column& column = *rows.Find(spec.column);
  auto present = [&](size_t r) { return g.of_row[r] != kMissingRow && !IsMissing(column, r); };
  switch (spec.fn) {
    case AggregateFn::kCount: {
      std::vector<int64_t> count(groups, 0);
      for (size_t r = 0; r < n; ++r) {
        if (present(r)) ++count[g.of_row[r]];
      }
      return io::Column::Int64(spec.output, std::move(count));
    }
    case AggregateFn::kFirst:
    case AggregateFn::kLast: {
      std::vector<uint32_t> pick(groups, kMissingRow);
      const bool first = spec.fn == AggregateFn::kFirst;
      for (size_t r = 0; r < n; ++r) {
        if (!present(r)) continue;
        uint32_t& p = pick[g.of_row[r]];
        if (!first || p == kMissingRow) p = static_cast<uint32_t>(r);
      }
      io::Column out = TakeColumnRows(column, pick);
      out.set_name(spec.output);
      return out;
    }
    case AggregateFn::kNunique: {
      const std::vector<uint64_t> words = KeyWords(column);
      std::vector<std::pair<uint32_t, uint64_t>> seen;
      seen.reserve(n);
      for (size_t r = 0; r < n; ++r) {
        if (present(r)) seen.emplace_back(g.of_row[r], words[r]);
      }
      std::sort(seen.begin(), seen.end());
      std::vector<int64_t> distinct(groups, 0);
      for (size_t i = 0; i < seen.size(); ++i) {
        if (i == 0 || seen[i] != seen[i - 1]) ++distinct[seen[i].first];
      }
      return io::Column::Int64(spec.output, std::move(distinct));
    }
    default: break;
  }
  if (spec.fn == AggregateFn::kMin || spec.fn == AggregateFn::kMax) {
    return VisitValues(column, [&](auto in) {
      const bool min = spec.fn == AggregateFn::kMin;
      std::vector<uint32_t> best(groups, kMissingRow);
      for (size_t r = 0; r < n; ++r) {
        if (!present(r)) continue;
        uint32_t& b = best[g.of_row[r]];
        if (b == kMissingRow || (min ? in[r] < in[b] : in[b] < in[r])) b = static_cast<uint32_t>(r);
      }
      io::Column out = TakeColumnRows(column, best);
      out.set_name(spec.output);
      return out;
    });
  }
  // Arithmetic: sum, mean, std, var, folded where `fold` runs them.
  if (spec.fn == AggregateFn::kSum && out_schema.dtype == ElementType::kInt64) {
    GroupSums sums(groups);
    COUPLER_RETURN_IF_ERROR(fold.sums(PresentGroups(column, g), ValuesAsInt64(column), sums));
    return io::Column::Int64(spec.output, std::move(sums.sum));
  }
  GroupMoments m(groups);
  COUPLER_RETURN_IF_ERROR(fold.moments(PresentGroups(column, g), ValuesAsDouble(column), m));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> out(groups, nan);
  for (size_t k = 0; k < groups; ++k) {
    const auto count = static_cast<double>(m.n[k]);
    switch (spec.fn) {
      case AggregateFn::kSum: out[k] = m.sum[k]; break;
      case AggregateFn::kMean: out[k] = m.n[k] > 0 ? m.sum[k] / count : nan; break;
      case AggregateFn::kVar: out[k] = m.n[k] > 1 ? m.m2[k] / (count - 1) : nan; break;
      case AggregateFn::kStd: out[k] = m.n[k] > 1 ? std::sqrt(m.m2[k] / (count - 1)) : nan; break;
      default: break;
    }
  }
  return io::Column::Float64(spec.output, std::move(out));
}

io::ColumnSchema SchemaOf(const io::Column& c) { return {c.name(), c.dtype(), c.categorical()}; }

}  // namespace

std::vector<std::string> GroupByColumns(const GroupByOptions& options) {
  std::vector<std::string> names = options.keys;
  for (const AggregateSpec& a : options.aggregates) {
    if (!a.column.empty() && std::find(names.begin(), names.end(), a.column) == names.end()) {
      names.push_back(a.column);
    }
  }
  return names;
}

Result<io::Table> GroupAggregate(const io::Table& rows, const GroupByOptions& options,
                                 const GroupFold& fold) {
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> keys,
                           ColumnIndexes(rows, options.keys, "key column"));
  std::vector<io::ColumnSchema> outputs;
  for (const AggregateSpec& a : options.aggregates) {
    const io::Column* c = a.column.empty() ? nullptr : rows.Find(a.column);
    if (!a.column.empty() && c == nullptr) {
      return InvalidArgument("no column '" + a.column + "' for " + a.output + " (the rows have " +
                             rows.Describe() + ")");
    }
    io::ColumnSchema in;
    if (c != nullptr) in = SchemaOf(*c);
    COUPLER_ASSIGN_OR_RETURN(io::ColumnSchema out, AggregateOutput(a, c != nullptr ? &in : nullptr));
    outputs.push_back(out);
  }
  const RowGroups g = GroupRows(rows, keys, options.drop_missing_keys);
  // Groups in key order: pandas sorts them (numbers by value, strings by text, missing last).
  std::vector<uint32_t> order(g.first_row.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return CompareKeys(rows, keys, g.first_row[a], g.first_row[b]) < 0;
  });
  std::vector<uint32_t> first_rows(order.size());
  for (size_t i = 0; i < order.size(); ++i) first_rows[i] = g.first_row[order[i]];

  io::Table out;
  for (const size_t k : keys) {
    COUPLER_RETURN_IF_ERROR(out.AddColumn(TakeColumnRows(rows.column(k), first_rows)));
  }
  for (size_t i = 0; i < options.aggregates.size(); ++i) {
    COUPLER_ASSIGN_OR_RETURN(io::Column by_group, Aggregate(rows, g, options.aggregates[i], outputs[i], fold));
    io::Column sorted = TakeColumnRows(by_group, order);
    if (out.Find(sorted.name()) != nullptr) {
      return InvalidArgument("aggregate '" + sorted.name() + "' has a key column's name");
    }
    COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(sorted)));
  }
  return out;
}

}  // namespace coupler::relational
