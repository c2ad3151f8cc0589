#include "runtime/wire/task_params.h"

namespace coupler::wire {

std::string_view TaskParams::TypeName(const ParamValue& value) {
  constexpr std::string_view kNames[] = {"a bool", "an int", "a float", "a string",
                                         "a string list",
                                         "a string map"};
  static_assert(std::size(kNames) == std::variant_size_v<ParamValue>);
  return kNames[value.index()];
}

Status TaskParams::Missing(std::string_view name) {
  return Internal("missing param '" + std::string(name) +
                  "' (the validator fills in every param the op's schema requires or gives a "
                  "default)");
}

Status TaskParams::Mistyped(std::string_view name, const ParamValue& value,
                            std::string_view wanted) {
  return Internal("param '" + std::string(name) + "' arrived as " + std::string(TypeName(value)) +
                  ", the op reads it as " + std::string(wanted) +
                  ": the op and its schema disagree");
}

}  // namespace coupler::wire
