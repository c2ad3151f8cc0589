#include "worker/stale_temps.h"

#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <optional>

#include "runtime/io/output_layout.h"

namespace coupler::worker {

int RemoveStaleTemps(const std::string& output_path) {
  namespace fs = std::filesystem;
  const fs::path out(output_path);
  const std::string final_name = out.filename().string();
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::optional<long> pid = io::TempWriterPid(final_name, e.path().filename().string());
    if (!pid) continue;
    // Signal 0 only asks whether the process exists.
    if (kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;
    if (fs::remove(e.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace coupler::worker
