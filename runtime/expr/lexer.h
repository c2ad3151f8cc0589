// Lexer: an expression's text as tokens with their byte offsets, so every later error can point
// into the text. Names are identifiers or `backquoted` (for columns named like "sepal length").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/expr/expr_error.h"

namespace coupler::expr {

// Longest expression text accepted: a spec holds filters, not programs, and the bound keeps
// the node count (and so every pass over the tree) small.
inline constexpr size_t kMaxExpressionBytes = 16 * 1024;

enum class TokenKind {
  kNumber,
  kName,    // identifier or backquoted name
  kString,  // "text" or 'text'
  kLParen,
  kRParen,
  kComma,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kNot,
  kEnd,
};
std::string_view TokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::kEnd;
  size_t offset = 0;
  std::string text;   // the name or the string's contents (escapes resolved)
  double number = 0;  // for kNumber
};

// The tokens, ending with kEnd; an error for an unknown character, an unterminated string or
// name, a malformed number, or text longer than kMaxExpressionBytes.
ExprResult<std::vector<Token>> Lex(std::string_view text);

}  // namespace coupler::expr
