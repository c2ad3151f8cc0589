// RawValue: a spec document as a plain tree with source positions, whatever it was written in
// (YAML or JSON). The parser checks structure on it; params stay raw until the op's schema
// gives them a type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/job/diagnostics.h"
#include "runtime/job/spec_limits.h"

namespace coupler::job {

struct RawEntry;

struct RawValue {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  std::string text;              // scalar text; for a null, the word it was spelt with, if any
  bool quoted = false;           // "8" (a string) vs 8 (a number)
  std::vector<RawValue> items;   // sequence items
  std::vector<RawEntry> entries; // map entries, in file order (duplicates kept, for errors)
  SourcePos pos;

  RawValue() = default;
  RawValue(const RawValue&) = default;
  RawValue(RawValue&&) noexcept = default;
  RawValue& operator=(const RawValue&) = default;
  RawValue& operator=(RawValue&&) noexcept = default;
  // Frees the children from a work list rather than by recursion, so no tree, however it was
  // built, can exhaust the stack on its way out.
  ~RawValue();

  bool IsNull() const { return kind == Kind::kNull; }
  bool IsScalar() const { return kind == Kind::kScalar; }
  bool IsSequence() const { return kind == Kind::kSequence; }
  bool IsMap() const { return kind == Kind::kMap; }
  // First entry with this key, or nullptr.
  const RawValue* Find(std::string_view key) const;
  // "nothing", "a scalar", "a list", "a mapping".
  std::string_view KindName() const;
};

struct RawEntry {
  std::string key;  // "?" for a key that is not a scalar
  SourcePos key_pos;
  RawValue value;
};

// Builds a RawValue tree from parser events (start/end of containers, scalars), so the YAML
// and JSON readers share one construction and one set of limits (spec_limits.h): nesting
// depth, value count, and the values aliases may repeat. The first limit hit is kept as
// error() and every later event is ignored, so a refused document stops costing memory at
// that point; a reader that can stop its parser early should check failed() after each event.
class RawTreeBuilder {
 public:
  struct Error {
    SourcePos pos;
    std::string message;
  };

  explicit RawTreeBuilder(int max_depth = kMaxSpecDepth, size_t max_values = kMaxSpecValues,
                          size_t max_aliased = kMaxAliasedValues)
      : max_depth_(max_depth), max_values_(max_values), max_aliased_(max_aliased) {}

  // `anchor` != 0 remembers the value for later Alias(anchor) calls (YAML's &name / *name).
  void Scalar(SourcePos pos, std::string text, bool quoted, uint64_t anchor = 0);
  // `spelling`: the word a YAML null was written as (NULL, null, ~), kept in RawValue::text.
  void Null(SourcePos pos, uint64_t anchor = 0, std::string spelling = "");
  void StartSequence(SourcePos pos, uint64_t anchor = 0);
  void StartMap(SourcePos pos, uint64_t anchor = 0);
  void End();  // ends the innermost sequence or map
  // Re-emits an anchored value; false when the anchor is unknown.
  bool Alias(SourcePos pos, uint64_t anchor);

  bool failed() const { return error_.has_value(); }
  const std::optional<Error>& error() const { return error_; }
  RawValue Take() { return std::move(root_); }

 private:
  // A value with what the limits need to know about it, without walking it again.
  struct Sized {
    size_t values = 1;  // itself, its items, and its entries' keys and values
    int height = 0;     // containers on the longest path down from it, itself included
  };
  struct Frame {
    RawValue value;
    Sized size{1, 1};
    uint64_t anchor = 0;
    bool expecting_key = true;
    std::string key;
    SourcePos key_pos;
  };
  void Start(RawValue::Kind kind, SourcePos pos, uint64_t anchor);
  void Emit(RawValue v, Sized size, uint64_t anchor);
  void Fail(SourcePos pos, std::string message);
  void FailAliases(SourcePos pos);

  std::vector<Frame> stack_;
  std::map<uint64_t, std::pair<RawValue, Sized>> anchors_;
  RawValue root_;
  size_t values_ = 0;
  size_t aliased_ = 0;  // values copied for anchors plus values copied by aliases
  int max_depth_;
  size_t max_values_;
  size_t max_aliased_;
  std::optional<Error> error_;
};

}  // namespace coupler::job
