#include "runtime/job/raw_value.h"

#include <algorithm>

#include <fmt/format.h>

namespace coupler::job {
namespace {

// 4000000 → "4,000,000".
std::string WithCommas(size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

RawValue::~RawValue() {
  if (items.empty() && entries.empty()) return;
  // Move every descendant into one flat list; each is then destroyed childless.
  std::vector<RawValue> pending;
  auto adopt_children = [&pending](RawValue& v) {
    for (RawValue& item : v.items) pending.push_back(std::move(item));
    for (RawEntry& entry : v.entries) pending.push_back(std::move(entry.value));
    v.items.clear();
    v.entries.clear();
  };
  adopt_children(*this);
  while (!pending.empty()) {
    RawValue v = std::move(pending.back());
    pending.pop_back();
    adopt_children(v);
  }
}

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

void RawTreeBuilder::Fail(SourcePos pos, std::string message) {
  if (error_) return;
  error_ = Error{pos, std::move(message)};
  // Nothing built so far is needed any more: give the memory back now.
  stack_.clear();
  stack_.shrink_to_fit();
  anchors_.clear();
  root_ = RawValue();
}

void RawTreeBuilder::FailAliases(SourcePos pos) {
  Fail(pos, fmt::format("anchors and aliases (&name, *name) up to here copy more than {} values; "
                        "a spec may copy at most that many (write the values out instead)",
                        WithCommas(max_aliased_)));
}

void RawTreeBuilder::Scalar(SourcePos pos, std::string text, bool quoted, uint64_t anchor) {
  if (failed()) return;
  RawValue v;
  v.kind = RawValue::Kind::kScalar;
  v.pos = pos;
  v.text = std::move(text);
  v.quoted = quoted;
  Emit(std::move(v), Sized{}, anchor);
}

void RawTreeBuilder::Null(SourcePos pos, uint64_t anchor, std::string spelling) {
  if (failed()) return;
  RawValue v;
  v.pos = pos;
  v.text = std::move(spelling);
  Emit(std::move(v), Sized{}, anchor);
}

void RawTreeBuilder::StartSequence(SourcePos pos, uint64_t anchor) {
  Start(RawValue::Kind::kSequence, pos, anchor);
}

void RawTreeBuilder::StartMap(SourcePos pos, uint64_t anchor) {
  Start(RawValue::Kind::kMap, pos, anchor);
}

void RawTreeBuilder::Start(RawValue::Kind kind, SourcePos pos, uint64_t anchor) {
  if (failed()) return;
  if (static_cast<int>(stack_.size()) >= max_depth_) {
    Fail(pos, NestingTooDeepMessage());
    return;
  }
  Frame f;
  f.value.kind = kind;
  f.value.pos = pos;
  f.anchor = anchor;
  stack_.push_back(std::move(f));
}

void RawTreeBuilder::End() {
  if (failed() || stack_.empty()) return;
  Frame f = std::move(stack_.back());
  stack_.pop_back();
  Emit(std::move(f.value), f.size, f.anchor);
}

bool RawTreeBuilder::Alias(SourcePos pos, uint64_t anchor) {
  if (failed()) return true;
  auto it = anchors_.find(anchor);
  if (it == anchors_.end()) return false;
  const Sized size = it->second.second;
  // Charged before the copy is made: an alias bomb is refused at the cost of its text.
  aliased_ += size.values;
  if (aliased_ > max_aliased_) {
    FailAliases(pos);
    return true;
  }
  if (static_cast<int>(stack_.size()) + size.height > max_depth_) {
    Fail(pos, NestingTooDeepMessage());
    return true;
  }
  Emit(it->second.first, size, 0);
  return true;
}

void RawTreeBuilder::Emit(RawValue v, Sized size, uint64_t anchor) {
  values_ += size.values;
  if (values_ > max_values_) {
    Fail(v.pos, fmt::format("spec too large: more than {} values (aliases included)",
                            WithCommas(max_values_)));
    return;
  }
  if (anchor != 0) {
    aliased_ += size.values;  // the copy kept for later aliases costs as much as one alias
    if (aliased_ > max_aliased_) {
      FailAliases(v.pos);
      return;
    }
    anchors_[anchor] = {v, size};
  }
  if (stack_.empty()) {
    root_ = std::move(v);
    return;
  }
  Frame& parent = stack_.back();
  parent.size.values += size.values;
  parent.size.height = std::max(parent.size.height, size.height + 1);
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
