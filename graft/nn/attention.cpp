// Fused attention on the CPU: FlashAttention's blockwise computation as two primitives, its forward
// (outputs and the rows' log-sum-exp) and its backward (the three input gradients), tied together by
// custom_vjp. Per head (in parallel over batch x heads), blocks of kBlock queries meet blocks of kBlock
// keys: the logits of a block pair are one small GEMM, the softmax runs online (a running maximum and
// sum per row, the output rescaled when the maximum grows), and causal blocks above the diagonal are
// skipped. No T x S matrix is ever stored: the backward pass recomputes each block's weights from the
// saved log-sum-exp (FlashAttention-2). Halves compute in f32, f64 in f64.
//
// Both primitives live here rather than in prims/primitives.def: they are nn's implementation of one
// composite (dot_product_attention), like the compiler's dot_bias, with no JVP of their own (forward
// mode through fused attention is a TypeError, as through JAX's cuDNN attention).
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "graft/compiler/passes/passes.h"
#include "graft/nn/nn.h"
#include "graft/ops/ops.h"
#include "graft/parallel/partition.h"
#include "graft/prims/primitives.h"
#include "graft/runtime/cpu/dot_kernels.h"
#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/gemm.h"
#include "graft/runtime/cpu/parallel.h"
#include "graft/runtime/cpu/vmath.h"
#include "graft/runtime/cpu/vmath_avx512.h"
#include "graft/transforms/api.h"

namespace graft::nn {

namespace {

constexpr int64_t kBlock = 128;
// Rows per GEMM in causal blocks (see forward_head): 64 leaves the diagonal block's products at 3/4 of
// the full block's FLOPs, for twice the calls. (32, at 5/8, measured slower: at these sizes a call's
// fixed cost weighs as much as the FLOPs it saves.)
constexpr int64_t kPanel = 64;

struct Geometry {
  int64_t B, T, S, H, D, E;
  static Geometry of(const Shape& q, const Shape& k, const Shape& v) { return {q[0], q[1], k[1], q[2], q[3], v[3]}; }
};

template <class C>
C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return vmath::exp(x);
  } else {
    return std::exp(x);
  }
}

template <class C>
void gemm_c(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const C* A, int64_t lda, const C* B, int64_t ldb, C* out,
            int64_t ldc, double alpha, double beta) {
  cpu::gemm_small(dtype_v<C>, ta, tb, M, N, K, A, lda, B, ldb, out, ldc, alpha, beta);
}

// Head (b, h) of x [B, L, H, W] is an [L, W] matrix with row stride H * W. In the compute type (f32
// and f64) the GEMMs read and write it in place; halves are converted into a dense block first (and
// back after).
template <class C>
struct HeadView {
  C* p;
  int64_t ld;
};

// Per-thread scratch: a head's blocks are allocated once per thread, not once per head (the
// allocations and their zero fills cost as much as a head's softmax at T = 128).
template <class C>
C* scratch(size_t slot, size_t n) {
  thread_local std::vector<C> buffers[24];
  std::vector<C>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

// A row of n values converted between a half type and f32 (the only pairs a head converts: f32 and
// f64 heads are read in place), by core/half.h's vectorized rows.
template <class F, class T>
void convert_row(const F* in, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    static_assert(is_half_v<F>);
    widen(in, out, n);
  } else {
    static_assert(std::is_same_v<F, float> && is_half_v<T>);
    narrow(in, out, n);
  }
}

template <class T, class C>
HeadView<C> view_in(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t slot) {
  const T* base = x + (b * L * H + h) * W;
  if constexpr (std::is_same_v<T, C>) {
    return {const_cast<C*>(base), H * W};
  } else {
    C* out = scratch<C>(slot, size_t(L * W));
    for (int64_t l = 0; l < L; ++l) convert_row(base + l * H * W, out + l * W, W);
    return {out, W};
  }
}

// A head's output view: in place, or a zeroed dense block to be stored by store_out.
template <class T, class C>
HeadView<C> view_out(T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t slot, bool zero) {
  if constexpr (std::is_same_v<T, C>) {
    C* base = x + (b * L * H + h) * W;
    if (zero)
      for (int64_t l = 0; l < L; ++l) std::fill(base + l * H * W, base + l * H * W + W, C(0));
    return {base, H * W};
  } else {
    C* out = scratch<C>(slot, size_t(L * W));
    if (zero) std::fill(out, out + L * W, C(0));
    return {out, W};
  }
}

template <class T, class C>
void store_out(const HeadView<C>& v, T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W) {
  if constexpr (!std::is_same_v<T, C>) {
    T* base = x + (b * L * H + h) * W;
    for (int64_t l = 0; l < L; ++l) convert_row(v.p + l * W, base + l * H * W, W);
  }
}

// Which (query, key) pairs of head (b, h) attend: causal ones at or below the diagonal, masked ones
// where mask [B, H, T, S] is true.
struct Allowed {
  bool causal;
  const bool* mask;  // the head's [T, S] slice, or null
  int64_t S;
  bool operator()(int64_t t, int64_t s) const { return (!causal || s <= t) && (!mask || mask[t * S + s]); }
  // Without a mask the pairs of query t among keys [j0, j0 + cols) that attend are a prefix: its length.
  int64_t prefix(int64_t t, int64_t j0, int64_t cols) const {
    return causal ? std::clamp<int64_t>(t - j0 + 1, 0, cols) : cols;
  }
};

// A row's reduction with 16 partial results combined by a tree at the end: vectorized whatever the
// compiler makes of reduction loops (GCC's omp simd reductions spilled their lanes and added them
// one after another: a third of the softmax's time at rows of 128).
template <class C, class Op>
C reduce_row(const C* x, int64_t n, C init, Op op) {
  constexpr int kLanes = 16;
  C lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = init;
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] = op(lanes[l], x[c + l]);
  for (int l = 0; c < n; ++c, ++l) lanes[l] = op(lanes[l], x[c]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] = op(lanes[l], lanes[l + w]);
  return lanes[0];
}

// The first `lim` of a row's n elements rounded up to whole vectors of 16 (at most n).
inline int64_t whole_vectors(int64_t lim, int64_t n) { return std::min(n, (lim + 15) / 16 * 16); }

#if GRAFT_HAVE_TARGET_AVX512
// The f32 rows of online_softmax and weights_from_lse without a mask, on AVX-512 intrinsics: each
// row's maximum and sum reduce 16 lanes at the end, where the compiler's reductions spilled them and
// added them one by one, and causal prefixes end in a masked vector, not a scalar remainder (the
// rows' bookkeeping took twice the time of their exponentials). vmath's exp, bit for bit.
namespace avx512 {

GRAFT_TARGET_AVX512 inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// Row sr's weights exp(sr - m) over its first lim elements, 0 over the rest of its n; their sum.
GRAFT_TARGET_AVX512 inline float exp_row(float* sr, int64_t lim, int64_t n, float m) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 keep = lanes(lim - c);
    __m512 e = _mm512_setzero_ps();
    if (keep)
      e = _mm512_maskz_mov_ps(keep,
                              vmath::avx512::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(keep, sr + c), vm)));
    _mm512_mask_storeu_ps(sr + c, lanes(n - c), e);
    sum = _mm512_add_ps(sum, e);
  }
  return vmath::avx512::reduce_add(sum);
}

GRAFT_TARGET_AVX512 void online_softmax(const Allowed& ok, int64_t i0, int64_t j0, int64_t cols, int64_t r0,
                                        int64_t pr, int64_t n, float* s, float* m, float* l, float* acc,
                                        int64_t ld, int64_t E) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const __m512 vninf = _mm512_set1_ps(ninf);
  for (int64_t r = r0; r < r0 + pr; ++r) {
    float* sr = s + r * cols;
    const int64_t lim = std::min(n, ok.prefix(i0 + r, j0, cols));
    __m512 vmax = vninf;
    // max(v, vmax) keeps vmax where v is NaN: a NaN logit does not become the maximum (as the
    // generic loop's comparison)
    for (int64_t c = 0; c < lim; c += 16)
      vmax = _mm512_maskz_max_ps(0xffff, _mm512_mask_loadu_ps(vninf, lanes(lim - c), sr + c), vmax);
    const float mnew = std::max(m[r], vmath::avx512::reduce_max(vmax));
    if (mnew == ninf) {
      std::fill(sr, sr + n, 0.0f);
      continue;
    }
    const float alpha = m[r] == ninf ? 0.0f : vmath::exp(m[r] - mnew);
    const float sum = exp_row(sr, lim, n, mnew);
    if (alpha != 1.0f && m[r] != ninf) {
      const __m512 va = _mm512_set1_ps(alpha);
      float* ar = acc + r * ld;
      for (int64_t e = 0; e < E; e += 16) {
        __mmask16 k = lanes(E - e);
        _mm512_mask_storeu_ps(ar + e, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, ar + e), va));
      }
    }
    l[r] = l[r] * alpha + sum;
    m[r] = mnew;
  }
}

GRAFT_TARGET_AVX512 void weights_from_lse(const Allowed& ok, int64_t i, int64_t j0, int64_t cols, int64_t pr,
                                          int64_t n, const float* lse, float* p) {
  for (int64_t r = 0; r < pr; ++r) {
    float* prow = p + r * n;
    if (lse[r] == -std::numeric_limits<float>::infinity()) {
      std::fill(prow, prow + n, 0.0f);
    } else {
      exp_row(prow, std::min(n, ok.prefix(i + r, j0, cols)), n, lse[r]);
    }
  }
}

}  // namespace avx512
#endif

// The online softmax of rows [r0, r0 + pr) of a block's logits s (row stride cols; n of the block's
// keys, from key j0, for queries from i0): turns them into weights exp(s - m), 0 where a pair does not
// attend, and folds them into the rows' running maximum m and sum l, rescaling the rows' outputs acc
// (row stride ld, E columns) when the maximum grows.
template <class C>
void online_softmax(const Allowed& ok, int64_t i0, int64_t j0, int64_t cols, int64_t r0, int64_t pr,
                    int64_t n, C* s, C* m, C* l, C* acc, int64_t ld, int64_t E) {
#if GRAFT_HAVE_TARGET_AVX512
  if constexpr (std::is_same_v<C, float>)
    if (!ok.mask && cpu::has_avx512())
      return avx512::online_softmax(ok, i0, j0, cols, r0, pr, n, s, m, l, acc, ld, E);
#endif
  const C ninf = -std::numeric_limits<C>::infinity();
  for (int64_t r = r0; r < r0 + pr; ++r) {
    C* sr = s + r * cols;
    C mx = ninf;
    // unmasked rows attend to a prefix of the panel's keys: branch-free loops over it
    // (vectorized, exp and the reductions included: a serial max or sum chain costs more than
    // the block's GEMMs); a mask takes the general loop
    int64_t lim = ok.mask ? n : std::min(n, ok.prefix(i0 + r, j0, cols));
    if (ok.mask) {
      for (int64_t c = 0; c < n; ++c) {
        if (ok(i0 + r, j0 + c)) {
          mx = std::max(mx, sr[c]);
        } else {
          sr[c] = ninf;
        }
      }
    } else {
      mx = reduce_row(sr, lim, ninf, [](C a, C b) { return b > a ? b : a; });
    }
    C mnew = std::max(m[r], mx);
    if (mnew == ninf) {  // nothing to attend to yet: the row's weights stay 0
      std::fill(sr, sr + n, C(0));
      continue;
    }
    C alpha = m[r] == ninf ? C(0) : exp_c(m[r] - mnew);
    C sum = 0;
    if (ok.mask) {
      for (int64_t c = 0; c < n; ++c) {
        sr[c] = sr[c] == ninf ? C(0) : exp_c(sr[c] - mnew);
        sum += sr[c];
      }
    } else {
      // whole vectors past the prefix (no scalar remainder: causal prefixes end anywhere), then the
      // pairs past it zeroed (whatever their logits were)
      const int64_t span = whole_vectors(lim, n);
      for (int64_t c = 0; c < span; ++c) sr[c] = exp_c(sr[c] - mnew);
      std::fill(sr + lim, sr + n, C(0));
      sum = reduce_row(sr, lim, C(0), [](C a, C b) { return a + b; });
    }
    // a row's first keys find its output zero: nothing to rescale
    if (alpha != C(1) && m[r] != ninf)
      for (int64_t e = 0; e < E; ++e) acc[r * ld + e] *= alpha;
    l[r] = l[r] * alpha + sum;
    m[r] = mnew;
  }
}

// The end of a block of queries: each row's output divided by its sum, and its log-sum-exp (-inf for a
// row that attends to nothing, its output 0).
template <class C>
void finish_rows(int64_t rows, const C* m, const C* l, C* acc, int64_t ld, int64_t E, C* lse) {
  for (int64_t r = 0; r < rows; ++r) {
    bool some = l[r] > C(0);
    C inv = some ? C(1) / l[r] : C(0);
    for (int64_t e = 0; e < E; ++e) acc[r * ld + e] *= inv;
    lse[r] = some ? m[r] + std::log(l[r]) : -std::numeric_limits<C>::infinity();
  }
}

// A backward block's weights: rows [0, pr) of p (queries from i, n keys from j0, row stride n) from
// their logits and the rows' log-sum-exp lse (from query i), 0 where a pair does not attend.
template <class C>
void weights_from_lse(const Allowed& ok, int64_t i, int64_t j0, int64_t cols, int64_t pr, int64_t n,
                      const C* lse, C* p) {
#if GRAFT_HAVE_TARGET_AVX512
  if constexpr (std::is_same_v<C, float>)
    if (!ok.mask && cpu::has_avx512()) return avx512::weights_from_lse(ok, i, j0, cols, pr, n, lse, p);
#endif
  const C ninf = -std::numeric_limits<C>::infinity();
  for (int64_t r = 0; r < pr; ++r) {
    C L = lse[r];
    C* prow = p + r * n;
    if (ok.mask || L == ninf) {
      for (int64_t c = 0; c < n; ++c) prow[c] = L != ninf && ok(i + r, j0 + c) ? exp_c(prow[c] - L) : C(0);
    } else {
      int64_t lim = std::min(n, ok.prefix(i + r, j0, cols));
      const int64_t span = whole_vectors(lim, n);  // as in online_softmax
      for (int64_t c = 0; c < span; ++c) prow[c] = exp_c(prow[c] - L);
      std::fill(prow + lim, prow + n, C(0));
    }
  }
}

// The logits' gradients dS = P (dP - D) scale of a backward block's rows [0, pr) (row stride n), in
// place of dP; D the rows' dO . O.
template <class C>
void logit_grads(int64_t pr, int64_t n, const C* rowdot, const C* p, C* dp, C scale) {
  for (int64_t r = 0; r < pr; ++r) {
    const C d = rowdot[r];
    C* dpr = dp + r * n;
    const C* prow = p + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) dpr[c] = prow[c] * (dpr[c] - d) * scale;
  }
}

// A head's forward pass: o [T, E] (into the output's layout) and lse [T].
template <class T, class C>
void forward_head(const Geometry& g, int64_t b, int64_t h, const T* q, const T* k, const T* v, Allowed ok, C scale,
                  T* o, C* lse) {
  HeadView<C> Q = view_in<T, C>(q, b, h, g.T, g.H, g.D, 0), K = view_in<T, C>(k, b, h, g.S, g.H, g.D, 1),
              V = view_in<T, C>(v, b, h, g.S, g.H, g.E, 2);
  HeadView<C> O = view_out<T, C>(o, b, h, g.T, g.H, g.E, 3, false);
  C* s = scratch<C>(4, size_t(kBlock * kBlock));
  C* m = scratch<C>(5, size_t(2 * kBlock));
  C* l = m + kBlock;
  const C ninf = -std::numeric_limits<C>::infinity();
  for (int64_t i0 = 0; i0 < g.T; i0 += kBlock) {
    int64_t rows = std::min(kBlock, g.T - i0);
    std::fill(m, m + rows, ninf);
    std::fill(l, l + rows, C(0));
    C* acc = O.p + i0 * O.ld;  // the block's output rows accumulate in place, normalized at the end
    for (int64_t r = 0; r < rows; ++r) std::fill(acc + r * O.ld, acc + r * O.ld + g.E, C(0));
    for (int64_t j0 = 0; j0 < g.S; j0 += kBlock) {
      if (ok.causal && j0 > i0 + rows - 1) break;  // the block lies above the diagonal
      int64_t cols = std::min(kBlock, g.S - j0);
      // causal blocks without a mask go by panels of kPanel rows, each against the keys its last row
      // attends (a prefix): the diagonal block's GEMMs skip part of its upper triangle
      const int64_t panel = ok.causal && !ok.mask ? kPanel : rows;
      for (int64_t r0 = 0; r0 < rows; r0 += panel) {
        int64_t pr = std::min(panel, rows - r0);
        int64_t n = ok.causal ? std::min(cols, ok.prefix(i0 + r0 + pr - 1, j0, cols)) : cols;
        if (n <= 0) continue;  // these rows attend to no key of the block: nothing changes
        C* sp = s + r0 * cols;
        gemm_c<C>(false, true, pr, n, g.D, Q.p + (i0 + r0) * Q.ld, Q.ld, K.p + j0 * K.ld, K.ld, sp, cols, scale, 0);
        online_softmax(ok, i0, j0, cols, r0, pr, n, s, m, l, acc, O.ld, g.E);
        gemm_c<C>(false, false, pr, g.E, n, sp, cols, V.p + j0 * V.ld, V.ld, acc + r0 * O.ld, O.ld, 1, 1);
      }
    }
    finish_rows(rows, m, l, acc, O.ld, g.E, lse + i0);
  }
  store_out<T, C>(O, o, b, h, g.T, g.H, g.E);
}

// A head's backward pass from the saved log-sum-exp: dq, dk, dv (into their layouts).
template <class T, class C>
void backward_head(const Geometry& g, int64_t b, int64_t h, const T* q, const T* k, const T* v, const T* o, const C* lse,
                   const T* dout, Allowed ok, C scale, T* dq, T* dk, T* dv) {
  HeadView<C> Q = view_in<T, C>(q, b, h, g.T, g.H, g.D, 0), K = view_in<T, C>(k, b, h, g.S, g.H, g.D, 1),
              V = view_in<T, C>(v, b, h, g.S, g.H, g.E, 2);
  HeadView<C> dQ = view_out<T, C>(dq, b, h, g.T, g.H, g.D, 3, true), dK = view_out<T, C>(dk, b, h, g.S, g.H, g.D, 4, true),
              dV = view_out<T, C>(dv, b, h, g.S, g.H, g.E, 5, true);
  C* rowdot = scratch<C>(6, size_t(g.T + 2 * kBlock * kBlock));  // D_t = dO_t . O_t, then the blocks p, dp
  C* p = rowdot + g.T;
  C* dp = p + kBlock * kBlock;
  // dO and O are read once for the row dots; dO again by the GEMMs (the dense copy of a half is
  // slot 7's, O's is not kept)
  HeadView<C> dO = view_in<T, C>(dout, b, h, g.T, g.H, g.E, 7);
  {
    const T* ob = o + (b * g.T * g.H + h) * g.E;
    for (int64_t t = 0; t < g.T; ++t) {
      const T* orow = ob + t * g.H * g.E;
      const C* drow = dO.p + t * dO.ld;
      C acc = 0;
      for (int64_t e = 0; e < g.E; ++e) acc += drow[e] * static_cast<C>(static_cast<compute_t<T>>(orow[e]));
      rowdot[t] = acc;
    }
  }
  for (int64_t i0 = 0; i0 < g.T; i0 += kBlock) {
    int64_t rows = std::min(kBlock, g.T - i0);
    for (int64_t j0 = 0; j0 < g.S; j0 += kBlock) {
      if (ok.causal && j0 > i0 + rows - 1) break;
      int64_t cols = std::min(kBlock, g.S - j0);
      const int64_t panel = ok.causal && !ok.mask ? kPanel : rows;  // as in forward_head
      for (int64_t r0 = 0; r0 < rows; r0 += panel) {
        int64_t pr = std::min(panel, rows - r0), i = i0 + r0;
        int64_t n = ok.causal ? std::min(cols, ok.prefix(i + pr - 1, j0, cols)) : cols;
        if (n <= 0) continue;
        gemm_c<C>(false, true, pr, n, g.D, Q.p + i * Q.ld, Q.ld, K.p + j0 * K.ld, K.ld, p, n, scale, 0);
        weights_from_lse(ok, i, j0, cols, pr, n, lse + i, p);
        // dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P (dP - D) scale;  dQ_i += dS K_j;  dK_j += dS^T Q_i
        gemm_c<C>(true, false, n, g.E, pr, p, n, dO.p + i * dO.ld, dO.ld, dV.p + j0 * dV.ld, dV.ld, 1, 1);
        gemm_c<C>(false, true, pr, n, g.E, dO.p + i * dO.ld, dO.ld, V.p + j0 * V.ld, V.ld, dp, n, 1, 0);
        logit_grads(pr, n, rowdot + i, p, dp, scale);
        gemm_c<C>(false, false, pr, g.D, n, dp, n, K.p + j0 * K.ld, K.ld, dQ.p + i * dQ.ld, dQ.ld, 1, 1);
        gemm_c<C>(true, false, n, g.D, pr, dp, n, Q.p + i * Q.ld, Q.ld, dK.p + j0 * dK.ld, dK.ld, 1, 1);
      }
    }
  }
  store_out<T, C>(dQ, dq, b, h, g.T, g.H, g.D);
  store_out<T, C>(dK, dk, b, h, g.S, g.H, g.D);
  store_out<T, C>(dV, dv, b, h, g.S, g.H, g.E);
}

// Heads on the register-tile kernels of cpu/dot_kernels.h: each head's B operands packed once, the
// blocks' products inline (no library call per product: at these sizes a call costs as much as its
// FLOPs, and oneDNN's sgemm allocates and packs at every one), A operands read in place by two strides,
// so that a block of weights serves as its own transpose. The softmax, the row dots and the sums of
// the outputs and gradients are f32. One algorithm over three policies (with_kernels picks one):
//  - Bf16Dot (AVX512-BF16): twice sgemm's rate. Operands are bf16; the weights and the logits'
//    gradients are rounded to bf16 for the products that read them (as the composite's bf16 products
//    would round them), by rows or in pairs of rows for their transposes; results rounded once.
//  - F32Dot (AVX-512): f32 heads, read and written in place.
//  - Widened (AVX-512): halves without native products (bf16 where the CPU lacks AVX512-BF16 or
//    GRAFT_NATIVE_BF16=0, and f16) on the f32 kernels, through dense f32 copies.
namespace packed {

// Head (b, h) of x [B, L, H, W]: its first element (rows of stride H W).
template <class T>
T* head(T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W) {
  return x + (b * L * H + h) * W;
}

// An A operand: element (m, k) at p + w (m am + (k / w) ak) + k % w, w the elements of a word (2 for
// bf16's pairs, 1 for f32).
template <class T>
struct AOperand {
  const T* p;
  int64_t am, ak;
};

struct Bf16Dot {
  using T = bfloat16;
  using Packed = cpu::bf16dot::Packed;
  // q's or dO's rows as a dense block of rows of even length (a zero pads an odd W): pairs along W
  static AOperand<T> rows(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t slot) {
    const int64_t Wp = W + W % 2;
    T* out = scratch<T>(slot, size_t(L * Wp));
    const T* base = head(x, b, h, L, H, W);
    for (int64_t l = 0; l < L; ++l) {
      std::copy(base + l * H * W, base + l * H * W + W, out + l * Wp);
      if (W % 2) out[l * Wp + W] = bfloat16::from_bits(0);
    }
    return {out, Wp / 2, 1};
  }
  static AOperand<T> from_row(AOperand<T> a, int64_t i) { return {a.p + 2 * i * a.am, a.am, a.ak}; }
  static Packed pack(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t slot,
                     bool transposed) {
    using namespace cpu::bf16dot;
    const T* base = head(x, b, h, L, H, W);
    if (transposed) return pack_transposed(base, H * W, L, W, scratch<T>(slot, size_t(packed_size(W, L))));
    return cpu::bf16dot::pack(base, H * W, L, W, scratch<T>(slot, size_t(packed_size(L, W))));
  }
  // the operand from row k (even: every block and panel starts at one) and column n on
  static Packed at(const Packed& p, int64_t k, int64_t n) { return p.at(k / 2, n); }
  // f32 rows [M, N] (stride ld) as an A operand [M, N], and as the A operand of their transpose
  static AOperand<T> weights(const float* x, int64_t ld, int64_t M, int64_t N, size_t slot) {
    T* out = scratch<T>(slot, size_t(kBlock * kBlock));
    cpu::bf16dot::to_rows(x, ld, M, N, out, kBlock);
    return {out, kBlock / 2, 1};
  }
  static AOperand<T> weights_transposed(const float* x, int64_t ld, int64_t M, int64_t N, size_t slot) {
    T* out = scratch<T>(slot, size_t(kBlock * kBlock));
    cpu::bf16dot::to_pairs_of_rows(x, ld, M, N, out);
    return {out, 1, N};
  }
  static void gemm(int64_t M, int64_t N, int64_t K, AOperand<T> a, const Packed& b, float* c, int64_t ldc,
                   float alpha, bool accumulate) {
    cpu::bf16dot::gemm(M, N, K, a.p, a.am, a.ak, b, c, ldc, alpha, accumulate);
  }
  static void row_dots(AOperand<T> a, const T* o, int64_t ldo, int64_t L, int64_t W, float* out) {
    cpu::bf16dot::row_dots(a.p, 2 * a.am, o, ldo, L, W, out);
  }
  // a head's f32 result block (dense, from view_out) rounded into its layout
  static void store(const HeadView<float>& v, T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W) {
    cpu::bf16dot::round_rows(v.p, v.ld, L, W, head(x, b, h, L, H, W), H * W);
  }
};

struct F32Dot {
  using T = float;
  using Packed = cpu::f32dot::Packed;
  static AOperand<T> rows(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t) {
    return {head(x, b, h, L, H, W), H * W, 1};
  }
  static AOperand<T> from_row(AOperand<T> a, int64_t i) { return {a.p + i * a.am, a.am, a.ak}; }
  static Packed pack(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t slot,
                     bool transposed) {
    using namespace cpu::f32dot;
    const T* base = head(x, b, h, L, H, W);
    if (transposed)
      return pack_transposed(base, H * W, L, W, scratch<T>(slot + 7, size_t(packed_size(W, L))));
    return cpu::f32dot::pack(base, H * W, L, W,
                             packs_in_place(W) ? nullptr : scratch<T>(slot + 7, size_t(packed_size(L, W))));
  }
  static Packed at(const Packed& p, int64_t k, int64_t n) { return p.at(k, n); }
  static AOperand<T> weights(const float* x, int64_t ld, int64_t, int64_t, size_t) { return {x, ld, 1}; }
  static AOperand<T> weights_transposed(const float* x, int64_t ld, int64_t, int64_t, size_t) {
    return {x, 1, ld};
  }
  static void gemm(int64_t M, int64_t N, int64_t K, AOperand<T> a, const Packed& b, float* c, int64_t ldc,
                   float alpha, bool accumulate) {
    cpu::f32dot::gemm(M, N, K, a.p, a.am, a.ak, b, c, ldc, alpha, accumulate);
  }
  static void row_dots(AOperand<T> a, const T* o, int64_t ldo, int64_t L, int64_t W, float* out) {
    cpu::f32dot::row_dots(a.p, a.am, o, ldo, L, W, out);
  }
  static void store(const HeadView<float>&, T*, int64_t, int64_t, int64_t, int64_t, int64_t) {
  }  // written in place
};

// Halves on the f32 kernels, where the CPU has AVX-512 but no AVX512-BF16 (and f16 everywhere): each
// head's operands widened exactly to dense f32 blocks, its results rounded once into their layout.
template <class Half>
struct Widened {
  using T = Half;
  using Packed = cpu::f32dot::Packed;
  static AOperand<float> rows(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W,
                              size_t slot) {
    HeadView<float> v = view_in<T, float>(x, b, h, L, H, W, slot);
    return {v.p, v.ld, 1};
  }
  static AOperand<float> from_row(AOperand<float> a, int64_t i) { return F32Dot::from_row(a, i); }
  static Packed pack(const T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W, size_t slot,
                     bool transposed) {
    using namespace cpu::f32dot;
    HeadView<float> v = view_in<T, float>(x, b, h, L, H, W, slot + 14);  // kept while the head runs
    if (transposed)
      return pack_transposed(v.p, v.ld, L, W, scratch<float>(slot + 7, size_t(packed_size(W, L))));
    return cpu::f32dot::pack(
        v.p, v.ld, L, W, packs_in_place(W) ? nullptr : scratch<float>(slot + 7, size_t(packed_size(L, W))));
  }
  static Packed at(const Packed& p, int64_t k, int64_t n) { return p.at(k, n); }
  static AOperand<float> weights(const float* x, int64_t ld, int64_t M, int64_t N, size_t slot) {
    return F32Dot::weights(x, ld, M, N, slot);
  }
  static AOperand<float> weights_transposed(const float* x, int64_t ld, int64_t M, int64_t N, size_t slot) {
    return F32Dot::weights_transposed(x, ld, M, N, slot);
  }
  static void gemm(int64_t M, int64_t N, int64_t K, AOperand<float> a, const Packed& b, float* c, int64_t ldc,
                   float alpha, bool accumulate) {
    F32Dot::gemm(M, N, K, a, b, c, ldc, alpha, accumulate);
  }
  static void row_dots(AOperand<float> a, const T* o, int64_t ldo, int64_t L, int64_t W, float* out) {
    float* of = scratch<float>(21, size_t(L * W));
    for (int64_t t = 0; t < L; ++t) widen(o + t * ldo, of + t * W, W);
    cpu::f32dot::row_dots(a.p, a.am, of, W, L, W, out);
  }
  static void store(const HeadView<float>& v, T* x, int64_t b, int64_t h, int64_t L, int64_t H, int64_t W) {
    store_out<T, float>(v, x, b, h, L, H, W);
  }
};

// Runs f(policy) with the register-tile family that runs heads of T here and returns true, or returns
// false where none does (the generic heads run: sgemm or dgemm per block).
template <class T, class F>
bool with_kernels(F&& f) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (cpu::bf16dot::available()) return f(Bf16Dot{}), true;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (cpu::f32dot::available()) return f(F32Dot{}), true;
  } else if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
    if (cpu::f32dot::available()) return f(Widened<T>{}), true;
  }
  return false;
}

template <class Dot>
void forward_head(const Geometry& g, int64_t b, int64_t h, const typename Dot::T* q, const typename Dot::T* k,
                  const typename Dot::T* v, Allowed ok, float scale, typename Dot::T* o, float* lse) {
  using T = typename Dot::T;
  auto Q = Dot::rows(q, b, h, g.T, g.H, g.D, 0);
  auto Kt = Dot::pack(k, b, h, g.S, g.H, g.D, 1, true);
  auto V = Dot::pack(v, b, h, g.S, g.H, g.E, 2, false);
  HeadView<float> O = view_out<T, float>(o, b, h, g.T, g.H, g.E, 3, false);
  float* s = scratch<float>(4, size_t(kBlock * kBlock));
  float* m = scratch<float>(5, size_t(2 * kBlock));
  float* l = m + kBlock;
  for (int64_t i0 = 0; i0 < g.T; i0 += kBlock) {
    int64_t rows = std::min(kBlock, g.T - i0);
    std::fill(m, m + rows, -std::numeric_limits<float>::infinity());
    std::fill(l, l + rows, 0.0f);
    float* acc = O.p + i0 * O.ld;
    for (int64_t r = 0; r < rows; ++r) std::fill(acc + r * O.ld, acc + r * O.ld + g.E, 0.0f);
    for (int64_t j0 = 0; j0 < g.S; j0 += kBlock) {
      if (ok.causal && j0 > i0 + rows - 1) break;
      int64_t cols = std::min(kBlock, g.S - j0);
      const int64_t panel = ok.causal && !ok.mask ? kPanel : rows;  // as in the generic forward_head
      for (int64_t r0 = 0; r0 < rows; r0 += panel) {
        int64_t pr = std::min(panel, rows - r0);
        int64_t n = ok.causal ? std::min(cols, ok.prefix(i0 + r0 + pr - 1, j0, cols)) : cols;
        if (n <= 0) continue;
        float* sp = s + r0 * cols;
        Dot::gemm(pr, n, g.D, Dot::from_row(Q, i0 + r0), Dot::at(Kt, 0, j0), sp, cols, scale, false);
        online_softmax(ok, i0, j0, cols, r0, pr, n, s, m, l, acc, O.ld, g.E);
        Dot::gemm(pr, g.E, n, Dot::weights(sp, cols, pr, n, 3), Dot::at(V, j0, 0), acc + r0 * O.ld, O.ld,
                  1.0f, true);
      }
    }
    finish_rows(rows, m, l, acc, O.ld, g.E, lse + i0);
  }
  Dot::store(O, o, b, h, g.T, g.H, g.E);
}

template <class Dot>
void backward_head(const Geometry& g, int64_t b, int64_t h, const typename Dot::T* q,
                   const typename Dot::T* k, const typename Dot::T* v, const typename Dot::T* o,
                   const float* lse, const typename Dot::T* dout, Allowed ok, float scale,
                   typename Dot::T* dq, typename Dot::T* dk, typename Dot::T* dv) {
  using T = typename Dot::T;
  // A operands: q and dO by rows; B operands: k^T and v^T (the logits and dP), k (dQ), q (dK), dO (dV)
  auto Q = Dot::rows(q, b, h, g.T, g.H, g.D, 0), dO = Dot::rows(dout, b, h, g.T, g.H, g.E, 1);
  auto Kt = Dot::pack(k, b, h, g.S, g.H, g.D, 2, true), Vt = Dot::pack(v, b, h, g.S, g.H, g.E, 3, true);
  auto Kr = Dot::pack(k, b, h, g.S, g.H, g.D, 4, false), Qr = Dot::pack(q, b, h, g.T, g.H, g.D, 5, false);
  auto dOr = Dot::pack(dout, b, h, g.T, g.H, g.E, 6, false);
  HeadView<float> dQ = view_out<T, float>(dq, b, h, g.T, g.H, g.D, 3, true),
                  dK = view_out<T, float>(dk, b, h, g.S, g.H, g.D, 4, true),
                  dV = view_out<T, float>(dv, b, h, g.S, g.H, g.E, 5, true);
  float* rowdot = scratch<float>(6, size_t(g.T + 2 * kBlock * kBlock));  // D_t = dO_t . O_t, then p, dp
  float* p = rowdot + g.T;
  float* dp = p + kBlock * kBlock;
  Dot::row_dots(dO, head(o, b, h, g.T, g.H, g.E), g.H * g.E, g.T, g.E, rowdot);
  for (int64_t i0 = 0; i0 < g.T; i0 += kBlock) {
    int64_t rows = std::min(kBlock, g.T - i0);
    for (int64_t j0 = 0; j0 < g.S; j0 += kBlock) {
      if (ok.causal && j0 > i0 + rows - 1) break;
      int64_t cols = std::min(kBlock, g.S - j0);
      const int64_t panel = ok.causal && !ok.mask ? kPanel : rows;
      for (int64_t r0 = 0; r0 < rows; r0 += panel) {
        int64_t pr = std::min(panel, rows - r0), i = i0 + r0;
        int64_t n = ok.causal ? std::min(cols, ok.prefix(i + pr - 1, j0, cols)) : cols;
        if (n <= 0) continue;
        // dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P (dP - D) scale;  dQ_i += dS K_j;  dK_j += dS^T Q_i
        Dot::gemm(pr, n, g.D, Dot::from_row(Q, i), Dot::at(Kt, 0, j0), p, n, scale, false);
        weights_from_lse(ok, i, j0, cols, pr, n, lse + i, p);
        Dot::gemm(n, g.E, pr, Dot::weights_transposed(p, n, pr, n, 8), Dot::at(dOr, i, 0), dV.p + j0 * dV.ld,
                  dV.ld, 1.0f, true);
        Dot::gemm(pr, n, g.E, Dot::from_row(dO, i), Dot::at(Vt, 0, j0), dp, n, 1.0f, false);
        logit_grads(pr, n, rowdot + i, p, dp, scale);
        Dot::gemm(pr, g.D, n, Dot::weights(dp, n, pr, n, 7), Dot::at(Kr, j0, 0), dQ.p + i * dQ.ld, dQ.ld,
                  1.0f, true);
        Dot::gemm(n, g.D, pr, Dot::weights_transposed(dp, n, pr, n, 8), Dot::at(Qr, i, 0), dK.p + j0 * dK.ld,
                  dK.ld, 1.0f, true);
      }
    }
  }
  Dot::store(dQ, dq, b, h, g.T, g.H, g.D);
  Dot::store(dK, dk, b, h, g.S, g.H, g.D);
  Dot::store(dV, dv, b, h, g.S, g.H, g.E);
}

}  // namespace packed

DType lse_dtype(DType d) { return d == DType::f64 ? DType::f64 : DType::f32; }

void check_operands(const Primitive& p, AvalPtrs in, size_t n) {
  if (in.size() != n && in.size() != n + 1)
    fail<TypeError>(p.name, ": expected ", n, " operands (and an optional mask), got ", in.size());
  const Aval &q = *in[0], &k = *in[1], &v = *in[2];
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] ||
      k.shape[2] != q.shape[2] || v.shape[2] != q.shape[2] || k.shape[3] != q.shape[3] || v.shape[1] != k.shape[1])
    fail<ShapeError>(p.name, ": q ", q.str(), ", k ", k.str(), " and v ", v.str(),
                     " do not agree (q [B, T, H, D], k [B, S, H, D], v [B, S, H, Dv])");
  if (in.size() == n + 1) {
    const Aval& m = *in[n];
    if (m.dtype != DType::bool_ || m.shape != Shape{q.shape[0], q.shape[2], q.shape[1], k.shape[1]})
      fail<ShapeError>(p.name, ": the mask must be bool [B, H, T, S], got ", m.str());
  }
}

Avals fwd_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_operands(p, in, 3);
  const Aval &q = *in[0], &v = *in[2];
  return {Aval({q.shape[0], q.shape[1], q.shape[2], v.shape[3]}, q.dtype),
          Aval({q.shape[0], q.shape[2], q.shape[1]}, lse_dtype(q.dtype))};
}

Avals bwd_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_operands(p, in, 6);
  return {Aval(in[0]->shape, in[0]->dtype), Aval(in[1]->shape, in[1]->dtype), Aval(in[2]->shape, in[2]->dtype)};
}

// Runs body(b, h) for every head, in parallel.
template <class F>
void for_heads(const Geometry& g, F body) {
  cpu::parallel_for(g.B * g.H, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) body(i / g.H, i % g.H);
  });
}

template <class F>
void visit_float(DType d, F f) {
  switch (d) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::bf16: return f(TypeTag<bfloat16>{});
    case DType::f16: return f(TypeTag<float16>{});
    default: fail<TypeError>("dot_product_attention: q, k and v must be floating, got ", short_name(d));
  }
}

Arrays fwd_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Geometry g = Geometry::of(in[0].shape(), in[1].shape(), in[2].shape());
  Array o = Array::empty(out[0]), lse = Array::empty(out[1]);
  bool causal = params.get_bool("causal");
  double scale = params.get<double>("scale");
  const bool* mask = in.size() > 3 ? static_cast<const bool*>(in[3].raw_data()) : nullptr;
  visit_float(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for_heads(g, [&](int64_t b, int64_t h) {
      Allowed ok{causal, mask ? mask + (b * g.H + h) * g.T * g.S : nullptr, g.S};
      auto packed_head = [&](auto dot) {
        using Dot = decltype(dot);
        packed::forward_head<Dot>(g, b, h, static_cast<const T*>(in[0].raw_data()),
                                  static_cast<const T*>(in[1].raw_data()),
                                  static_cast<const T*>(in[2].raw_data()), ok, static_cast<float>(scale),
                                  static_cast<T*>(o.concrete()->data()),
                                  static_cast<float*>(lse.concrete()->data()) + (b * g.H + h) * g.T);
      };
      if (packed::with_kernels<T>(packed_head)) return;
      forward_head<T, C>(g, b, h, static_cast<const T*>(in[0].raw_data()), static_cast<const T*>(in[1].raw_data()),
                         static_cast<const T*>(in[2].raw_data()), ok, static_cast<C>(scale),
                         static_cast<T*>(o.concrete()->data()),
                         static_cast<C*>(lse.concrete()->data()) + (b * g.H + h) * g.T);
    });
  });
  return {o, lse};
}

Arrays bwd_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Geometry g = Geometry::of(in[0].shape(), in[1].shape(), in[2].shape());
  Array dq = Array::empty(out[0]), dk = Array::empty(out[1]), dv = Array::empty(out[2]);
  bool causal = params.get_bool("causal");
  double scale = params.get<double>("scale");
  const bool* mask = in.size() > 6 ? static_cast<const bool*>(in[6].raw_data()) : nullptr;
  visit_float(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    auto ptr = [&](size_t i) { return static_cast<const T*>(in[i].raw_data()); };
    for_heads(g, [&](int64_t b, int64_t h) {
      Allowed ok{causal, mask ? mask + (b * g.H + h) * g.T * g.S : nullptr, g.S};
      auto packed_head = [&](auto dot) {
        using Dot = decltype(dot);
        packed::backward_head<Dot>(g, b, h, ptr(0), ptr(1), ptr(2), ptr(3),
                                   static_cast<const float*>(in[4].raw_data()) + (b * g.H + h) * g.T, ptr(5),
                                   ok, static_cast<float>(scale), static_cast<T*>(dq.concrete()->data()),
                                   static_cast<T*>(dk.concrete()->data()),
                                   static_cast<T*>(dv.concrete()->data()));
      };
      if (packed::with_kernels<T>(packed_head)) return;
      backward_head<T, C>(g, b, h, ptr(0), ptr(1), ptr(2), ptr(3),
                          static_cast<const C*>(in[4].raw_data()) + (b * g.H + h) * g.T, ptr(5), ok,
                          static_cast<C>(scale), static_cast<T*>(dq.concrete()->data()),
                          static_cast<T*>(dk.concrete()->data()), static_cast<T*>(dv.concrete()->data()));
    });
  });
  return {dq, dk, dv};
}

// vmap: the mapped axis joins the batch dimension (every operand's first), and leaves it again.
BatchResult batch_rule(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                       const BatchInfo& axis, const Params& params) {
  std::vector<Array> folded;
  for (size_t i = 0; i < vals.size(); ++i) {
    Array x = vals[i];
    if (dims[i] == kNotMapped) {
      Shape s = x.shape();
      s.insert(s.begin(), axis.size);
      x = broadcast_to(expand_dims(x, 0), s);
    } else if (dims[i] != 0) {
      x = moveaxis(x, dims[i], 0);
    }
    Shape s(x.shape().begin() + 1, x.shape().end());
    s[0] *= axis.size;
    folded.push_back(reshape(x, s));
  }
  Arrays outs = bind(p, folded, params);
  BatchResult r;
  for (Array& o : outs) {
    Shape s = o.shape();
    s[0] /= axis.size;
    s.insert(s.begin(), axis.size);
    r.values.push_back(reshape(o, s));
    r.dims.push_back(0);
  }
  return r;
}

const Primitive attention_fwd_p{"flash_attention", kMultipleResults, &fwd_shape, &fwd_impl, nullptr, nullptr, &batch_rule};
const Primitive attention_bwd_p{"flash_attention_bwd", kMultipleResults, &bwd_shape, &bwd_impl, nullptr, nullptr,
                                &batch_rule};

}  // namespace

void register_nn_primitives() {
  static std::once_flag once;
  std::call_once(once, [] {
    prims::register_primitive(&attention_fwd_p);
    prims::register_primitive(&attention_bwd_p);
    // halves compute in f32 (view_in / store_out): on CPUs without bf16 arithmetic the compiler may
    // run them on the f32 values around them
    compiler::passes::register_bf16_in_f32(attention_fwd_p);
    compiler::passes::register_bf16_in_f32(attention_bwd_p);
    // sharded jit: heads are independent along the batch and head dimensions (q [B, T, H, D], the
    // mask and lse [B, H, ...]), so both split alike over any mesh axis
    register_sharding_rule(attention_fwd_p, aligned_dims_rule({{0, 2}, {0, 2}, {0, 2}, {0, 1}}, {{0, 2}, {0, 1}}));
    register_sharding_rule(attention_bwd_p,
                           aligned_dims_rule({{0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 1}, {0, 2}, {0, 1}}, {{0, 2}, {0, 2}, {0, 2}}));
  });
}

Array fused_attention(const Array& q, const Array& k, const Array& v, bool causal, const std::optional<Array>& mask) {
  register_nn_primitives();
  Params params{{"causal", causal}, {"scale", 1.0 / std::sqrt(static_cast<double>(q.shape()[3]))}};
  std::vector<Array> args{q, k, v};
  if (mask) args.push_back(broadcast_to(*mask, {q.shape()[0], q.shape()[2], q.shape()[1], k.shape()[1]}));
  const bool masked = mask.has_value();
  auto f = [params](const std::vector<Array>& in) { return bind(attention_fwd_p, in, params)[0]; };
  auto fwd = [params](const std::vector<Array>& in) {
    Arrays r = bind(attention_fwd_p, in, params);
    std::vector<Array> res = in;  // q, k, v, (mask,) then o and lse
    res.push_back(r[0]);
    res.push_back(r[1]);
    return std::make_pair(r[0], res);
  };
  auto bwd = [params, masked](const std::vector<Array>& res, const Array& ct) {
    size_t n = masked ? 4 : 3;
    std::vector<Array> in{res[0], res[1], res[2], res[n], res[n + 1], ct};
    if (masked) in.push_back(res[3]);
    Arrays g = bind(attention_bwd_p, in, params);
    std::vector<Array> cts{g[0], g[1], g[2]};
    if (masked) cts.push_back(zeros_like(res[3]));  // the mask is not differentiable
    return cts;
  };
  return custom_vjp(f, fwd, bwd, "dot_product_attention")(args);
}

}  // namespace graft::nn
