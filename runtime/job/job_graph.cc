#include "runtime/job/job_graph.h"

namespace coupler::job {

std::string_view CouplingName(Coupling c) {
  switch (c) {
    case Coupling::kAuto: return "auto";
    case Coupling::kLoose: return "loose";
    case Coupling::kTight: return "tight";
  }
  return "auto";
}

SourcePos NodeSpec::PosOf(const std::string& field) const {
  auto it = positions.find(field);
  if (it != positions.end()) return it->second;
  // "params.shards" falls back to "params", then to the node itself.
  auto dot = field.find_first_of(".[");
  if (dot != std::string::npos) {
    it = positions.find(field.substr(0, dot));
    if (it != positions.end()) return it->second;
  }
  return pos;
}

std::optional<size_t> JobGraph::Find(std::string_view id) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == id) return i;
  }
  return std::nullopt;
}

}  // namespace coupler::job
