#include "worker/task_device.h"

#include <algorithm>
#include <charconv>

namespace coupler::worker {

TaskPlacement PlacementForSlot(std::span<const int> gpus, size_t slot) {
  if (gpus.empty()) return {};
  return {kernels::Backend::kCuda, gpus[slot % gpus.size()]};
}

TaskPlacement PlacementAvoiding(std::span<const int> gpus, size_t slot, std::span<const int> fenced) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    const int device = gpus[(slot + i) % gpus.size()];
    if (std::find(fenced.begin(), fenced.end(), device) == fenced.end()) {
      return {kernels::Backend::kCuda, device};
    }
  }
  return {};
}

std::string DeviceLabel(const TaskPlacement& placement) {
  if (placement.backend != kernels::Backend::kCuda) return "cpu";
  return "cuda:" + std::to_string(placement.device);
}

Result<std::vector<int>> ParseGpuList(std::string_view text, int visible) {
  std::vector<int> gpus;
  if (text.empty() || text == "all") {
    for (int i = 0; i < visible; ++i) gpus.push_back(i);
    return gpus;
  }
  if (text == "none") return gpus;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view entry = text.substr(start, comma - start);
    int ordinal = -1;
    const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), ordinal);
    if (entry.empty() || error != std::errc() || end != entry.data() + entry.size() ||
        ordinal < 0) {
      return InvalidArgument("--gpus: '" + std::string(entry) +
                             "' is not a GPU ordinal; use e.g. 0,1 or all or none");
    }
    if (ordinal >= visible) {
      return InvalidArgument("--gpus: GPU " + std::to_string(ordinal) + " is not visible (" +
                             std::to_string(visible) + " CUDA device(s) here)");
    }
    if (std::find(gpus.begin(), gpus.end(), ordinal) != gpus.end()) {
      return InvalidArgument("--gpus: GPU " + std::to_string(ordinal) + " is listed twice");
    }
    gpus.push_back(ordinal);
    start = comma + 1;
  }
  return gpus;
}

}  // namespace coupler::worker
