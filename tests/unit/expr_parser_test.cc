// The expression lexer and parser: precedence as documented (or < and < not < comparison
// < + - < * / < unary minus), offsets in errors, and hostile input refused cleanly.
#include "runtime/expr/parser.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/expr/lexer.h"

namespace coupler::expr {
namespace {

using ::testing::HasSubstr;

// The tree in prefix form, built from the postfix array with a stack (as the compiler reads it).
std::string Show(const Ast& ast) {
  std::vector<std::string> stack;
  for (const Node& n : ast.nodes) {
    std::vector<std::string> args(static_cast<size_t>(n.arg_count));
    for (int k = n.arg_count; k-- > 0;) {
      args[static_cast<size_t>(k)] = stack.back();
      stack.pop_back();
    }
    std::string s;
    switch (n.kind) {
      case NodeKind::kNumber: {
        std::string num = std::to_string(n.number);
        num.erase(num.find_last_not_of('0') + 1);
        if (num.back() == '.') num.pop_back();
        s = num;
        break;
      }
      case NodeKind::kColumn: s = n.name; break;
      case NodeKind::kString: s = "\"" + n.name + "\""; break;
      default: {
        static const char* kNames[] = {"", "", "", "neg", "not", "+", "-", "*", "/", "==",
                                       "!=", "<", "<=", ">", ">=", "and", "or", ""};
        s = "(" + (n.kind == NodeKind::kCall ? n.name : std::string(kNames[static_cast<int>(n.kind)]));
        for (const std::string& a : args) s += " " + a;
        s += ")";
      }
    }
    stack.push_back(s);
  }
  return stack.size() == 1 ? stack.back() : "<" + std::to_string(stack.size()) + " roots>";
}

std::string P(const std::string& text) {
  ExprResult<Ast> ast = Parse(text);
  if (!ast.ok()) return "error: " + ast.error().Describe(text);
  return Show(ast.value());
}

TEST(ExprParserTest, PrecedenceFromOrDownToUnaryMinus) {
  EXPECT_EQ(P("a or b and c"), "(or a (and b c))");
  EXPECT_EQ(P("a and b or c"), "(or (and a b) c)");
  EXPECT_EQ(P("not a and b"), "(and (not a) b)");
  EXPECT_EQ(P("not x > 1"), "(not (> x 1))");
  EXPECT_EQ(P("x + 1 > y * 2"), "(> (+ x 1) (* y 2))");
  EXPECT_EQ(P("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(P("a / b * c"), "(* (/ a b) c)");
  EXPECT_EQ(P("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(P("- - a"), "(neg (neg a))");
  EXPECT_EQ(P("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(P("x0 > 0 and (x3 < 5 or label == 2)"),
            "(and (> x0 0) (or (< x3 5) (== label 2)))");
  EXPECT_EQ(P("clip(x, -1, 2.5e1) + sqrt(abs(y))"), "(+ (clip x (neg 1) 25) (sqrt (abs y)))");
  EXPECT_EQ(P("city == \"Paris\""), "(== city \"Paris\")");
  EXPECT_EQ(P("`sepal length` >= .5"), "(>= sepal length 0.5)");
  EXPECT_EQ(P("isnan(x) or not isnan(y)"), "(or (isnan x) (not (isnan y)))");
}

TEST(ExprParserTest, ErrorsPointIntoTheText) {
  EXPECT_EQ(P("x0 >"), "error: expected a number, a column, a string or '(', got the end at 1:5");
  EXPECT_EQ(P("(x0 > 1"), "error: expected ')' to close the '(' at offset 1, got the end at 1:8");
  EXPECT_EQ(P("x0 = 1"), "error: '=' is not an operator at 1:4 (write '==' to compare)");
  EXPECT_EQ(P("x0 && y"), "error: '&' is not an operator at 1:4 (write 'and')");
  EXPECT_EQ(P("a < b < c"),
            "error: comparisons do not chain at 1:7 (write 'a < b and b < c' rather than "
            "'a < b < c')");
  EXPECT_EQ(P("x 1"), "error: unexpected a number after a complete expression at 1:3");
  EXPECT_EQ(P("city == \"Par"), "error: unterminated string at 1:9");
  EXPECT_EQ(P("1.2.3 > x"), "error: malformed number '1.2.3' at 1:1");
  EXPECT_EQ(P("x > 1\nand y $ 2"), "error: unexpected character '$' at 2:7");
  EXPECT_EQ(P("`x"), "error: unterminated `name` (no closing backquote) at 1:1");
  EXPECT_EQ(P(""), "error: expected a number, a column, a string or '(', got the end at 1:1");
}

TEST(ExprParserTest, DeepNestingIsRefusedWithoutRecursingIntoIt) {
  // 100k parentheses: refused at the nesting limit, long before the stack could be at risk.
  const std::string deep = std::string(100000, '(') + "x" + std::string(100000, ')');
  ExprResult<Ast> ast = Parse(deep);
  ASSERT_FALSE(ast.ok());
  EXPECT_THAT(ast.error().message, HasSubstr("at most 16384"));  // over the length limit first
  // 8,000 fit in the length limit: the nesting limit refuses them.
  ast = Parse(std::string(8000, '(') + "x" + std::string(8000, ')'));
  ASSERT_FALSE(ast.ok());
  EXPECT_THAT(ast.error().message, HasSubstr("nested deeper than"));

  const std::string nested = std::string(kMaxNesting + 1, '(') + "x" + std::string(kMaxNesting + 1, ')');
  ast = Parse(nested);
  ASSERT_FALSE(ast.ok());
  EXPECT_THAT(ast.error().message, HasSubstr("nested deeper than 32 levels"));
  EXPECT_EQ(ast.error().offset, static_cast<size_t>(kMaxNesting));

  const std::string calls = [] {
    std::string s;
    for (int i = 0; i < 1000; ++i) s += "abs(";
    return s + "x" + std::string(1000, ')');
  }();
  EXPECT_FALSE(Parse(calls).ok());

  // At the limit it parses.
  const std::string ok = std::string(kMaxNesting, '(') + "x" + std::string(kMaxNesting, ')');
  EXPECT_EQ(P(ok), "x");
  // Unary chains and long operator chains are loops, not recursion.
  EXPECT_TRUE(Parse(std::string(8000, '-') + "x").ok());
  std::string chain = "x";
  for (int i = 0; i < 3000; ++i) chain += "+x";
  EXPECT_TRUE(Parse(chain).ok());
  std::string nots;
  for (int i = 0; i < 3000; ++i) nots += "not ";
  EXPECT_TRUE(Parse(nots + "x > 0").ok());
}

TEST(ExprParserTest, LengthIsBounded) {
  const std::string huge(kMaxExpressionBytes + 1, ' ');
  ExprResult<Ast> ast = Parse(huge);
  ASSERT_FALSE(ast.ok());
  EXPECT_THAT(ast.error().message, HasSubstr("at most 16384 are accepted"));
}

TEST(ExprLexerTest, TokensCarryOffsetsAndKeywordsAreWords) {
  ExprResult<std::vector<Token>> tokens = Lex("andx and `a b`<=1e-3 'it\\'s'");
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  const std::vector<Token>& t = tokens.value();
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t[0].kind, TokenKind::kName);
  EXPECT_EQ(t[0].text, "andx");
  EXPECT_EQ(t[1].kind, TokenKind::kAnd);
  EXPECT_EQ(t[1].offset, 5u);
  EXPECT_EQ(t[2].text, "a b");
  EXPECT_EQ(t[3].kind, TokenKind::kLe);
  EXPECT_EQ(t[4].number, 1e-3);
  EXPECT_EQ(t[5].kind, TokenKind::kString);
  EXPECT_EQ(t[5].text, "it's");
  EXPECT_EQ(t[6].kind, TokenKind::kEnd);
}

}  // namespace
}  // namespace coupler::expr
