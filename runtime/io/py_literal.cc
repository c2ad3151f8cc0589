#include "runtime/io/py_literal.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace coupler::io {
namespace {

constexpr int kMaxDepth = 16;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<PyValue> ParseAll() {
    COUPLER_ASSIGN_OR_RETURN(PyValue value, ParseValue(0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the literal");
    return value;
  }

 private:
  Status Error(std::string_view what) const {
    std::string near;
    for (size_t i = pos_; i < text_.size() && i < pos_ + 12; ++i) {
      const char c = text_[i];
      near += (c >= 0x20 && c < 0x7F) ? c : '?';
    }
    return InvalidArgument(std::string(what) + " at offset " + std::to_string(pos_) +
                           (near.empty() ? " (end of text)" : " near \"" + near + "\""));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    const size_t after = pos_ + word.size();
    if (after < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[after])) ||
                                 text_[after] == '_')) {
      return false;
    }
    pos_ = after;
    return true;
  }

  Result<PyValue> ParseValue(int depth) {
    if (depth > kMaxDepth) return Error("literal nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("expected a value");
    const char c = text_[pos_];
    PyValue value;
    if (c == '{') return ParseDict(depth);
    if (c == '[') return ParseSequence(depth, ']', PyValue::Kind::kList);
    if (c == '(') return ParseSequence(depth, ')', PyValue::Kind::kTuple);
    if (c == '\'' || c == '"') {
      value.kind = PyValue::Kind::kString;
      COUPLER_ASSIGN_OR_RETURN(value.text, ParseString());
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseInt();
    if (ConsumeWord("True")) {
      value.kind = PyValue::Kind::kBool;
      value.boolean = true;
      return value;
    }
    if (ConsumeWord("False")) {
      value.kind = PyValue::Kind::kBool;
      return value;
    }
    if (ConsumeWord("None")) return value;
    return Error("expected a value (dict, list, tuple, string, int, True, False or None)");
  }

  Result<PyValue> ParseInt() {
    const char* begin = text_.data() + pos_;
    const char* end = text_.data() + text_.size();
    PyValue value;
    value.kind = PyValue::Kind::kInt;
    const auto [ptr, ec] = std::from_chars(begin, end, value.integer);
    if (ec == std::errc::result_out_of_range) return Error("integer out of range");
    if (ec != std::errc()) return Error("expected an integer");
    pos_ += static_cast<size_t>(ptr - begin);
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs, old numpy files
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      return Error("expected an integer, found a float");
    }
    return value;
  }

  Result<std::string> ParseString() {
    const char quote = text_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\n') return Error("newline inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '\\': case '\'': case '"': out += e; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'x': COUPLER_RETURN_IF_ERROR(AppendCodePoint(2, out)); break;
        case 'u': COUPLER_RETURN_IF_ERROR(AppendCodePoint(4, out)); break;
        case 'U': COUPLER_RETURN_IF_ERROR(AppendCodePoint(8, out)); break;
        default: return Error("unsupported escape in a string");
      }
    }
  }

  // A \x, \u or \U escape names a code point (as in Python 3 str), stored as UTF-8.
  Status AppendCodePoint(size_t digits, std::string& out) {
    uint32_t cp = 0;
    const char* begin = text_.data() + pos_;
    if (text_.size() - pos_ < digits ||
        std::from_chars(begin, begin + digits, cp, 16).ptr != begin + digits) {
      return Error("bad hex escape in a string");
    }
    pos_ += digits;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return Error("bad code point escape");
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return Status::Ok();
  }

  Result<PyValue> ParseSequence(int depth, char close, PyValue::Kind kind) {
    ++pos_;  // the opening bracket
    PyValue value;
    value.kind = kind;
    while (true) {
      if (Consume(close)) return value;
      COUPLER_ASSIGN_OR_RETURN(PyValue item, ParseValue(depth + 1));
      value.items.push_back(std::move(item));
      if (Consume(close)) return value;
      if (!Consume(',')) return Error(std::string("expected ',' or '") + close + "'");
    }
  }

  Result<PyValue> ParseDict(int depth) {
    ++pos_;  // '{'
    PyValue value;
    value.kind = PyValue::Kind::kDict;
    while (true) {
      if (Consume('}')) return value;
      SkipSpace();
      if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
        return Error("expected a string key");
      }
      COUPLER_ASSIGN_OR_RETURN(std::string key, ParseString());
      if (value.Get(key) != nullptr) return Error("duplicate key '" + key + "'");
      if (!Consume(':')) return Error("expected ':'");
      COUPLER_ASSIGN_OR_RETURN(PyValue item, ParseValue(depth + 1));
      value.entries.push_back({std::move(key), std::move(item)});
      if (Consume('}')) return value;
      if (!Consume(',')) return Error("expected ',' or '}'");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

const PyValue* PyValue::Get(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string_view PyKindName(PyValue::Kind kind) {
  switch (kind) {
    case PyValue::Kind::kNone: return "None";
    case PyValue::Kind::kBool: return "bool";
    case PyValue::Kind::kInt: return "int";
    case PyValue::Kind::kString: return "string";
    case PyValue::Kind::kTuple: return "tuple";
    case PyValue::Kind::kList: return "list";
    case PyValue::Kind::kDict: return "dict";
  }
  return "value";
}

Result<PyValue> ParsePyLiteral(std::string_view text) { return Parser(text).ParseAll(); }

std::string PyRepr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02x", u);
      out += buffer;
    } else {
      out += c;  // printable ASCII, or UTF-8 bytes (a version 3.0 header)
    }
  }
  out += quote;
  return out;
}

}  // namespace coupler::io
