#include "runtime/expr/parser.h"

#include <utility>
#include <vector>

#include "runtime/expr/lexer.h"

namespace coupler::expr {
namespace {

bool IsComparison(TokenKind k) {
  return k == TokenKind::kEq || k == TokenKind::kNe || k == TokenKind::kLt ||
         k == TokenKind::kLe || k == TokenKind::kGt || k == TokenKind::kGe;
}

NodeKind BinaryKind(TokenKind k) {
  switch (k) {
    case TokenKind::kPlus: return NodeKind::kAdd;
    case TokenKind::kMinus: return NodeKind::kSub;
    case TokenKind::kStar: return NodeKind::kMul;
    case TokenKind::kSlash: return NodeKind::kDiv;
    case TokenKind::kEq: return NodeKind::kEq;
    case TokenKind::kNe: return NodeKind::kNe;
    case TokenKind::kLt: return NodeKind::kLt;
    case TokenKind::kLe: return NodeKind::kLe;
    case TokenKind::kGt: return NodeKind::kGt;
    case TokenKind::kGe: return NodeKind::kGe;
    case TokenKind::kAnd: return NodeKind::kAnd;
    default: return NodeKind::kOr;
  }
}

// Each Parse* returns the index of the node it appended last (its subtree's root), or -1 after
// setting error_.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  ExprResult<Ast> Run() {
    const int32_t root = ParseOr();
    if (root < 0) return std::move(error_);
    if (Peek().kind != TokenKind::kEnd) {
      return ExprError{Peek().offset, "unexpected " + std::string(TokenKindName(Peek().kind)) +
                                          " after a complete expression", ""};
    }
    return std::move(ast_);
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Take() { return tokens_[pos_++]; }

  int32_t Fail(size_t offset, std::string message, std::string hint = {}) {
    if (error_.message.empty()) error_ = ExprError{offset, std::move(message), std::move(hint)};
    return -1;
  }

  int32_t Append(Node node) {
    ast_.nodes.push_back(std::move(node));
    return ast_.root();
  }
  int32_t Binary(NodeKind kind, size_t offset, int32_t lhs, int32_t rhs) {
    Node n;
    n.kind = kind;
    n.offset = offset;
    n.args[0] = lhs;
    n.args[1] = rhs;
    n.arg_count = 2;
    return Append(std::move(n));
  }
  int32_t Unary(NodeKind kind, size_t offset, int32_t operand) {
    Node n;
    n.kind = kind;
    n.offset = offset;
    n.args[0] = operand;
    n.arg_count = 1;
    return Append(std::move(n));
  }

  int32_t ParseOr() {
    int32_t lhs = ParseAnd();
    while (lhs >= 0 && Peek().kind == TokenKind::kOr) {
      const size_t at = Take().offset;
      const int32_t rhs = ParseAnd();
      if (rhs < 0) return -1;
      lhs = Binary(NodeKind::kOr, at, lhs, rhs);
    }
    return lhs;
  }

  int32_t ParseAnd() {
    int32_t lhs = ParseNot();
    while (lhs >= 0 && Peek().kind == TokenKind::kAnd) {
      const size_t at = Take().offset;
      const int32_t rhs = ParseNot();
      if (rhs < 0) return -1;
      lhs = Binary(NodeKind::kAnd, at, lhs, rhs);
    }
    return lhs;
  }

  // `not not x`: counted, not recursed.
  int32_t ParseNot() {
    std::vector<size_t> nots;
    while (Peek().kind == TokenKind::kNot) nots.push_back(Take().offset);
    int32_t operand = ParseComparison();
    for (size_t k = nots.size(); k-- > 0 && operand >= 0;) {
      operand = Unary(NodeKind::kNot, nots[k], operand);
    }
    return operand;
  }

  int32_t ParseComparison() {
    const int32_t lhs = ParseAdditive();
    if (lhs < 0 || !IsComparison(Peek().kind)) return lhs;
    const Token& op = Take();
    const NodeKind kind = BinaryKind(op.kind);
    const size_t at = op.offset;
    const int32_t rhs = ParseAdditive();
    if (rhs < 0) return -1;
    if (IsComparison(Peek().kind)) {
      return Fail(Peek().offset, "comparisons do not chain",
                  "write 'a < b and b < c' rather than 'a < b < c'");
    }
    return Binary(kind, at, lhs, rhs);
  }

  int32_t ParseAdditive() {
    int32_t lhs = ParseMultiplicative();
    while (lhs >= 0 && (Peek().kind == TokenKind::kPlus || Peek().kind == TokenKind::kMinus)) {
      const Token& op = Take();
      const NodeKind kind = BinaryKind(op.kind);
      const size_t at = op.offset;
      const int32_t rhs = ParseMultiplicative();
      if (rhs < 0) return -1;
      lhs = Binary(kind, at, lhs, rhs);
    }
    return lhs;
  }

  int32_t ParseMultiplicative() {
    int32_t lhs = ParseUnary();
    while (lhs >= 0 && (Peek().kind == TokenKind::kStar || Peek().kind == TokenKind::kSlash)) {
      const Token& op = Take();
      const NodeKind kind = BinaryKind(op.kind);
      const size_t at = op.offset;
      const int32_t rhs = ParseUnary();
      if (rhs < 0) return -1;
      lhs = Binary(kind, at, lhs, rhs);
    }
    return lhs;
  }

  // `- - x` counted as well; a unary plus is dropped.
  int32_t ParseUnary() {
    std::vector<size_t> minuses;
    while (Peek().kind == TokenKind::kMinus || Peek().kind == TokenKind::kPlus) {
      const Token& t = Take();
      if (t.kind == TokenKind::kMinus) minuses.push_back(t.offset);
    }
    int32_t operand = ParsePrimary();
    for (size_t k = minuses.size(); k-- > 0 && operand >= 0;) {
      operand = Unary(NodeKind::kNeg, minuses[k], operand);
    }
    return operand;
  }

  bool Enter(size_t offset) {
    if (++depth_ > kMaxNesting) {
      Fail(offset, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
      return false;
    }
    return true;
  }

  int32_t ParsePrimary() {
    const Token& t = Take();
    switch (t.kind) {
      case TokenKind::kNumber: {
        Node n;
        n.kind = NodeKind::kNumber;
        n.offset = t.offset;
        n.number = t.number;
        return Append(std::move(n));
      }
      case TokenKind::kString: {
        Node n;
        n.kind = NodeKind::kString;
        n.offset = t.offset;
        n.name = t.text;
        return Append(std::move(n));
      }
      case TokenKind::kName:
        if (Peek().kind == TokenKind::kLParen) return ParseCall(t);
        {
          Node n;
          n.kind = NodeKind::kColumn;
          n.offset = t.offset;
          n.name = t.text;
          return Append(std::move(n));
        }
      case TokenKind::kLParen: {
        if (!Enter(t.offset)) return -1;
        const int32_t inner = ParseOr();
        if (inner < 0) return -1;
        if (Peek().kind != TokenKind::kRParen) {
          return Fail(Peek().offset, "expected ')' to close the '(' at offset " +
                                         std::to_string(t.offset + 1) + ", got " +
                                         std::string(TokenKindName(Peek().kind)));
        }
        Take();
        --depth_;
        return inner;
      }
      default:
        --pos_;  // leave it for the message's offset
        return Fail(t.offset, "expected a number, a column, a string or '(', got " +
                                  std::string(TokenKindName(t.kind)));
    }
  }

  int32_t ParseCall(const Token& name) {
    const Token& open = Take();
    if (!Enter(open.offset)) return -1;
    Node n;
    n.kind = NodeKind::kCall;
    n.offset = name.offset;
    n.name = name.text;
    if (Peek().kind != TokenKind::kRParen) {
      while (true) {
        const size_t at = Peek().offset;
        const int32_t arg = ParseOr();
        if (arg < 0) return -1;
        if (n.arg_count == 3) return Fail(at, "'" + name.text + "' given more than 3 arguments");
        n.args[n.arg_count++] = arg;
        if (Peek().kind != TokenKind::kComma) break;
        Take();
      }
    }
    if (Peek().kind != TokenKind::kRParen) {
      return Fail(Peek().offset, "expected ',' or ')' in the call of '" + name.text + "', got " +
                                     std::string(TokenKindName(Peek().kind)));
    }
    Take();
    --depth_;
    return Append(std::move(n));
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  Ast ast_;
  ExprError error_;
};

}  // namespace

ExprResult<Ast> Parse(std::string_view text) {
  ExprResult<std::vector<Token>> tokens = Lex(text);
  if (!tokens.ok()) return tokens.error();
  return Parser(std::move(tokens.value())).Run();
}

}  // namespace coupler::expr
