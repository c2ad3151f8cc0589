#include "coordinator/event_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>

#include <rapidjson/internal/dtoa.h>

#include "runtime/logging.h"

namespace coupler::coordinator {
namespace {

// Past this many buffered bytes a line triggers a flush of its own: memory stays bounded when
// a burst outruns the flush cadence, and a write still carries thousands of lines.
constexpr size_t kFlushAtBytes = size_t{8} << 20;
// What a failing log holds for a later retry; past it the buffer is dropped and counted, so a
// full disk costs neither memory nor a write per event.
constexpr size_t kMaxHeldBytes = kFlushAtBytes;

int64_t EpochMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A string JSON writes as it is: no quote, backslash or control character (the escapes
// rapidjson's writer makes; it leaves UTF-8 as it is).
bool Plain(std::string_view s) {
  for (const unsigned char c : s) {
    if (c < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

void AppendUint(std::string& out, uint64_t v) {
  char digits[24];
  const std::to_chars_result r = std::to_chars(digits, digits + sizeof(digits), v);
  out.append(digits, static_cast<size_t>(r.ptr - digits));
}

// As rapidjson's Writer::Double writes it (its dtoa, every decimal place it needs).
void AppendDouble(std::string& out, double v) {
  char digits[32];
  const char* end = rapidjson::internal::dtoa(v, digits);
  out.append(digits, static_cast<size_t>(end - digits));
}

}  // namespace

EventLog::EventLog(EventLogOptions options) : options_(std::move(options)) {}

EventLog::~EventLog() {
  if (!buffer_.empty()) (void)Flush();  // the failure, if any, is logged there
}

size_t EventLog::Stamp(char* ts, int64_t& ms) {
  ms = EpochMs();
  const int64_t second = ms / 1000;
  if (second != cached_second_) {
    const std::time_t t = static_cast<std::time_t>(second);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S.", &tm);
    cached_stamp_ = stamp;
    cached_second_ = second;
  }
  // The milliseconds by hand: snprintf would cost more than the rest of the stamp.
  const int frac = static_cast<int>(ms % 1000);
  const size_t n = cached_stamp_.copy(ts, 28);
  ts[n] = static_cast<char>('0' + frac / 100);
  ts[n + 1] = static_cast<char>('0' + frac / 10 % 10);
  ts[n + 2] = static_cast<char>('0' + frac % 10);
  ts[n + 3] = 'Z';
  return n + 4;
}

json::Writer& EventLog::Begin(std::string_view event) {
  char ts[32];
  int64_t ms = 0;
  const size_t n = Stamp(ts, ms);
  line_.Clear();
  line_.BeginObject();
  line_.Field("ts", std::string_view(ts, n));
  line_.Field("ms", ms);
  line_.Field("event", event);
  return line_;
}

void EventLog::End() {
  line_.EndObject();
  buffer_ += line_.View();
  buffer_ += '\n';
  if (buffer_.size() >= kFlushAtBytes) (void)Flush();  // a failure is counted and logged there
}

bool EventLog::BeginPlainTaskLine(std::string_view event, const TaskEventRef& t,
                                  std::string_view worker) {
  if ((t.fused != nullptr && !t.fused->empty()) || !Plain(t.job) || !Plain(t.node) ||
      !Plain(worker)) {
    return false;
  }
  char ts[32];
  int64_t ms = 0;
  const size_t n = Stamp(ts, ms);
  buffer_ += R"({"ts":")";
  buffer_.append(ts, n);
  buffer_ += R"(","ms":)";
  AppendUint(buffer_, static_cast<uint64_t>(ms));
  buffer_ += R"(,"event":")";
  buffer_ += event;
  buffer_ += R"(","job":")";
  buffer_ += t.job;
  buffer_ += R"(","node":")";
  buffer_ += t.node;
  buffer_ += R"(","task":)";
  AppendUint(buffer_, t.task);
  buffer_ += R"(,"attempt":)";
  AppendUint(buffer_, t.attempt);
  buffer_ += R"(,"worker":")";
  buffer_ += worker;
  buffer_ += '"';
  return true;
}

void EventLog::EndPlainLine() {
  buffer_ += "}\n";
  if (buffer_.size() >= kFlushAtBytes) (void)Flush();  // a failure is counted and logged there
}

void EventLog::Task(const TaskEventRef& t) {
  line_.Field("job", t.job);
  line_.Field("node", t.node);
  line_.Field("task", t.task);
  line_.Field("attempt", t.attempt);
  if (t.fused != nullptr && !t.fused->empty()) {
    line_.BeginArray("fused");
    for (const std::string& node : *t.fused) line_.String(node);
    line_.EndArray();
  }
}

void EventLog::JobSubmitted(std::string_view job, std::string_view name,
                            std::string_view submitted_by, uint64_t tasks) {
  if (!enabled()) return;
  json::Writer& w = Begin("job_submitted");
  w.Field("job", job);
  w.Field("name", name);
  w.Field("submitted_by", submitted_by);
  w.Field("tasks", tasks);
  End();
}

void EventLog::JobFinished(std::string_view job, std::string_view state, std::string_view error) {
  if (!enabled()) return;
  json::Writer& w = Begin("job_finished");
  w.Field("job", job);
  w.Field("state", state);
  if (!error.empty()) w.Field("error", error);
  End();
}

void EventLog::JobCancelled(std::string_view job, std::string_view by) {
  if (!enabled()) return;
  json::Writer& w = Begin("job_cancelled");
  w.Field("job", job);
  w.Field("by", by);
  End();
}

void EventLog::TaskAssigned(const TaskEventRef& t, std::string_view worker) {
  if (!enabled()) return;
  if (BeginPlainTaskLine("task_assigned", t, worker)) {
    EndPlainLine();
    return;
  }
  json::Writer& w = Begin("task_assigned");
  Task(t);
  w.Field("worker", worker);
  End();
}

void EventLog::GangPlaced(const TaskEventRef& t, std::string_view leader,
                          const std::vector<std::string>& hosts) {
  if (!enabled()) return;
  json::Writer& w = Begin("gang_placed");
  Task(t);
  w.Field("worker", leader);
  w.BeginArray("hosts");
  for (const std::string& h : hosts) w.String(h);
  w.EndArray();
  End();
}

void EventLog::TaskDone(const TaskEventRef& t, std::string_view worker, const TaskCost& cost) {
  if (!enabled()) return;
  // A cost that is not a number takes the writer's path (which writes what it always did).
  if (std::isfinite(cost.wall_ms) && std::isfinite(cost.kernel_ms) &&
      BeginPlainTaskLine("task_done", t, worker)) {
    buffer_ += R"(,"wall_ms":)";
    AppendDouble(buffer_, cost.wall_ms);
    buffer_ += R"(,"kernel_ms":)";
    AppendDouble(buffer_, cost.kernel_ms);
    buffer_ += R"(,"bytes":)";
    AppendUint(buffer_, cost.bytes);
    EndPlainLine();
    return;
  }
  json::Writer& w = Begin("task_done");
  Task(t);
  w.Field("worker", worker);
  w.Field("wall_ms", cost.wall_ms);
  w.Field("kernel_ms", cost.kernel_ms);
  w.Field("bytes", cost.bytes);
  End();
}

void EventLog::TaskFailed(const TaskEventRef& t, std::string_view worker, std::string_view reason,
                          std::string_view cause) {
  if (!enabled()) return;
  json::Writer& w = Begin("task_failed");
  Task(t);
  w.Field("worker", worker);
  if (!cause.empty()) w.Field("cause", cause);
  w.Field("reason", reason);
  End();
}

void EventLog::TaskRetried(const TaskEventRef& t, std::string_view cause, std::string_view reason) {
  if (!enabled()) return;
  json::Writer& w = Begin("task_retried");
  Task(t);
  w.Field("cause", cause);
  w.Field("reason", reason);
  End();
}

void EventLog::WorkerJoined(std::string_view worker, std::string_view host,
                            std::string_view address, uint32_t slots, uint64_t gpus) {
  if (!enabled()) return;
  json::Writer& w = Begin("worker_joined");
  w.Field("worker", worker);
  w.Field("host", host);
  w.Field("address", address);
  w.Field("slots", slots);
  w.Field("gpus", gpus);
  End();
}

void EventLog::WorkerDraining(std::string_view worker, std::string_view by) {
  if (!enabled()) return;
  json::Writer& w = Begin("worker_draining");
  w.Field("worker", worker);
  w.Field("by", by);
  End();
}

void EventLog::WorkerDrained(std::string_view worker) {
  if (!enabled()) return;
  json::Writer& w = Begin("worker_drained");
  w.Field("worker", worker);
  End();
}

void EventLog::WorkerLost(std::string_view worker, uint64_t tasks) {
  if (!enabled()) return;
  json::Writer& w = Begin("worker_lost");
  w.Field("worker", worker);
  w.Field("tasks", tasks);
  End();
}

void EventLog::CoordinatorStarted(uint64_t epoch, uint64_t pid, uint64_t jobs) {
  if (!enabled()) return;
  json::Writer& w = Begin("coordinator_started");
  w.Field("epoch", epoch);
  w.Field("pid", pid);
  w.Field("jobs", jobs);
  End();
}

void EventLog::AttemptAbandoned(const TaskEventRef& t, std::string_view reason) {
  if (!enabled()) return;
  json::Writer& w = Begin("attempt_abandoned");
  Task(t);
  w.Field("reason", reason);
  End();
}

void EventLog::AttemptAdopted(const TaskEventRef& t, std::string_view worker, bool started) {
  if (!enabled()) return;
  json::Writer& w = Begin("attempt_adopted");
  Task(t);
  w.Field("worker", worker);
  w.Field("started", started);
  End();
}

Status EventLog::Flush() {
  if (buffer_.empty()) return Status::Ok();
  auto log = Logger("coordinator");
  Status s = WriteBuffer();
  if (s.ok()) {
    if (failing_) {
      log->warn("the event log {} writes again ({} lines dropped meanwhile)", options_.path,
                lines_dropped_);
      failing_ = false;
    }
    return s;
  }
  ++write_failures_;
  if (!failing_) {
    // Once per outage, not per flush: dispatch goes on, and the log must not flood.
    log->error("cannot write the event log: {}; dispatch goes on, events are held up to {} MiB "
               "and then dropped (counted) until it can",
               s.message(), kMaxHeldBytes >> 20);
    failing_ = true;
  }
  if (buffer_.size() >= kMaxHeldBytes) {
    lines_dropped_ += static_cast<uint64_t>(std::count(buffer_.begin(), buffer_.end(), '\n'));
    buffer_.clear();
  }
  return s;
}

Status EventLog::WriteBuffer() {
  size_t written = 0;  // bytes of the buffer now in a file
  Status s;
  while (written < buffer_.size()) {
    if (!fd_.valid()) {
      s = OpenFile();
      if (!s.ok()) break;
    }
    // The whole lines that fit under the bound; a line longer than the bound gets a file alone.
    const uint64_t room = options_.max_bytes > file_bytes_ ? options_.max_bytes - file_bytes_ : 0;
    size_t end = buffer_.size();
    if (end - written > room) {
      const size_t cut = buffer_.rfind('\n', written + room - (room > 0 ? 1 : 0));
      end = room > 0 && cut != std::string::npos && cut >= written ? cut + 1 : written;
    }
    if (end == written) {
      if (file_bytes_ > 0) {
        s = Rotate();
        if (!s.ok()) break;
        continue;
      }
      end = buffer_.find('\n', written) + 1;
    }
    s = io::WriteFull(fd_.get(), buffer_.data() + written, end - written, options_.path);
    if (!s.ok()) {
      // A part of a line would make the next one unreadable: cut the file back to whole lines.
      if (::ftruncate(fd_.get(), static_cast<off_t>(file_bytes_)) != 0) fd_.Reset();
      break;
    }
    file_bytes_ += end - written;
    written = end;
  }
  buffer_.erase(0, written);
  return s;
}

Status EventLog::OpenFile() {
  const int fd = ::open(options_.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return io::ErrnoStatus("open the event log", options_.path, errno);
  fd_ = io::UniqueFd(fd);
  struct stat st {};
  file_bytes_ = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return Status::Ok();
}

std::string EventLog::RotatedPath(int n) const { return options_.path + "." + std::to_string(n); }

Status EventLog::Rotate() {
  fd_.Reset();
  // The oldest falls off the end: .keep-1 replaces it, and so on down to the live file.
  for (int n = options_.keep - 1; n >= 1; --n) {
    if (::rename(RotatedPath(n).c_str(), RotatedPath(n + 1).c_str()) != 0 && errno != ENOENT) {
      return io::ErrnoStatus("rotate the event log", RotatedPath(n), errno);
    }
  }
  const int rc = options_.keep >= 1 ? ::rename(options_.path.c_str(), RotatedPath(1).c_str())
                                    : ::unlink(options_.path.c_str());
  if (rc != 0 && errno != ENOENT) {
    return io::ErrnoStatus("rotate the event log", options_.path, errno);
  }
  file_bytes_ = 0;
  return Status::Ok();
}

}  // namespace coupler::coordinator
