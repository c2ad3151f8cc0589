#include "worker/stale_temps.h"

#include <signal.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

namespace coupler::worker {

int RemoveStaleTemps(const std::string& output_path) {
  namespace fs = std::filesystem;
  const fs::path out(output_path);
  const std::string prefix = out.filename().string() + ".tmp.";
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const char* begin = name.data() + prefix.size();
    const char* end = name.data() + name.size();
    long pid = 0;
    auto [ptr, err] = std::from_chars(begin, end, pid);
    if (err != std::errc() || ptr == begin || pid <= 0) continue;
    // Signal 0 only asks whether the process exists.
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (fs::remove(e.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace coupler::worker
