#include "train/metrics_history.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <utility>

#include "runtime/io/atomic_file.h"

namespace coupler::train {
namespace {

// Appends to a fixed buffer with std::to_chars: no allocation and no locale, since this runs
// every step (a non-finite number becomes null, which JSON has and inf/nan are not).
class LineBuilder {
 public:
  void Text(std::string_view text) {
    std::memcpy(at_, text.data(), text.size());
    at_ += text.size();
  }
  void Int(int64_t v) { at_ = std::to_chars(at_, end_, v).ptr; }
  void Shortest(double v) {
    if (!std::isfinite(v)) return Text("null");
    at_ = std::to_chars(at_, end_, v).ptr;
  }
  void Fixed(double v, int digits) {
    if (!std::isfinite(v)) return Text("null");
    if (std::abs(v) >= 1e15) return Shortest(v);  // keeps every number under 25 characters
    at_ = std::to_chars(at_, end_, v, std::chars_format::fixed, digits).ptr;
  }
  std::string_view view() const { return {buffer_, static_cast<size_t>(at_ - buffer_)}; }

 private:
  // Eleven keys (~160 bytes) and eleven numbers of at most 25 characters each.
  char buffer_[640];
  char* at_ = buffer_;
  char* end_ = buffer_ + sizeof(buffer_);
};

constexpr std::string_view kStepPrefix = "{\"step\":";

}  // namespace

void AppendStepLine(const StepRecord& r, std::string* out) {
  LineBuilder line;
  line.Text(kStepPrefix);
  line.Int(r.step);
  line.Text(",\"epoch\":");
  line.Int(r.epoch);
  line.Text(",\"loss\":");
  line.Shortest(r.loss);
  line.Text(",\"loss_scale\":");
  line.Shortest(r.loss_scale);
  line.Text(",\"lr\":");
  line.Shortest(r.lr);
  if (r.grad_norm >= 0) {
    line.Text(",\"grad_norm\":");
    line.Shortest(r.grad_norm);
  }
  if (r.val_loss >= 0) {
    line.Text(",\"val_loss\":");
    line.Shortest(r.val_loss);
    line.Text(",\"val_accuracy\":");
    line.Shortest(r.val_accuracy);
  }
  line.Text(",\"samples_per_s\":");
  line.Fixed(r.samples_per_s, 1);
  line.Text(",\"skipped_steps\":");
  line.Int(r.skipped_steps);
  line.Text(",\"time\":");
  line.Fixed(r.time, 3);
  line.Text("}\n");
  out->append(line.view());
}

std::string FormatStepLine(const StepRecord& record) {
  std::string line;
  AppendStepLine(record, &line);
  return line;
}

std::string KeepStepsUpTo(std::string_view text, int64_t last_step) {
  std::string kept;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) break;  // a torn last line
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (!line.starts_with(kStepPrefix) || !line.ends_with('}')) continue;
    const std::string_view digits = line.substr(kStepPrefix.size());
    int64_t step = 0;
    const auto [stop, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (ec != std::errc() || stop == digits.data() || *stop != ',') continue;
    if (step <= last_step) {
      kept += line;
      kept += '\n';
    }
  }
  return kept;
}

std::string HistoryPathFor(const std::string& metrics_out) {
  std::filesystem::path path(metrics_out);
  if (path.has_extension()) path.replace_extension();
  return path.string() + ".steps.jsonl";
}

Result<MetricsHistory> MetricsHistory::Open(const std::string& path, int64_t resumed_step) {
  std::string kept;
  if (resumed_step > 0) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      kept = KeepStepsUpTo(text, resumed_step);
    }
  }
  // Rewritten whole, then appended to: a crash between the two leaves the kept steps.
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(kept))};
  COUPLER_RETURN_IF_ERROR(
      io::WriteFileAtomic(path, parts, /*durable=*/false).WithContext("metrics history"));
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "ab"));
  if (!file) {
    return InvalidArgument("metrics history " + path + ": cannot open: " + std::strerror(errno));
  }
  return MetricsHistory(path, std::move(file));
}

MetricsHistory::~MetricsHistory() {
  if (file_) (void)Flush();
}

void MetricsHistory::Append(const StepRecord& record) {
  AppendStepLine(record, &buffer_);
  if (buffer_.size() >= kFlushBytes || record.time >= flushed_at_ + kFlushEverySeconds) {
    flushed_at_ = record.time;
    (void)Flush();
  }
}

Status MetricsHistory::Flush() {
  if (buffer_.empty()) return Status::Ok();
  const size_t written = std::fwrite(buffer_.data(), 1, buffer_.size(), file_.get());
  const bool ok = written == buffer_.size() && std::fflush(file_.get()) == 0;
  buffer_.clear();
  if (!ok) {
    return InvalidArgument("metrics history " + path_ + ": cannot write: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace coupler::train
