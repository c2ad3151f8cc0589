// The CPU GEMMs on oneDNN's matmul (Debian's libdnnl, the library PyTorch's CPU kernels use):
// fp32 x fp32 and bf16 x bf16 operands, on the best instruction set the CPU offers (AMX tiles
// or AVX512_BF16 for bf16, measured 4-7x OpenBLAS's fp32 sgemm on one core here; AVX-512 or
// AVX2 for fp32, 1.1-1.4x). What it has no kernel for — fp16 or mixed operands, bf16 on a CPU
// without AVX-512 — stays on the OpenBLAS path (kernels/cpu/gemm_cpu.cc), which widens 16-bit
// tiles to fp32. One thread per call, as a rank per core wants.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "kernels/int8_gemm.h"
#include "kernels/train_kernels.h"

namespace coupler::kernels {

// c = alpha * op(a) * op(b) + beta * c on oneDNN, shapes already checked (m, n, k >= 1).
// Returns false, with c untouched, when oneDNN has no kernel for these storages on this CPU.
bool OneDnnGemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
                MutMatrix c, size_t m, size_t n, size_t k);

// int8_gemm's product (kernels/int8_gemm.h) on oneDNN's int8 matmul (u8/s8 x s8 -> s32, scaled
// per output channel into f32), input already checked. Returns false, with c untouched, when
// oneDNN has no kernel for it on this CPU (or the build has no oneDNN).
// w's packed forms live in its Packed (NewInt8Packed makes an empty one).
bool OneDnnInt8Gemm(Int8Activations a, const Int8Weights& w, float* c);
std::shared_ptr<Int8Weights::Packed> NewInt8Packed();

// The instruction set oneDNN's kernels use on this CPU ("avx512_core_amx", "avx2", ...), for
// `coupler doctor` and metrics.json.
std::string_view OneDnnIsa();

// Whether a bf16 GEMM runs on oneDNN here (else it is widened to fp32 for OpenBLAS).
bool OneDnnRunsBf16();

// Whether this build has oneDNN (libdnnl-dev was there); without it every CPU GEMM is OpenBLAS's.
bool OneDnnBuilt();

}  // namespace coupler::kernels
