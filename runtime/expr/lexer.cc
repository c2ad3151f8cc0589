#include "runtime/expr/lexer.h"

#include <cctype>
#include <charconv>

namespace coupler::expr {
namespace {

bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool NameChar(char c) { return NameStart(c) || std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool Digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kNumber: return "a number";
    case TokenKind::kName: return "a name";
    case TokenKind::kString: return "a string";
    case TokenKind::kLParen: return "'('";
    case TokenKind::kRParen: return "')'";
    case TokenKind::kComma: return "','";
    case TokenKind::kPlus: return "'+'";
    case TokenKind::kMinus: return "'-'";
    case TokenKind::kStar: return "'*'";
    case TokenKind::kSlash: return "'/'";
    case TokenKind::kEq: return "'=='";
    case TokenKind::kNe: return "'!='";
    case TokenKind::kLt: return "'<'";
    case TokenKind::kLe: return "'<='";
    case TokenKind::kGt: return "'>'";
    case TokenKind::kGe: return "'>='";
    case TokenKind::kAnd: return "'and'";
    case TokenKind::kOr: return "'or'";
    case TokenKind::kNot: return "'not'";
    case TokenKind::kEnd: return "the end";
  }
  return "a token";
}

ExprResult<std::vector<Token>> Lex(std::string_view text) {
  if (text.size() > kMaxExpressionBytes) {
    return ExprError{0, "the expression is " + std::to_string(text.size()) +
                            " bytes; at most " + std::to_string(kMaxExpressionBytes) +
                            " are accepted", ""};
  }
  std::vector<Token> out;
  size_t i = 0;
  auto simple = [&](TokenKind kind, size_t length) {
    out.push_back(Token{kind, i, {}, 0});
    i += length;
  };
  while (i < text.size()) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (Digit(c) || (c == '.' && Digit(next))) {
      const size_t start = i;
      while (i < text.size() && (Digit(text[i]) || text[i] == '.')) ++i;
      if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        size_t j = i + 1;
        if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
        if (j < text.size() && Digit(text[j])) {
          i = j;
          while (i < text.size() && Digit(text[i])) ++i;
        }
      }
      double value = 0;
      const auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
      if (ec == std::errc::result_out_of_range) {
        return ExprError{start, "number '" + std::string(text.substr(start, i - start)) +
                                    "' is out of range", ""};
      }
      if (ec != std::errc() || end != text.data() + i ||
          (i < text.size() && NameStart(text[i]))) {
        while (i < text.size() && NameChar(text[i])) ++i;
        return ExprError{start, "malformed number '" +
                                    std::string(text.substr(start, i - start)) + "'", ""};
      }
      out.push_back(Token{TokenKind::kNumber, start, {}, value});
      continue;
    }
    if (NameStart(c)) {
      const size_t start = i;
      while (i < text.size() && NameChar(text[i])) ++i;
      std::string word(text.substr(start, i - start));
      TokenKind kind = TokenKind::kName;
      if (word == "and") kind = TokenKind::kAnd;
      if (word == "or") kind = TokenKind::kOr;
      if (word == "not") kind = TokenKind::kNot;
      out.push_back(Token{kind, start, kind == TokenKind::kName ? std::move(word) : "", 0});
      continue;
    }
    if (c == '`') {
      const size_t start = i;
      const size_t close = text.find('`', i + 1);
      if (close == std::string_view::npos) {
        return ExprError{start, "unterminated `name` (no closing backquote)", ""};
      }
      if (close == i + 1) return ExprError{start, "empty `` name", ""};
      out.push_back(Token{TokenKind::kName, start, std::string(text.substr(i + 1, close - i - 1)), 0});
      i = close + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      const size_t start = i;
      std::string value;
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          value += text[i + 1];
          i += 2;
          continue;
        }
        if (text[i] == c) {
          closed = true;
          ++i;
          break;
        }
        value += text[i++];
      }
      if (!closed) return ExprError{start, "unterminated string", ""};
      out.push_back(Token{TokenKind::kString, start, std::move(value), 0});
      continue;
    }
    switch (c) {
      case '(': simple(TokenKind::kLParen, 1); continue;
      case ')': simple(TokenKind::kRParen, 1); continue;
      case ',': simple(TokenKind::kComma, 1); continue;
      case '+': simple(TokenKind::kPlus, 1); continue;
      case '-': simple(TokenKind::kMinus, 1); continue;
      case '*': simple(TokenKind::kStar, 1); continue;
      case '/': simple(TokenKind::kSlash, 1); continue;
      case '<': next == '=' ? simple(TokenKind::kLe, 2) : simple(TokenKind::kLt, 1); continue;
      case '>': next == '=' ? simple(TokenKind::kGe, 2) : simple(TokenKind::kGt, 1); continue;
      case '=':
        if (next == '=') {
          simple(TokenKind::kEq, 2);
          continue;
        }
        return ExprError{i, "'=' is not an operator", "write '==' to compare"};
      case '!':
        if (next == '=') {
          simple(TokenKind::kNe, 2);
          continue;
        }
        return ExprError{i, "'!' is not an operator", "write 'not' to negate"};
      case '&':
      case '|':
        return ExprError{i, std::string("'") + c + "' is not an operator",
                         c == '&' ? "write 'and'" : "write 'or'"};
      default: break;
    }
    const unsigned char u = static_cast<unsigned char>(c);
    std::string shown = u >= 0x20 && u < 0x7F ? std::string(1, c) : "\\x" + [u] {
      static const char kHex[] = "0123456789ABCDEF";
      return std::string{kHex[u >> 4], kHex[u & 0xF]};
    }();
    return ExprError{i, "unexpected character '" + shown + "'", ""};
  }
  out.push_back(Token{TokenKind::kEnd, text.size(), {}, 0});
  return out;
}

}  // namespace coupler::expr
