#include "bench/spec_gen.h"

#include <vector>

#include <fmt/format.h>

namespace coupler::bench {

std::string MakeSyntheticSpec(int nodes, int chain_length, bool json) {
  // One node per line; JSON quotes every string, YAML writes the same nodes in flow style.
  auto q = [json](const std::string& s) { return json ? "\"" + s + "\"" : s; };
  auto line = [&](const std::string& id, const std::string& op, const std::string& inputs,
                  const std::string& extra) {
    std::string out = "  " + std::string(json ? "" : "- ") + "{" + q("id") + ": " + q(id) + ", " +
                      q("op") + ": " + q(op);
    if (!inputs.empty()) out += ", " + q("inputs") + ": [" + inputs + "]";
    return out + extra + "}";
  };
  std::vector<std::string> lines;
  int made = 0;
  for (int chain = 0; made < nodes; ++chain) {
    std::string prev = fmt::format("c{}-src", chain);
    lines.push_back(line(prev, "noop", "", fmt::format(", {}: {{{}: 16}}", q("params"), q("tasks"))));
    ++made;
    for (int k = 1; k < chain_length && made < nodes; ++k) {
      std::string id = fmt::format("c{}-n{}", chain, k);
      if (k % 10 == 0 && made + 2 <= nodes) {
        lines.push_back(line(id + "-stats", "column_stats", q(prev), ""));
        lines.push_back(line(id, "standardize", q(prev) + ", " + q(id + "-stats"), ""));
        made += 2;
      } else if (k % 25 == 0) {
        lines.push_back(line(id, "mpi_exec", q(prev),
                             fmt::format(", {}: 2, {}: {{{}: {}}}", q("ranks"), q("params"),
                                         q("command"), json ? "\"run {input}\"" : "\"run {input}\"")));
        ++made;
      } else {
        lines.push_back(line(id, "clip", q(prev),
                             fmt::format(", {}: {{{}: -3, {}: 3}}", q("params"), q("min"), q("max"))));
        ++made;
      }
      prev = id;
    }
  }
  std::string out = json ? fmt::format("{{\"name\": \"synthetic-{}\",\n\"nodes\": [\n", nodes)
                         : fmt::format("name: synthetic-{}\nnodes:\n", nodes);
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i] + (json && i + 1 < lines.size() ? ",\n" : "\n");
  }
  if (json) out += "]}\n";
  return out;
}

}  // namespace coupler::bench
