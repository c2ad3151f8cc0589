// TrainConfig from YAML: one table of keys, each with a setter that checks type and range, used
// alike for the file's entries and for `--set KEY=VALUE` overrides (whose VALUE is parsed as a
// YAML value, so "[64,32,10]" is a list and "bf16" a scalar).
#include "train/config/train_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <system_error>

#include "runtime/io/mapped_file.h"
#include "runtime/job/scalars.h"
#include "runtime/job/validator.h"
#include "runtime/ops/train_keys.h"

namespace coupler::train {
namespace {

namespace fs = std::filesystem;

// One value to apply: where it came from (for messages and for resolving relative paths).
struct Field {
  std::string_view key;
  const YAML::Node& value;
  std::string where;     // "train.yaml:7:5" or "--set lr=abc"
  std::string base_dir;  // relative paths resolve against this; empty: left relative
};

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

Status Expected(const Field& f, std::string_view what) {
  return InvalidArgument(f.where + ": " + std::string(f.key) + ": expected " + std::string(what) +
                         ", got " + Describe(f.value));
}

std::optional<int64_t> Integer(const YAML::Node& node) {
  return node.IsScalar() ? job::ParseInt(node.Scalar()) : std::nullopt;
}

// A number for which `ok` holds; `what` describes the accepted range in the error.
template <typename Pred>
Status GetNumber(const Field& f, std::string_view what, Pred ok, double& out) {
  const std::optional<double> v =
      f.value.IsScalar() ? job::ParseFloat(f.value.Scalar()) : std::nullopt;
  if (!v || !ok(*v)) return Expected(f, what);
  out = *v;
  return {};
}

constexpr double kFloatMax = std::numeric_limits<float>::max();

Status GetFloat(const Field& f, std::string_view what, bool (*ok)(double), float& out) {
  double v = 0;
  COUPLER_RETURN_IF_ERROR(
      GetNumber(f, what, [ok](double x) { return ok(x) && x <= kFloatMax; }, v));
  out = static_cast<float>(v);
  return {};
}

Status GetInteger(const Field& f, int64_t min, int64_t& out) {
  const std::optional<int64_t> v = Integer(f.value);
  if (!v || *v < min) return Expected(f, min > 0 ? "a positive integer" : "a non-negative integer");
  out = *v;
  return {};
}

Status GetSize(const Field& f, size_t& out) {
  int64_t v = 0;
  COUPLER_RETURN_IF_ERROR(GetInteger(f, 1, v));
  out = static_cast<size_t>(v);
  return {};
}

Status GetPath(const Field& f, bool allow_empty, std::string& out) {
  if (f.value.IsNull() && allow_empty) {
    out.clear();
    return {};
  }
  if (!f.value.IsScalar() || (f.value.Scalar().empty() && !allow_empty)) {
    return Expected(f, "a path");
  }
  out = f.value.Scalar().empty() ? std::string() : job::ResolvePath(f.base_dir, f.value.Scalar());
  return {};
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A YAML list, or a scalar "64,128,10" (how a shell user may write it in --set).
Status GetLayers(const Field& f, std::vector<size_t>& out) {
  std::vector<std::string> items;
  if (f.value.IsSequence()) {
    for (const YAML::Node& item : f.value) {
      items.push_back(item.IsScalar() ? item.Scalar() : Describe(item));
    }
  } else if (f.value.IsScalar()) {
    std::string_view rest = f.value.Scalar();
    while (true) {
      const size_t comma = rest.find(',');
      items.emplace_back(Trim(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  constexpr std::string_view kWhat = "a list of at least 2 positive integers like [64, 128, 10]";
  if (items.size() < 2) return Expected(f, kWhat);
  std::vector<size_t> layers;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::optional<int64_t> width = job::ParseInt(items[i]);
    if (!width || *width < 1) {
      return InvalidArgument(f.where + ": " + std::string(f.key) + ": expected " +
                             std::string(kWhat) + ", got '" + items[i] + "' at position " +
                             std::to_string(i + 1));
    }
    layers.push_back(static_cast<size_t>(*width));
  }
  out = std::move(layers);
  return {};
}

template <typename Enum, size_t N>
Status GetChoice(const Field& f, const std::pair<std::string_view, Enum> (&choices)[N], Enum& out) {
  std::string what;
  for (size_t i = 0; i < N; ++i) {
    if (f.value.IsScalar() && f.value.Scalar() == choices[i].first) {
      out = choices[i].second;
      return {};
    }
    what += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(choices[i].first);
  }
  return Expected(f, what);
}

// The training precisions: the only element types a config may name.
constexpr std::pair<std::string_view, ElementType> kPrecisions[] = {
    {"fp32", ElementType::kFloat32},
    {"fp16", ElementType::kFloat16},
    {"bf16", ElementType::kBFloat16}};
constexpr std::pair<std::string_view, Optimizer> kOptimizers[] = {
    {"sgd", Optimizer::kSgd}, {"adamw", Optimizer::kAdamW}};
constexpr std::pair<std::string_view, LrShape> kLrShapes[] = {
    {"constant", LrShape::kConstant}, {"step", LrShape::kStep}, {"cosine", LrShape::kCosine}};

using Setter = Status (*)(TrainConfig&, const Field&);
struct Key {
  std::string_view name;
  Setter set;
};

const Key kKeys[] = {
    {"data", [](TrainConfig& c, const Field& f) { return GetPath(f, false, c.data); }},
    {"label_column",
     [](TrainConfig& c, const Field& f) {
       if (!f.value.IsScalar() || f.value.Scalar().empty()) return Expected(f, "a column name");
       c.label_column = f.value.Scalar();
       return Status();
     }},
    {"test_fraction",
     [](TrainConfig& c, const Field& f) {
       return GetNumber(f, "a number in [0, 1)", [](double x) { return x >= 0 && x < 1; },
                        c.test_fraction);
     }},
    {"layers", [](TrainConfig& c, const Field& f) { return GetLayers(f, c.layers); }},
    {"optimizer",
     [](TrainConfig& c, const Field& f) { return GetChoice(f, kOptimizers, c.optimizer); }},
    {ops::kTrainLr,
     [](TrainConfig& c, const Field& f) {
       return GetFloat(f, "a positive number", [](double x) { return x > 0; }, c.lr);
     }},
    {"momentum",
     [](TrainConfig& c, const Field& f) {
       return GetFloat(f, "a number in [0, 1)", [](double x) { return x >= 0 && x < 1; },
                       c.momentum);
     }},
    {ops::kTrainWeightDecay,
     [](TrainConfig& c, const Field& f) {
       return GetFloat(f, "a non-negative number", [](double x) { return x >= 0; },
                       c.weight_decay);
     }},
    {ops::kTrainEpochs, [](TrainConfig& c, const Field& f) { return GetInteger(f, 1, c.epochs); }},
    {"global_batch", [](TrainConfig& c, const Field& f) { return GetSize(f, c.global_batch); }},
    {ops::kTrainMicroBatch,
     [](TrainConfig& c, const Field& f) {
       if (f.value.IsScalar() && f.value.Scalar() == "auto") {
         c.micro_batch = 0;
         return Status();
       }
       const std::optional<int64_t> v = Integer(f.value);
       if (!v || *v < 1) return Expected(f, "a positive integer or 'auto'");
       c.micro_batch = static_cast<size_t>(*v);
       return Status();
     }},
    {ops::kTrainAccumulate, [](TrainConfig& c, const Field& f) { return GetSize(f, c.accumulate); }},
    {ops::kTrainPrecision,
     [](TrainConfig& c, const Field& f) { return GetChoice(f, kPrecisions, c.precision); }},
    {"bucket_mb",
     [](TrainConfig& c, const Field& f) {
       return GetNumber(f, "a positive number", [](double x) { return x > 0; }, c.bucket_mb);
     }},
    {ops::kTrainSeed,
     [](TrainConfig& c, const Field& f) {
       // The full uint64 range: a seed printed by another run must read back.
       const std::string text = f.value.IsScalar() ? f.value.Scalar() : std::string();
       const char* end = text.data() + text.size();
       const auto [ptr, ec] = std::from_chars(text.data(), end, c.seed);
       if (text.empty() || ec != std::errc() || ptr != end) {
         return Expected(f, "an integer in [0, 2^64)");
       }
       return Status();
     }},
    {"checkpoint_dir",
     [](TrainConfig& c, const Field& f) { return GetPath(f, true, c.checkpoint_dir); }},
    {"checkpoint_every",
     [](TrainConfig& c, const Field& f) { return GetInteger(f, 0, c.checkpoint_every); }},
    {ops::kTrainLrSchedule,
     [](TrainConfig& c, const Field& f) { return GetChoice(f, kLrShapes, c.schedule.shape); }},
    {ops::kTrainWarmupSteps,
     [](TrainConfig& c, const Field& f) { return GetInteger(f, 0, c.schedule.warmup_steps); }},
    {"lr_step_every",
     [](TrainConfig& c, const Field& f) { return GetInteger(f, 1, c.schedule.step_every); }},
    {"lr_step_gamma",
     [](TrainConfig& c, const Field& f) {
       return GetNumber(f, "a number in (0, 1]", [](double x) { return x > 0 && x <= 1; },
                        c.schedule.step_gamma);
     }},
    {"lr_min_ratio",
     [](TrainConfig& c, const Field& f) {
       return GetNumber(f, "a number in [0, 1)", [](double x) { return x >= 0 && x < 1; },
                        c.schedule.min_ratio);
     }},
    {"validation_fraction",
     [](TrainConfig& c, const Field& f) {
       return GetNumber(f, "a number in [0, 1)", [](double x) { return x >= 0 && x < 1; },
                        c.validation_fraction);
     }},
    {"early_stop_patience",
     [](TrainConfig& c, const Field& f) { return GetInteger(f, 0, c.early_stop_patience); }},
    {ops::kTrainClipGradNorm,
     [](TrainConfig& c, const Field& f) {
       return GetNumber(f, "a non-negative number (0: no clipping)", [](double x) { return x >= 0; },
                        c.clip_grad_norm);
     }},
};

const Key* FindKey(std::string_view name) {
  for (const Key& k : kKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

Status UnknownKey(const std::string& where, std::string_view name) {
  std::vector<std::string> names;
  for (const Key& k : kKeys) names.emplace_back(k.name);
  std::string hint = job::DidYouMean(name, names);
  if (hint.empty()) {
    hint = "keys: ";
    for (size_t i = 0; i < names.size(); ++i) hint += (i == 0 ? "" : ", ") + names[i];
  }
  return InvalidArgument(where + ": unknown key '" + std::string(name) + "' (" + hint + ")");
}

std::string Where(std::string_view source, const YAML::Mark& mark) {
  std::string where(source);
  if (!mark.is_null()) {
    where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  return where;
}

Result<YAML::Node> ParseDocument(std::string_view text, std::string_view source) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(Where(source, e.mark) + ": not valid YAML: " + e.msg);
  }
  if (docs.size() > 1) {
    return InvalidArgument(std::string(source) +
                           ": holds more than one YAML document (remove the '---')");
  }
  if (docs.empty() || docs[0].IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!docs[0].IsMap()) {
    return InvalidArgument(Where(source, docs[0].Mark()) +
                           ": expected a mapping of keys to values (data: ..., layers: ...), got " +
                           Describe(docs[0]));
  }
  return docs[0];
}

Status ApplyFile(const YAML::Node& root, std::string_view source, const std::string& base_dir,
                 TrainConfig& config, std::map<std::string, int, std::less<>>& seen_at) {
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    const std::string key_where = Where(source, key.Mark());
    if (!key.IsScalar()) return InvalidArgument(key_where + ": expected KEY: VALUE");
    const Key* spec = FindKey(key.Scalar());
    if (spec == nullptr) return UnknownKey(key_where, key.Scalar());
    const int line = key.Mark().line + 1;
    if (const auto [it, inserted] = seen_at.emplace(key.Scalar(), line); !inserted) {
      return InvalidArgument(key_where + ": duplicate key '" + key.Scalar() + "' (first at line " +
                             std::to_string(it->second) + ")");
    }
    // A missing value ("lr:") is marked where the next token starts: point at the key.
    const YAML::Mark mark = value.IsNull() || value.Mark().is_null() ? key.Mark() : value.Mark();
    COUPLER_RETURN_IF_ERROR(
        spec->set(config, Field{spec->name, value, Where(source, mark), base_dir}));
  }
  return {};
}

Status ApplyOverride(const std::string& assignment, const std::string& cwd, TrainConfig& config,
                     std::map<std::string, int, std::less<>>& seen_at) {
  const std::string where = "--set " + assignment;
  const size_t eq = assignment.find('=');
  const std::string_view name = eq == std::string::npos
                                    ? std::string_view()
                                    : Trim(std::string_view(assignment).substr(0, eq));
  if (name.empty()) return InvalidArgument(where + ": expected KEY=VALUE, e.g. precision=bf16");
  const Key* spec = FindKey(name);
  if (spec == nullptr) return UnknownKey(where, name);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(where + ": " + std::string(name) + ": not a valid YAML value: " + e.msg);
  }
  seen_at.emplace(std::string(name), 0);
  return spec->set(config, Field{spec->name, value, where, cwd});
}

}  // namespace

std::string_view PrecisionName(ElementType precision) { return ShortElementTypeName(precision); }

std::string_view OptimizerName(Optimizer optimizer) {
  for (const auto& [name, value] : kOptimizers) {
    if (value == optimizer) return name;
  }
  return "?";
}

Result<TrainConfig> ParseTrainConfig(std::string_view text, std::string_view source_name,
                                     const std::string& base_dir,
                                     const std::vector<std::string>& overrides) {
  TrainConfig config;
  std::map<std::string, int, std::less<>> seen_at;  // key → line in the file (0: an override)
  try {
    COUPLER_ASSIGN_OR_RETURN(const YAML::Node root, ParseDocument(text, source_name));
    COUPLER_RETURN_IF_ERROR(ApplyFile(root, source_name, base_dir, config, seen_at));
    std::string cwd;
    if (!overrides.empty()) {
      std::error_code ec;
      const fs::path current = fs::current_path(ec);
      if (!ec) cwd = current.string();
    }
    for (const std::string& assignment : overrides) {
      COUPLER_RETURN_IF_ERROR(ApplyOverride(assignment, cwd, config, seen_at));
    }
  } catch (const YAML::Exception& e) {  // no exception leaves this file
    return InvalidArgument(Where(source_name, e.mark) + ": " + e.msg);
  }
  for (const char* required : {"data", "layers"}) {
    if (!seen_at.contains(std::string_view(required))) {
      return InvalidArgument(std::string(source_name) + ": missing required key '" + required +
                             "'");
    }
  }
  if (config.early_stop_patience > 0 && config.validation_fraction <= 0) {
    return InvalidArgument(std::string(source_name) +
                           ": early_stop_patience needs validation_fraction (the rows it watches)");
  }
  return config;
}

Result<TrainConfig> LoadTrainConfig(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  COUPLER_ASSIGN_OR_RETURN(const io::MappedFile file, io::MappedFile::Open(path));
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(path), ec).parent_path();
  if (ec) dir = fs::path(path).parent_path();
  return ParseTrainConfig(file.text(), path, dir.string(), overrides);
}

}  // namespace coupler::train
