// RawValue: a spec document as a plain tree with source positions, whatever it was written in
// (YAML or JSON). The parser checks structure on it; params stay raw until the op's schema
// gives them a type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/job/diagnostics.h"

namespace coupler::job {

struct RawEntry;

struct RawValue {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  std::string text;              // scalar text
  bool quoted = false;           // "8" (a string) vs 8 (a number)
  std::vector<RawValue> items;   // sequence items
  std::vector<RawEntry> entries; // map entries, in file order (duplicates kept, for errors)
  SourcePos pos;

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
// and JSON readers share one construction. Caps the total value count so aliases cannot
// expand a small file into gigabytes.
class RawTreeBuilder {
 public:
  explicit RawTreeBuilder(size_t max_values = 4'000'000) : max_values_(max_values) {}

  // `anchor` != 0 remembers the value for later Alias(anchor) calls (YAML's &name / *name).
  void Scalar(SourcePos pos, std::string text, bool quoted, uint64_t anchor = 0);
  void Null(SourcePos pos, uint64_t anchor = 0);
  void StartSequence(SourcePos pos, uint64_t anchor = 0);
  void StartMap(SourcePos pos, uint64_t anchor = 0);
  void End();  // ends the innermost sequence or map
  // Re-emits an anchored value; false when the anchor is unknown.
  bool Alias(uint64_t anchor);

  bool too_large() const { return values_ > max_values_; }
  RawValue Take() { return std::move(root_); }

 private:
  struct Frame {
    RawValue value;
    uint64_t anchor = 0;
    bool expecting_key = true;
    std::string key;
    SourcePos key_pos;
  };
  void Start(RawValue::Kind kind, SourcePos pos, uint64_t anchor);
  void Emit(RawValue v, uint64_t anchor);

  std::vector<Frame> stack_;
  std::map<uint64_t, std::pair<RawValue, size_t>> anchors_;  // value and its value count
  RawValue root_;
  size_t values_ = 0;
  size_t max_values_;
};

}  // namespace coupler::job
