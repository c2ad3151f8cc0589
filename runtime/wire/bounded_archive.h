// A cereal input archive for untrusted bytes. It reads what cereal's BinaryOutputArchive wrote,
// like cereal::BinaryInputArchive, but never lets a length prefix ask for more than the payload
// could hold: BinaryInputArchive resizes a string or vector to an untrusted 64-bit size before
// reading it, so a 16-byte message could demand 2^60 bytes.
//
// Bounds it keeps, each by throwing cereal::Exception (Decode catches; nothing escapes it):
//  - a size prefix larger than the bytes left is rejected before anything is allocated;
//  - a vector of numbers needs size * sizeof(T) bytes left before it is resized;
//  - a vector of anything else grows one decoded element at a time (no resize to the claimed
//    count), so its memory tracks bytes actually consumed;
//  - a bool must be 0 or 1 (any other byte would be undefined behaviour once loaded).
// Maps and strings use cereal's own loaders, which the size-prefix check already bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/cereal.hpp>

namespace coupler::wire {

class BoundedInputArchive
    : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
 public:
  // Borrows `bytes`; they must outlive the archive.
  explicit BoundedInputArchive(std::string_view bytes)
      : cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision>(this),
        bytes_(bytes) {}

  size_t remaining() const { return bytes_.size() - offset_; }
  size_t offset() const { return offset_; }

  void ReadBytes(void* out, size_t size) {
    if (size > remaining()) {
      throw cereal::Exception("payload truncated: needs " + std::to_string(size) +
                              " bytes at offset " + std::to_string(offset_) + ", only " +
                              std::to_string(remaining()) + " left");
    }
    if (size != 0) std::memcpy(out, bytes_.data() + offset_, size);
    offset_ += size;
  }

  // Throws unless `count` elements of at least `min_element_bytes` each fit in what is left.
  void RequireFits(uint64_t count, size_t min_element_bytes, size_t prefix_offset) const {
    if (count > remaining() / min_element_bytes) {
      throw cereal::Exception("size prefix " + std::to_string(count) + " at offset " +
                              std::to_string(prefix_offset) + " exceeds the " +
                              std::to_string(remaining()) + " bytes left in the payload");
    }
  }

 private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

// The loaders below live in coupler::wire so cereal finds them by argument-dependent lookup;
// the vector one is chosen over cereal's generic template because it is more specialized.

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar,
                                                                    T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    static_assert(sizeof(bool) == 1, "BinaryOutputArchive writes bool as sizeof(bool) bytes");
    uint8_t byte = 0;
    ar.ReadBytes(&byte, 1);
    if (byte > 1) {
      throw cereal::Exception("bool at offset " + std::to_string(ar.offset() - 1) + " is " +
                              std::to_string(byte) + ", not 0 or 1");
    }
    value = byte != 0;
  } else {
    ar.ReadBytes(&value, sizeof(value));
  }
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(BoundedInputArchive& ar, cereal::NameValuePair<T>& nvp) {
  ar(nvp.value);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::SizeTag<T>& tag) {
  static_assert(sizeof(tag.size) == sizeof(cereal::size_type));
  const size_t prefix_offset = ar.offset();
  cereal::size_type size = 0;
  ar.ReadBytes(&size, sizeof(size));
  // Every element of a string, vector or map takes at least one byte on the wire.
  ar.RequireFits(size, 1, prefix_offset);
  tag.size = size;
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::BinaryData<T>& data) {
  ar.ReadBytes(data.data, static_cast<size_t>(data.size));
}

namespace internal {

template <class T, class A>
void LoadVector(BoundedInputArchive& ar, std::vector<T, A>& vec) {
  const size_t prefix_offset = ar.offset();
  cereal::size_type size = 0;
  ar(cereal::make_size_tag(size));
  vec.clear();
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    // Written as one block by cereal's BinaryData path.
    ar.RequireFits(size, sizeof(T), prefix_offset);
    vec.resize(static_cast<size_t>(size));
    ar.ReadBytes(vec.data(), static_cast<size_t>(size) * sizeof(T));
  } else {
    for (cereal::size_type i = 0; i < size; ++i) {
      T element{};
      ar(element);
      vec.push_back(std::move(element));
    }
  }
}

}  // namespace internal

template <class T, class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, std::vector<T, A>& vec) {
  internal::LoadVector(ar, vec);
}

// Without this, cereal's vector<bool> loader and the one above would be equally specialized.
template <class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, std::vector<bool, A>& vec) {
  internal::LoadVector(ar, vec);
}

}  // namespace coupler::wire

CEREAL_REGISTER_ARCHIVE(coupler::wire::BoundedInputArchive)

// Half of CEREAL_SETUP_ARCHIVE_TRAITS: the other half would map BinaryOutputArchive back to an
// input archive, which binary.hpp already does (to BinaryInputArchive), and may only be done once.
namespace cereal::traits::detail {
template <>
struct get_output_from_input<coupler::wire::BoundedInputArchive> {
  using type = cereal::BinaryOutputArchive;
};
}  // namespace cereal::traits::detail
