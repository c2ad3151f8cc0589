#include "coordinator/http/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace coupler::coordinator::http {
namespace {

// Seconds since the epoch at which the machine booted (/proc/stat's btime).
std::optional<double> BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double t = 0;
      if (in >> t) return t;
      return std::nullopt;
    }
    in.ignore(1 << 20, '\n');
  }
  return std::nullopt;
}

uint64_t CountOpenFds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // less the one opendir holds
}

}  // namespace

std::optional<ProcessStats> ReadProcessStats() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: the fields after it start
  // after its last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string word; rest >> word;) f.push_back(word);
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  ProcessStats s;
  try {
    s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // utime, stime
    s.threads = std::stoull(f[17]);
    const std::optional<double> boot = BootTime();
    if (boot) s.start_time_seconds = *boot + std::stod(f[19]) / ticks;
    s.virtual_bytes = std::stoull(f[20]);
    s.resident_bytes = static_cast<uint64_t>(std::stod(f[21]) * page);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  s.open_fds = CountOpenFds();
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) s.max_fds = lim.rlim_cur;
  return s;
}

}  // namespace coupler::coordinator::http
