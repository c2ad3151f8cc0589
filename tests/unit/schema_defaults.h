// Hand-made tasks get their params as the validator leaves them: what a test does not set
// takes the op's schema default, so ops see exactly what a submitted job would send.
#pragma once

#include <string_view>

#include "runtime/ops/op_registry.h"
#include "runtime/wire/task_params.h"

namespace coupler {

inline wire::TaskParams WithSchemaDefaults(std::string_view op, wire::TaskParams params) {
  if (const ops::OpDef* def = ops::OpRegistry::Builtin().Find(op)) {
    for (const ops::ParamSchema& schema : def->params) {
      if (schema.default_value && !params.Has(schema.name)) {
        params.Set(schema.name, *schema.default_value);
      }
    }
  }
  return params;
}

}  // namespace coupler
