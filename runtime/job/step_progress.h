// A tight node's training progress, as its ranks report it: the last whole line of the node's
// steps.jsonl — written by coupler train (--metrics-history) and by python/coupler_torch.py's
// report() — read for `coupler status`, the page and /metrics. What the line holds is the
// user's program's word, so only numbers come out: the step, the time, and at most
// kMaxStepMetrics named numbers whose names are plain identifiers (a metric or label name
// anywhere they are shown).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coupler::job {

inline constexpr std::string_view kStepsFile = "steps.jsonl";
inline constexpr size_t kMaxStepMetrics = 8;
inline constexpr size_t kMaxStepMetricName = 48;

struct StepProgress {
  int64_t step = 0;
  double time = 0;  // Unix seconds, as the line says (0 when it has none)
  std::vector<std::pair<std::string, double>> metrics;  // in the line's order
  friend bool operator==(const StepProgress&, const StepProgress&) = default;
};

// One line: a JSON object with an integer "step" >= 0; other members that are finite numbers
// with identifier names ([A-Za-z_][A-Za-z0-9_]*, at most kMaxStepMetricName) are metrics, the
// first kMaxStepMetrics of them. nullopt for anything else.
std::optional<StepProgress> ParseStepLine(std::string_view line);

// The last whole line of {node_dir}/steps.jsonl that parses (a line still being written is
// skipped), reading at most the file's last 16 KiB; the file is opened without following a
// symlink and must be a regular file. nullopt when there is none.
std::optional<StepProgress> ReadLatestStep(const std::string& node_dir);

// "step 120  loss 0.4321  accuracy 0.91" for a status line.
std::string StepProgressText(const StepProgress& progress);

}  // namespace coupler::job
