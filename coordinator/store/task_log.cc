#include "coordinator/store/task_log.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "coordinator/store/row_values.h"

namespace coupler::store {
namespace {

void PutText(std::string_view s, std::string& out) {
  PutVarint(s.size(), out);
  out.append(s);
}

void PutDouble(double v, std::string& out) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Reads one blob front to back; every getter returns false at a truncated or impossible field.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool done() const { return at_ >= in_.size(); }
  bool Byte(uint8_t& b) {
    if (at_ >= in_.size()) return false;
    b = static_cast<uint8_t>(in_[at_++]);
    return true;
  }
  bool U64(uint64_t& v) { return GetVarint(in_, at_, v); }
  bool U32(uint32_t& v) {
    uint64_t w = 0;
    if (!U64(w) || w > UINT32_MAX) return false;
    v = static_cast<uint32_t>(w);
    return true;
  }
  bool Text(std::string& s) {
    uint64_t n = 0;
    if (!U64(n) || n > in_.size() - at_) return false;
    s.assign(in_.substr(at_, n));
    at_ += n;
    return true;
  }
  bool Double(double& v) {
    if (in_.size() - at_ < 8) return false;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= uint64_t{static_cast<uint8_t>(in_[at_ + i])} << (8 * i);
    at_ += 8;
    std::memcpy(&v, &bits, sizeof v);
    return true;
  }
  // A reference into the blob's string table (see task_log.h).
  bool Ref(std::string& s) {
    uint64_t n = 0;
    if (!U64(n)) return false;
    if (n == 0) {
      if (!Text(s)) return false;
      table_.push_back(s);
      return true;
    }
    if (n > table_.size()) return false;
    s = table_[n - 1];
    return true;
  }

 private:
  std::string_view in_;
  size_t at_ = 0;
  std::vector<std::string> table_;
};

}  // namespace

TaskLogBuffer::JobBlob& TaskLogBuffer::For(const std::string& job_id, Writer** writer) {
  if (last_ >= jobs_.size() || jobs_[last_].job_id != job_id) {
    last_ = 0;
    while (last_ < jobs_.size() && jobs_[last_].job_id != job_id) ++last_;
    if (last_ == jobs_.size()) {
      jobs_.push_back({job_id, std::string(1, static_cast<char>(kTaskLogFormat)), 0});
      writers_.emplace_back();
    }
  }
  ++records_;
  ++jobs_[last_].records;
  *writer = &writers_[last_];
  return jobs_[last_];
}

void TaskLogBuffer::PutRef(std::string_view s, Writer& w, std::string& out) {
  // Few distinct strings per blob (the workers of one flush), many repeats.
  const auto [it, added] = w.strings.try_emplace(std::string(s), w.strings.size() + 1);
  if (!added) {
    PutVarint(it->second, out);
    return;
  }
  PutVarint(0, out);
  PutText(s, out);
}

void TaskLogBuffer::AddCommit(const TaskCommit& c) {
  Writer* w = nullptr;
  std::string& out = For(c.job_id, &w).blob;
  out.push_back(static_cast<char>(TaskLogRecord::kCommit));
  PutVarint(c.task_id, out);
  PutVarint(c.attempt, out);
  PutVarint(c.output_paths.size(), out);
  for (const std::string& p : c.output_paths) PutText(p, out);
  PutVarint(c.rows_in, out);
  PutVarint(c.rows_out, out);
  PutRef(c.device, *w, out);
  PutDouble(c.kernel_ms, out);
  PutVarint(c.bytes_processed, out);
  PutRef(c.worker_id, *w, out);
}

void TaskLogBuffer::Revoke(const std::string& job_id, uint64_t task_id) {
  Writer* w = nullptr;
  std::string& out = For(job_id, &w).blob;
  out.push_back(static_cast<char>(TaskLogRecord::kRevoke));
  PutVarint(task_id, out);
}

void TaskLogBuffer::AddAttempt(const AttemptRecord& a) {
  Writer* w = nullptr;
  std::string& out = For(a.job_id, &w).blob;
  out.push_back(static_cast<char>(TaskLogRecord::kAttempt));
  PutVarint(a.task_id, out);
  PutVarint(a.attempt, out);
  PutRef(a.worker_id, *w, out);
  PutRef(a.outcome, *w, out);
  PutText(a.error, out);
  PutVarint(ZigZag(a.ended_ms), out);
}

void TaskLogBuffer::AddSent(const SentAttempts& s) {
  Writer* w = nullptr;
  std::string& out = For(s.job_id, &w).blob;
  out.push_back(static_cast<char>(TaskLogRecord::kSent));
  PutRef(s.worker_id, *w, out);
  PutRef(s.worker_key, *w, out);
  PutVarint(s.gang_ranks, out);
  out.push_back(s.returned ? 1 : 0);
  PutVarint(s.tasks.size(), out);
  for (const auto& [task, attempt] : s.tasks) {
    PutVarint(task, out);
    PutVarint(attempt, out);
  }
}

void TaskLogBuffer::Clear() {
  jobs_.clear();
  writers_.clear();
  last_ = 0;
  records_ = 0;
}

const std::string& TaskHistory::device_of(const CommittedTask& c) const {
  static const std::string kNone;
  return c.device < devices.size() ? devices[c.device] : kNone;
}

void TaskHistoryReplay::AddCommit(TaskCommit c) {
  std::vector<std::string>& devices = history_.devices;
  // Few distinct devices in a job (cpu, a GPU or two): a short scan.
  size_t device = 0;
  while (device < devices.size() && devices[device] != c.device) ++device;
  if (device == devices.size()) devices.push_back(c.device);
  commits_.push_back({c.task_id, c.attempt, static_cast<uint32_t>(device)});
  if (whole_) whole_commits_.push_back(std::move(c));
}

void TaskHistoryReplay::AddOlderCommit(TaskCommit c) { AddCommit(std::move(c)); }

void TaskHistoryReplay::AddOlderAttempt(AttemptRecord a) { history_.attempts.push_back(std::move(a)); }

void TaskHistoryReplay::AddOlderSent(SentAttempt s) { history_.sent.push_back(std::move(s)); }

Status TaskHistoryReplay::Damaged(const char* what) const {
  return Internal("damaged task log of job " + job_id_ + ": " + what);
}

Status TaskHistoryReplay::AddBlob(std::string_view blob) {
  Reader r(blob);
  uint8_t format = 0;
  if (!r.Byte(format)) return Damaged("an empty row");
  if (format != kTaskLogFormat) {
    return Damaged(("format " + std::to_string(format) + ", this build reads " +
                    std::to_string(kTaskLogFormat))
                       .c_str());
  }
  while (!r.done()) {
    uint8_t kind = 0;
    (void)r.Byte(kind);
    switch (static_cast<TaskLogRecord>(kind)) {
      case TaskLogRecord::kCommit: {
        TaskCommit c;
        c.job_id = job_id_;
        uint64_t paths = 0;
        if (!r.U64(c.task_id) || !r.U32(c.attempt) || !r.U64(paths) || paths > blob.size()) {
          return Damaged("a commit");
        }
        c.output_paths.resize(paths);
        for (std::string& p : c.output_paths) {
          if (!r.Text(p)) return Damaged("a commit's output path");
        }
        if (!r.U64(c.rows_in) || !r.U64(c.rows_out) || !r.Ref(c.device) || !r.Double(c.kernel_ms) ||
            !r.U64(c.bytes_processed) || !r.Ref(c.worker_id)) {
          return Damaged("a commit");
        }
        AddCommit(std::move(c));
        break;
      }
      case TaskLogRecord::kRevoke: {
        uint64_t task = 0;
        if (!r.U64(task)) return Damaged("a revoke");
        revokes_.emplace_back(task, commits_.size());
        break;
      }
      case TaskLogRecord::kAttempt: {
        AttemptRecord a;
        a.job_id = job_id_;
        uint64_t ended = 0;
        if (!r.U64(a.task_id) || !r.U32(a.attempt) || !r.Ref(a.worker_id) || !r.Ref(a.outcome) ||
            !r.Text(a.error) || !r.U64(ended)) {
          return Damaged("an attempt");
        }
        a.ended_ms = UnZigZag(ended);
        history_.attempts.push_back(std::move(a));
        break;
      }
      case TaskLogRecord::kSent: {
        std::string worker, key;
        uint32_t gang_ranks = 0;
        uint8_t returned = 0;
        uint64_t count = 0;
        if (!r.Ref(worker) || !r.Ref(key) || !r.U32(gang_ranks) || !r.Byte(returned) ||
            returned > 1 || !r.U64(count) || count > blob.size()) {
          return Damaged("a sent message");
        }
        for (uint64_t i = 0; i < count; ++i) {
          SentAttempt& s = history_.sent.emplace_back();
          if (!r.U64(s.task) || !r.U32(s.attempt)) return Damaged("a sent attempt");
          s.worker_id = worker;
          s.worker_key = key;
          s.gang_ranks = gang_ranks;
          s.returned = returned != 0;
        }
        break;
      }
      default:
        return Damaged(("record kind " + std::to_string(kind)).c_str());
    }
  }
  return Status::Ok();
}

std::vector<size_t> TaskHistoryReplay::LiveCommits() const {
  // (task, position) pairs sorted: ties in write order, so the first commit of a task comes
  // first. Sorting pairs, not the records, keeps a big job's restart from moving them around.
  std::vector<std::pair<uint64_t, size_t>> order;
  if (revokes_.empty()) {
    order.reserve(commits_.size());
    for (size_t i = 0; i < commits_.size(); ++i) order.emplace_back(commits_[i].task_id, i);
  } else {
    // Rare (a reduce found an output missing): replayed in write order.
    std::unordered_map<uint64_t, size_t> live;
    size_t r = 0;
    for (size_t i = 0; i <= commits_.size(); ++i) {
      for (; r < revokes_.size() && revokes_[r].second == i; ++r) live.erase(revokes_[r].first);
      if (i < commits_.size()) live.try_emplace(commits_[i].task_id, i);
    }
    order.assign(live.begin(), live.end());
  }
  std::sort(order.begin(), order.end());
  std::vector<size_t> keep;
  keep.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && order[i].first == order[i - 1].first) continue;
    keep.push_back(order[i].second);
  }
  return keep;
}

TaskHistory TaskHistoryReplay::Finish() && {
  const std::vector<size_t> keep = LiveCommits();
  history_.commits.reserve(keep.size());
  for (const size_t i : keep) history_.commits.push_back(commits_[i]);
  auto& attempts = history_.attempts;
  auto by_attempt = [](const AttemptRecord& a, const AttemptRecord& b) {
    return a.task_id != b.task_id ? a.task_id < b.task_id : a.attempt < b.attempt;
  };
  if (!std::is_sorted(attempts.begin(), attempts.end(), by_attempt)) {
    std::stable_sort(attempts.begin(), attempts.end(), by_attempt);
  }
  return std::move(history_);
}

std::vector<TaskCommit> TaskHistoryReplay::FinishWholeCommits() && {
  std::vector<TaskCommit> out;
  if (!whole_) return out;
  const std::vector<size_t> keep = LiveCommits();
  out.reserve(keep.size());
  for (const size_t i : keep) out.push_back(std::move(whole_commits_[i]));
  return out;
}

}  // namespace coupler::store
