#include "train/resume_plan.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include <fmt/format.h>

namespace coupler::train {
namespace {

constexpr std::string_view kRanksField = " ranks=";

std::string_view WithoutRanks(std::string_view fingerprint) {
  const size_t at = fingerprint.rfind(kRanksField);
  return at == std::string_view::npos ? fingerprint : fingerprint.substr(0, at);
}

std::string Split(size_t micro_batch, size_t accumulate) {
  return "micro_batch " + std::to_string(micro_batch) + " x accumulate " +
         std::to_string(accumulate);
}

}  // namespace

std::string Fingerprint(const TrainConfig& c, int world_size) {
  std::string f = "layers=";
  for (size_t i = 0; i < c.layers.size(); ++i) {
    if (i > 0) f += ',';
    f += std::to_string(c.layers[i]);
  }
  f += " optimizer=";
  f += OptimizerName(c.optimizer);
  f += " precision=";
  f += PrecisionName(c.precision);
  f += " global_batch=" + std::to_string(c.global_batch);
  f += std::string(kRanksField) + std::to_string(world_size);
  return f;
}

std::string RunIdentity(const TrainConfig& c) {
  // The schedule and clipping only when set, so a run without them has the identity its
  // checkpoints had before they existed; the label column last (it may hold anything).
  std::string extra = ScheduleIdentity(c.schedule);
  if (c.clip_grad_norm > 0) extra += fmt::format("{}clip_grad_norm={}", extra.empty() ? "" : "; ", c.clip_grad_norm);
  // Validation takes rows from training: another split is another run.
  if (c.validation_fraction > 0) {
    extra += fmt::format("{}validation_fraction={}", extra.empty() ? "" : "; ", c.validation_fraction);
  }
  if (!extra.empty()) extra += "; ";
  return fmt::format("lr={}; momentum={}; weight_decay={}; seed={}; test_fraction={}; {}label_column={}",
                     c.lr, c.momentum, c.weight_decay, c.seed, c.test_fraction, extra, c.label_column);
}

std::string IdentityDifferences(std::string_view checkpoint, std::string_view here) {
  // "key=value" fields split on "; " (the label column, last, may hold anything else).
  auto fields = [](std::string_view text) {
    std::vector<std::pair<std::string_view, std::string_view>> out;
    while (!text.empty()) {
      const size_t end = text.starts_with("label_column=") ? std::string_view::npos : text.find("; ");
      const std::string_view field = text.substr(0, end);
      const size_t eq = field.find('=');
      if (eq != std::string_view::npos) out.emplace_back(field.substr(0, eq), field.substr(eq + 1));
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 2);
    }
    return out;
  };
  const auto mine = fields(here);
  const auto theirs = fields(checkpoint);
  auto find = [](const auto& in, std::string_view key) {
    return std::find_if(in.begin(), in.end(), [&](const auto& f) { return f.first == key; });
  };
  std::string differences;
  auto add = [&differences](std::string_view key, std::string_view was, std::string_view is) {
    differences += fmt::format("{}{} {} in the checkpoint, {} here", differences.empty() ? "" : "; ",
                               key, was, is);
  };
  // Settings only one side names (an lr schedule, clipping) are "not set" on the other.
  for (const auto& [key, value] : theirs) {
    const auto it = find(mine, key);
    if (it == mine.end()) {
      add(key, value, "not set");
    } else if (it->second != value) {
      add(key, value, it->second);
    }
  }
  for (const auto& [key, value] : mine) {
    if (find(theirs, key) == theirs.end()) add(key, "not set", value);
  }
  return differences;
}

bool SameRun(const TrainConfig& config, std::string_view fingerprint, std::string_view run) {
  if (!FingerprintRanks(fingerprint)) return false;
  if (WithoutRanks(fingerprint) != WithoutRanks(Fingerprint(config, 1))) return false;
  return run.empty() || run == RunIdentity(config);
}

std::optional<int> FingerprintRanks(std::string_view fingerprint) {
  const size_t at = fingerprint.rfind(kRanksField);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view digits = fingerprint.substr(at + kRanksField.size());
  int ranks = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ranks);
  if (ec != std::errc() || end != digits.data() + digits.size() || ranks < 1) return std::nullopt;
  return ranks;
}

std::string RankCountsFor(size_t global_batch) {
  std::vector<size_t> counts;
  for (size_t n = 1; n <= global_batch; ++n) {
    if (global_batch % n == 0) counts.push_back(n);
  }
  std::string text;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) text += i + 1 == counts.size() ? " or " : ", ";
    text += std::to_string(counts[i]);
  }
  return text;
}

Result<ResumeSplit> PlanResumeSplit(const TrainConfig& config, int world_size,
                                    std::string_view checkpoint_fingerprint,
                                    size_t checkpoint_micro_batch, size_t checkpoint_accumulate,
                                    size_t configured_micro_batch, size_t configured_accumulate) {
  const std::string expected = Fingerprint(config, world_size);
  const std::optional<int> ranks = FingerprintRanks(checkpoint_fingerprint);
  if (!ranks || WithoutRanks(checkpoint_fingerprint) != WithoutRanks(expected)) {
    return InvalidArgument("the checkpoint was written by '" + std::string(checkpoint_fingerprint) +
                           "', this run is '" + expected + "'");
  }
  if (checkpoint_micro_batch == 0 || checkpoint_accumulate == 0) {
    return InvalidArgument("the checkpoint records micro_batch " +
                           std::to_string(checkpoint_micro_batch) + " x accumulate " +
                           std::to_string(checkpoint_accumulate));
  }
  const size_t world = static_cast<size_t>(world_size);
  if (config.global_batch % world != 0) {
    return InvalidArgument("the checkpoint's global_batch " + std::to_string(config.global_batch) +
                           " (written by " + std::to_string(*ranks) + " ranks) cannot be split " +
                           "over " + std::to_string(world_size) + " ranks; resume on " +
                           RankCountsFor(config.global_batch) + " ranks");
  }
  ResumeSplit plan;
  plan.checkpoint_ranks = *ranks;
  const size_t per_rank = config.global_batch / world;
  if (*ranks == world_size) {
    plan.micro_batch = checkpoint_micro_batch;
    plan.accumulate = checkpoint_accumulate;
    if (plan.micro_batch != configured_micro_batch || plan.accumulate != configured_accumulate) {
      plan.notice = "--resume keeps the checkpoint's " + Split(plan.micro_batch, plan.accumulate) +
                    (configured_micro_batch == 0
                         ? std::string(" (the config's split does not fit these ranks)")
                         : " (the config says " +
                               Split(configured_micro_batch, configured_accumulate) + ")");
    }
    return plan;
  }
  // Another rank count: keep the micro-batch (what fit the device) where it divides the new
  // share, else the largest micro-batch below it that does.
  plan.micro_batch = std::min(checkpoint_micro_batch, per_rank);
  while (per_rank % plan.micro_batch != 0) --plan.micro_batch;
  plan.accumulate = per_rank / plan.micro_batch;
  plan.notice = "--resume on " + std::to_string(world_size) + " ranks from a checkpoint of " +
                std::to_string(*ranks) + " ranks (" +
                Split(checkpoint_micro_batch, checkpoint_accumulate) + "): " +
                Split(plan.micro_batch, plan.accumulate) + " keeps global_batch " +
                std::to_string(config.global_batch);
  return plan;
}

}  // namespace coupler::train
