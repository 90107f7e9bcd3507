// jax.numpy's statistics, searching, polynomial, signal and window functions in C++, composed from the
// NumPy layer (graft/ops/ops.h). Each behaves as its jax.numpy namesake: floating results in the
// operands' promoted float type, derivatives where the function is differentiable (quantiles through
// the sorted values they pick), usable under jit and vmap where the result's shape does not depend on
// values (bincount takes its `length`).
//
//   Array m = median(x, 1);                               // each row's median
//   Array q = quantile(x, {0.25, 0.75});                  // both quartiles of all of x: shape [2]
//   Array i = searchsorted(edges, v);                     // insertion points of v into the sorted edges
//   Array y = interp(x, xp, fp);                          // piecewise-linear interpolation
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/ops/ops.h"

namespace graft {

// ---- order statistics -----------------------------------------------------------------------------------
/// How a quantile between two order statistics is taken (NumPy's `method`).
enum class QuantileMethod { kLinear, kLower, kHigher, kNearest, kMidpoint };
/// The method named as NumPy names it ("linear", "lower", "higher", "nearest", "midpoint"); a ValueError
/// naming `op` for any other.
QuantileMethod quantile_method(const std::string& name, const char* op = "quantile");

/// The q-quantiles (each in [0, 1]) of x over `axis` (all axes when unset): the result has q's dimension
/// first, then x's remaining ones (kept as 1 with keepdims). A slice holding a NaN gives NaN; an empty
/// one NaN.
Array quantile(const Array& x, const std::vector<double>& q, AxisArg axis = {},
               QuantileMethod method = QuantileMethod::kLinear, bool keepdims = false);
/// One quantile: no leading dimension (a braced single value, `{0.5}`, also picks this form).
Array quantile(const Array& x, double q, AxisArg axis = {}, QuantileMethod method = QuantileMethod::kLinear,
               bool keepdims = false);
/// quantile with q in percent.
Array percentile(const Array& x, const std::vector<double>& q, AxisArg axis = {},
                 QuantileMethod method = QuantileMethod::kLinear, bool keepdims = false);
Array percentile(const Array& x, double q, AxisArg axis = {}, QuantileMethod method = QuantileMethod::kLinear,
                 bool keepdims = false);
Array median(const Array& x, AxisArg axis = {}, bool keepdims = false);
/// The same over each slice's non-NaN entries (NaN where a slice has none).
Array nanquantile(const Array& x, const std::vector<double>& q, AxisArg axis = {},
                  QuantileMethod method = QuantileMethod::kLinear, bool keepdims = false);
Array nanquantile(const Array& x, double q, AxisArg axis = {}, QuantileMethod method = QuantileMethod::kLinear,
                  bool keepdims = false);
Array nanpercentile(const Array& x, double q, AxisArg axis = {}, QuantileMethod method = QuantileMethod::kLinear,
                    bool keepdims = false);
Array nanmedian(const Array& x, AxisArg axis = {}, bool keepdims = false);

// ---- searching and counting -------------------------------------------------------------------------------
/// For each v, where it would go into the sorted 1-D `a` to keep it sorted: before equal entries
/// (side "left") or after them ("right"). i32, v's shape.
Array searchsorted(const Array& a, const Array& v, const std::string& side = "left");
/// The bin of each x among the monotonic `bins` (NumPy's digitize; `right`: intervals closed on the right).
Array digitize(const Array& x, const Array& bins, bool right = false);
/// How often each value 0 .. length-1 occurs in the non-negative integers x (summing `weights` instead
/// when given). `length` defaults to max(x) + 1 (at least `minlength`), read from x's values: give it
/// under jit.
Array bincount(const Array& x, const std::optional<Array>& weights = std::nullopt, int64_t minlength = 0,
               std::optional<int64_t> length = std::nullopt);
/// Piecewise-linear interpolation of the points (xp, fp) (xp increasing) at x; `left` / `right` (default
/// fp's first and last) outside them.
Array interp(const Array& x, const Array& xp, const Array& fp, std::optional<double> left = std::nullopt,
             std::optional<double> right = std::nullopt);
/// The choice of the first true condition per element, `default_value` where none is.
Array select(const std::vector<Array>& conditions, const std::vector<Array>& choices, double default_value = 0);

// ---- polynomials (1-D coefficient arrays, the highest power first) ------------------------------------------
Array polyval(const Array& p, const Array& x);
Array polyadd(const Array& a, const Array& b);
Array polysub(const Array& a, const Array& b);
Array polymul(const Array& a, const Array& b);
/// The m-th derivative.
Array polyder(const Array& p, int64_t m = 1);
/// The m-th antiderivative, integration constants zero.
Array polyint(const Array& p, int64_t m = 1);
/// The Vandermonde matrix of the 1-D x: columns x^(N-1) .. x^0 (x^0 .. x^(N-1) when increasing).
Array vander(const Array& x, std::optional<int64_t> n = std::nullopt, bool increasing = false);

// ---- signals and statistics ------------------------------------------------------------------------------
/// The discrete convolution of two 1-D arrays; mode "full", "same" or "valid".
Array convolve(const Array& a, const Array& v, const std::string& mode = "full");
/// The cross-correlation of two 1-D arrays (NumPy's correlate); mode "valid", "same" or "full".
Array correlate(const Array& a, const Array& v, const std::string& mode = "valid");
/// The covariance matrix of the variables in m's rows (its columns when !rowvar), divided by N - ddof
/// (ddof 1, or 0 with bias); a scalar for one variable.
Array cov(const Array& m, bool rowvar = true, bool bias = false, std::optional<int64_t> ddof = std::nullopt);
/// Pearson's correlation coefficients (cov normalized, clipped to [-1, 1]).
Array corrcoef(const Array& m, bool rowvar = true);

// ---- windows (f32 unless a dtype is given; M <= 0 gives an empty window) -----------------------------------
Array bartlett(int64_t m, DType d = DType::f32);
Array hanning(int64_t m, DType d = DType::f32);
Array hamming(int64_t m, DType d = DType::f32);
Array blackman(int64_t m, DType d = DType::f32);
Array kaiser(int64_t m, double beta, DType d = DType::f32);
/// The modified Bessel function of the first kind, order 0 (graft::special::i0).
Array i0(const Array& x);

}  // namespace graft
