#include "runtime/job/spec_readers.h"

#include <algorithm>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <rapidjson/reader.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "runtime/job/text_precheck.h"

namespace coupler::job {
namespace {

SourcePos PosOf(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// The word a YAML null was spelt with (null, Null, NULL, ~), read from the text at its mark;
// empty for a null written as nothing. A list of names keeps it as the name it looks like:
// `na_values: [NULL]` means the token NULL, not YAML's null.
std::string NullSpelling(std::string_view text, const YAML::Mark& m) {
  if (m.is_null() || m.pos < 0 || static_cast<size_t>(m.pos) >= text.size()) return "";
  const std::string_view rest = text.substr(static_cast<size_t>(m.pos));
  const std::string_view word = rest.substr(0, rest.find_first_of(",]}#\r\n \t"));
  for (const std::string_view spelling : {"null", "Null", "NULL", "~"}) {
    if (word == spelling) return std::string(word);
  }
  return "";
}

// yaml-cpp events → RawTreeBuilder. yaml-cpp tags quoted scalars "!" and plain ones "?".
class YamlEvents : public YAML::EventHandler {
 public:
  YamlEvents(RawTreeBuilder& b, std::string_view text) : b_(b), text_(text) {}
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override {
    b_.Null(PosOf(m), a, NullSpelling(text_, m));
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override {
    if (!b_.Alias(PosOf(m), a)) b_.Null(PosOf(m));
  }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a,
                const std::string& value) override {
    b_.Scalar(PosOf(m), value, tag == "!", a);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a,
                       YAML::EmitterStyle::value) override {
    b_.StartSequence(PosOf(m), a);
  }
  void OnSequenceEnd() override { b_.End(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a,
                  YAML::EmitterStyle::value) override {
    b_.StartMap(PosOf(m), a);
  }
  void OnMapEnd() override { b_.End(); }

 private:
  RawTreeBuilder& b_;
  std::string_view text_;
};

// Counts documents without building them, to reject a second one.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& m) override { start = PosOf(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { First(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { First(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    First(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    First(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    First(m);
  }
  void OnMapEnd() override {}
  SourcePos start;
  SourcePos first_value;

 private:
  void First(const YAML::Mark& m) {
    if (first_value.line == 0) first_value = PosOf(m);
  }
};

// yaml-cpp's words for the common mistakes, in a user's words and at the cause.
void ReportYamlError(const YAML::Exception& e, const TextFacts& facts, Diagnostics& diags) {
  SourcePos pos = PosOf(e.mark);
  std::string msg = e.msg;
  if (msg.find("flow not found") != std::string::npos && facts.unclosed_bracket) {
    const char open = facts.unclosed_bracket_char;
    pos = *facts.unclosed_bracket;
    msg = fmt::format("'{}' opened here is never closed (no matching '{}')", open,
                      open == '[' ? ']' : '}');
  } else if (msg.find("bad file") != std::string::npos ||
             msg.find("recursion") != std::string::npos) {
    msg = "nested too deep";
  }
  diags.Add(pos, "", "", "not valid YAML or JSON: " + msg);
}

// rapidjson input stream that remembers where the current token began, for positions.
class TrackingStream {
 public:
  using Ch = char;
  explicit TrackingStream(std::string_view s) : s_(s) {}
  Ch Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  Ch Take() {
    if (i_ >= s_.size()) return '\0';
    const char c = s_[i_];
    if (after_delimiter_ && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      token_start_ = i_;
      after_delimiter_ = false;
    }
    if (c == ',' || c == ':' || c == '[' || c == '{') after_delimiter_ = true;
    if (c == '[' || c == '{') token_start_ = i_;
    ++i_;
    return c;
  }
  size_t Tell() const { return i_; }
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }
  size_t token_start() const { return token_start_; }

 private:
  std::string_view s_;
  size_t i_ = 0;
  size_t token_start_ = 0;
  bool after_delimiter_ = true;
};

class JsonEvents {
 public:
  JsonEvents(RawTreeBuilder& b, const TrackingStream& s, std::string_view text)
      : b_(b), s_(s) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
  }
  bool Null() { return b_.Null(Pos()), Ok(); }
  bool Bool(bool v) { return Plain(v ? "true" : "false"); }
  bool Int(int v) { return Plain(std::to_string(v)); }
  bool Uint(unsigned v) { return Plain(std::to_string(v)); }
  bool Int64(int64_t v) { return Plain(std::to_string(v)); }
  bool Uint64(uint64_t v) { return Plain(std::to_string(v)); }
  bool Double(double v) { return Plain(fmt::format("{}", v)); }
  bool RawNumber(const char* str, rapidjson::SizeType len, bool) { return Plain(std::string(str, len)); }
  bool String(const char* str, rapidjson::SizeType len, bool) {
    b_.Scalar(Pos(), std::string(str, len), /*quoted=*/true);
    return Ok();
  }
  bool Key(const char* str, rapidjson::SizeType len, bool copy) { return String(str, len, copy); }
  // rapidjson announces a container before it takes the bracket: the bracket is next.
  bool StartObject() { return b_.StartMap(PosAt(s_.Tell())), Ok(); }
  bool EndObject(rapidjson::SizeType) { return b_.End(), Ok(); }
  bool StartArray() { return b_.StartSequence(PosAt(s_.Tell())), Ok(); }
  bool EndArray(rapidjson::SizeType) { return b_.End(), Ok(); }

 private:
  bool Plain(std::string text) {
    b_.Scalar(Pos(), std::move(text), /*quoted=*/false);
    return Ok();
  }
  // False stops rapidjson: past a limit, the rest of the text is not worth reading.
  bool Ok() const { return !b_.failed(); }
  SourcePos Pos() const { return PosAt(s_.token_start()); }
  SourcePos PosAt(size_t off) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(off - line_starts_[line - 1] + 1)};
  }
  RawTreeBuilder& b_;
  const TrackingStream& s_;
  std::vector<size_t> line_starts_;
};

void ReportLimit(const RawTreeBuilder& builder, Diagnostics& diags) {
  const RawTreeBuilder::Error& e = *builder.error();
  diags.Add(e.pos.line > 0 ? e.pos : SourcePos{1, 1}, "", "", e.message);
}

}  // namespace

std::optional<RawValue> ReadJson(std::string_view text, Diagnostics& diags) {
  RawTreeBuilder builder;
  TrackingStream stream(text);
  JsonEvents events(builder, stream, text);
  rapidjson::Reader reader;
  // Iterative parsing: deep nesting costs heap, not stack.
  auto result = reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag |
                             rapidjson::kParseValidateEncodingFlag>(stream, events);
  if (builder.failed()) {
    ReportLimit(builder, diags);
    return std::nullopt;
  }
  if (result.IsError()) return std::nullopt;
  return builder.Take();
}

std::optional<RawValue> ReadSpecText(std::string_view text, Diagnostics& diags) {
  if (!CheckSpecBytes(text, diags)) return std::nullopt;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    const size_t errors_before = diags.total();
    if (auto json = ReadJson(text, diags)) return json;
    if (diags.total() != errors_before) return std::nullopt;  // JSON, but past a limit
  }
  // Depth is checked on the text first: yaml-cpp's parser recurses once per level.
  TextFacts facts;
  if (!CheckYamlLexically(text, diags, facts, kMaxSpecDepth)) return std::nullopt;
  RawTreeBuilder builder;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    YamlEvents events(builder, text);
    if (!parser.HandleNextDocument(events)) return RawValue{};  // empty document
    if (builder.failed()) {
      ReportLimit(builder, diags);
      return std::nullopt;
    }
    DocumentCounter second;
    if (parser.HandleNextDocument(second)) {
      diags.Add(second.first_value.line > 0 ? second.first_value : second.start, "", "",
                "not valid YAML or JSON: a second document starts here; a spec file holds one "
                "job (remove the extra text or '---')");
      return std::nullopt;
    }
  } catch (const YAML::Exception& e) {
    if (builder.failed()) {
      ReportLimit(builder, diags);
    } else {
      ReportYamlError(e, facts, diags);
    }
    return std::nullopt;
  }
  return builder.Take();
}

}  // namespace coupler::job
