#include "worker/ops/gang_launch.h"

#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "runtime/io/atomic_file.h"

namespace coupler::worker {
namespace {

std::string ThisHost() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

}  // namespace

uint32_t GangRanks(const wire::TaskSpec& spec, int64_t declared) {
  if (spec.gang_ranks.empty()) return static_cast<uint32_t>(std::max<int64_t>(declared, 1));
  return std::accumulate(spec.gang_ranks.begin(), spec.gang_ranks.end(), uint32_t{0});
}

bool GangIsLocal(const wire::TaskSpec& spec) {
  const std::string self = ThisHost();
  return std::all_of(spec.gang_hosts.begin(), spec.gang_hosts.end(), [&](const std::string& h) {
    return h.empty() || h == "localhost" || h == "127.0.0.1" || h == self;
  });
}

std::string GangHostfileText(const wire::TaskSpec& spec, uint32_t ranks) {
  if (GangIsLocal(spec)) return "localhost slots=" + std::to_string(ranks) + "\n";
  std::string text;
  for (size_t i = 0; i < spec.gang_hosts.size(); ++i) {
    text += spec.gang_hosts[i] + " slots=" +
            std::to_string(i < spec.gang_ranks.size() ? spec.gang_ranks[i] : 1) + "\n";
  }
  return text;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(text))};
  return io::WriteFileAtomic(path, parts, /*durable=*/false);
}

std::string SubstitutePlaceholders(
    std::string_view command, const std::vector<std::pair<std::string_view, std::string>>& values) {
  std::string out;
  size_t pos = 0;
  while (pos < command.size()) {
    const size_t open = command.find('{', pos);
    out += command.substr(pos, open - pos);
    if (open == std::string_view::npos) break;
    const size_t close = command.find('}', open);
    const std::string_view name =
        close == std::string_view::npos ? "" : command.substr(open + 1, close - open - 1);
    const auto value = std::find_if(values.begin(), values.end(),
                                    [&](const auto& v) { return !name.empty() && v.first == name; });
    if (value != values.end()) {
      out += value->second;
      pos = close + 1;
    } else {
      out += '{';
      pos = open + 1;
    }
  }
  return out;
}

}  // namespace coupler::worker
