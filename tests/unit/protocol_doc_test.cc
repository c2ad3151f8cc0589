// docs/protocol.md is the reference for peers written in other languages, so it must be
// complete and exact: every message is built here byte by byte from the doc's own field
// tables (with a distinct value in every field), and the codec must read exactly those bytes
// and write them back the same. A field missing, misplaced or mistyped in the doc fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/wire/codec.h"
#include "runtime/wire/envelope.h"
#include "runtime/wire/message_type.h"

namespace coupler::wire {
namespace {

struct Field {
  std::string name;
  std::string type;
};
struct Section {
  // "message N", "record", "enum u8" (rows: value, name) or "variant" (rows: index, type).
  std::string kind;
  std::vector<Field> fields;
};

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" `");
  const auto e = s.find_last_not_of(" `");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "### Name (kind)" headings, each followed by a | field | type | meaning | table.
std::map<std::string, Section> ReadDoc() {
  std::ifstream in(std::string(COUPLER_SOURCE_DIR) + "/docs/protocol.md");
  std::map<std::string, Section> out;
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      const auto paren = line.find(" (");
      current = line.substr(4, paren - 4);
      out[current].kind = paren == std::string::npos ? "" : line.substr(paren + 2, line.size() - paren - 3);
      continue;
    }
    if (current.empty() || line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(Trim(cell));
    // Header rows: "| field | type |", and "| value | name |" / "| index | type |" of enums
    // and variants (GpuInfo has a field named index, so the second cell tells them apart).
    const bool header = cells.size() >= 2 && (cells[1] == "type" || cells[1] == "name") &&
                        (cells[0] == "field" || cells[0] == "value" || cells[0] == "index");
    if (cells.size() < 2 || header || cells[0].rfind("---", 0) == 0) continue;
    out[current].fields.push_back({cells[0], cells[1]});
  }
  return out;
}

class Builder {
 public:
  explicit Builder(const std::map<std::string, Section>& doc) : doc_(doc) {}

  // Appends a value of `type`, distinct from every value before it.
  ::testing::AssertionResult Value(const std::string& type, std::string& out) {
    ++n_;
    auto le = [&](uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    if (type == "str") {
      const std::string s = "v" + std::to_string(n_);
      le(s.size(), 8);
      out += s;
    } else if (type == "bool") {
      out.push_back(static_cast<char>(n_ % 2));
    } else if (type == "u8") {
      le(n_, 1);
    } else if (type == "u16") {
      le(n_, 2);
    } else if (type == "u32" || type == "i32") {
      le(n_, 4);
    } else if (type == "u64" || type == "i64") {
      le(n_, 8);
    } else if (type == "f64") {
      double d = static_cast<double>(n_) + 0.5;
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      le(bits, 8);
    } else if (type.size() > 2 && type.front() == '[' && type.back() == ']') {
      le(2, 8);
      for (int i = 0; i < 2; ++i) {
        auto r = Value(type.substr(1, type.size() - 2), out);
        if (!r) return r;
      }
    } else if (type.rfind("{str: ", 0) == 0 && type.back() == '}') {
      le(2, 8);
      const std::string base = "k" + std::to_string(n_);
      for (const char* suffix : {"a", "b"}) {  // in key order, as a map writes them
        le(base.size() + 1, 8);
        out += base + suffix;
        auto r = Value(type.substr(6, type.size() - 7), out);
        if (!r) return r;
      }
    } else if (auto it = doc_.find(type); it != doc_.end() && it->second.kind == "record") {
      return Fields(it->second, out);
    } else if (it != doc_.end() && it->second.kind == "enum u8" && !it->second.fields.empty()) {
      // One of the documented values, a different one each time round.
      const auto& values = it->second.fields;
      le(std::stoull(values[n_ % values.size()].name), 1);
    } else if (it != doc_.end() && it->second.kind == "variant" && !it->second.fields.empty()) {
      // The index, then a value of that alternative; each use takes the next alternative.
      const auto& alternatives = it->second.fields;
      const Field& chosen = alternatives[variant_uses_++ % alternatives.size()];
      le(std::stoull(chosen.name), 4);
      return Value(chosen.type, out);
    } else {
      return ::testing::AssertionFailure() << "the doc uses a type it does not define: " << type;
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult Fields(const Section& s, std::string& out) {
    for (const Field& f : s.fields) {
      auto r = Value(f.type, out);
      if (!r) return r << " (field " << f.name << ")";
    }
    return ::testing::AssertionSuccess();
  }

 private:
  const std::map<std::string, Section>& doc_;
  uint64_t n_ = 0;
  uint64_t variant_uses_ = 0;
};

TEST(ProtocolDocTest, EveryMessageBuiltFromTheDocsFieldTablesDecodesToTheSameBytes) {
  const auto doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "docs/protocol.md has no field tables";
  for (MessageType type : kAllMessageTypes) {
    const std::string name(MessageTypeName(type));
    SCOPED_TRACE(name);
    auto it = doc.find(name);
    ASSERT_NE(it, doc.end()) << "docs/protocol.md does not document " << name;
    EXPECT_EQ(it->second.kind, "message " + std::to_string(static_cast<int>(type)));
    ASSERT_FALSE(it->second.fields.empty());
    std::string payload;
    Builder b(doc);
    ASSERT_TRUE(b.Fields(it->second, payload));
    std::string bytes(kHeaderSize, '\0');
    WriteHeader(Header{kProtocolVersion, type, static_cast<uint32_t>(payload.size()), 0},
                bytes.data());
    bytes += payload;
    Result<Message> decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << "the codec does not read the documented layout: "
                              << decoded.status().message();
    EXPECT_EQ(TypeOf(*decoded), type);
    EXPECT_EQ(std::visit([](const auto& m) { return Encode(m); }, *decoded), bytes)
        << "the codec reads the bytes but not as the doc says";
  }
}

TEST(ProtocolDocTest, TheDocNamesTheVersionThisBuildSpeaks) {
  std::ifstream in(std::string(COUPLER_SOURCE_DIR) + "/docs/protocol.md");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "# coupler wire protocol (version " + std::to_string(kProtocolVersion) + ")");
}

}  // namespace
}  // namespace coupler::wire
