// group_by's arithmetic and the row plumbing under it, on tables small enough to check by hand:
// pandas' NA rules per function, strings that are one key whatever their codes, ints past 2^53,
// the order of groups and of first/last, and the hash that routes rows between workers.
#include "runtime/relational/group_aggregate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "runtime/relational/partial_aggregate.h"
#include "runtime/relational/table_rows.h"
#include "tests/unit/relational_test_util.h"

#include <random>

namespace coupler::relational {
namespace {

using io::Column;
using io::Table;

using testing::StringAt;
using testing::Strings;

AggregateSpec Agg(const std::string& out, const std::string& text) {
  auto spec = ParseAggregate(out, text);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : AggregateSpec{};
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNA = io::kMissingInt64;

TEST(GroupAggregateTest, FollowsPandasDefaultsForEveryFunction) {
  // user: b, a, b, NA, a, b   x: 1, NaN, 3, 9, 4, NaN   q: 2^53+1, 5, NA, 7, 6, 1
  Table t;
  ASSERT_TRUE(t.AddColumn(Strings("user", {1, 0, 1, -1, 0, 1}, {"a", "b"})).ok());
  ASSERT_TRUE(t.AddColumn(Column::Float64("x", {1, kNaN, 3, 9, 4, kNaN})).ok());
  ASSERT_TRUE(t.AddColumn(Column::Int64("q", {(int64_t{1} << 53) + 1, 5, kNA, 7, 6, 1})).ok());
  GroupByOptions o;
  o.keys = {"user"};
  for (const auto& [out, text] : std::vector<std::pair<std::string, std::string>>{
           {"n", "size()"}, {"cnt", "count(x)"}, {"sum", "sum(x)"}, {"mean", "mean(x)"},
           {"min", "min(x)"}, {"max", "max(x)"}, {"std", "std(x)"}, {"var", "var(q)"},
           {"qsum", "sum(q)"}, {"qmax", "max(q)"}, {"first", "first(x)"}, {"last", "last(x)"},
           {"uniq", "nunique(x)"}}) {
    o.aggregates.push_back(Agg(out, text));
  }
  auto r = GroupAggregate(t, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows(), 2u) << "the row with a missing key belongs to no group";
  EXPECT_EQ(StringAt(*r->Find("user"), 0), "a");
  EXPECT_EQ(StringAt(*r->Find("user"), 1), "b");
  auto f64 = [&](const char* c, size_t row) { return r->Find(c)->values<double>()[row]; };
  auto i64 = [&](const char* c, size_t row) { return r->Find(c)->values<int64_t>()[row]; };
  EXPECT_EQ(i64("n", 0), 2);
  EXPECT_EQ(i64("n", 1), 3);
  EXPECT_EQ(i64("cnt", 0), 1);
  EXPECT_EQ(i64("cnt", 1), 2);
  EXPECT_EQ(f64("sum", 0), 4.0);
  EXPECT_EQ(f64("sum", 1), 4.0);
  EXPECT_EQ(f64("mean", 1), 2.0);
  EXPECT_EQ(f64("min", 1), 1.0);
  EXPECT_EQ(f64("max", 1), 3.0);
  EXPECT_TRUE(std::isnan(f64("std", 0))) << "one value: no sample deviation";
  EXPECT_DOUBLE_EQ(f64("std", 1), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(f64("var", 0), 0.5);
  EXPECT_EQ(i64("qsum", 1), (int64_t{1} << 53) + 2) << "an int64 sum never goes through a double";
  EXPECT_EQ(i64("qmax", 1), (int64_t{1} << 53) + 1);
  EXPECT_EQ(f64("first", 0), 4.0) << "first skips the missing value";
  EXPECT_EQ(f64("last", 1), 3.0) << "last skips the missing value";
  EXPECT_EQ(i64("uniq", 1), 2);
}

TEST(GroupAggregateTest, MissingKeysFormTheLastGroupWhenKept) {
  Table t;
  ASSERT_TRUE(t.AddColumn(Column::Int64("k", {3, kNA, -1, 3, kNA})).ok());
  ASSERT_TRUE(t.AddColumn(Column::Float32("x", {1, 2, 3, 4, std::nanf("")})).ok());
  GroupByOptions o;
  o.keys = {"k"};
  o.drop_missing_keys = false;
  o.aggregates = {Agg("s", "sum(x)"), Agg("m", "min(x)")};
  auto r = GroupAggregate(t, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows(), 3u);
  EXPECT_EQ(r->Find("k")->values<int64_t>()[0], -1);
  EXPECT_EQ(r->Find("k")->values<int64_t>()[1], 3);
  EXPECT_EQ(r->Find("k")->values<int64_t>()[2], kNA);
  EXPECT_EQ(r->Find("s")->values<double>()[2], 2.0);
  EXPECT_EQ(r->Find("m")->dtype(), ElementType::kFloat32) << "min keeps the column's type";
  EXPECT_EQ(r->Find("s")->values<double>()[1], 5.0);
}

TEST(GroupAggregateTest, AGroupWithNoValuesSumsToZeroAndHasNoMinimum) {
  Table t;
  ASSERT_TRUE(t.AddColumn(Column::Int64("k", {1, 1})).ok());
  ASSERT_TRUE(t.AddColumn(Column::Int64("q", {kNA, kNA})).ok());
  GroupByOptions o;
  o.keys = {"k"};
  o.aggregates = {Agg("s", "sum(q)"), Agg("lo", "min(q)"), Agg("avg", "mean(q)"),
                  Agg("c", "count(q)"), Agg("f", "first(q)")};
  auto r = GroupAggregate(t, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Find("s")->values<int64_t>()[0], 0);
  EXPECT_EQ(r->Find("lo")->values<int64_t>()[0], kNA);
  EXPECT_TRUE(std::isnan(r->Find("avg")->values<double>()[0]));
  EXPECT_EQ(r->Find("c")->values<int64_t>()[0], 0);
  EXPECT_EQ(r->Find("f")->values<int64_t>()[0], kNA);
}

TEST(GroupAggregateTest, RefusesFunctionsThatDoNotApply) {
  Table t;
  ASSERT_TRUE(t.AddColumn(Strings("s", {0}, {"a"})).ok());
  GroupByOptions o;
  o.keys = {"s"};
  o.aggregates = {Agg("bad", "sum(s)")};
  EXPECT_FALSE(GroupAggregate(t, o).ok());
  EXPECT_FALSE(ParseAggregate("x", "median(s)").ok());
  EXPECT_FALSE(ParseAggregate("x", "sum()").ok());
  EXPECT_FALSE(ParseAggregate("x", "size(a)").ok());
  EXPECT_FALSE(ParseAggregate("x", "sum(a, b)").ok());
  EXPECT_EQ(ParseAggregate("x", " sum ( amount ) ")->column, "amount");
}

// Folding each part into partial states and merging them gives what aggregating the rows gives,
// whatever the split: the combiner changes where the work is done, never the answer.
TEST(GroupAggregateTest, PartialStatesMergeToTheSameAnswerAsTheRows) {
  std::mt19937_64 rng(5);
  auto part = [&](size_t rows, std::vector<std::string> dictionary) {
    Table t;
    std::vector<int32_t> codes(rows);
    std::vector<double> x(rows);
    std::vector<int64_t> q(rows);
    for (size_t r = 0; r < rows; ++r) {
      codes[r] = static_cast<int32_t>(rng() % (dictionary.size() + 1)) - 1;  // -1: missing
      x[r] = rng() % 7 == 0 ? kNaN : static_cast<double>(rng() % 1000) / 8.0;
      q[r] = rng() % 9 == 0 ? kNA : static_cast<int64_t>(rng() % 100000) + (int64_t{1} << 53);
    }
    EXPECT_TRUE(t.AddColumn(Strings("k", std::move(codes), std::move(dictionary))).ok());
    EXPECT_TRUE(t.AddColumn(Column::Float64("x", std::move(x))).ok());
    EXPECT_TRUE(t.AddColumn(Column::Int64("q", std::move(q))).ok());
    return t;
  };
  const std::vector<Table> parts = {part(500, {"a", "b", "c"}), part(0, {"a"}),
                                    part(300, {"c", "d", "a"}), part(1, {"b"})};
  for (const bool dropna : {true, false}) {
    GroupByOptions o;
    o.keys = {"k"};
    o.drop_missing_keys = dropna;
    for (const auto& [out, text] : std::vector<std::pair<std::string, std::string>>{
             {"n", "size()"}, {"c", "count(x)"}, {"s", "sum(x)"}, {"m", "mean(x)"},
             {"lo", "min(x)"}, {"hi", "max(q)"}, {"sd", "std(x)"}, {"v", "var(x)"},
             {"qs", "sum(q)"}, {"f", "first(x)"}, {"l", "last(q)"}}) {
      o.aggregates.push_back(Agg(out, text));
    }
    std::vector<Table> partials;
    for (const Table& p : parts) {
      auto folded = PartialAggregate(p, o);
      ASSERT_TRUE(folded.ok()) << folded.status().ToString();
      partials.push_back(std::move(folded).value());
    }
    auto all_partials = Concatenate(partials);
    ASSERT_TRUE(all_partials.ok()) << all_partials.status().ToString();
    auto merged = MergePartials(*all_partials, o);
    ASSERT_TRUE(merged.ok()) << merged.status().ToString();
    auto all_rows = Concatenate(parts);
    ASSERT_TRUE(all_rows.ok());
    auto direct = GroupAggregate(*all_rows, o);
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    ASSERT_EQ(merged->Describe(), direct->Describe());
    ASSERT_EQ(merged->rows(), direct->rows());
    for (size_t c = 0; c < direct->num_columns(); ++c) {
      const Column& a = merged->column(c);
      const Column& b = direct->column(c);
      for (size_t r = 0; r < direct->rows(); ++r) {
        ASSERT_EQ(IsMissing(a, r), IsMissing(b, r)) << a.name() << " row " << r;
        if (IsMissing(a, r)) continue;
        if (a.categorical()) {
          EXPECT_EQ(StringAt(a, r), StringAt(b, r)) << a.name() << " row " << r;
        } else if (a.dtype() == ElementType::kFloat64) {
          EXPECT_NEAR(a.values<double>()[r], b.values<double>()[r],
                      1e-9 * std::max(1.0, std::abs(b.values<double>()[r])))
              << a.name() << " row " << r;
        } else {
          EXPECT_EQ(a.values<int64_t>()[r], b.values<int64_t>()[r]) << a.name() << " row " << r;
        }
      }
    }
  }
  GroupByOptions with_nunique;
  with_nunique.keys = {"k"};
  with_nunique.aggregates = {Agg("u", "nunique(x)")};
  EXPECT_FALSE(CanCombine(with_nunique));
}

TEST(TableRowsTest, StringsAreOneKeyWhateverTheirCodes) {
  // Two shards' dictionaries number the same strings differently.
  Table a, b;
  ASSERT_TRUE(a.AddColumn(Strings("s", {0, 1, -1}, {"x", "y"})).ok());
  ASSERT_TRUE(b.AddColumn(Strings("s", {1, 0}, {"y", "x"})).ok());  // "x", "y"
  const std::vector<size_t> keys = {0};
  const auto ha = HashKeys(a, keys), hb = HashKeys(b, keys);
  EXPECT_EQ(ha[0], hb[0]);  // "x": code 0 in a, 1 in b
  EXPECT_EQ(ha[1], hb[1]);  // "y"
  EXPECT_NE(ha[0], ha[1]);
  auto both = Concatenate({a, b});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  const Column& s = both->column(0);
  ASSERT_EQ(s.dictionary()->size(), 2u) << "each string once";
  std::vector<std::string> got;
  for (size_t r = 0; r < s.size(); ++r) got.push_back(StringAt(s, r));
  EXPECT_EQ(got, (std::vector<std::string>{"x", "y", "<NA>", "x", "y"}));
}

TEST(TableRowsTest, NumbersHashByValueAcrossTypes) {
  Table t;
  ASSERT_TRUE(t.AddColumn(Column::Int32("i", {3, 0})).ok());
  ASSERT_TRUE(t.AddColumn(Column::Int64("l", {3, 0})).ok());
  ASSERT_TRUE(t.AddColumn(Column::Float64("d", {3.0, -0.0})).ok());
  for (size_t k = 1; k < 3; ++k) {
    const std::vector<size_t> first = {0}, other = {k};
    EXPECT_EQ(HashKeys(t, first), HashKeys(t, other)) << t.column(k).name();
  }
}

TEST(TableRowsTest, ConcatenateRefusesPartsWithOtherColumns) {
  Table a, b;
  ASSERT_TRUE(a.AddColumn(Column::Int64("k", {1})).ok());
  ASSERT_TRUE(b.AddColumn(Column::Float64("k", {1})).ok());
  EXPECT_FALSE(Concatenate({a, b}).ok());
}

}  // namespace
}  // namespace coupler::relational
