#include "runtime/job/step_progress.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <rapidjson/document.h>

#include "runtime/io/unique_fd.h"

namespace coupler::job {
namespace {

constexpr size_t kTailBytes = 16 * 1024;

bool IsIdentifier(std::string_view name) {
  if (name.empty() || name.size() > kMaxStepMetricName) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

std::optional<StepProgress> ParseStepLine(std::string_view line) {
  rapidjson::Document doc;
  // NaN and Infinity as Python's json writes them: a diverged loss still shows its step.
  doc.Parse<rapidjson::kParseNanAndInfFlag>(line.data(), line.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  const auto step = doc.FindMember("step");
  if (step == doc.MemberEnd() || !step->value.IsInt64() || step->value.GetInt64() < 0) {
    return std::nullopt;
  }
  StepProgress progress;
  progress.step = step->value.GetInt64();
  for (const auto& member : doc.GetObject()) {
    const std::string_view name(member.name.GetString(), member.name.GetStringLength());
    if (name == "step" || !member.value.IsNumber()) continue;
    const double value = member.value.GetDouble();
    if (!std::isfinite(value)) continue;
    if (name == "time") {
      progress.time = value;
      continue;
    }
    if (!IsIdentifier(name) || progress.metrics.size() >= kMaxStepMetrics) continue;
    progress.metrics.emplace_back(std::string(name), value);
  }
  return progress;
}

std::optional<StepProgress> ReadLatestStep(const std::string& node_dir) {
  const std::string path = node_dir + "/" + std::string(kStepsFile);
  io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return std::nullopt;
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t take = std::min(size, kTailBytes);
  std::string tail(take, '\0');
  const ssize_t got = ::pread(fd.get(), tail.data(), take, static_cast<off_t>(size - take));
  if (got <= 0) return std::nullopt;
  tail.resize(static_cast<size_t>(got));
  // Whole lines only: from the end, each line that a newline closes.
  size_t end = tail.rfind('\n');
  while (end != std::string::npos && end > 0) {
    const size_t start = tail.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    // The first line of a cut tail may be a piece of one: only trusted when the tail is the file.
    if (start == std::string::npos && take < size) break;
    if (auto progress = ParseStepLine(std::string_view(tail).substr(from, end - from))) {
      return progress;
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return std::nullopt;
}

std::string StepProgressText(const StepProgress& progress) {
  std::string out = "step " + std::to_string(progress.step);
  for (const auto& [name, value] : progress.metrics) {
    char number[32];
    std::snprintf(number, sizeof number, "%.6g", value);
    out += "  " + name + " " + number;
  }
  return out;
}

}  // namespace coupler::job
