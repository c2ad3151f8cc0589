// A string column's codes while a CSV range is parsed: the text of a field to its code, codes
// handed out in first-seen order into the column's dictionary. An open-addressing table of
// (hash, code) probed by a short byte hash: real categorical columns hold few distinct values
// and every field of the column is looked up, so the lookup is what this is built for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/table.h"

namespace coupler::kernels {

class CategoryCodes {
 public:
  using Dictionary = io::Column::Dictionary;

  CategoryCodes() : slots_(kInitialSlots) {}

  // The code of `text`, or -1 when it has none yet.
  int32_t Find(std::string_view text) const { return slots_[Probe(text, Hash(text))].code; }

  // The code of `text`, adding it to the dictionary when new.
  int32_t Intern(std::string_view text) {
    const uint64_t hash = Hash(text);
    size_t slot = Probe(text, hash);
    if (slots_[slot].code >= 0) return slots_[slot].code;
    const auto code = static_cast<int32_t>(dictionary_->size());
    dictionary_->emplace_back(text);
    slots_[slot] = {hash, code};
    if (2 * dictionary_->size() > slots_.size()) Grow();
    return code;
  }

  std::shared_ptr<Dictionary> TakeDictionary() { return std::move(dictionary_); }

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t code = -1;  // -1: empty
  };
  static constexpr size_t kInitialSlots = 64;

  // FNV-1a: fields are short, so a byte loop beats a block hash's setup.
  static uint64_t Hash(std::string_view text) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
  }

  // The slot holding `text`, or the empty slot where it would go.
  size_t Probe(std::string_view text, uint64_t hash) const {
    const size_t mask = slots_.size() - 1;
    for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      const Slot& s = slots_[slot];
      if (s.code < 0) return slot;
      if (s.hash == hash && (*dictionary_)[static_cast<size_t>(s.code)] == text) return slot;
    }
  }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.code < 0) continue;
      size_t slot = s.hash & mask;
      while (slots_[slot].code >= 0) slot = (slot + 1) & mask;
      slots_[slot] = s;
    }
  }

  std::shared_ptr<Dictionary> dictionary_ = std::make_shared<Dictionary>();
  std::vector<Slot> slots_;  // a power of two, at most half full
};

}  // namespace coupler::kernels
