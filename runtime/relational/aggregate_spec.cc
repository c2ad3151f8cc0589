#include "runtime/relational/aggregate_spec.h"

#include <array>
#include <utility>

namespace coupler::relational {
namespace {

constexpr std::array<std::pair<std::string_view, AggregateFn>, 11> kFns{{
    {"size", AggregateFn::kSize},
    {"count", AggregateFn::kCount},
    {"sum", AggregateFn::kSum},
    {"mean", AggregateFn::kMean},
    {"min", AggregateFn::kMin},
    {"max", AggregateFn::kMax},
    {"std", AggregateFn::kStd},
    {"var", AggregateFn::kVar},
    {"nunique", AggregateFn::kNunique},
    {"first", AggregateFn::kFirst},
    {"last", AggregateFn::kLast},
}};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string FnList() {
  std::string out;
  for (const auto& [name, fn] : kFns) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

bool IsNumber(const io::ColumnSchema& c) {
  if (c.categorical) return false;
  switch (c.dtype) {
    case ElementType::kFloat32:
    case ElementType::kFloat64:
    case ElementType::kInt32:
    case ElementType::kInt64:
    case ElementType::kBool: return true;
    default: return false;
  }
}

}  // namespace

std::string_view AggregateFnName(AggregateFn fn) {
  for (const auto& [name, f] : kFns) {
    if (f == fn) return name;
  }
  return "unknown";
}

Result<AggregateSpec> ParseAggregate(std::string output, std::string_view text) {
  const std::string_view t = Trim(text);
  const size_t open = t.find('(');
  if (open == std::string_view::npos || t.empty() || t.back() != ')') {
    return InvalidArgument("aggregate '" + std::string(text) +
                           "' is not fn(column) or size(); functions: " + FnList());
  }
  const std::string_view name = Trim(t.substr(0, open));
  const std::string_view column = Trim(t.substr(open + 1, t.size() - open - 2));
  AggregateSpec spec;
  spec.output = std::move(output);
  bool known = false;
  for (const auto& [n, fn] : kFns) {
    if (n == name) {
      spec.fn = fn;
      known = true;
    }
  }
  if (!known) {
    return InvalidArgument("unknown aggregate function '" + std::string(name) + "' in '" +
                           std::string(text) + "'; functions: " + FnList());
  }
  if (spec.fn == AggregateFn::kSize) {
    if (!column.empty()) return InvalidArgument("size() counts rows and takes no column");
    return spec;
  }
  if (column.empty() || column.find_first_of("(),") != std::string_view::npos) {
    return InvalidArgument("aggregate '" + std::string(text) + "' names no single column");
  }
  spec.column = std::string(column);
  return spec;
}

Result<io::ColumnSchema> AggregateOutput(const AggregateSpec& spec, const io::ColumnSchema* input) {
  io::ColumnSchema out;
  out.name = spec.output;
  if (spec.fn == AggregateFn::kSize) {
    out.dtype = ElementType::kInt64;
    return out;
  }
  if (input == nullptr) return InvalidArgument("no column '" + spec.column + "'");
  const io::ColumnSchema& c = *input;
  const std::string what = std::string(AggregateFnName(spec.fn)) + " of column '" + c.name +
                           "' (" + (c.categorical ? std::string("strings")
                                                  : std::string(ElementTypeName(c.dtype))) + ")";
  const bool half = c.dtype == ElementType::kFloat16 || c.dtype == ElementType::kBFloat16;
  if (half) return InvalidArgument(what + ": cast 16-bit floats back to float32 first");
  switch (spec.fn) {
    case AggregateFn::kCount:
    case AggregateFn::kNunique:
      out.dtype = ElementType::kInt64;
      return out;
    case AggregateFn::kSum:
      if (!IsNumber(c)) return InvalidArgument(what + " is not a sum of numbers");
      out.dtype = c.dtype == ElementType::kFloat32 || c.dtype == ElementType::kFloat64
                      ? ElementType::kFloat64
                      : ElementType::kInt64;
      return out;
    case AggregateFn::kMean:
    case AggregateFn::kStd:
    case AggregateFn::kVar:
      if (!IsNumber(c)) return InvalidArgument(what + ": needs numbers");
      out.dtype = ElementType::kFloat64;
      return out;
    case AggregateFn::kMin:
    case AggregateFn::kMax:
      if (c.categorical) return InvalidArgument(what + ": strings have no min or max here");
      out.dtype = c.dtype;
      return out;
    case AggregateFn::kFirst:
    case AggregateFn::kLast:
      out.dtype = c.dtype;
      out.categorical = c.categorical;
      return out;
    case AggregateFn::kSize: break;
  }
  return out;
}

}  // namespace coupler::relational
