// The expression type checker and compiler: result types as numpy gives them, the errors a
// user sees (with the offset of the culprit and a did-you-mean), and the register bound.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/expr/program.h"

namespace coupler::expr {
namespace {

using ::testing::HasSubstr;

io::TableSchema Schema() {
  io::TableSchema s;
  s.columns = {{"x0", ElementType::kFloat32, false},
               {"x1", ElementType::kFloat32, false},
               {"d", ElementType::kFloat64, false},
               {"label", ElementType::kInt32, false},
               {"city", ElementType::kInt32, true},
               {"h", ElementType::kFloat16, false}};
  return s;
}

std::string TypeOf(const std::string& text) {
  ExprResult<Program> p = Compile(text, Schema());
  if (!p.ok()) return "error: " + p.error().Describe(text);
  return std::string(ValueTypeName(p->result));
}

TEST(ExprCompilerTest, ResultTypesFollowNumpy) {
  EXPECT_EQ(TypeOf("x0 * x1 + 1"), "float32");  // a literal takes the column's type
  EXPECT_EQ(TypeOf("x0 * d"), "float64");
  EXPECT_EQ(TypeOf("label + 1"), "float64");  // int32 meets floats as float64
  EXPECT_EQ(TypeOf("label * x0"), "float64");
  EXPECT_EQ(TypeOf("sqrt(x0)"), "float32");
  EXPECT_EQ(TypeOf("clip(x0, -1, 1)"), "float32");
  EXPECT_EQ(TypeOf("2 * 3"), "float64");
  EXPECT_EQ(TypeOf("x0 > 0"), "bool");
  EXPECT_EQ(TypeOf("isnan(x0) or city == \"Paris\""), "bool");
  EXPECT_EQ(TypeOf("\"Paris\" != city"), "bool");
}

TEST(ExprCompilerTest, UnknownColumnNamesItsOffsetAndTheNearestName) {
  EXPECT_EQ(TypeOf("x0 > 0 and x9 < 1"),
            "error: unknown column 'x9' at 1:12 (did you mean 'x0'?)");
  EXPECT_EQ(TypeOf("zzzzzz > 0"),
            "error: unknown column 'zzzzzz' at 1:1 (columns: x0, x1, d, label, city, h)");
  EXPECT_EQ(TypeOf("sqr(x0)"), "error: unknown function 'sqr' at 1:1 (did you mean 'sqrt'?)");
}

TEST(ExprCompilerTest, TypeErrorsPointAtTheOperand) {
  EXPECT_EQ(TypeOf("x0 > 0 and x1"),
            "error: 'and' needs a condition, got a number at 1:12 (compare it, e.g. x > 0)");
  EXPECT_EQ(TypeOf("(x0 > 0) + 1"),
            "error: '+' needs a number, got a boolean at 1:5 (conditions combine with and/or/not)");
  EXPECT_THAT(TypeOf("city + 1"), HasSubstr("'+' needs a number, got a categorical column at 1:1"));
  EXPECT_EQ(TypeOf("city > \"Paris\""),
            "error: categories are compared with == or != only, not '>' at 1:6");
  EXPECT_EQ(TypeOf("x0 == \"Paris\""),
            "error: a string can only be compared with a categorical column (== or !=) at 1:7");
  EXPECT_EQ(TypeOf("city == 3"),
            "error: a categorical column can only be compared with a string (== or !=) at 1:1");
  EXPECT_EQ(TypeOf("clip(x0, 1)"), "error: 'clip' takes 3 arguments, got 2 at 1:1 (clip(x, lo, hi))");
  EXPECT_THAT(TypeOf("h > 0"), HasSubstr("column 'h' is float16"));
  EXPECT_EQ(TypeOf("city"),
            "error: the expression is a categorical column; compare it with == or != to use it "
            "at 1:1");
}

TEST(ExprCompilerTest, ExpectationsOfWhereAndDerive) {
  ExprResult<Program> p = Compile("x0 + 1", Schema(), Expect::kBoolean);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.error().message, HasSubstr("expected a condition"));
  p = Compile("x0 > 1", Schema(), Expect::kNumber);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.error().message, HasSubstr("expected a number, got a condition"));
}

TEST(ExprCompilerTest, ColumnsAreReadOnceAndStringsBindToDictionaryCodes) {
  ExprResult<Program> p = Compile("x0 * x0 > 1 and city != \"Rome\" or city == \"Oslo\"", Schema());
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->columns.size(), 2u);
  EXPECT_EQ(p->columns[0].name, "x0");
  EXPECT_TRUE(p->columns[1].categorical);
  const std::vector<std::string> dict = {"Oslo", "Paris"};
  const std::vector<std::string>* dicts[] = {nullptr, &dict};
  auto code = p->BindCodes(dicts);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  std::vector<double> codes;
  for (const Instruction& ins : *code) {
    if (ins.op == OpCode::kCodeEq || ins.op == OpCode::kCodeNe) codes.push_back(ins.value);
  }
  EXPECT_EQ(codes, (std::vector<double>{-2, 0}));  // Rome is absent: no row holds -2
  const std::vector<std::string>* none[] = {nullptr, nullptr};
  EXPECT_FALSE(p->BindCodes(none).ok());
}

TEST(ExprCompilerTest, RegisterPressureIsBounded) {
  // Right-nested sums hold one pending value per level; the nesting limit keeps them few.
  std::string text = "x0";
  for (int i = 0; i < 30; ++i) text = "x0 + (" + text + ")";
  ExprResult<Program> p = Compile(text, Schema());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_LE(p->registers, kMaxRegisters);
  EXPECT_EQ(p->registers, 31);
  // A long left chain needs two.
  std::string chain = "x0";
  for (int i = 0; i < 2000; ++i) chain += " + x1";
  p = Compile(chain, Schema());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->registers, 2);
}

}  // namespace
}  // namespace coupler::expr
