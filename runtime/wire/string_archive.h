// A cereal output archive that appends to a std::string: the bytes cereal's
// BinaryOutputArchive writes, without its std::ostream. Through a stream every field was a
// virtual sputn into a streambuf and then an append; a task assignment is ~20 fields per task,
// and encoding it was an eighth of the coordinator's time at 200k tasks/s. BoundedInputArchive
// (bounded_archive.h) reads what this writes, as it reads BinaryOutputArchive's.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>

#include <cereal/cereal.hpp>

#include "runtime/wire/bounded_archive.h"

namespace coupler::wire {

class StringOutputArchive
    : public cereal::OutputArchive<StringOutputArchive, cereal::AllowEmptyClassElision> {
 public:
  // Appends to `*out`, which must outlive the archive.
  explicit StringOutputArchive(std::string* out)
      : cereal::OutputArchive<StringOutputArchive, cereal::AllowEmptyClassElision>(this),
        out_(out) {}

  void WriteBytes(const void* data, size_t size) {
    out_->append(static_cast<const char*>(data), size);
  }

 private:
  std::string* out_;
};

// As binary.hpp writes them for BinaryOutputArchive: numbers as their bytes, a size tag as its
// size, a name-value pair as its value, binary data (strings, vectors of numbers) as one block.
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(StringOutputArchive& ar,
                                                                    const T& value) {
  ar.WriteBytes(std::addressof(value), sizeof(value));
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(StringOutputArchive& ar, cereal::NameValuePair<T>& nvp) {
  ar(nvp.value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(StringOutputArchive& ar, cereal::SizeTag<T>& tag) {
  ar(tag.size);
}

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(StringOutputArchive& ar, const cereal::BinaryData<T>& data) {
  ar.WriteBytes(data.data, static_cast<size_t>(data.size));
}

}  // namespace coupler::wire

CEREAL_REGISTER_ARCHIVE(coupler::wire::StringOutputArchive)

// Half of CEREAL_SETUP_ARCHIVE_TRAITS (bounded_archive.h has the other direction's half).
namespace cereal::traits::detail {
template <>
struct get_input_from_output<coupler::wire::StringOutputArchive> {
  using type = coupler::wire::BoundedInputArchive;
};
}  // namespace cereal::traits::detail
