#include "runtime/job/param_validator.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/job/command_placeholders.h"
#include "runtime/job/scalars.h"

namespace coupler::job {
namespace {

using ops::ParamSchema;
using ops::ParamType;

std::string Describe(const RawValue& v) {
  switch (v.kind) {
    case RawValue::Kind::kNull: return "nothing";
    case RawValue::Kind::kScalar: return (v.quoted ? "the string \"" : "'") + v.text +
                                         (v.quoted ? "\"" : "'");
    case RawValue::Kind::kSequence: return "a list";
    case RawValue::Kind::kMap: return "a mapping";
  }
  return "a value";
}

// Shortest text that reads back as the same double: 0.1, 1e-07, 8.
std::string FormatNumber(double d) { return fmt::format("{}", d); }

class ParamChecker {
 public:
  ParamChecker(NodeSpec& node, const ValidationEnv& env, Diagnostics& diags)
      : node_(node), env_(env), diags_(diags) {}

  void Error(const std::string& name, const RawValue& v, std::string msg, std::string hint = {}) {
    SourcePos pos = v.pos.line > 0 ? v.pos : node_.PosOf("params." + name);
    diags_.Add(pos, node_.id, "params." + name, std::move(msg), std::move(hint));
  }

  std::optional<ParamValue> Convert(const ParamSchema& s, const RawValue& v) {
    auto mistyped = [&] {
      Error(s.name, v, "expected " + std::string(ops::ParamTypeName(s.type)) + ", got " +
                           Describe(v));
      return std::nullopt;
    };
    const bool plain_scalar = v.kind == RawValue::Kind::kScalar && !v.quoted;
    switch (s.type) {
      case ParamType::kBoolOrAuto:
        if (v.kind == RawValue::Kind::kScalar && v.text == "auto") return ParamValue(v.text);
        [[fallthrough]];
      case ParamType::kBool: {
        if (!plain_scalar) return mistyped();
        auto b = ParseBool(v.text);
        if (!b) return mistyped();
        return ParamValue(*b);
      }
      case ParamType::kIntOrAuto:
        if (v.kind == RawValue::Kind::kScalar && v.text == "auto") return ParamValue(v.text);
        [[fallthrough]];
      case ParamType::kInt: {
        if (!plain_scalar) return mistyped();
        auto i = ParseInt(v.text);
        if (!i && LooksLikeInteger(v.text)) return OutOfRange(s, v);
        if (!i) return mistyped();
        if (!InRange(s, v, static_cast<double>(*i))) return std::nullopt;
        return ParamValue(*i);
      }
      case ParamType::kFloat: {
        if (!plain_scalar) return mistyped();
        auto d = ParseFloat(v.text);
        if (!d) return mistyped();
        if (!InRange(s, v, *d)) return std::nullopt;
        return ParamValue(*d);
      }
      case ParamType::kString:
      case ParamType::kPath: {
        if (v.kind != RawValue::Kind::kScalar) return mistyped();
        if (v.text.empty()) {
          Error(s.name, v, "must not be empty");
          return std::nullopt;
        }
        if (!s.choices.empty() &&
            std::find(s.choices.begin(), s.choices.end(), v.text) == s.choices.end()) {
          std::string list;
          for (const auto& c : s.choices) list += (list.empty() ? "" : ", ") + c;
          Error(s.name, v, "must be one of " + list + ", got '" + v.text + "'",
                DidYouMean(v.text, s.choices));
          return std::nullopt;
        }
        if (!s.placeholders.empty() && !CheckPlaceholders(s, v)) return std::nullopt;
        if (std::find(s.placeholders.begin(), s.placeholders.end(), kSpecDirPlaceholder) !=
            s.placeholders.end()) {
          return ParamValue(SubstituteSpecDir(v.text, env_.base_dir.empty() ? "." : env_.base_dir));
        }
        if (s.type == ParamType::kPath) {
          std::string abs = ResolvePath(env_.base_dir, v.text);
          if (env_.probe && env_.probe(abs).kind != PathInfo::Kind::kFile) {
            Error(s.name, v, "file '" + v.text + "' not found (looked at " + abs + ")");
            return std::nullopt;
          }
          return ParamValue(abs);
        }
        return ParamValue(v.text);
      }
      case ParamType::kStringList: {
        std::vector<std::string> out;
        if (v.kind == RawValue::Kind::kScalar) {  // a single name is a list of one
          out.push_back(v.text);
        } else if (v.kind == RawValue::Kind::kSequence) {
          for (const auto& item : v.items) {
            // A bare NULL in a list of names (na_values: [NULL, NA]) is YAML's null, but the
            // word is what a list of names can only mean.
            const bool spelt_null = item.kind == RawValue::Kind::kNull && !item.text.empty();
            if (!spelt_null && (item.kind != RawValue::Kind::kScalar || item.text.empty())) {
              Error(s.name, item, "expected a list of names, got " + Describe(item) +
                                      " in the list");
              return std::nullopt;
            }
            out.push_back(item.text);
          }
          if (out.empty()) {
            Error(s.name, v, "empty list: omit the parameter to mean every column");
            return std::nullopt;
          }
        } else {
          return mistyped();
        }
        for (const std::string& item : out) {
          if (s.choices.empty() ||
              std::find(s.choices.begin(), s.choices.end(), item) != s.choices.end()) {
            continue;
          }
          std::string list;
          for (const auto& c : s.choices) list += (list.empty() ? "" : ", ") + c;
          Error(s.name, v, "each must be one of " + list + ", got '" + item + "'",
                DidYouMean(item, s.choices));
          return std::nullopt;
        }
        return ParamValue(std::move(out));
      }
      case ParamType::kIntList: {
        std::vector<std::string> out;
        const std::vector<RawValue> one = v.kind == RawValue::Kind::kScalar
                                              ? std::vector<RawValue>{v}
                                              : std::vector<RawValue>{};
        if (v.kind != RawValue::Kind::kScalar && v.kind != RawValue::Kind::kSequence) {
          return mistyped();
        }
        for (const RawValue& item : v.kind == RawValue::Kind::kScalar ? one : v.items) {
          const auto i = item.kind == RawValue::Kind::kScalar && !item.quoted
                             ? ParseInt(item.text)
                             : std::nullopt;
          if (!i) {
            Error(s.name, item, "expected a list of integers, got " + Describe(item) +
                                    " in the list");
            return std::nullopt;
          }
          if (!InRange(s, item, static_cast<double>(*i))) return std::nullopt;
          out.push_back(std::to_string(*i));
        }
        return ParamValue(std::move(out));
      }
      case ParamType::kStringMap: {
        if (v.kind != RawValue::Kind::kMap) return mistyped();
        ParamMap out;
        for (const RawEntry& entry : v.entries) {
          const RawValue& value = entry.value;
          if (entry.key.empty() || entry.key == "?") {
            Error(s.name, v, "every key must be a name");
            return std::nullopt;
          }
          if (value.kind != RawValue::Kind::kScalar || value.text.empty()) {
            Error(s.name, value, "'" + entry.key + "': expected a string, got " + Describe(value));
            return std::nullopt;
          }
          for (const ParamEntry& seen : out) {
            if (seen.key == entry.key) {
              Error(s.name, value, "'" + entry.key + "' is given twice");
              return std::nullopt;
            }
          }
          out.push_back({entry.key, value.text});
        }
        if (out.empty()) {
          Error(s.name, v, "empty mapping: omit the parameter instead");
          return std::nullopt;
        }
        return ParamValue(std::move(out));
      }
    }
    return std::nullopt;
  }

  bool InRange(const ParamSchema& s, const RawValue& v, double x) {
    if ((s.min && x < *s.min) || (s.max && x > *s.max)) {
      OutOfRange(s, v);
      return false;
    }
    return true;
  }

  std::nullopt_t OutOfRange(const ParamSchema& s, const RawValue& v) {
    std::string range = !s.max   ? ">= " + FormatNumber(s.min.value_or(0))
                        : !s.min ? "<= " + FormatNumber(*s.max)
                                 : "between " + FormatNumber(*s.min) + " and " + FormatNumber(*s.max);
    Error(s.name, v, "must be " + range + ", got " + v.text);
    return std::nullopt;
  }

  bool CheckPlaceholders(const ParamSchema& s, const RawValue& v) {
    using Context = PlaceholderUse::Context;
    bool ok = true;
    for (const PlaceholderUse& use : FindPlaceholders(v.text)) {
      const std::string& name = use.name;
      if (std::find(s.placeholders.begin(), s.placeholders.end(), name) == s.placeholders.end()) {
        std::string list;
        for (const auto& p : s.placeholders) list += (list.empty() ? "{" : ", {") + p + "}";
        // A name can be as long as the spec: quote the start of it.
        const std::string shown = name.size() > 32 ? name.substr(0, 32) + "..." : name;
        Error(s.name, v, "unknown placeholder {" + shown + "}; known: " + list,
              DidYouMean(name, s.placeholders));
        ok = false;
        continue;
      }
      if (use.context == Context::kPlain) continue;
      // The worker substitutes the value shell-quoted; only an unquoted placeholder keeps it
      // one word, whatever the file name holds.
      std::string fix;
      switch (use.context) {
        case Context::kSingleQuotes:
        case Context::kDoubleQuotes:
          fix = "drop the quotes: coupler quotes the value of {" + name + "} itself";
          break;
        case Context::kAfterBackslash:
          fix = "drop the backslash: coupler quotes the value of {" + name + "} itself";
          break;
        case Context::kComment:
        case Context::kPlain:
          fix = "move it out of the comment or remove it";
          break;
      }
      Error(s.name, v,
            "placeholder {" + name + "} is " + std::string(ContextName(use.context)) +
                ", which undoes the shell quoting coupler gives its value (a file name could "
                "then run commands)",
            fix);
      ok = false;
    }
    return ok;
  }

 private:
  NodeSpec& node_;
  const ValidationEnv& env_;
  Diagnostics& diags_;
};

}  // namespace

void ValidateParams(NodeSpec& node, const ops::OpDef& op, const ValidationEnv& env,
                    Diagnostics& diags) {
  ParamChecker checker(node, env, diags);
  std::vector<std::string> known;
  for (const auto& p : op.params) known.push_back(p.name);

  for (const auto& [name, raw] : node.raw_params) {
    const ParamSchema* schema = op.FindParam(name);
    if (schema == nullptr) {
      std::string hint = DidYouMean(name, known);
      if (hint.empty()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        hint = known.empty() ? "op '" + op.name + "' takes no params" : "known: " + list;
      }
      diags.Add(node.PosOf("params." + name), node.id, "params." + name,
                "unknown parameter '" + name + "' for op '" + op.name + "'", hint);
      continue;
    }
    if (auto v = checker.Convert(*schema, raw)) node.params[name] = std::move(*v);
  }
  for (const auto& schema : op.params) {
    if (node.raw_params.count(schema.name) != 0) continue;
    if (schema.required) {
      diags.Add(node.PosOf("params"), node.id, "params." + schema.name,
                "missing required parameter '" + schema.name + "' (" +
                    std::string(ops::ParamTypeName(schema.type)) + ": " + schema.doc + ")");
    } else if (schema.default_value) {
      node.params[schema.name] = *schema.default_value;
    }
  }
  // Cross-parameter rules.
  if (op.name == "select") {
    const bool keep = node.raw_params.count("keep") != 0, drop = node.raw_params.count("drop") != 0;
    if (keep && drop) {
      diags.Add(node.PosOf("params.drop"), node.id, "params.drop",
                "give keep or drop, not both (keep lists every column that stays)");
    } else if (!keep && !drop && node.raw_params.count("rename") == 0) {
      diags.Add(node.PosOf("params"), node.id, "params",
                "select needs keep, drop or rename");
    }
  }
  auto lo = node.params.find("min");
  auto hi = node.params.find("max");
  if (op.name == "clip" && lo != node.params.end() && hi != node.params.end() &&
      std::get<double>(lo->second) > std::get<double>(hi->second)) {
    diags.Add(node.PosOf("params.min"), node.id, "params.min",
              "min (" + FormatNumber(std::get<double>(lo->second)) + ") is greater than max (" +
                  FormatNumber(std::get<double>(hi->second)) + ")");
  }
}

std::string ParamToString(const ParamValue& v) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return FormatNumber(d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string out;
      for (const auto& s : l) out += (out.empty() ? "" : ",") + s;
      return out;
    }
    std::string operator()(const ParamMap& m) const {
      std::string out;
      for (const auto& [key, value] : m) out += (out.empty() ? "{" : ", ") + key + ": " + value;
      return out.empty() ? "{}" : out + "}";
    }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace coupler::job
