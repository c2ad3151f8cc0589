#include "kernels/expression.h"

#include "kernels/cpu/expression_cpu.h"
#include "kernels/cuda/expression_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {

size_t ResultBytes(expr::ValueType type) {
  switch (type) {
    case expr::ValueType::kBool: return 1;
    case expr::ValueType::kFloat32: return 4;
    case expr::ValueType::kFloat64: return 8;
  }
  return 8;
}

Status EvaluateExpression(const expr::Program& program, std::span<const ExpressionInput> inputs,
                          size_t rows, void* out, Backend backend) {
  if (inputs.size() != program.columns.size()) {
    return InvalidArgument("expression: " + std::to_string(inputs.size()) + " inputs for " +
                           std::to_string(program.columns.size()) + " columns");
  }
  if (program.registers < 1 || program.registers > expr::kMaxRegisters || program.code.empty()) {
    return InvalidArgument("expression: not a compiled program");
  }
  std::vector<const void*> data(inputs.size());
  std::vector<size_t> bytes(inputs.size());
  std::vector<const std::vector<std::string>*> dictionaries(inputs.size());
  for (size_t c = 0; c < inputs.size(); ++c) {
    const expr::ProgramColumn& want = program.columns[c];
    const ElementType have = inputs[c].dtype;
    if (have != want.dtype) {
      return InvalidArgument("column '" + want.name + "' is " + std::string(ElementTypeName(have)) +
                             ", but the expression was compiled for " +
                             std::string(ElementTypeName(want.dtype)));
    }
    if (rows > 0 && inputs[c].data == nullptr) {
      return InvalidArgument("column '" + want.name + "' has no values");
    }
    data[c] = inputs[c].data;
    bytes[c] = ElementSize(have);
    dictionaries[c] = inputs[c].dictionary;
  }
  COUPLER_ASSIGN_OR_RETURN(const std::vector<expr::Instruction> code,
                           program.BindCodes(dictionaries));
  switch (backend) {
    case Backend::kCpu:
      EvaluateExpressionCpu(code.data(), code.size(), program.registers, data.data(), rows, out,
                            program.result);
      return Status::Ok();
    case Backend::kCuda: {
      if (!BuiltWithCuda()) {
        return Unavailable("expression: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (rows == 0) return Status::Ok();
      Status s = EvaluateExpressionCuda(code.data(), code.size(), program.registers, data.data(),
                                        bytes.data(), data.size(), rows, out, program.result);
      return s.ok() ? s : s.WithContext("expression (cuda)");
    }
  }
  return InvalidArgument("expression: unknown backend");
}

}  // namespace coupler::kernels
