// Parser: expression text to an Ast. Precedence, loosest first: or, and, not, comparison
// (one per level: `a < b < c` is refused rather than read as Python would), + -, * /, unary -.
// Nesting (parentheses and calls) is bounded by kMaxNesting, so the recursion is too.
#pragma once

#include <string_view>

#include "runtime/expr/ast.h"
#include "runtime/expr/expr_error.h"

namespace coupler::expr {

inline constexpr int kMaxNesting = 32;

ExprResult<Ast> Parse(std::string_view text);

}  // namespace coupler::expr
