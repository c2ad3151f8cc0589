// A task's params as the validator typed them, defaults filled in, sent to the worker as typed
// values (no text to re-parse). An op reads Get<double>("threshold"): the schema's default is
// already there, so there is nothing to fall back to. A param missing or of another type than
// asked is a broken contract between the validator and the op, reported as Internal.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "runtime/job/param_value.h"
#include "runtime/status.h"

namespace coupler::wire {

using job::ParamValue;

class TaskParams {
 public:
  TaskParams() = default;
  TaskParams(const std::map<std::string, ParamValue>& values)  // NOLINT: params are a map
      : values_(values.begin(), values.end()) {}
  TaskParams(std::initializer_list<std::pair<const std::string, ParamValue>> values)
      : values_(values) {}

  void Set(std::string name, ParamValue value) { values_[std::move(name)] = std::move(value); }
  bool Has(std::string_view name) const { return values_.find(name) != values_.end(); }
  const std::map<std::string, ParamValue, std::less<>>& values() const { return values_; }

  // A param the schema requires or gives a default: present once validated.
  template <typename T>
  Result<T> Get(std::string_view name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return Missing(name);
    return As<T>(name, it->second);
  }

  // A param the schema leaves optional with no default: absence is the op's to interpret
  // (e.g. no `columns` means every column).
  template <typename T>
  Result<std::optional<T>> Optional(std::string_view name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return std::optional<T>();
    COUPLER_ASSIGN_OR_RETURN(T value, As<T>(name, it->second));
    return std::optional<T>(std::move(value));
  }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(values_);
  }
  friend bool operator==(const TaskParams&, const TaskParams&) = default;

 private:
  template <typename T>
  static Result<T> As(std::string_view name, const ParamValue& value) {
    if (const T* typed = std::get_if<T>(&value)) return *typed;
    return Mistyped(name, value, TypeName(ParamValue(std::in_place_type<T>)));
  }
  static Status Missing(std::string_view name);
  static Status Mistyped(std::string_view name, const ParamValue& value, std::string_view wanted);
  static std::string_view TypeName(const ParamValue& value);

  std::map<std::string, ParamValue, std::less<>> values_;
};

}  // namespace coupler::wire
