#include "runtime/io/dictionary_file.h"

#include <cstdint>
#include <memory>

namespace coupler::io {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendEscape(std::string& out, uint32_t unit) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(unit >> shift) & 0xF]);
}

// The length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one
// (overlong forms, surrogates and values past U+10FFFF included).
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      AppendEscape(out, c);
      ++i;
    } else if (const size_t n = Utf8Length(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      AppendEscape(out, 0xDC00u + c);  // surrogateescape: one byte that is not UTF-8
      ++i;
    }
  }
  out.push_back('"');
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A recursive-descent reader for exactly the sidecar's shape.
class Reader {
 public:
  explicit Reader(std::string_view text) : s_(text) {}

  // A bare list of strings: one column's dictionary member in an .npz shard.
  Result<Column::Dictionary> List() {
    COUPLER_ASSIGN_OR_RETURN(Column::Dictionary out, StringList());
    SkipSpace();
    if (pos_ != s_.size()) return Error("text after the list");
    return out;
  }

  Result<std::vector<NamedDictionary>> Document() {
    std::vector<NamedDictionary> out;
    COUPLER_RETURN_IF_ERROR(Expect('{'));
    bool more = !Peek('}');
    while (more) {
      NamedDictionary entry;
      COUPLER_ASSIGN_OR_RETURN(entry.first, String());
      for (const NamedDictionary& seen : out) {
        if (seen.first == entry.first) return Error("column '" + entry.first + "' given twice");
      }
      COUPLER_RETURN_IF_ERROR(Expect(':'));
      COUPLER_ASSIGN_OR_RETURN(entry.second, StringList());
      out.push_back(std::move(entry));
      more = Peek(',');
      if (!more) COUPLER_RETURN_IF_ERROR(Expect('}'));
    }
    SkipSpace();
    if (pos_ != s_.size()) return Error("text after the object");
    return out;
  }

 private:
  // `["a", "b", ...]`: a member's list and each column's list in a sidecar.
  Result<Column::Dictionary> StringList() {
    Column::Dictionary out;
    COUPLER_RETURN_IF_ERROR(Expect('['));
    bool items = !Peek(']');
    while (items) {
      COUPLER_ASSIGN_OR_RETURN(std::string value, String());
      out.push_back(std::move(value));
      items = Peek(',');
      if (!items) COUPLER_RETURN_IF_ERROR(Expect(']'));
    }
    return out;
  }

  Status Error(const std::string& what) const {
    return InvalidArgument("dictionary, byte " + std::to_string(pos_) + ": " + what);
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  // Consumes `c` if it comes next.
  bool Peek(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status Expect(char c) {
    if (Peek(c)) return Status::Ok();
    return Error(std::string("expected '") + c + "'");
  }
  Result<uint32_t> Hex4() {
    if (pos_ + 4 > s_.size()) return Error("a \\u escape needs 4 hex digits");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Error("a \\u escape needs 4 hex digits");
      }
    }
    return v;
  }
  Result<std::string> String() {
    COUPLER_RETURN_IF_ERROR(Expect('"'));
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) return Error("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("a control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return Error("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          COUPLER_ASSIGN_OR_RETURN(const uint32_t unit, Hex4());
          if (unit >= 0xDC80 && unit <= 0xDCFF) {
            out.push_back(static_cast<char>(unit - 0xDC00));  // surrogateescape
          } else if (unit >= 0xD800 && unit <= 0xDBFF) {
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') {
              return Error("a high surrogate without its low half");
            }
            pos_ += 2;
            COUPLER_ASSIGN_OR_RETURN(const uint32_t low, Hex4());
            if (low < 0xDC00 || low > 0xDFFF) return Error("a high surrogate without its low half");
            AppendUtf8(out, 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
          } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
            return Error("a lone low surrogate");
          } else {
            AppendUtf8(out, unit);
          }
          break;
        }
        default: return Error(std::string("unknown escape '\\") + e + "'");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::string DictionarySidecarPath(std::string_view shard_path) {
  return std::string(shard_path) + ".dict.json";
}

bool HasDictionaries(const Table& table) {
  for (const Column& c : table.columns()) {
    if (c.categorical()) return true;
  }
  return false;
}

std::string EncodeDictionaries(const Table& table) {
  std::string out = "{";
  bool first = true;
  for (const Column& c : table.columns()) {
    if (!c.categorical()) continue;
    out += first ? "\n  " : ",\n  ";
    first = false;
    AppendJsonString(out, c.name());
    out += ": [";
    const Column::Dictionary& d = *c.dictionary();
    for (size_t i = 0; i < d.size(); ++i) {
      if (i > 0) out += ", ";
      AppendJsonString(out, d[i]);
    }
    out += "]";
  }
  out += first ? "}\n" : "\n}\n";
  return out;
}

std::string EncodeDictionary(const Column::Dictionary& dictionary) {
  std::string out = "[";
  for (size_t i = 0; i < dictionary.size(); ++i) {
    if (i > 0) out += ", ";
    AppendJsonString(out, dictionary[i]);
  }
  out += "]\n";
  return out;
}

Result<Column::Dictionary> DecodeDictionary(std::string_view json) { return Reader(json).List(); }

Status CheckCodes(const Column& column, size_t dictionary_size) {
  const auto size = static_cast<int64_t>(dictionary_size);
  for (const int32_t code : column.values<int32_t>()) {
    if (code < -1 || code >= size) {
      return InvalidArgument("column '" + column.name() + "' holds code " + std::to_string(code) +
                             " but its dictionary has " + std::to_string(size) + " entries");
    }
  }
  return Status::Ok();
}

Result<std::vector<NamedDictionary>> DecodeDictionaries(std::string_view json) {
  return Reader(json).Document();
}

Status AttachDictionaries(Table& table, std::vector<NamedDictionary> dictionaries) {
  for (NamedDictionary& entry : dictionaries) {
    Column* column = table.Find(entry.first);
    if (column == nullptr || column->dtype() != ElementType::kInt32) {
      return InvalidArgument("the dictionary sidecar names column '" + entry.first +
                             "', which is not an int32 column of the shard (" +
                             table.Describe() + "): the sidecar is stale");
    }
    if (Status codes = CheckCodes(*column, entry.second.size()); !codes.ok()) {
      return InvalidArgument(codes.message() + ": the sidecar is stale");
    }
    column->set_dictionary(
        std::make_shared<const Column::Dictionary>(std::move(entry.second)));
  }
  return Status::Ok();
}

}  // namespace coupler::io
