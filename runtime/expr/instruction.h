// One instruction of a compiled expression: plain data (no std:: types) so the CPU loops and the
// CUDA interpreter read the same array. Registers are positions of the evaluation stack the
// compiler laid out; every instruction writes `dst` from up to three source registers.
#pragma once

#include <cstdint>

namespace coupler::expr {

// Registers a program may use; a program needing more is refused at compile time (the CUDA
// interpreter keeps them per thread).
inline constexpr int kMaxRegisters = 64;

// What a register holds. kBool is 0/1 (uint8_t in the CPU's blocks).
enum class ValueType : uint8_t { kBool, kFloat32, kFloat64 };

enum class OpCode : uint8_t {
  kLoadFloat32,  // dst(f32) = column `arg` (float32)
  kLoadFloat64,  // dst(f64) = column `arg` (float64)
  kLoadInt32,    // dst(f64) = column `arg` (int32), exactly
  kConst,        // dst(type) = value
  kToFloat64,    // dst(f64) = src0(f32)
  kNeg,
  kAbs,
  kSqrt,
  kLog,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kClip,   // dst = src0 < src1 ? src1 : (src0 > src2 ? src2 : src0); NaN stays NaN
  kIsNan,  // dst(bool) = src0 is NaN
  kLt,     // comparisons: operands of `type`, dst bool; NaN compares false (!= true)
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,
  kCodeEq,  // dst(bool) = int32 codes of column `arg` == code; `value` holds the bound code
  kCodeNe,
  kAnd,
  kOr,
  kNot,
  kLoadInt64,  // dst(f64) = column `arg` (int64 or datetime64); the missing value is NaN
  kLoadBool,   // dst(bool) = column `arg` (bool)
};

struct Instruction {
  OpCode op = OpCode::kConst;
  ValueType type = ValueType::kFloat32;  // of the operands (what arithmetic runs in)
  uint8_t dst = 0;
  uint8_t src0 = 0;
  uint8_t src1 = 0;
  uint8_t src2 = 0;
  int32_t arg = -1;    // column index (loads, codes) or string index (codes)
  int32_t arg2 = -1;   // string literal index for kCodeEq / kCodeNe
  double value = 0;    // constant, or the bound code
};

}  // namespace coupler::expr
