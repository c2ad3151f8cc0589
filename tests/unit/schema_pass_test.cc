// The plan-time column checks: schemas flow from import_csv (through the dataset hook) along the
// graph, and every expression and column name is checked against them with the spec's
// file:line and the place inside the expression; unknown schemas stop the checking.
#include "runtime/job/schema_pass.h"

#include <string>

#include <cstdio>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/job/dataset_schema.h"
#include "tests/unit/spec_test_util.h"

namespace coupler::job {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

io::TableSchema Csv() {
  io::TableSchema s;
  s.columns = {{"x0", ElementType::kFloat32, false},
               {"x1", ElementType::kFloat32, false},
               {"city", ElementType::kInt32, true},
               {"label", ElementType::kInt32, false}};
  return s;
}

LoadedJob LoadWith(const std::string& yaml, bool know_csv = true) {
  ValidationEnv env;
  env.probe = testing::FakeProbe;
  if (know_csv) env.dataset_schema = [](const NodeSpec&) { return std::optional(Csv()); };
  return LoadJobText(yaml, "spec.yaml", "/specs", env);
}

std::string Spec(const std::string& tail) {
  return "name: t\n"
         "nodes:\n"
         "  - id: import\n"
         "    op: import_csv\n"
         "    inputs: [/data/digits.csv]\n" +
         tail;
}

TEST(SchemaPassTest, MisspeltColumnInWhereNamesLineOffsetAndNearestName) {
  const LoadedJob j = LoadWith(Spec(
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [import]\n"
      "    params:\n"
      "      where: \"x0 > 0 and x9 < 5\"\n"));
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(testing::Errors(j),
              HasSubstr("spec.yaml:10:14: error: node 'keep': field 'params.where': unknown "
                        "column 'x9' at 1:12 (did you mean 'x0'?)"));
}

TEST(SchemaPassTest, UnknownSchemaChecksNothingDownstream) {
  const std::string spec = Spec(
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [import]\n"
      "    params: {where: \"x9 > 0\"}\n");
  EXPECT_TRUE(LoadWith(spec, /*know_csv=*/false).ok());
  // exec writes what it likes: checking stops there.
  const LoadedJob j = LoadWith(Spec(
      "  - id: own\n"
      "    op: exec\n"
      "    inputs: [import]\n"
      "    params: {command: \"cp {input} {output}\"}\n"
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [own]\n"
      "    params: {where: \"x9 > 0\"}\n"));
  EXPECT_TRUE(j.ok()) << testing::Errors(j);
}

TEST(SchemaPassTest, DeriveEntriesSeeEarlierOnesAndSelectRenames) {
  const LoadedJob ok = LoadWith(Spec(
      "  - id: more\n"
      "    op: derive\n"
      "    inputs: [import]\n"
      "    params:\n"
      "      columns: {p: \"x0 * x1\", q: \"p + 1\", x0: \"-x0\"}\n"
      "  - id: cols\n"
      "    op: select\n"
      "    inputs: [more]\n"
      "    params: {keep: [q, x0, city], rename: {q: score}}\n"
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [cols]\n"
      "    params: {where: \"score > 0 and city == 'Paris'\"}\n"));
  EXPECT_TRUE(ok.ok()) << testing::Errors(ok);

  // After the rename, q is gone.
  const LoadedJob renamed = LoadWith(Spec(
      "  - id: more\n"
      "    op: derive\n"
      "    inputs: [import]\n"
      "    params: {columns: {q: \"x0 + 1\"}}\n"
      "  - id: cols\n"
      "    op: select\n"
      "    inputs: [more]\n"
      "    params: {rename: {q: score}}\n"
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [cols]\n"
      "    params: {where: \"q > 0\"}\n"));
  EXPECT_THAT(testing::Errors(renamed), HasSubstr("unknown column 'q' at 1:1 (did you mean"));

  // An entry cannot read a later one.
  const LoadedJob order = LoadWith(Spec(
      "  - id: more\n"
      "    op: derive\n"
      "    inputs: [import]\n"
      "    params:\n"
      "      columns: {q: \"p + 1\", p: \"x0\"}\n"));
  EXPECT_THAT(testing::Errors(order),
              HasSubstr("spec.yaml:10:20: error: node 'more': field 'params.columns.q': unknown "
                        "column 'p' at 1:1"));
}

TEST(SchemaPassTest, SelectNamesAreChecked) {
  const LoadedJob j = LoadWith(Spec(
      "  - id: cols\n"
      "    op: select\n"
      "    inputs: [import]\n"
      "    params: {keep: [x0, lable]}\n"));
  EXPECT_THAT(testing::Errors(j),
              HasSubstr("field 'params.keep': no column 'lable' in the input; did you mean "
                        "'label'?"));
  const LoadedJob drop = LoadWith(Spec(
      "  - id: cols\n"
      "    op: select\n"
      "    inputs: [import]\n"
      "    params: {drop: [x0, x1, city, label]}\n"));
  EXPECT_THAT(testing::Errors(drop), HasSubstr("select leaves no columns"));
  const LoadedJob both = LoadWith(Spec(
      "  - id: cols\n"
      "    op: select\n"
      "    inputs: [import]\n"
      "    params: {keep: [x0], drop: [x1]}\n"));
  EXPECT_THAT(testing::Errors(both), HasSubstr("give keep or drop, not both"));
  const LoadedJob clash = LoadWith(Spec(
      "  - id: cols\n"
      "    op: select\n"
      "    inputs: [import]\n"
      "    params: {rename: {x0: x1}}\n"));
  EXPECT_THAT(testing::Errors(clash), HasSubstr("renaming gives two columns named 'x1'"));
}

TEST(SchemaPassTest, TypeErrorsAndCastTypesReachTheDiagnostics) {
  const LoadedJob j = LoadWith(Spec(
      "  - id: more\n"
      "    op: derive\n"
      "    inputs: [import]\n"
      "    params: {columns: {flag: \"x0 > 1\"}}\n"));
  EXPECT_THAT(testing::Errors(j), HasSubstr("expected a number, got a condition"));
  const LoadedJob w = LoadWith(Spec(
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [import]\n"
      "    params: {where: \"x0 + 1\"}\n"));
  EXPECT_THAT(testing::Errors(w), HasSubstr("expected a condition"));
  const LoadedJob cast = LoadWith(Spec(
      "  - id: half\n"
      "    op: cast\n"
      "    inputs: [import]\n"
      "    params: {dtype: float16}\n"
      "  - id: keep\n"
      "    op: filter\n"
      "    inputs: [half]\n"
      "    params: {where: \"x0 > 1\"}\n"));
  EXPECT_THAT(testing::Errors(cast), HasSubstr("column 'x0' is float16"));
}

// The plan reads a CSV's columns the way its import tasks will: io::InferCsvSchema with the
// node's own params.
TEST(SchemaPassTest, CsvHeaderSchemaInfersTypesWithTheNodesParams) {
  const std::string path = ::testing::TempDir() + "schema_pass_test.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << "x0, \"a,b\" ,city,label\r\n1,2,Paris,3\n,NA,\"New York, NY\",4\n";
  }
  NodeSpec node;
  node.id = "import";
  node.op = "import_csv";
  InputRef input;
  input.kind = InputRef::Kind::kFile;
  input.path = path;
  node.resolved_inputs.push_back(input);
  node.params["header"] = true;
  node.params["label_column"] = std::string("label");
  auto s = CsvHeaderSchema(node);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->columns.size(), 4u);
  EXPECT_EQ(s->columns[1].name, "a,b");
  EXPECT_EQ(s->columns[0].dtype, ElementType::kInt64);  // 1 and a missing value
  EXPECT_EQ(s->columns[1].dtype, ElementType::kInt64);  // 2 and NA
  EXPECT_TRUE(s->columns[2].categorical);
  EXPECT_EQ(s->columns[3].dtype, ElementType::kInt32);
  EXPECT_FALSE(s->columns[3].categorical);
  node.params["dtypes"] = ParamMap{{"x0", "float64"}};
  node.params["columns"] = std::vector<std::string>{"label", "x0"};
  s = CsvHeaderSchema(node);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->columns.size(), 2u);
  EXPECT_EQ(s->columns[0].name, "label");
  EXPECT_EQ(s->columns[1].dtype, ElementType::kFloat64);
  // A params problem is the import task's to report (with its line and column): unknown here.
  node.params["columns"] = std::vector<std::string>{"nope"};
  EXPECT_FALSE(CsvHeaderSchema(node).has_value());
  node.resolved_inputs[0].path = path + ".absent";
  EXPECT_FALSE(CsvHeaderSchema(node).has_value());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace coupler::job
