// OpRegistry: the table of ops a job spec may name. Builtin() holds every op coupler ships;
// tests and embedders may build their own.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/ops/op_def.h"

namespace coupler::ops {

class OpRegistry {
 public:
  // Every op of DESIGN.md: import_csv, column_stats, standardize, filter_map, clip, cast,
  // evaluate, noop, exec, train, mpi_exec.
  static const OpRegistry& Builtin();

  void Register(OpDef def);
  const OpDef* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
};

}  // namespace coupler::ops
