// Gemm on the CPU: oneDNN's matmul where it has a kernel (fp32, and bf16 on AVX-512 CPUs:
// kernels/cpu/onednn_gemm.h); otherwise fp32 operands go straight to OpenBLAS's sgemm and
// 16-bit ones are widened to fp32 one tile at a time inside a fixed workspace, so a
// mixed-precision GEMM costs at most kGemmWorkspaceBytes of scratch however large the matrices
// are. OpenBLAS is opened on first use (kernels/cpu/openblas_library.h).

#include <algorithm>
#include <climits>
#include <cstddef>
#include <vector>

#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/openblas_library.h"
#include "kernels/cpu/storage_access.h"
#include "kernels/train_kernels.h"
#include "runtime/check.h"

namespace coupler::kernels {
namespace {

constexpr size_t kWorkspaceFloats = kGemmWorkspaceBytes / sizeof(float);
// Tiles narrower than this make sgemm's packing overhead dominate; K is tiled before M or N
// shrink below it.
constexpr size_t kMinTileEdge = 64;

blasint ToBlas(size_t v) {
  COUPLER_CHECK(v <= static_cast<size_t>(INT_MAX)) << "GEMM dimension " << v << " too large";
  return static_cast<blasint>(v);
}

CBLAS_TRANSPOSE ToBlasTrans(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// Tile sizes of the output (mb x nb) and of the reduction (kb) such that the widened block of
// op(a) (mb x kb), of op(b) (kb x nb) and the fp32 output tile (mb x nb) fit in the workspace.
struct TilePlan {
  size_t mb = 0;
  size_t nb = 0;
  size_t kb = 0;
};

// m, n, k >= 1. The block of op(a) gets up to half the workspace: it is widened once per M
// tile (when K fits in one tile) while op(b)'s block is widened once per output tile.
TilePlan PlanTiles(size_t m, size_t n, size_t k) {
  constexpr size_t w = kWorkspaceFloats;
  const size_t m_min = std::min(m, kMinTileEdge);
  const size_t n_min = std::min(n, kMinTileEdge);
  TilePlan plan;
  plan.kb = std::min(k, (w - m_min * n_min) / (m_min + n_min));
  // The second bound keeps room for an nb of at least n_min.
  const size_t mb_cap = std::min(w / 2 / plan.kb, (w - plan.kb * n_min) / (plan.kb + n_min));
  plan.mb = std::min(m, std::max(m_min, mb_cap));
  plan.nb = std::min(n, (w - plan.mb * plan.kb) / (plan.kb + plan.mb));
  COUPLER_CHECK(plan.nb >= 1 && plan.mb * plan.kb + plan.kb * plan.nb + plan.mb * plan.nb <= w)
      << "Gemm tiles " << plan.mb << "x" << plan.nb << "x" << plan.kb << " overflow the workspace";
  return plan;
}

// An fp32 block as sgemm reads it: its first element and its leading dimension.
struct Block {
  const float* data = nullptr;
  size_t ld = 0;
};

// The stored block [r0, r0 + nr) x [c0, c0 + nc) of m: points into m when it is fp32 (no copy),
// else widened into scratch densely (ld == nc).
Block LoadBlock(ConstMatrix m, size_t r0, size_t c0, size_t nr, size_t nc, float* scratch) {
  if (m.storage == ElementType::kFloat32) {
    return {static_cast<const float*>(m.data) + r0 * m.cols + c0, m.cols};
  }
  WithFormat(m.storage, [&](auto format) {
    using Format = decltype(format);
    const auto* src = Elements<Format>(m.data);
    for (size_t r = 0; r < nr; ++r) {
      WidenRow<Format>(src + (r0 + r) * m.cols + c0, scratch + r * nc, nc);
    }
  });
  return {scratch, nc};
}

// c[r][j] = acc[r][j] + beta * c[r][j], rounded once. beta == 0 ignores the old c, as BLAS
// does, so garbage (even NaN) in an output buffer never leaks into the result.
template <typename Format>
void StoreTile(const float* acc, size_t ld_acc, float beta, typename Format::Bits* c, size_t ldc,
               size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* __restrict in = acc + r * ld_acc;
    typename Format::Bits* __restrict out = c + r * ldc;
    if (beta == 0.0f) {
      RoundRow<Format>(in, out, cols);
      continue;
    }
    // Blocks of 16 for the -O2 vectorizer, as in kernels/cpu/column_loop.h.
    size_t j = 0;
    for (; j + 16 <= cols; j += 16) {
      for (size_t i = j; i < j + 16; ++i) {
        out[i] = Format::Store(in[i] + beta * Format::Load(out[i]));
      }
    }
    for (; j < cols; ++j) out[j] = Format::Store(in[j] + beta * Format::Load(out[j]));
  }
}

// K == 0: op(a) * op(b) is the zero matrix, so c = beta * c. BLAS would reject the zero
// leading dimensions of such operands rather than compute this.
void ScaleOutput(MutMatrix c, float beta) {
  WithFormat(c.storage, [&](auto format) {
    using Format = decltype(format);
    auto* data = Elements<Format>(c.data);
    const size_t n = c.rows * c.cols;
    for (size_t i = 0; i < n; ++i) {
      data[i] = Format::Store(beta == 0.0f ? 0.0f : beta * Format::Load(data[i]));
    }
  });
}

void TiledGemm(const OpenBlasApi& blas, bool trans_a, bool trans_b, float alpha, ConstMatrix a,
               ConstMatrix b, float beta, MutMatrix c, size_t m, size_t n, size_t k) {
  thread_local std::vector<float> workspace;
  if (workspace.empty()) workspace.resize(kWorkspaceFloats);
  const TilePlan plan = PlanTiles(m, n, k);
  float* a_scratch = workspace.data();
  float* b_scratch = a_scratch + plan.mb * plan.kb;
  float* c_scratch = b_scratch + plan.kb * plan.nb;
  const bool c_fp32 = c.storage == ElementType::kFloat32;
  const bool single_k_tile = plan.kb == k;

  for (size_t m0 = 0; m0 < m; m0 += plan.mb) {
    const size_t mt = std::min(plan.mb, m - m0);
    Block a_block;
    for (size_t n0 = 0; n0 < n; n0 += plan.nb) {
      const size_t nt = std::min(plan.nb, n - n0);
      // An fp32 c accumulates in place; a 16-bit one in the scratch tile, rounded at the end.
      float* acc = c_fp32 ? static_cast<float*>(c.data) + m0 * n + n0 : c_scratch;
      const size_t ld_acc = c_fp32 ? n : nt;
      for (size_t k0 = 0; k0 < k; k0 += plan.kb) {
        const size_t kt = std::min(plan.kb, k - k0);
        // With one K tile the widened op(a) rows serve every N tile of this M tile.
        if (!single_k_tile || n0 == 0) {
          a_block = trans_a ? LoadBlock(a, k0, m0, kt, mt, a_scratch)
                            : LoadBlock(a, m0, k0, mt, kt, a_scratch);
        }
        const Block b_block = trans_b ? LoadBlock(b, n0, k0, nt, kt, b_scratch)
                                      : LoadBlock(b, k0, n0, kt, nt, b_scratch);
        const float tile_beta = k0 > 0 ? 1.0f : (c_fp32 ? beta : 0.0f);
        blas.sgemm(CblasRowMajor, ToBlasTrans(trans_a), ToBlasTrans(trans_b), ToBlas(mt),
                    ToBlas(nt), ToBlas(kt), alpha, a_block.data, ToBlas(a_block.ld), b_block.data,
                    ToBlas(b_block.ld), tile_beta, acc, ToBlas(ld_acc));
      }
      if (!c_fp32) {
        WithFormat(c.storage, [&](auto format) {
          using Format = decltype(format);
          StoreTile<Format>(c_scratch, nt, beta, Elements<Format>(c.data) + m0 * n + n0, n, mt, nt);
        });
      }
    }
  }
}

}  // namespace

Status Gemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
            MutMatrix c) {
  const size_t m = trans_a ? a.cols : a.rows;
  const size_t k = trans_a ? a.rows : a.cols;
  const size_t k_b = trans_b ? b.cols : b.rows;
  const size_t n = trans_b ? b.rows : b.cols;
  COUPLER_CHECK(k == k_b) << "Gemm: op(a) is " << m << "x" << k << " but op(b) is " << k_b << "x"
                          << n;
  COUPLER_CHECK(c.rows == m && c.cols == n)
      << "Gemm: c is " << c.rows << "x" << c.cols << ", want " << m << "x" << n;
  if (m == 0 || n == 0) return Status::Ok();
  COUPLER_CHECK(c.data != nullptr) << "Gemm: null c";
  if (k == 0) {
    ScaleOutput(c, beta);
    return Status::Ok();
  }
  COUPLER_CHECK(a.data != nullptr && b.data != nullptr) << "Gemm: null operand";
  if (OneDnnGemm(trans_a, trans_b, alpha, a, b, beta, c, m, n, k)) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(const OpenBlasApi* blas, OpenBlas());

  if (a.storage == ElementType::kFloat32 && b.storage == ElementType::kFloat32 &&
      c.storage == ElementType::kFloat32) {
    blas->sgemm(CblasRowMajor, ToBlasTrans(trans_a), ToBlasTrans(trans_b), ToBlas(m), ToBlas(n),
                ToBlas(k), alpha, static_cast<const float*>(a.data), ToBlas(a.cols),
                static_cast<const float*>(b.data), ToBlas(b.cols), beta,
                static_cast<float*>(c.data), ToBlas(n));
    return Status::Ok();
  }
  TiledGemm(*blas, trans_a, trans_b, alpha, a, b, beta, c, m, n, k);
  return Status::Ok();
}

}  // namespace coupler::kernels
