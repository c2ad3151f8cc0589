// Compile: type checking and code generation as three loops over the postfix node array —
// types bottom-up, literal types top-down (a literal meeting a float32 column is float32, as a
// numpy scalar is), then code bottom-up with registers laid out as an evaluation stack.
#include <algorithm>
#include <cmath>

#include "runtime/expr/parser.h"
#include "runtime/expr/program.h"
#include "runtime/job/scalars.h"

namespace coupler::expr {
namespace {

enum class Kind : uint8_t { kBool, kNumber, kCategorical, kString };

struct Info {
  Kind kind = Kind::kNumber;
  ValueType type = ValueType::kFloat64;  // numbers: their own type when not weak
  bool weak = false;                     // a literal, or built from literals only
  int32_t column = -1;                   // categorical columns: Program::columns index
  ValueType resolved = ValueType::kFloat64;  // after the top-down pass
  bool resolved_set = false;
};

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kBool: return "a boolean";
    case Kind::kNumber: return "a number";
    case Kind::kCategorical: return "a categorical column";
    case Kind::kString: return "a string";
  }
  return "a value";
}

std::string_view Symbol(NodeKind kind) {
  switch (kind) {
    case NodeKind::kNeg: return "unary '-'";
    case NodeKind::kNot: return "'not'";
    case NodeKind::kAdd: return "'+'";
    case NodeKind::kSub: return "'-'";
    case NodeKind::kMul: return "'*'";
    case NodeKind::kDiv: return "'/'";
    case NodeKind::kEq: return "'=='";
    case NodeKind::kNe: return "'!='";
    case NodeKind::kLt: return "'<'";
    case NodeKind::kLe: return "'<='";
    case NodeKind::kGt: return "'>'";
    case NodeKind::kGe: return "'>='";
    case NodeKind::kAnd: return "'and'";
    case NodeKind::kOr: return "'or'";
    default: return "this";
  }
}

bool IsComparison(NodeKind k) {
  return k == NodeKind::kEq || k == NodeKind::kNe || k == NodeKind::kLt || k == NodeKind::kLe ||
         k == NodeKind::kGt || k == NodeKind::kGe;
}
bool IsArithmetic(NodeKind k) {
  return k == NodeKind::kAdd || k == NodeKind::kSub || k == NodeKind::kMul ||
         k == NodeKind::kDiv || k == NodeKind::kNeg;
}

const std::vector<std::string>& FunctionNames() {
  static const std::vector<std::string> names = {"sqrt", "log", "abs", "clip", "isnan"};
  return names;
}

ValueType Wider(ValueType a, ValueType b) {
  return a == ValueType::kFloat64 || b == ValueType::kFloat64 ? ValueType::kFloat64
                                                              : ValueType::kFloat32;
}

class Compiler {
 public:
  Compiler(const Ast& ast, const io::TableSchema& schema) : ast_(ast), schema_(schema) {}

  ExprResult<Program> Run(Expect expect) {
    info_.resize(ast_.nodes.size());
    for (size_t i = 0; i < ast_.nodes.size(); ++i) {
      if (!Check(i)) return error_;
    }
    const Node& root = ast_.nodes.back();
    const Info& top = info_.back();
    if (top.kind == Kind::kCategorical || top.kind == Kind::kString) {
      return ExprError{root.offset, "the expression is " + std::string(KindName(top.kind)) +
                                        "; compare it with == or != to use it", ""};
    }
    if (expect == Expect::kBoolean && top.kind != Kind::kBool) {
      return ExprError{0, "expected a condition (a comparison, isnan, and/or/not), got a number",
                       ""};
    }
    if (expect == Expect::kNumber && top.kind != Kind::kNumber) {
      return ExprError{0, "expected a number, got a condition",
                       "use it in a filter's `where`, or write a number"};
    }
    ResolveLiterals();
    for (size_t i = 0; i < ast_.nodes.size(); ++i) {
      if (!Emit(i)) return error_;
    }
    program_.result = top.kind == Kind::kBool ? ValueType::kBool : top.resolved;
    program_.registers = max_sp_;
    return std::move(program_);
  }

 private:
  bool Fail(size_t offset, std::string message, std::string hint = {}) {
    error_ = ExprError{offset, std::move(message), std::move(hint)};
    return false;
  }

  int32_t ColumnSlot(const io::ColumnSchema& c) {
    for (size_t k = 0; k < program_.columns.size(); ++k) {
      if (program_.columns[k].name == c.name) return static_cast<int32_t>(k);
    }
    program_.columns.push_back({c.name, c.dtype, c.categorical});
    return static_cast<int32_t>(program_.columns.size()) - 1;
  }

  bool CheckColumn(const Node& n, Info& out) {
    const io::ColumnSchema* c = schema_.Find(n.name);
    if (c == nullptr) {
      std::vector<std::string> names;
      for (const io::ColumnSchema& s : schema_.columns) names.push_back(s.name);
      std::string hint = job::DidYouMean(n.name, names);
      if (hint.empty()) {
        std::string list;
        for (size_t k = 0; k < names.size() && k < 12; ++k) list += (k ? ", " : "") + names[k];
        if (names.size() > 12) list += ", ...";
        hint = names.empty() ? "the input has no columns" : "columns: " + list;
      }
      return Fail(n.offset, "unknown column '" + n.name + "'", hint);
    }
    out.column = ColumnSlot(*c);
    if (c->categorical) {
      out.kind = Kind::kCategorical;
      return true;
    }
    switch (c->dtype) {
      case ElementType::kFloat32: out.type = ValueType::kFloat32; return true;
      // int64 and datetime64 (nanoseconds) are exact in float64 up to 2^53; a missing value
      // reads as NaN, so it compares false and isnan() finds it.
      case ElementType::kFloat64:
      case ElementType::kInt32:
      case ElementType::kInt64:
      case ElementType::kDatetime64: out.type = ValueType::kFloat64; return true;
      case ElementType::kBool:
        out.kind = Kind::kBool;
        out.type = ValueType::kBool;
        return true;
      default:
        return Fail(n.offset, "column '" + n.name + "' is " +
                                  std::string(ElementTypeName(c->dtype)) +
                                  "; expressions read float32, float64, int32, int64, "
                                  "datetime64 and bool columns",
                    "cast after filtering and deriving, not before");
    }
  }

  bool NeedNumber(int32_t child, std::string_view what) {
    const Info& c = info_[child];
    if (c.kind == Kind::kNumber) return true;
    std::string hint;
    if (c.kind == Kind::kCategorical) hint = "a categorical column can only be compared with a string, e.g. city == \"Paris\"";
    if (c.kind == Kind::kBool) hint = "conditions combine with and/or/not";
    return Fail(ast_.nodes[child].offset, std::string(what) + " needs a number, got " +
                                              std::string(KindName(c.kind)),
                hint);
  }

  void Combine(Info& out, std::initializer_list<int32_t> children) {
    out.kind = Kind::kNumber;
    out.weak = true;
    out.type = ValueType::kFloat32;
    for (int32_t c : children) {
      if (info_[c].weak) continue;
      out.type = out.weak ? info_[c].type : Wider(out.type, info_[c].type);
      out.weak = false;
    }
    if (out.weak) out.type = ValueType::kFloat64;
  }

  bool Check(size_t i) {
    const Node& n = ast_.nodes[i];
    Info& out = info_[i];
    switch (n.kind) {
      case NodeKind::kNumber:
        out.kind = Kind::kNumber;
        out.weak = true;
        return true;
      case NodeKind::kString:
        out.kind = Kind::kString;
        return true;
      case NodeKind::kColumn: return CheckColumn(n, out);
      case NodeKind::kNot:
      case NodeKind::kAnd:
      case NodeKind::kOr:
        for (int k = 0; k < n.arg_count; ++k) {
          const Info& c = info_[n.args[k]];
          if (c.kind != Kind::kBool) {
            return Fail(ast_.nodes[n.args[k]].offset,
                        std::string(Symbol(n.kind)) + " needs a condition, got " +
                            std::string(KindName(c.kind)),
                        c.kind == Kind::kNumber ? "compare it, e.g. x > 0" : "");
          }
        }
        out.kind = Kind::kBool;
        return true;
      case NodeKind::kCall: return CheckCall(n, out);
      default: break;
    }
    if (IsArithmetic(n.kind)) {
      for (int k = 0; k < n.arg_count; ++k) {
        if (!NeedNumber(n.args[k], Symbol(n.kind))) return false;
      }
      if (n.arg_count == 1) {
        out = info_[n.args[0]];
        out.resolved_set = false;
      } else {
        Combine(out, {n.args[0], n.args[1]});
      }
      return true;
    }
    // A comparison.
    const Info& l = info_[n.args[0]];
    const Info& r = info_[n.args[1]];
    out.kind = Kind::kBool;
    const bool l_code = l.kind == Kind::kCategorical, r_code = r.kind == Kind::kCategorical;
    const bool l_str = l.kind == Kind::kString, r_str = r.kind == Kind::kString;
    if (l_code || r_code || l_str || r_str) {
      const bool pair = (l_code && r_str) || (l_str && r_code);
      if (!pair) {
        const int32_t bad = (l_code || l_str) ? n.args[0] : n.args[1];
        return Fail(ast_.nodes[bad].offset,
                    std::string(KindName(info_[bad].kind)) + " can only be compared with " +
                        (info_[bad].kind == Kind::kString ? "a categorical column"
                                                          : "a string") +
                        " (== or !=)");
      }
      if (n.kind != NodeKind::kEq && n.kind != NodeKind::kNe) {
        return Fail(n.offset, "categories are compared with == or != only, not " +
                                  std::string(Symbol(n.kind)));
      }
      return true;
    }
    for (int k = 0; k < 2; ++k) {
      if (!NeedNumber(n.args[k], Symbol(n.kind))) return false;
    }
    return true;
  }

  bool CheckCall(const Node& n, Info& out) {
    const auto& names = FunctionNames();
    if (std::find(names.begin(), names.end(), n.name) == names.end()) {
      return Fail(n.offset, "unknown function '" + n.name + "'",
                  [&] {
                    std::string hint = job::DidYouMean(n.name, names);
                    return hint.empty() ? "functions: sqrt, log, abs, clip, isnan" : hint;
                  }());
    }
    const int want = n.name == "clip" ? 3 : 1;
    if (n.arg_count != want) {
      return Fail(n.offset, "'" + n.name + "' takes " + std::to_string(want) + " argument" +
                                (want == 1 ? "" : "s") + ", got " + std::to_string(n.arg_count),
                  n.name == "clip" ? "clip(x, lo, hi)" : "");
    }
    for (int k = 0; k < n.arg_count; ++k) {
      if (!NeedNumber(n.args[k], "'" + n.name + "'")) return false;
    }
    if (n.name == "isnan") {
      out.kind = Kind::kBool;
      return true;
    }
    if (want == 1) {
      out = info_[n.args[0]];
      out.resolved_set = false;
    } else {
      Combine(out, {n.args[0], n.args[1], n.args[2]});
    }
    return true;
  }

  // The type a node's numeric operands run in.
  ValueType OperandType(size_t i) const {
    const Node& n = ast_.nodes[i];
    const Info& self = info_[i];
    if (self.kind == Kind::kNumber) return self.resolved;
    // Comparisons and isnan: the operands' common type, float64 between literals only.
    bool weak = true;
    ValueType t = ValueType::kFloat32;
    for (int k = 0; k < n.arg_count; ++k) {
      const Info& c = info_[n.args[k]];
      if (c.kind != Kind::kNumber || c.weak) continue;
      t = weak ? c.type : Wider(t, c.type);
      weak = false;
    }
    return weak ? ValueType::kFloat64 : t;
  }

  void ResolveLiterals() {
    for (size_t i = ast_.nodes.size(); i-- > 0;) {
      Info& self = info_[i];
      if (self.kind == Kind::kNumber && !self.resolved_set) {
        self.resolved = self.weak ? ValueType::kFloat64 : self.type;
        self.resolved_set = true;
      }
      const Node& n = ast_.nodes[i];
      if (n.kind == NodeKind::kAnd || n.kind == NodeKind::kOr || n.kind == NodeKind::kNot) continue;
      const ValueType t = OperandType(i);
      for (int k = 0; k < n.arg_count; ++k) {
        Info& c = info_[n.args[k]];
        if (c.kind != Kind::kNumber) continue;
        c.resolved = c.weak ? t : c.type;
        c.resolved_set = true;
      }
    }
  }

  bool Push(Instruction ins) {
    if (sp_ >= kMaxRegisters) {
      return Fail(0, "the expression needs more than " + std::to_string(kMaxRegisters) +
                         " intermediate values; split it into several derived columns");
    }
    ins.dst = static_cast<uint8_t>(sp_);
    program_.code.push_back(ins);
    ++sp_;
    max_sp_ = std::max(max_sp_, sp_);
    return true;
  }

  // Before node `n` pops its operands: widens those held as float32 when it runs in float64.
  void Widen(const Node& n, ValueType t) {
    if (t != ValueType::kFloat64) return;
    int reg = sp_ - n.arg_count;
    for (int k = 0; k < n.arg_count; ++k, ++reg) {
      const Info& c = info_[n.args[k]];
      if (c.kind == Kind::kNumber && c.resolved == ValueType::kFloat32) {
        Instruction w;
        w.op = OpCode::kToFloat64;
        w.type = ValueType::kFloat32;
        w.dst = w.src0 = static_cast<uint8_t>(reg);
        program_.code.push_back(w);
      }
    }
  }

  bool Emit(size_t i) {
    const Node& n = ast_.nodes[i];
    const Info& self = info_[i];
    Instruction ins;
    switch (n.kind) {
      case NodeKind::kString: return true;  // read by the comparison
      case NodeKind::kColumn: {
        if (self.kind == Kind::kCategorical) return true;
        const ElementType dtype = program_.columns[self.column].dtype;
        switch (dtype) {
          case ElementType::kFloat32: ins.op = OpCode::kLoadFloat32; break;
          case ElementType::kFloat64: ins.op = OpCode::kLoadFloat64; break;
          case ElementType::kInt64:
          case ElementType::kDatetime64: ins.op = OpCode::kLoadInt64; break;
          case ElementType::kBool: ins.op = OpCode::kLoadBool; break;
          default: ins.op = OpCode::kLoadInt32; break;
        }
        ins.arg = self.column;
        ins.type = self.type;
        return Push(ins);  // a parent running in float64 widens it (Widen)
      }
      case NodeKind::kNumber: {
        ins.op = OpCode::kConst;
        ins.type = self.resolved;
        ins.value = self.resolved == ValueType::kFloat32
                        ? static_cast<double>(static_cast<float>(n.number))
                        : n.number;
        return Push(ins);
      }
      default: break;
    }
    if (IsComparison(n.kind) && (info_[n.args[0]].kind == Kind::kCategorical ||
                                 info_[n.args[1]].kind == Kind::kCategorical)) {
      const bool left = info_[n.args[0]].kind == Kind::kCategorical;
      ins.op = n.kind == NodeKind::kEq ? OpCode::kCodeEq : OpCode::kCodeNe;
      ins.arg = info_[n.args[left ? 0 : 1]].column;
      program_.strings.push_back(ast_.nodes[n.args[left ? 1 : 0]].name);
      ins.arg2 = static_cast<int32_t>(program_.strings.size()) - 1;
      ins.type = ValueType::kBool;
      return Push(ins);
    }
    const ValueType t = (n.kind == NodeKind::kAnd || n.kind == NodeKind::kOr ||
                         n.kind == NodeKind::kNot)
                            ? ValueType::kBool
                            : OperandType(i);
    Widen(n, t);
    sp_ -= n.arg_count;
    ins.type = t;
    ins.src0 = static_cast<uint8_t>(sp_);
    ins.src1 = static_cast<uint8_t>(sp_ + 1);
    ins.src2 = static_cast<uint8_t>(sp_ + 2);
    switch (n.kind) {
      case NodeKind::kNeg: ins.op = OpCode::kNeg; break;
      case NodeKind::kNot: ins.op = OpCode::kNot; break;
      case NodeKind::kAdd: ins.op = OpCode::kAdd; break;
      case NodeKind::kSub: ins.op = OpCode::kSub; break;
      case NodeKind::kMul: ins.op = OpCode::kMul; break;
      case NodeKind::kDiv: ins.op = OpCode::kDiv; break;
      case NodeKind::kEq: ins.op = OpCode::kEq; break;
      case NodeKind::kNe: ins.op = OpCode::kNe; break;
      case NodeKind::kLt: ins.op = OpCode::kLt; break;
      case NodeKind::kLe: ins.op = OpCode::kLe; break;
      case NodeKind::kGt: ins.op = OpCode::kGt; break;
      case NodeKind::kGe: ins.op = OpCode::kGe; break;
      case NodeKind::kAnd: ins.op = OpCode::kAnd; break;
      case NodeKind::kOr: ins.op = OpCode::kOr; break;
      case NodeKind::kCall:
        ins.op = n.name == "sqrt"  ? OpCode::kSqrt
                 : n.name == "log" ? OpCode::kLog
                 : n.name == "abs" ? OpCode::kAbs
                 : n.name == "clip" ? OpCode::kClip
                                    : OpCode::kIsNan;
        break;
      default: return Fail(n.offset, "internal: unexpected node");
    }
    return Push(ins);
  }

  const Ast& ast_;
  const io::TableSchema& schema_;
  std::vector<Info> info_;
  Program program_;
  int sp_ = 0;
  int max_sp_ = 0;
  ExprError error_;
};

}  // namespace

ExprResult<Program> Compile(std::string_view text, const io::TableSchema& schema, Expect expect) {
  ExprResult<Ast> ast = Parse(text);
  if (!ast.ok()) return ast.error();
  return Compiler(ast.value(), schema).Run(expect);
}

Result<std::vector<Instruction>> Program::BindCodes(
    std::span<const std::vector<std::string>* const> dictionaries) const {
  if (dictionaries.size() != columns.size()) {
    return InvalidArgument("expression: " + std::to_string(dictionaries.size()) +
                           " dictionaries for " + std::to_string(columns.size()) + " columns");
  }
  std::vector<Instruction> out = code;
  for (Instruction& ins : out) {
    if (ins.op != OpCode::kCodeEq && ins.op != OpCode::kCodeNe) continue;
    const std::vector<std::string>* dict = dictionaries[static_cast<size_t>(ins.arg)];
    if (dict == nullptr) {
      return InvalidArgument("column '" + columns[static_cast<size_t>(ins.arg)].name +
                             "' has no dictionary, but the expression compares it with a string");
    }
    const std::string& wanted = strings[static_cast<size_t>(ins.arg2)];
    const auto it = std::find(dict->begin(), dict->end(), wanted);
    ins.value = it == dict->end() ? -2.0 : static_cast<double>(it - dict->begin());
  }
  return out;
}

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kBool: return "bool";
    case ValueType::kFloat32: return "float32";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

ElementType ElementTypeOf(ValueType type) {
  return type == ValueType::kFloat32 ? ElementType::kFloat32 : ElementType::kFloat64;
}

std::string ExprError::Where(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

std::string ExprError::Describe(std::string_view text) const {
  std::string out = message + " at " + Where(text, offset);
  if (!hint.empty()) out += " (" + hint + ")";
  return out;
}

}  // namespace coupler::expr
