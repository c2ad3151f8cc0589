#include "runtime/net/io_thread_priority.h"

#include <sys/resource.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace coupler::net {
namespace {

std::string ThreadName(int name_prefix, int io_thread) {
  return std::to_string(name_prefix) + "/ZMQbg/IO/" + std::to_string(io_thread);
}

// The id of this process's thread named `name`; 0 when there is none.
pid_t FindThread(const std::string& name) {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) {
      return static_cast<pid_t>(std::stol(task.path().filename().string()));
    }
  }
  return 0;
}

// FindThread until the thread is there and named (a thread names itself once it runs), or
// `wait` has passed: NotFound then.
Result<pid_t> AwaitThread(const std::string& name, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  pid_t tid = FindThread(name);
  while (tid == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    tid = FindThread(name);
  }
  if (tid == 0) return NotFound("no I/O thread named '" + name + "' in this process");
  return tid;
}

// On Linux PRIO_PROCESS with a thread id reads and sets that thread's nice value alone.
Result<int> NiceOf(pid_t tid, const std::string& name) {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  if (nice == -1 && errno != 0) {
    return Internal("getpriority of thread " + name + ": " + std::strerror(errno));
  }
  return nice;
}

}  // namespace

Status LowerIoThreadPriority(int name_prefix, int io_thread, int increment,
                             std::chrono::milliseconds wait) {
  const std::string name = ThreadName(name_prefix, io_thread);
  COUPLER_ASSIGN_OR_RETURN(const pid_t tid, AwaitThread(name, wait));
  COUPLER_ASSIGN_OR_RETURN(const int now, NiceOf(tid, name));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), std::min(now + increment, 19)) != 0) {
    return Internal("setpriority of thread " + name + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Result<int> IoThreadNice(int name_prefix, int io_thread, std::chrono::milliseconds wait) {
  const std::string name = ThreadName(name_prefix, io_thread);
  COUPLER_ASSIGN_OR_RETURN(const pid_t tid, AwaitThread(name, wait));
  return NiceOf(tid, name);
}

}  // namespace coupler::net
