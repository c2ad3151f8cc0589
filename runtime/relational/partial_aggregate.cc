#include "runtime/relational/partial_aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include "runtime/relational/table_rows.h"

namespace coupler::relational {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The state column `field` of aggregate i: "__a3_n".
std::string State(size_t i, const char* field) { return "__a" + std::to_string(i) + "_" + field; }

// Per group, the row (of `column`) that wins: the first or last present value, or the
// smallest or largest; kMissingRow where the group has none.
template <typename Better>
std::vector<uint32_t> Pick(const io::Column& column, const RowGroups& g, size_t groups, Better better) {
  std::vector<uint32_t> pick(groups, kMissingRow);
  for (size_t r = 0; r < column.size(); ++r) {
    const uint32_t k = g.of_row[r];
    if (k == kMissingRow || IsMissing(column, r)) continue;
    if (pick[k] == kMissingRow || better(static_cast<uint32_t>(r), pick[k])) pick[k] = static_cast<uint32_t>(r);
  }
  return pick;
}

auto Less(const io::Column& c) {
  return [&c](uint32_t a, uint32_t b) {
    bool less = false;
    VisitValues(c, [&](auto in) { less = in[a] < in[b]; });
    return less;
  };
}

io::ColumnSchema SchemaOf(const io::Column& c) { return {c.name(), c.dtype(), c.categorical()}; }

}  // namespace

bool CanCombine(const GroupByOptions& options) {
  return std::none_of(options.aggregates.begin(), options.aggregates.end(),
                      [](const AggregateSpec& a) { return a.fn == AggregateFn::kNunique; });
}

Result<io::Table> PartialAggregate(const io::Table& rows, const GroupByOptions& options,
                                   const GroupFold& fold) {
  if (!CanCombine(options)) return InvalidArgument("nunique does not fold into a partial state");
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> keys, ColumnIndexes(rows, options.keys, "key column"));
  const RowGroups g = GroupRows(rows, keys, options.drop_missing_keys);
  const size_t groups = g.first_row.size();
  io::Table out;
  for (const size_t k : keys) {
    COUPLER_RETURN_IF_ERROR(out.AddColumn(TakeColumnRows(rows.column(k), g.first_row)));
  }
  for (size_t i = 0; i < options.aggregates.size(); ++i) {
    const AggregateSpec& a = options.aggregates[i];
    if (a.fn == AggregateFn::kSize) {
      std::vector<int64_t> n(groups, 0);
      for (const uint32_t k : g.of_row) {
        if (k != kMissingRow) ++n[k];
      }
      COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Int64(State(i, "n"), std::move(n))));
      continue;
    }
    const io::Column* c = rows.Find(a.column);
    if (c == nullptr) return InvalidArgument("no column '" + a.column + "' for " + a.output);
    const io::ColumnSchema in = SchemaOf(*c);
    COUPLER_ASSIGN_OR_RETURN(const io::ColumnSchema typed, AggregateOutput(a, &in));
    switch (a.fn) {
      case AggregateFn::kMin:
      case AggregateFn::kMax:
      case AggregateFn::kFirst:
      case AggregateFn::kLast: {
        const auto less = Less(*c);
        std::vector<uint32_t> pick =
            a.fn == AggregateFn::kMin   ? Pick(*c, g, groups, less)
            : a.fn == AggregateFn::kMax ? Pick(*c, g, groups, [&](uint32_t x, uint32_t y) { return less(y, x); })
            : a.fn == AggregateFn::kFirst ? Pick(*c, g, groups, [](uint32_t, uint32_t) { return false; })
                                          : Pick(*c, g, groups, [](uint32_t, uint32_t) { return true; });
        io::Column v = TakeColumnRows(*c, pick);
        v.set_name(State(i, "v"));
        COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(v)));
        break;
      }
      default: {
        // count, sum, mean, std, var: the present values' count, sum (exact int64 for integer
        // sums) and Welford's mean and M2, folded where `fold` runs them.
        const std::vector<uint32_t> group = PresentGroups(*c, g);
        if (a.fn == AggregateFn::kSum && typed.dtype == ElementType::kInt64) {
          GroupSums sums(groups);
          COUPLER_RETURN_IF_ERROR(fold.sums(group, ValuesAsInt64(*c), sums));
          COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Int64(State(i, "n"), std::move(sums.n))));
          COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Int64(State(i, "s"), std::move(sums.sum))));
          break;
        }
        GroupMoments m(groups);
        COUPLER_RETURN_IF_ERROR(fold.moments(group, ValuesAsDouble(*c), m));
        COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Int64(State(i, "n"), std::move(m.n))));
        if (a.fn == AggregateFn::kSum || a.fn == AggregateFn::kMean) {
          COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Float64(State(i, "s"), std::move(m.sum))));
        } else if (a.fn == AggregateFn::kStd || a.fn == AggregateFn::kVar) {
          COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Float64(State(i, "mean"), std::move(m.mean))));
          COUPLER_RETURN_IF_ERROR(out.AddColumn(io::Column::Float64(State(i, "m2"), std::move(m.m2))));
        }
      }
    }
  }
  return out;
}

Result<io::Table> MergePartials(const io::Table& partials, const GroupByOptions& options) {
  if (!CanCombine(options)) return InvalidArgument("nunique does not fold into a partial state");
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> keys, ColumnIndexes(partials, options.keys, "key column"));
  // The maps dropped what had to be dropped: a missing key here is a group (dropna: false).
  const RowGroups g = GroupRows(partials, keys, false);
  const size_t groups = g.first_row.size();
  auto col = [&](size_t i, const char* field) -> Result<const io::Column*> {
    const io::Column* c = partials.Find(State(i, field));
    if (c == nullptr) return InvalidArgument("a partial state without its column " + State(i, field));
    return c;
  };
  std::vector<io::Column> values;
  for (size_t i = 0; i < options.aggregates.size(); ++i) {
    const AggregateSpec& a = options.aggregates[i];
    switch (a.fn) {
      case AggregateFn::kMin:
      case AggregateFn::kMax:
      case AggregateFn::kFirst:
      case AggregateFn::kLast: {
        COUPLER_ASSIGN_OR_RETURN(const io::Column* v, col(i, "v"));
        const auto less = Less(*v);
        // Partials are in map order: the first present is the first in the input.
        std::vector<uint32_t> pick =
            a.fn == AggregateFn::kMin   ? Pick(*v, g, groups, less)
            : a.fn == AggregateFn::kMax ? Pick(*v, g, groups, [&](uint32_t x, uint32_t y) { return less(y, x); })
            : a.fn == AggregateFn::kFirst ? Pick(*v, g, groups, [](uint32_t, uint32_t) { return false; })
                                          : Pick(*v, g, groups, [](uint32_t, uint32_t) { return true; });
        io::Column out = TakeColumnRows(*v, pick);
        out.set_name(a.output);
        values.push_back(std::move(out));
        break;
      }
      default: {
        COUPLER_ASSIGN_OR_RETURN(const io::Column* n_col, col(i, "n"));
        const auto n_in = n_col->values<int64_t>();
        std::vector<int64_t> n(groups, 0);
        for (size_t r = 0; r < partials.rows(); ++r) n[g.of_row[r]] += n_in[r];
        if (a.fn == AggregateFn::kSize || a.fn == AggregateFn::kCount) {
          values.push_back(io::Column::Int64(a.output, std::move(n)));
          break;
        }
        if (a.fn == AggregateFn::kSum || a.fn == AggregateFn::kMean) {
          COUPLER_ASSIGN_OR_RETURN(const io::Column* s, col(i, "s"));
          if (s->dtype() == ElementType::kInt64) {
            std::vector<int64_t> sum(groups, 0);
            const auto in = s->values<int64_t>();
            for (size_t r = 0; r < partials.rows(); ++r) {
              int64_t& t = sum[g.of_row[r]];
              t = static_cast<int64_t>(static_cast<uint64_t>(t) + static_cast<uint64_t>(in[r]));
            }
            values.push_back(io::Column::Int64(a.output, std::move(sum)));
            break;
          }
          std::vector<double> sum(groups, 0.0);
          const auto in = s->values<double>();
          for (size_t r = 0; r < partials.rows(); ++r) sum[g.of_row[r]] += in[r];
          if (a.fn == AggregateFn::kMean) {
            for (size_t k = 0; k < groups; ++k) sum[k] = n[k] > 0 ? sum[k] / static_cast<double>(n[k]) : kNaN;
          }
          values.push_back(io::Column::Float64(a.output, std::move(sum)));
          break;
        }
        // std, var: Chan et al.'s merge of (n, mean, M2), in map order.
        COUPLER_ASSIGN_OR_RETURN(const io::Column* mean_col, col(i, "mean"));
        COUPLER_ASSIGN_OR_RETURN(const io::Column* m2_col, col(i, "m2"));
        std::vector<int64_t> count(groups, 0);
        std::vector<double> mean(groups, 0.0), m2(groups, 0.0);
        for (size_t r = 0; r < partials.rows(); ++r) {
          const int64_t nb = n_in[r];
          if (nb == 0) continue;
          const uint32_t k = g.of_row[r];
          const double mb = mean_col->values<double>()[r], m2b = m2_col->values<double>()[r];
          const int64_t na = count[k];
          const double delta = mb - mean[k];
          const double total = static_cast<double>(na + nb);
          mean[k] += delta * static_cast<double>(nb) / total;
          m2[k] += m2b + delta * delta * static_cast<double>(na) * static_cast<double>(nb) / total;
          count[k] = na + nb;
        }
        std::vector<double> out(groups, kNaN);
        for (size_t k = 0; k < groups; ++k) {
          if (count[k] < 2) continue;
          const double var = m2[k] / static_cast<double>(count[k] - 1);
          out[k] = a.fn == AggregateFn::kStd ? std::sqrt(var) : var;
        }
        values.push_back(io::Column::Float64(a.output, std::move(out)));
      }
    }
  }
  // Groups in key order, as GroupAggregate writes them.
  std::vector<uint32_t> order(groups);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return CompareKeys(partials, keys, g.first_row[a], g.first_row[b]) < 0;
  });
  std::vector<uint32_t> first_rows(groups);
  for (size_t i = 0; i < groups; ++i) first_rows[i] = g.first_row[order[i]];
  io::Table out;
  for (const size_t k : keys) {
    COUPLER_RETURN_IF_ERROR(out.AddColumn(TakeColumnRows(partials.column(k), first_rows)));
  }
  for (io::Column& v : values) {
    io::Column sorted = TakeColumnRows(v, order);
    if (out.Find(sorted.name()) != nullptr) {
      return InvalidArgument("aggregate '" + sorted.name() + "' has a key column's name");
    }
    COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(sorted)));
  }
  return out;
}

}  // namespace coupler::relational
