// Ast: a parsed expression as a flat node array. The parser appends a node after its children,
// so the array is in postfix order: every pass (type checking, code generation) is a loop over
// it, and no tree shape, however deep, recurses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coupler::expr {

enum class NodeKind : uint8_t {
  kNumber,
  kColumn,
  kString,
  kNeg,
  kNot,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kCall,  // name: sqrt, log, abs, clip, isnan
};

struct Node {
  NodeKind kind = NodeKind::kNumber;
  size_t offset = 0;      // where its text starts (an operator's own offset for binaries)
  std::string name;       // column name, string literal or function name
  double number = 0;
  int32_t args[3] = {-1, -1, -1};  // children, earlier in the array
  int arg_count = 0;
};

struct Ast {
  std::vector<Node> nodes;  // postfix: the root is last
  int32_t root() const { return static_cast<int32_t>(nodes.size()) - 1; }
};

}  // namespace coupler::expr
