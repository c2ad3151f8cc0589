// The per-step metrics history beside metrics.json: one JSON line per optimizer step from rank
// 0, buffered in memory and written in appends (at checkpoints, at a stop, at the end and at
// least once a second), so recording a step costs a format into a string, not a syscall. A resumed run first
// drops the lines after its checkpoint (and any torn last line), then appends, so the file holds
// exactly one line per step of the whole run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::train {

struct StepRecord {
  int64_t step = 0;   // optimizer steps completed, 1-based: the step a checkpoint is named after
  int64_t epoch = 0;  // 1-based
  double loss = 0;    // the global batch's mean training loss
  double loss_scale = 1;  // the scale this step ran with
  double lr = 0;          // the learning rate the schedule gave this step
  double grad_norm = -1;  // the gradients' L2 norm before clipping; < 0: not computed (no clipping)
  double val_loss = -1;   // the validation scores at an epoch's last step; < 0: none
  double val_accuracy = -1;
  double samples_per_s = 0;  // global samples over this step's wall time
  int64_t skipped_steps = 0;  // non-finite steps skipped so far in the run (resumes included)
  double time = 0;            // when the step ended: seconds since the Unix epoch (UTC)
};

// {"step":1,"epoch":1,"loss":2.30,"loss_scale":1,"lr":0.001,"samples_per_s":51234,
// "skipped_steps":0,"time":1796616000.123}\n, with "grad_norm" after "lr" when clipping
// computed it and "val_loss", "val_accuracy" after them at an epoch's last step when the run
// validates; a non-finite number is written as null. The fields up to "lr" are the same in a
// resumed run as in an uninterrupted one; the rest are measurements.
std::string FormatStepLine(const StepRecord& record);
void AppendStepLine(const StepRecord& record, std::string* out);  // the same, without a copy

// The lines of `text` whose step is at most `last_step`, in order; lines that do not parse (a
// torn write) are dropped.
std::string KeepStepsUpTo(std::string_view text, int64_t last_step);

// "<dir>/<stem>.steps.jsonl" for a --metrics-out of "<dir>/<stem>.json" (or "<path>.steps.jsonl"
// when it has no extension).
std::string HistoryPathFor(const std::string& metrics_out);

class MetricsHistory {
 public:
  // Opens `path` for appending after keeping its steps up to `resumed_step` (0: a new run, which
  // starts the file afresh).
  static Result<MetricsHistory> Open(const std::string& path, int64_t resumed_step);

  MetricsHistory(MetricsHistory&&) noexcept = default;
  MetricsHistory& operator=(MetricsHistory&&) noexcept = default;
  ~MetricsHistory();  // flushes what is buffered, ignoring errors (Flush reports them)

  void Append(const StepRecord& record);
  Status Flush();
  const std::string& path() const { return path_; }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  MetricsHistory(std::string path, std::unique_ptr<std::FILE, Closer> file)
      : path_(std::move(path)), file_(std::move(file)) {}

  // Past this the buffer is written out even between checkpoints.
  static constexpr size_t kFlushBytes = 256 * 1024;
  // And at least this often (by the steps' own end times), so `coupler status`, the page and
  // /metrics show a running group's step within a couple of seconds (job/step_progress.h):
  // one write a second costs nothing beside a step.
  static constexpr double kFlushEverySeconds = 1.0;
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  std::string buffer_;
  double flushed_at_ = 0;  // the `time` of the step last written out
};

}  // namespace coupler::train
