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

void AppendNumber(std::string* out, double v, const char* format) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char text[32];
  std::snprintf(text, sizeof(text), format, v);
  *out += text;
}

constexpr std::string_view kStepPrefix = "{\"step\":";

}  // namespace

std::string FormatStepLine(const StepRecord& r) {
  std::string line;
  line.reserve(128);
  line += kStepPrefix;
  line += std::to_string(r.step);
  line += ",\"epoch\":";
  line += std::to_string(r.epoch);
  line += ",\"loss\":";
  AppendNumber(&line, r.loss, "%.9g");
  line += ",\"loss_scale\":";
  AppendNumber(&line, r.loss_scale, "%.9g");
  line += ",\"samples_per_s\":";
  AppendNumber(&line, r.samples_per_s, "%.1f");
  line += ",\"skipped_steps\":";
  line += std::to_string(r.skipped_steps);
  line += "}\n";
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
  buffer_ += FormatStepLine(record);
  if (buffer_.size() >= kFlushBytes) (void)Flush();
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
