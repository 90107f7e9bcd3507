// graft::lax: one function per primitive, binding it under the current trace.
//
// This is the strict layer (JAX's `lax`): operands must already have matching dtypes and shapes
// (elementwise binary ops also accept a rank-0 operand). The NumPy-style API with promotion and
// broadcasting (graft/ops) is written on top of it, and so are all the derivative rules.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/core/params.h"
#include "graft/core/primitive.h"
#include "graft/core/trace.h"

namespace graft::lax {

// ---- structured parameters ------------------------------------------------------------------------
/// dot_general dimension numbers: ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).
struct DotDims final : ParamObject {
  IntList lhs_contract, rhs_contract, lhs_batch, rhs_batch;
  DotDims(IntList lc, IntList rc, IntList lb, IntList rb)
      : lhs_contract(std::move(lc)), rhs_contract(std::move(rc)), lhs_batch(std::move(lb)), rhs_batch(std::move(rb)) {}
  DotDims(const DotDims& o) : DotDims(o.lhs_contract, o.rhs_contract, o.lhs_batch, o.rhs_batch) {}
  void print(std::ostream& os) const override;
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
};

/// XLA gather dimension numbers (the index vector is the last dimension of the indices).
struct GatherDims final : ParamObject {
  IntList offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims, start_indices_batching_dims;
  GatherDims(IntList od, IntList csd, IntList sim, IntList obd = {}, IntList sibd = {})
      : offset_dims(std::move(od)),
        collapsed_slice_dims(std::move(csd)),
        start_index_map(std::move(sim)),
        operand_batching_dims(std::move(obd)),
        start_indices_batching_dims(std::move(sibd)) {}
  GatherDims(const GatherDims& o)
      : GatherDims(o.offset_dims, o.collapsed_slice_dims, o.start_index_map, o.operand_batching_dims,
                   o.start_indices_batching_dims) {}
  void print(std::ostream& os) const override;
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
};

/// XLA scatter dimension numbers (the index vector is the last dimension of the indices).
struct ScatterDims final : ParamObject {
  IntList update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, operand_batching_dims,
      scatter_indices_batching_dims;
  ScatterDims(IntList uwd, IntList iwd, IntList sdod, IntList obd = {}, IntList sibd = {})
      : update_window_dims(std::move(uwd)),
        inserted_window_dims(std::move(iwd)),
        scatter_dims_to_operand_dims(std::move(sdod)),
        operand_batching_dims(std::move(obd)),
        scatter_indices_batching_dims(std::move(sibd)) {}
  ScatterDims(const ScatterDims& o)
      : ScatterDims(o.update_window_dims, o.inserted_window_dims, o.scatter_dims_to_operand_dims,
                    o.operand_batching_dims, o.scatter_indices_batching_dims) {}
  void print(std::ostream& os) const override;
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
};

/// Convolution dimension numbers: for lhs (batch, feature, spatial...), rhs (out feature, in feature,
/// spatial...) and out (batch, feature, spatial...), the position of each dimension.
struct ConvDims final : ParamObject {
  IntList lhs_spec, rhs_spec, out_spec;
  ConvDims(IntList l, IntList r, IntList o) : lhs_spec(std::move(l)), rhs_spec(std::move(r)), out_spec(std::move(o)) {}
  ConvDims(const ConvDims& o) : ConvDims(o.lhs_spec, o.rhs_spec, o.out_spec) {}
  /// NCHW / OIHW / NCHW for `spatial` spatial dimensions.
  static ConvDims nchw(size_t spatial);
  /// NHWC / HWIO / NHWC.
  static ConvDims nhwc(size_t spatial);
  void print(std::ostream& os) const override;
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
};

/// A tuple of integer tuples, e.g. a padding config ((lo, hi, interior), ...).
struct IntTuples final : ParamObject {
  std::vector<IntList> items;
  explicit IntTuples(std::vector<IntList> v) : items(std::move(v)) {}
  void print(std::ostream& os) const override;
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
};

/// Out-of-bounds behaviour of gather/scatter: clamp the start indices, or fill (gather) / drop (scatter).
enum class GatherMode { clip, fill };

// ---- unary ------------------------------------------------------------------------------------------
Array neg(const Array& x);
Array sign(const Array& x);
Array floor(const Array& x);
Array ceil(const Array& x);
/// Rounds half away from zero (rounding_method=0) or to nearest even (1).
Array round(const Array& x, int rounding_method = 0);
Array is_finite(const Array& x);
Array exp(const Array& x);
Array exp2(const Array& x);
Array log(const Array& x);
Array log1p(const Array& x);
Array expm1(const Array& x);
Array tanh(const Array& x);
Array logistic(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array tan(const Array& x);
Array asin(const Array& x);
Array acos(const Array& x);
Array atan(const Array& x);
Array sinh(const Array& x);
Array cosh(const Array& x);
Array asinh(const Array& x);
Array acosh(const Array& x);
Array atanh(const Array& x);
Array sqrt(const Array& x);
Array rsqrt(const Array& x);
Array cbrt(const Array& x);
/// |x|; for complex x the modulus, a real array (c64 -> f32).
Array abs(const Array& x);
/// The real and imaginary parts of a complex array (c64 -> f32, c128 -> f64); conj(x) its complex
/// conjugate; complex(re, im) builds one from two f32 or f64 arrays of one dtype (JAX's lax.real,
/// lax.imag, lax.conj, lax.complex).
Array real(const Array& x);
Array imag(const Array& x);
Array conj(const Array& x);
Array complex(const Array& re, const Array& im);
Array erf(const Array& x);
Array erfc(const Array& x);
Array erf_inv(const Array& x);
/// log |Γ(x)|, ψ(x) = d/dx log Γ(x), e^-|x| I0(x), e^-|x| I1(x) (JAX's lax.lgamma, digamma, bessel_i0e,
/// bessel_i1e).
Array lgamma(const Array& x);
Array digamma(const Array& x);
Array bessel_i0e(const Array& x);
Array bessel_i1e(const Array& x);
Array square(const Array& x);
Array integer_pow(const Array& x, int64_t y);
Array bitwise_not(const Array& x);
Array population_count(const Array& x);
Array copy(const Array& x);
Array stop_gradient(const Array& x);
/// x moved to device d and committed there.
Array device_put(const Array& x, Device d);

// ---- binary (same dtype; same shape or one rank-0 operand) ------------------------------------------
Array add(const Array& a, const Array& b);
Array sub(const Array& a, const Array& b);
Array mul(const Array& a, const Array& b);
Array div(const Array& a, const Array& b);
Array rem(const Array& a, const Array& b);
Array pow(const Array& a, const Array& b);
Array max(const Array& a, const Array& b);
Array min(const Array& a, const Array& b);
Array atan2(const Array& a, const Array& b);
Array nextafter(const Array& a, const Array& b);
/// ψ^(m)(x), the m-th derivative of digamma (m a non-negative integer value; differentiable in x only).
Array polygamma(const Array& m, const Array& x);
/// The Hurwitz zeta function ζ(x, q) = Σ_k (k + q)^-x (differentiable in q only).
Array zeta(const Array& x, const Array& q);
/// dx/da of a Gamma(a) sample x at a fixed uniform draw (the implicit reparameterization gradient of
/// random::gamma); not differentiable itself, as in JAX.
Array random_gamma_grad(const Array& a, const Array& x);
/// The regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 - P (differentiable in both: in a
/// through igamma_grad_a), and ∂P/∂a (not differentiable itself, as in JAX).
Array igamma(const Array& a, const Array& x);
Array igammac(const Array& a, const Array& x);
Array igamma_grad_a(const Array& a, const Array& x);
Array bitwise_and(const Array& a, const Array& b);
Array bitwise_or(const Array& a, const Array& b);
Array bitwise_xor(const Array& a, const Array& b);
Array shift_left(const Array& a, const Array& b);
Array shift_right_logical(const Array& a, const Array& b);
Array shift_right_arithmetic(const Array& a, const Array& b);
/// Sum of two cotangents (what reverse mode uses to accumulate; prints as add_any).
Array add_any(const Array& a, const Array& b);
Array eq(const Array& a, const Array& b);
Array ne(const Array& a, const Array& b);
Array lt(const Array& a, const Array& b);
Array le(const Array& a, const Array& b);
Array gt(const Array& a, const Array& b);
Array ge(const Array& a, const Array& b);

// ---- selection and conversion -----------------------------------------------------------------------
/// cases[which]: `which` is bool (two cases) or int32, rank 0 or the shape of the cases.
Array select_n(const Array& which, std::span<const Array> cases);
/// select(pred, on_true, on_false) == select_n(pred, {on_false, on_true}).
Array select(const Array& pred, const Array& on_true, const Array& on_false);
Array clamp(const Array& lo, const Array& x, const Array& hi);
/// The regularized incomplete beta function I_x(a, b) (JAX's lax.betainc; same dtype, equal shapes or rank
/// 0); differentiable in x only, as in JAX.
Array regularized_incomplete_beta(const Array& a, const Array& b, const Array& x);
Array convert_element_type(const Array& x, DType d, bool weak_type = false);
Array bitcast_convert_type(const Array& x, DType d);

// ---- reductions -------------------------------------------------------------------------------------
Array reduce_sum(const Array& x, const Axes& axes);
Array reduce_max(const Array& x, const Axes& axes);
Array reduce_min(const Array& x, const Axes& axes);
Array reduce_prod(const Array& x, const Axes& axes);
Array reduce_and(const Array& x, const Axes& axes);
Array reduce_or(const Array& x, const Axes& axes);
Array argmax(const Array& x, int64_t axis, DType index_dtype = DType::i32);
Array argmin(const Array& x, int64_t axis, DType index_dtype = DType::i32);

// ---- structure --------------------------------------------------------------------------------------
/// Operand dimension i becomes output dimension broadcast_dimensions[i] (size 1 or equal).
Array broadcast_in_dim(const Array& x, const Shape& shape, const Axes& broadcast_dimensions);
Array reshape(const Array& x, const Shape& new_sizes);
Array transpose(const Array& x, const Axes& permutation);
Array squeeze(const Array& x, const Axes& dimensions);
Array expand_dims(const Array& x, const Axes& dimensions);
Array rev(const Array& x, const Axes& dimensions);
Array iota(DType d, const Shape& shape, int64_t dimension = 0);

// ---- slicing ----------------------------------------------------------------------------------------
Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides = {});
Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride, int64_t axis);
/// padding_config[i] = {lo, hi, interior}; lo/hi may be negative.
Array pad(const Array& x, const Array& padding_value, const std::vector<IntList>& padding_config);
Array concatenate(std::span<const Array> xs, int64_t dimension);
/// Start indices are rank-0 integer arrays; they are clamped so that the slice fits.
Array dynamic_slice(const Array& x, std::span<const Array> start, const Shape& sizes);
Array dynamic_update_slice(const Array& x, const Array& update, std::span<const Array> start);

// ---- gather / scatter -------------------------------------------------------------------------------
Array gather(const Array& operand, const Array& indices, const GatherDims& dims, const Shape& slice_sizes,
             GatherMode mode = GatherMode::clip, double fill_value = 0.0);
Array scatter(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
              GatherMode mode = GatherMode::fill);
Array scatter_add(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
                  GatherMode mode = GatherMode::fill);
/// Combining scatters: every update (duplicates included) is multiplied in / min'd / max'd.
Array scatter_mul(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
                  GatherMode mode = GatherMode::fill);
Array scatter_min(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
                  GatherMode mode = GatherMode::fill);
Array scatter_max(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
                  GatherMode mode = GatherMode::fill);

// ---- contraction, scans, sorting ----------------------------------------------------------------------
Array dot_general(const Array& lhs, const Array& rhs, const DotDims& dims,
                  std::optional<DType> preferred_element_type = std::nullopt);
Array cumsum(const Array& x, int64_t axis, bool reverse = false);
Array cummax(const Array& x, int64_t axis, bool reverse = false);
Array cummin(const Array& x, int64_t axis, bool reverse = false);
/// Sorts every operand along `dimension` by the lexicographic order of the first num_keys operands.
Arrays sort(std::span<const Array> operands, int64_t dimension, bool is_stable = true, int64_t num_keys = 1);

// ---- linear algebra (JAX's lax.linalg; matrices in the last two dimensions, batched over the others) ----
// f32, f64, c64 and c128, on LAPACK (graft/runtime/cpu/lapack.h). graft::linalg (graft/ops/linalg.h) builds
// NumPy's and SciPy's functions on these.
/// The lower Cholesky factor L (x = L L^H) of the Hermitian (symmetric) positive definite matrix whose lower
/// triangle is x's (the strict upper triangle of x is not read, nor the imaginary parts of its diagonal);
/// NaNs where x is not positive definite.
Array cholesky(const Array& x);
/// X with op(a) X = b (left_side) or X op(a) = b, a triangular (only its lower or upper triangle read; its
/// diagonal taken as ones with unit_diagonal); op(a) transposes a with transpose_a and conjugates it with
/// conjugate_a (both: the adjoint a^H). (conjugate_a comes last here, unlike JAX's keyword order, so that
/// calls written before it keep their meaning.)
Array triangular_solve(const Array& a, const Array& b, bool left_side = true, bool lower = true,
                       bool transpose_a = false, bool unit_diagonal = false, bool conjugate_a = false);
/// LU with partial pivoting: {lu, pivots, permutation}, where a[permutation] = L U (L: lu's strict lower
/// triangle plus a unit diagonal, U: its upper triangle), pivots (int32) LAPACK's row swaps, 0-based.
Arrays lu(const Array& x);
/// The permutation [..., permutation_size] that LAPACK's row swaps (pivots [..., k], 0-based) make of 0..m-1.
Array lu_pivots_to_permutation(const Array& pivots, int64_t permutation_size);
/// {v, w}: the eigenvectors (columns of v) and ascending eigenvalues (real: f32 for c64) of the symmetric or
/// Hermitian matrix whose lower triangle is x's.
Arrays eigh(const Array& x);
/// {w, vl?, vr?}: the eigenvalues of general square matrices and, when asked, their left (u^H x = w u^H)
/// and right (x v = w v) eigenvectors as columns, all complex (c64 for f32 and c64 input), in LAPACK's
/// order and normalization (unit 2-norm, the largest component real). Derivatives: the eigenvalues'
/// (JAX's rule); the eigenvectors' raise NotImplementedError, as JAX's without enable_eigvec_derivs.
Arrays eig(const Array& x, bool compute_left_eigenvectors = true, bool compute_right_eigenvectors = true);
/// {q, r} with x = q r: reduced (q [m, k], r [k, n], k = min(m, n)) or full_matrices (q [m, m], r [m, n]).
Arrays qr(const Array& x, bool full_matrices = false);
/// {s, u, vt} with x = u diag(s) vt (vt = V^H), s descending and real; {s} without compute_uv.
Arrays svd(const Array& x, bool full_matrices = false, bool compute_uv = true);

// ---- the discrete Fourier transform ------------------------------------------------------------------
/// JAX's FftType: which transform lax::fft computes (the values are JAX's, printed in jaxprs).
enum class FftType : int64_t {
  FFT = 0,    ///< complex -> complex, forward (e^{-2 pi i jk / n})
  IFFT = 1,   ///< complex -> complex, inverse, normalized by 1/N
  RFFT = 2,   ///< real -> complex: the last dimension's n/2 + 1 non-negative frequencies
  IRFFT = 3,  ///< those frequencies -> real, normalized by 1/N
};
/// The DFT over x's trailing fft_lengths.size() dimensions (1 to 3 in JAX; any number here), batched
/// over the others. FFT and IFFT take complex x of those lengths; RFFT takes real f32 / f64 x and gives
/// [..., n/2 + 1] complex; IRFFT takes [..., n/2 + 1] complex and gives [..., n] real, where n is the last
/// length. graft::fft (graft/ops/fft.h) builds NumPy's functions on it.
Array fft(const Array& x, FftType type, const Shape& fft_lengths);

// ---- convolution and windows --------------------------------------------------------------------------
/// XLA's ConvGeneralDilated. padding: one (lo, hi) per spatial dimension (may be negative).
Array conv_general_dilated(const Array& lhs, const Array& rhs, const Shape& window_strides,
                           const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& lhs_dilation,
                           const Shape& rhs_dilation, const ConvDims& dims, int64_t feature_group_count = 1,
                           int64_t batch_group_count = 1);
/// Windowed reductions (pooling). All lists have one entry per operand dimension.
Array reduce_window_sum(const Array& x, const Shape& window, const Shape& strides,
                        const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation = {},
                        const Shape& window_dilation = {});
Array reduce_window_max(const Array& x, const Shape& window, const Shape& strides,
                        const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation = {},
                        const Shape& window_dilation = {});
Array reduce_window_min(const Array& x, const Shape& window, const Shape& strides,
                        const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation = {},
                        const Shape& window_dilation = {});

/// The Threefry-2x32 hash (20 rounds, Random123): (key words, counter words) -> two u32 words.
/// All u32; operands of equal shape or rank 0.
Arrays threefry2x32(const Array& k0, const Array& k1, const Array& x0, const Array& x1);

// ---- collectives over named axes (vmap axis_name, shard_map, pmap) ---------------------------------------
/// Sum over the members of the named axes (every member gets the total; the result is invariant).
Array psum(const Array& x, const std::vector<std::string>& axes);
Array pmax(const Array& x, const std::vector<std::string>& axes);
Array pmin(const Array& x, const std::vector<std::string>& axes);
/// psum divided by the number of members.
Array pmean(const Array& x, const std::vector<std::string>& axes);
/// Marks x as varying over the axes (no data moves; the transpose of psum).
Array pvary(const Array& x, const std::vector<std::string>& axes);
/// Every member's x, stacked along a new dimension `axis` (tiled: concatenated along `axis`).
Array all_gather(const Array& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/// all_gather whose result is typed invariant over the axis (JAX's all_gather_invariant): every member
/// holds the same whole, as after a psum; its transpose is each member's block of the cotangent.
Array all_gather_invariant(const Array& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/// psum, then member k keeps block k of `scatter_dimension` (tiled: blocks of size d / n; otherwise the
/// dimension must have the axis size and is removed). Prints as JAX's reduce_scatter.
Array psum_scatter(const Array& x, const std::string& axis_name, int64_t scatter_dimension = 0, bool tiled = false);
/// Member `dst` receives member `src`'s x for each (src, dst) pair; members receiving nothing get zeros.
Array ppermute(const Array& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm);
/// Splits x along split_axis into one block per member, sends block k to member k, and concatenates
/// the received blocks (in member order) along concat_axis (tiled=false: split_axis must have the axis
/// size and is removed, and a dimension of that size is inserted at concat_axis).
Array all_to_all(const Array& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis, bool tiled = false);
/// This member's index along the axis (i32).
Array axis_index(const std::string& axis_name);

// ---- helpers built from primitives ------------------------------------------------------------------
/// A rank-0 concrete array of dtype d (under tracing it becomes a literal).
Array scalar(double v, DType d);
/// broadcast_in_dim of a scalar: JAX's `full`.
Array full(const Shape& shape, double v, DType d);
Array zeros(const Aval& a);
Array zeros_like(const Array& x);
/// x[..., idx[...], ...] along `axis`: idx has x's shape except (possibly) along axis (a gather).
Array take_along_axis(const Array& x, const Array& idx, int64_t axis);
/// Moves axis `from` to position `to` (a transpose, or nothing).
Array moveaxis(const Array& x, int64_t from, int64_t to);

}  // namespace graft::lax
