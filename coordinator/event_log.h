// EventLog: what happened to jobs, tasks and workers, one JSON object per line in the state
// directory (events.jsonl), so an operator can answer "what happened to job X at 03:12" with
// grep. Lines are buffered and written once per flush (the coordinator flushes with its store),
// files rotate by size, and a failed write is counted and logged, never in dispatch's way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/unique_fd.h"
#include "runtime/status.h"
#include "runtime/util/json_writer.h"

namespace coupler::coordinator {

// The live file in the state directory; rotated ones are events.jsonl.1 (newest) .. .keep.
inline constexpr const char* kEventLogFile = "events.jsonl";
inline constexpr uint64_t kDefaultEventLogBytes = uint64_t{64} << 20;
inline constexpr int kEventLogKeep = 3;

struct EventLogOptions {
  std::string path;  // the live file
  // Bound on each file: a line that would pass it goes to a fresh file. 0: no event log.
  uint64_t max_bytes = kDefaultEventLogBytes;
  int keep = kEventLogKeep;  // rotated files kept beside the live one
};

// A task's attempt, as every task event names it.
struct TaskEventRef {
  TaskEventRef(std::string_view job_id, std::string_view node_id, uint64_t task_id,
               uint32_t attempt_number, const std::vector<std::string>* fused_nodes = nullptr)
      : job(job_id), node(node_id), task(task_id), attempt(attempt_number), fused(fused_nodes) {}

  std::string_view job;
  std::string_view node;
  uint64_t task = 0;
  uint32_t attempt = 0;
  // A fused chain's task (runtime/plan/fusion.h): the nodes it runs after `node`, in order.
  const std::vector<std::string>* fused = nullptr;
};

class EventLog {
 public:
  explicit EventLog(EventLogOptions options);
  ~EventLog();  // writes what is still buffered
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  bool enabled() const { return options_.max_bytes > 0; }

  // The events and their fields. Every line also has "ts" (UTC, ms), "ms" (Unix epoch ms) and
  // "event"; docs/ops.md "Event log" lists them for operators.
  void JobSubmitted(std::string_view job, std::string_view name, std::string_view submitted_by,
                    uint64_t tasks);
  void JobFinished(std::string_view job, std::string_view state, std::string_view error);
  void JobCancelled(std::string_view job, std::string_view by);
  void TaskAssigned(const TaskEventRef& t, std::string_view worker);
  // A gang's attempt started: its leader runs it, `hosts` (leader first) lend their slots.
  void GangPlaced(const TaskEventRef& t, std::string_view leader,
                  const std::vector<std::string>& hosts);
  // What the attempt cost, as its outcome reported it: wall time in the slot, compute time
  // inside it (the rest is reading, writing and starting), and the bytes it processed.
  struct TaskCost {
    double wall_ms = 0;
    double kernel_ms = 0;
    uint64_t bytes = 0;
  };
  void TaskDone(const TaskEventRef& t, std::string_view worker, const TaskCost& cost);
  // `cause` (when given): the failure's kind, as RetryReasonName names it; "invalid_data" is
  // the one that is never retried.
  void TaskFailed(const TaskEventRef& t, std::string_view worker, std::string_view reason,
                  std::string_view cause = {});
  // The task is queued again for attempt t.attempt. `cause`: "failed", "timeout" or
  // "worker_lost"; `reason`: the failure's own words.
  void TaskRetried(const TaskEventRef& t, std::string_view cause, std::string_view reason);
  void WorkerJoined(std::string_view worker, std::string_view host, std::string_view address,
                    uint32_t slots, uint64_t gpus);
  // `by`: "admin" (coupler drain) or "worker" (it was told to stop, e.g. SIGTERM).
  void WorkerDraining(std::string_view worker, std::string_view by);
  // It finished its drain: nothing held, leaving on its own.
  void WorkerDrained(std::string_view worker);
  // Given up on: silent past the timeout. `tasks`: the started attempts it took with it.
  void WorkerLost(std::string_view worker, uint64_t tasks);
  // A start on the state: `epoch` is the state's commit generation after this start moved it
  // (the number that fences an older coordinator), `jobs` the unfinished jobs it found.
  void CoordinatorStarted(uint64_t epoch, uint64_t pid, uint64_t jobs);
  // An attempt sent before the restart that had not ended, and that no worker reported holding
  // in time (or a gang's, whose ranks cannot be rejoined): the task runs again, and a result of
  // the old attempt, should one come, is dropped as stale.
  void AttemptAbandoned(const TaskEventRef& t, std::string_view reason);
  // An attempt sent before the restart that its worker reported holding when it registered
  // again: it runs on there, and its result commits as if nothing had happened.
  void AttemptAdopted(const TaskEventRef& t, std::string_view worker, bool started);

  // Writes the buffered lines, rotating first when they would pass the bound. On failure the
  // lines stay buffered for the next flush (the file is cut back to its last whole line), up
  // to a bound past which they are dropped and counted; the first failure is logged, and the
  // recovery.
  Status Flush();

  size_t pending_bytes() const { return buffer_.size(); }
  uint64_t write_failures() const { return write_failures_; }
  uint64_t lines_dropped() const { return lines_dropped_; }

 private:
  // Starts a line in line_ (its time and event name) and returns it for the fields; End()
  // closes it and appends it to the buffer.
  json::Writer& Begin(std::string_view event);
  void End();
  // Writes the line's time, "YYYY-MM-DDTHH:MM:SS.mmmZ", into `ts` (32 bytes at least) and returns
  // its length; `ms`: the Unix epoch ms it stands for.
  size_t Stamp(char* ts, int64_t& ms);
  // The two lines every task has (task_assigned, task_done: two per task dispatched) are
  // written straight into the buffer, the same fields in the same order as Begin/Task/End
  // write them, when none of their strings needs escaping (ids and worker names never do):
  // through the JSON writer they cost a fifth of the loop at 200k tasks a second. False: not
  // plain (a quote, a control character, a fused chain), nothing written.
  bool BeginPlainTaskLine(std::string_view event, const TaskEventRef& t, std::string_view worker);
  void EndPlainLine();
  void Task(const TaskEventRef& t);
  Status WriteBuffer();
  Status OpenFile();
  Status Rotate();
  std::string RotatedPath(int n) const;

  EventLogOptions options_;
  io::UniqueFd fd_;
  uint64_t file_bytes_ = 0;  // of the live file, as far as we wrote it
  std::string buffer_;       // whole lines, each ending in '\n'
  json::Writer line_;        // reused: one allocation for every line, not one per line
  bool failing_ = false;
  uint64_t write_failures_ = 0;
  uint64_t lines_dropped_ = 0;
  // "YYYY-MM-DDTHH:MM:SS" of the second last formatted: at 100k events a second, most share it.
  int64_t cached_second_ = -1;
  std::string cached_stamp_;
};

}  // namespace coupler::coordinator
