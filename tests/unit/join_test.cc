// join's pairing on tables small enough to check by hand: every `how`, keys whose strings have
// other codes on the other side, an int32 key against an int64 one, missing keys matching each
// other (pandas' merge does), many-to-many, suffixes, and the types a missing side turns into.
#include "runtime/relational/join.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "runtime/relational/table_rows.h"
#include "tests/unit/relational_test_util.h"

namespace coupler::relational {
namespace {

using io::Column;
using io::Table;

using testing::StringAt;
using testing::Strings;

// left: k = a, b, NA, c ; id = 0..3 ; v = 10..13 (int32: a label)
// right: k = b, a, b, NA, d (other codes) ; rid = 0..4 ; v = 1.5 ...
Table Left() {
  Table t;
  EXPECT_TRUE(t.AddColumn(Strings("k", {0, 1, -1, 2}, {"a", "b", "c"})).ok());
  EXPECT_TRUE(t.AddColumn(Column::Int64("id", {0, 1, 2, 3})).ok());
  EXPECT_TRUE(t.AddColumn(Column::Int32("v", {10, 11, 12, 13})).ok());
  return t;
}
Table Right() {
  Table t;
  EXPECT_TRUE(t.AddColumn(Strings("k", {0, 1, 0, -1, 2}, {"b", "a", "d"})).ok());
  EXPECT_TRUE(t.AddColumn(Column::Int64("rid", {0, 1, 2, 3, 4})).ok());
  EXPECT_TRUE(t.AddColumn(Column::Float32("v", {1.5f, 2.5f, 3.5f, 4.5f, 5.5f})).ok());
  return t;
}

// (left id, right rid) of each output row; -1 for a missing side.
std::vector<std::pair<int64_t, int64_t>> Pairs(const Table& t) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const Column* id = t.Find("id");
  const Column* rid = t.Find("rid");
  for (size_t r = 0; r < t.rows(); ++r) {
    auto get = [&](const Column* c) {
      if (c == nullptr) return int64_t{-2};
      const int64_t v = c->values<int64_t>()[r];
      return v == io::kMissingInt64 ? int64_t{-1} : v;
    };
    out.emplace_back(get(id), get(rid));
  }
  return out;
}

Result<Table> JoinOf(JoinHow how, std::vector<std::string> on = {"k"}) {
  JoinOptions o;
  o.on = std::move(on);
  o.how = how;
  return Join(Left(), Right(), o);
}

using P = std::vector<std::pair<int64_t, int64_t>>;

TEST(JoinTest, EveryHowPairsRowsAsPandasMergeDoes) {
  auto inner = JoinOf(JoinHow::kInner);
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  // a-1, b-0, b-2, NA-NA (merge matches missing keys), in the left's order.
  EXPECT_EQ(Pairs(*inner), (P{{0, 1}, {1, 0}, {1, 2}, {2, 3}}));
  EXPECT_EQ(Pairs(*JoinOf(JoinHow::kLeft)), (P{{0, 1}, {1, 0}, {1, 2}, {2, 3}, {3, -1}}));
  EXPECT_EQ(Pairs(*JoinOf(JoinHow::kRight)), (P{{1, 0}, {0, 1}, {1, 2}, {2, 3}, {-1, 4}}));
  EXPECT_EQ(Pairs(*JoinOf(JoinHow::kOuter)), (P{{0, 1}, {1, 0}, {1, 2}, {2, 3}, {3, -1}, {-1, 4}}));
  EXPECT_EQ(Pairs(*JoinOf(JoinHow::kSemi)), (P{{0, -2}, {1, -2}, {2, -2}}));
  EXPECT_EQ(Pairs(*JoinOf(JoinHow::kAnti)), (P{{3, -2}}));
}

TEST(JoinTest, ColumnsAreTheLeftsThenTheRightsWithSuffixesAndNullableTypes) {
  auto outer = JoinOf(JoinHow::kOuter);
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  EXPECT_EQ(outer->Describe(), "k (int32), id (int64), v_x (float64), rid (int64), v_y (float32)");
  // The key of a right-only row comes from the right; int32 v_x is NaN there.
  EXPECT_EQ(StringAt(*outer->Find("k"), 5), "d");
  EXPECT_TRUE(std::isnan(outer->Find("v_x")->values<double>()[5]));
  EXPECT_EQ(outer->Find("v_x")->values<double>()[4], 13.0);  // left id 3, no match
  auto inner = JoinOf(JoinHow::kInner);
  EXPECT_EQ(inner->Find("v_x")->dtype(), ElementType::kInt32) << "no side is missing: kept";
  auto semi = JoinOf(JoinHow::kSemi);
  EXPECT_EQ(semi->Describe(), "k (int32), id (int64), v (int32)");
}

TEST(JoinTest, IntegerKeysOfTwoWidthsMatchByValue) {
  Table l, r;
  ASSERT_TRUE(l.AddColumn(Column::Int32("k", {1, 2, 3})).ok());
  ASSERT_TRUE(l.AddColumn(Column::Int64("id", {0, 1, 2})).ok());
  ASSERT_TRUE(r.AddColumn(Column::Int64("k", {3, int64_t{1} << 40, 1})).ok());
  ASSERT_TRUE(r.AddColumn(Column::Int64("rid", {0, 1, 2})).ok());
  JoinOptions o;
  o.on = {"k"};
  auto j = Join(l, r, o);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(Pairs(*j), (P{{0, 2}, {2, 0}}));
  EXPECT_EQ(j->Find("k")->dtype(), ElementType::kInt64);
}

TEST(JoinTest, RefusesKeysThatNeverCompareAndMissingKeys) {
  JoinOptions o;
  o.on = {"k"};
  Table l, r;
  ASSERT_TRUE(l.AddColumn(Strings("k", {0}, {"a"})).ok());
  ASSERT_TRUE(r.AddColumn(Column::Int64("k", {1})).ok());
  EXPECT_FALSE(Join(l, r, o).ok());
  o.on = {"nope"};
  EXPECT_FALSE(Join(Left(), Right(), o).ok());
  EXPECT_EQ(ParseJoinHow("cross"), std::nullopt);
}

}  // namespace
}  // namespace coupler::relational
