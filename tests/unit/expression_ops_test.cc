// The filter, select and derive ops through RunTask on real shard files, and the row gathering
// they share keeping categorical dictionaries: values checked against ones worked out by hand.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/shard_file.h"
#include "runtime/io/npy_writer.h"
#include "runtime/io/temp_dir.h"
#include "tests/unit/schema_defaults.h"
#include "worker/ops/expression_columns.h"
#include "worker/task_runner.h"

namespace coupler::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ExpressionOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::TempDir::Create("expression-ops-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
    io::Table t;
    ASSERT_TRUE(t.AddColumn(io::Column::Float32("x0", {1.0f, -2.0f, NAN, 4.0f, 0.5f})).ok());
    ASSERT_TRUE(t.AddColumn(io::Column::Float32("x1", {2.0f, 2.0f, 2.0f, -1.0f, 8.0f})).ok());
    ASSERT_TRUE(t.AddColumn(io::Column::Int32("label", {0, 1, 2, 1, 0})).ok());
    ASSERT_TRUE(io::WriteNpyAtomic(Path("in.npy"), t).ok());
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }

  wire::TaskOutcome Run(const std::string& op, wire::TaskParams params) {
    wire::TaskSpec spec;
    spec.job_id = "job-1";
    spec.task_id = 7;
    spec.attempt = 1;
    spec.params = WithSchemaDefaults(op, std::move(params));
    spec.op = op;
    spec.input_paths = {Path("in.npy")};
    spec.output_path = Path(op + "-out.npy");
    return RunTask(spec, nullptr);
  }
  io::Table RunOk(const std::string& op, wire::TaskParams params) {
    const wire::TaskOutcome outcome = Run(op, std::move(params));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    auto table = io::ReadShardFile(Path(op + "-out.npy"));
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    return table.ok() ? std::move(table).value() : io::Table();
  }

  std::optional<io::TempDir> dir_;
};

std::vector<float> Floats(const io::Table& t, const std::string& name) {
  const io::Column* c = t.Find(name);
  if (c == nullptr) return {};
  return {c->values<float>().begin(), c->values<float>().end()};
}

TEST_F(ExpressionOpsTest, FilterKeepsTheRowsWhereTheConditionHolds) {
  wire::TaskParams params;
  params.Set("where", std::string("x0 * x1 > 1 or label == 2"));
  const wire::TaskOutcome outcome = Run("filter", params);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.rows_in, 5u);
  EXPECT_EQ(outcome.rows_out, 3u);
  auto t = io::ReadShardFile(Path("filter-out.npy"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Describe(), "x0 (float32), x1 (float32), label (int32)");
  // Rows 0 (1*2 = 2), 2 (NaN product, but label 2) and 4 (0.5*8 = 4).
  const std::vector<float> x0 = Floats(*t, "x0");
  ASSERT_EQ(x0.size(), 3u);
  EXPECT_EQ(x0[0], 1.0f);
  EXPECT_TRUE(std::isnan(x0[1]));
  EXPECT_EQ(x0[2], 0.5f);
  EXPECT_THAT(t->Find("label")->values<int32_t>(), ElementsAre(0, 2, 0));
}

TEST_F(ExpressionOpsTest, FilterErrorsNameTheParamAndThePlace) {
  wire::TaskParams params;
  params.Set("where", std::string("x0 > 0 and lable == 1"));
  const wire::TaskOutcome outcome = Run("filter", params);
  ASSERT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.error, HasSubstr("where: unknown column 'lable' at 1:12 (did you mean 'label'?)"));
}

TEST_F(ExpressionOpsTest, DeriveEvaluatesInOrderAndReplacesExistingColumns) {
  wire::TaskParams params;
  params.Set("columns", job::ParamMap{{"p", "x0 * x1 + 1"}, {"q", "sqrt(p)"},
                                      {"x1", "-x1"}, {"l2", "label * 2"}});
  const io::Table t = RunOk("derive", params);
  EXPECT_EQ(t.Describe(), "x0 (float32), x1 (float32), label (int32), p (float32), q (float32), "
                          "l2 (float64)");
  const std::vector<float> p = Floats(t, "p");
  EXPECT_EQ(p[0], 3.0f);
  EXPECT_EQ(p[1], -3.0f);
  EXPECT_TRUE(std::isnan(p[2]));
  EXPECT_EQ(p[3], -3.0f);
  EXPECT_EQ(p[4], 5.0f);
  const std::vector<float> q = Floats(t, "q");
  EXPECT_EQ(q[0], std::sqrt(3.0f));
  EXPECT_TRUE(std::isnan(q[1]));  // sqrt of a negative, as numpy
  EXPECT_THAT(Floats(t, "x1"), ElementsAre(-2.0f, -2.0f, -2.0f, 1.0f, -8.0f));
  EXPECT_THAT(t.Find("l2")->values<double>(), ElementsAre(0.0, 2.0, 4.0, 2.0, 0.0));
}

TEST_F(ExpressionOpsTest, SelectKeepsDropsAndRenames) {
  wire::TaskParams keep;
  keep.Set("keep", std::vector<std::string>{"label", "x0"});
  keep.Set("rename", job::ParamMap{{"label", "y"}});
  io::Table t = RunOk("select", keep);
  EXPECT_EQ(t.Describe(), "y (int32), x0 (float32)");

  wire::TaskParams drop;
  drop.Set("drop", std::vector<std::string>{"x1"});
  drop.Set("rename", job::ParamMap{{"x0", "label"}, {"label", "x0"}});  // a swap
  t = RunOk("select", drop);
  EXPECT_EQ(t.Describe(), "label (float32), x0 (int32)");

  wire::TaskParams missing;
  missing.Set("keep", std::vector<std::string>{"x3"});
  wire::TaskOutcome outcome = Run("select", missing);
  ASSERT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.error, HasSubstr("keep: no column 'x3'"));

  wire::TaskParams clash;
  clash.Set("rename", job::ParamMap{{"x0", "x1"}});
  outcome = Run("select", clash);
  ASSERT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.error, HasSubstr("x1"));
}

TEST(KeepRowsTest, DictionariesStayWithTheirColumns) {
  io::Table t;
  io::Column city = io::Column::Int32("city", {0, 1, -1, 1});
  auto dictionary = std::make_shared<const io::Column::Dictionary>(
      io::Column::Dictionary{"Oslo", "Paris"});
  city.set_dictionary(dictionary);
  ASSERT_TRUE(t.AddColumn(std::move(city)).ok());
  ASSERT_TRUE(t.AddColumn(io::Column::Float32("x", {1, 2, 3, 4})).ok());

  OpReport report;
  auto program = CompileForShard("where", "city == \"Paris\" or x < 2", t, expr::Expect::kBoolean);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  auto keep = EvaluateCondition(*program, t, report);
  ASSERT_TRUE(keep.ok());
  EXPECT_THAT(*keep, ElementsAre(1, 1, 0, 1));
  auto kept = KeepRows(t, *keep, report);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 3u);
  const io::Column* c = t.Find("city");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dictionary(), dictionary);
  EXPECT_THAT(c->values<int32_t>(), ElementsAre(0, 1, 1));
  EXPECT_THAT(t.Find("x")->values<float>(), ElementsAre(1.0f, 2.0f, 4.0f));
}

}  // namespace
}  // namespace coupler::worker
