// Program: a type-checked expression compiled to register instructions over the columns it
// reads, ready for the CPU loops and the CUDA interpreter (kernels/expression.h). Compile is
// the one entry point: the plan's checks and the worker's ops call the same code, so what the
// plan accepts is what runs.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/expr/expr_error.h"
#include "runtime/expr/instruction.h"
#include "runtime/io/column_schema.h"
#include "runtime/status.h"

namespace coupler::expr {

struct ProgramColumn {
  std::string name;
  ElementType dtype = ElementType::kFloat32;
  bool categorical = false;
};

struct Program {
  std::vector<Instruction> code;
  std::vector<ProgramColumn> columns;  // what loads and code comparisons index (`arg`)
  std::vector<std::string> strings;    // string literals (`arg2` of kCodeEq / kCodeNe)
  ValueType result = ValueType::kBool;
  int registers = 0;

  // The code with each string comparison's `value` set to the string's code in its column's
  // dictionary (`dictionaries[c]` for columns[c], nullptr for a plain column). A string the
  // dictionary lacks gets code -2, which no row holds (-1 is a missing value): `== "absent"`
  // keeps nothing and `!= "absent"` keeps everything, as pandas does.
  Result<std::vector<Instruction>> BindCodes(
      std::span<const std::vector<std::string>* const> dictionaries) const;
};

enum class Expect { kAny, kBoolean, kNumber };

// Parses, type-checks against `schema` and compiles. Types: float32 arithmetic, float64 when an
// operand is float64 or an int32 column (as numpy promotes int32 with floats); a number literal
// takes the type of what it meets (numpy's weak scalars); comparisons, isnan, and/or/not give
// booleans; a categorical column is only compared (== / !=) with a string.
ExprResult<Program> Compile(std::string_view text, const io::TableSchema& schema,
                            Expect expect = Expect::kAny);

std::string_view ValueTypeName(ValueType type);
// The column type a numeric result is stored as (float32 or float64).
ElementType ElementTypeOf(ValueType type);

}  // namespace coupler::expr
