#include "coordinator/placement/placement.h"

#include <algorithm>
#include <charconv>

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

std::string SlurmJobOf(const Labels& labels) {
  auto it = labels.find("slurm_job");
  return it == labels.end() ? std::string() : it->second;
}

uint32_t GangSlots(uint32_t slots, const Labels& labels) {
  auto it = labels.find("slurm_cpus");
  if (it == labels.end()) return slots;
  uint32_t cpus = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), cpus);
  // A label that is not a plain count caps nothing (labels can also come from --label).
  if (ec != std::errc() || end != it->second.data() + it->second.size() || cpus == 0) return slots;
  return std::min(slots, cpus);
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
