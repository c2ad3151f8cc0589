// The value of one op param once the validator typed it against the op's schema. The same
// type travels to the worker in wire::TaskParams, so an op reads what the validator checked.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace coupler::job {

// The alternatives follow ops::ParamType: kBool -> bool, kInt -> int64_t, kFloat -> double,
// kString / kPath -> std::string (kIntOrAuto: int64_t, or the string "auto"), kStringList ->
// the list. Their order is the variant index on the wire: append, never reorder.
using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

}  // namespace coupler::job
