// Typed access to a TaskSpec's params, which the coordinator renders as text (numbers in
// decimal, bools true/false, lists comma-joined). Errors name the param and show its text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace coupler::worker {

class TaskParams {
 public:
  explicit TaskParams(const std::map<std::string, std::string>& params) : params_(params) {}

  bool Has(std::string_view key) const;

  // Required: InvalidArgument "missing param 'key'" when absent.
  Result<std::string> String(std::string_view key) const;
  Result<double> Double(std::string_view key) const;
  Result<int64_t> Int(std::string_view key) const;

  // With a default for an absent key; a present but malformed value is still an error.
  std::string StringOr(std::string_view key, std::string_view fallback) const;
  Result<double> DoubleOr(std::string_view key, double fallback) const;
  Result<int64_t> IntOr(std::string_view key, int64_t fallback) const;
  Result<bool> BoolOr(std::string_view key, bool fallback) const;

  // "a, b,c" -> {"a", "b", "c"}; absent or empty -> {}.
  std::vector<std::string> List(std::string_view key) const;

 private:
  const std::string* Find(std::string_view key) const;

  const std::map<std::string, std::string>& params_;
};

}  // namespace coupler::worker
