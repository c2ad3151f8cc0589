#include "runtime/ops/op_def.h"

namespace coupler::ops {

std::string_view ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kBool: return "a boolean (true/false)";
    case ParamType::kInt: return "an integer";
    case ParamType::kFloat: return "a number";
    case ParamType::kString: return "a string";
    case ParamType::kStringList: return "a list of strings";
    case ParamType::kStringMap: return "a mapping of names to strings";
    case ParamType::kIntList: return "a list of integers";
    case ParamType::kIntOrAuto: return "an integer or 'auto'";
    case ParamType::kBoolOrAuto: return "true, false or 'auto'";
    case ParamType::kPath: return "a file path";
  }
  return "a value";
}

std::string_view HardwareClassName(HardwareClass h) {
  switch (h) {
    case HardwareClass::kCpu: return "cpu";
    case HardwareClass::kGpu: return "gpu";
    case HardwareClass::kGpuFastInterconnect: return "gpu+fast-interconnect";
  }
  return "cpu";
}

const ParamSchema* OpDef::FindParam(std::string_view param) const {
  for (const auto& p : params) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

bool Broadcasts(const OpDef& op, const std::map<std::string, job::ParamValue>& params) {
  if (op.broadcast_param.empty()) return false;
  const auto it = params.find(op.broadcast_param);
  if (it == params.end()) return false;
  const bool* on = std::get_if<bool>(&it->second);
  return on != nullptr && *on;
}

}  // namespace coupler::ops
