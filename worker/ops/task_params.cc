#include "worker/ops/task_params.h"

#include <charconv>
#include <system_error>

namespace coupler::worker {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status Malformed(std::string_view key, const std::string& text, std::string_view expected) {
  return InvalidArgument("param '" + std::string(key) + "' is '" + text + "', not " +
                         std::string(expected));
}

template <typename T>
Result<T> ParseNumber(std::string_view key, const std::string& text, std::string_view expected) {
  const std::string_view s = Trim(text);
  T value{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return Malformed(key, text, expected);
  }
  return value;
}

}  // namespace

const std::string* TaskParams::Find(std::string_view key) const {
  const auto it = params_.find(std::string(key));
  return it == params_.end() ? nullptr : &it->second;
}

bool TaskParams::Has(std::string_view key) const { return Find(key) != nullptr; }

Result<std::string> TaskParams::String(std::string_view key) const {
  const std::string* value = Find(key);
  if (value == nullptr) return InvalidArgument("missing param '" + std::string(key) + "'");
  return *value;
}

Result<double> TaskParams::Double(std::string_view key) const {
  COUPLER_ASSIGN_OR_RETURN(const std::string text, String(key));
  return ParseNumber<double>(key, text, "a number");
}

Result<int64_t> TaskParams::Int(std::string_view key) const {
  COUPLER_ASSIGN_OR_RETURN(const std::string text, String(key));
  return ParseNumber<int64_t>(key, text, "an integer");
}

std::string TaskParams::StringOr(std::string_view key, std::string_view fallback) const {
  const std::string* value = Find(key);
  return value == nullptr ? std::string(fallback) : *value;
}

Result<double> TaskParams::DoubleOr(std::string_view key, double fallback) const {
  return Has(key) ? Double(key) : Result<double>(fallback);
}

Result<int64_t> TaskParams::IntOr(std::string_view key, int64_t fallback) const {
  return Has(key) ? Int(key) : Result<int64_t>(fallback);
}

Result<bool> TaskParams::BoolOr(std::string_view key, bool fallback) const {
  const std::string* value = Find(key);
  if (value == nullptr) return fallback;
  const std::string_view s = Trim(*value);
  if (s == "true" || s == "True" || s == "1") return true;
  if (s == "false" || s == "False" || s == "0") return false;
  return Malformed(key, *value, "true or false");
}

std::vector<std::string> TaskParams::List(std::string_view key) const {
  std::vector<std::string> items;
  const std::string* value = Find(key);
  if (value == nullptr) return items;
  std::string_view rest = *value;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = Trim(rest.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) return items;
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace coupler::worker
