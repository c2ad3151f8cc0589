#include "runtime/job/raw_value.h"

namespace coupler::job {
namespace {

size_t CountValues(const RawValue& v) {
  size_t n = 1;
  for (const auto& i : v.items) n += CountValues(i);
  for (const auto& e : v.entries) n += 1 + CountValues(e.value);
  return n;
}

}  // namespace

const RawValue* RawValue::Find(std::string_view key) const {
  for (const auto& e : entries) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

std::string_view RawValue::KindName() const {
  switch (kind) {
    case Kind::kNull: return "nothing";
    case Kind::kScalar: return "a scalar";
    case Kind::kSequence: return "a list";
    case Kind::kMap: return "a mapping";
  }
  return "nothing";
}

void RawTreeBuilder::Scalar(SourcePos pos, std::string text, bool quoted, uint64_t anchor) {
  RawValue v;
  v.kind = RawValue::Kind::kScalar;
  v.pos = pos;
  v.text = std::move(text);
  v.quoted = quoted;
  Emit(std::move(v), anchor);
}

void RawTreeBuilder::Null(SourcePos pos, uint64_t anchor) {
  RawValue v;
  v.pos = pos;
  Emit(std::move(v), anchor);
}

void RawTreeBuilder::StartSequence(SourcePos pos, uint64_t anchor) {
  Start(RawValue::Kind::kSequence, pos, anchor);
}

void RawTreeBuilder::StartMap(SourcePos pos, uint64_t anchor) {
  Start(RawValue::Kind::kMap, pos, anchor);
}

void RawTreeBuilder::Start(RawValue::Kind kind, SourcePos pos, uint64_t anchor) {
  Frame f;
  f.value.kind = kind;
  f.value.pos = pos;
  f.anchor = anchor;
  stack_.push_back(std::move(f));
}

void RawTreeBuilder::End() {
  if (stack_.empty()) return;
  Frame f = std::move(stack_.back());
  stack_.pop_back();
  Emit(std::move(f.value), f.anchor);
}

bool RawTreeBuilder::Alias(uint64_t anchor) {
  auto it = anchors_.find(anchor);
  if (it == anchors_.end()) return false;
  // Each alias costs its full size: "billion laughs" documents hit the cap, not memory.
  values_ += it->second.second;
  if (too_large()) return true;
  Emit(it->second.first, 0);
  --values_;  // Emit counted the root once more
  return true;
}

void RawTreeBuilder::Emit(RawValue v, uint64_t anchor) {
  ++values_;
  if (too_large()) return;
  if (anchor != 0) anchors_[anchor] = {v, CountValues(v)};
  if (stack_.empty()) {
    root_ = std::move(v);
    return;
  }
  Frame& parent = stack_.back();
  if (parent.value.kind == RawValue::Kind::kSequence) {
    parent.value.items.push_back(std::move(v));
  } else if (parent.expecting_key) {
    parent.key = v.kind == RawValue::Kind::kScalar ? v.text : std::string("?");
    parent.key_pos = v.pos;
    parent.expecting_key = false;
  } else {
    parent.value.entries.push_back(RawEntry{std::move(parent.key), parent.key_pos, std::move(v)});
    parent.expecting_key = true;
  }
}

}  // namespace coupler::job
