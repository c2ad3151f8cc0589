// The value of one op param once the validator typed it against the op's schema. The same
// type travels to the worker in wire::TaskParams, so an op reads what the validator checked.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace coupler::job {

// One entry of a mapping param (`dtypes: {x0: float64}`, `derive`'s `{name: expression}`):
// kept as a list so the spec's order survives, since later entries may build on earlier ones.
struct ParamEntry {
  std::string key;
  std::string value;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(key, value);
  }
  friend bool operator==(const ParamEntry&, const ParamEntry&) = default;
};
using ParamMap = std::vector<ParamEntry>;

// The alternatives follow ops::ParamType: kBool -> bool, kInt -> int64_t, kFloat -> double,
// kString / kPath -> std::string (kIntOrAuto: int64_t, or the string "auto"; kBoolOrAuto: bool,
// or the string "auto"), kStringList ->
// the list, kStringMap -> ParamMap (from protocol version 10). Their order is the variant index
// on the wire: append, never reorder.
using ParamValue =
    std::variant<bool, int64_t, double, std::string, std::vector<std::string>, ParamMap>;

}  // namespace coupler::job
