#include "coordinator/placement/placement.h"

#include <fmt/format.h>

namespace coupler::coordinator {

bool LabelsMatch(const Labels& required, const Labels& labels) {
  for (const auto& [key, value] : required) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

bool FastInterconnect(const Labels& labels) {
  auto it = labels.find("interconnect");
  return it != labels.end() && (it->second == "nvlink" || it->second == "infiniband");
}

std::string DescribeLabels(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    if (!out.empty()) out += ',';
    out += key;
    out += '=';
    out += value;
  }
  return out;
}

std::string UnmatchedReason(const Labels& required, const std::vector<const Labels*>& alive) {
  if (required.empty()) return {};
  for (const Labels* l : alive) {
    if (LabelsMatch(required, *l)) return {};
  }
  return fmt::format("waiting for a worker with {} ({} alive worker{}, none match)",
                     DescribeLabels(required), alive.size(), alive.size() == 1 ? "" : "s");
}

}  // namespace coupler::coordinator
