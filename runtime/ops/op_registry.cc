#include "runtime/ops/op_registry.h"

#include <cstdint>

#include "runtime/check.h"
#include "runtime/ops/builtin_ops.h"

namespace coupler::ops {

const OpRegistry& OpRegistry::Builtin() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    for (auto& def : BuiltinOpDefs()) r.Register(std::move(def));
    return r;
  }();
  return registry;
}

void OpRegistry::Register(OpDef def) {
  COUPLER_CHECK(!def.name.empty()) << "op without a name";
  COUPLER_CHECK(def.can_be_loose || def.can_be_tight) << def.name << " can run neither way";
  std::string name = def.name;
  ops_.insert_or_assign(std::move(name), std::move(def));
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(ops_.size());
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

}  // namespace coupler::ops
