// Special functions, as jax.scipy.special names them (graft.scipy.special in Python). Integer operands
// are promoted to the default float; every function is differentiable (where JAX's is), batches and
// compiles like any composite of primitives.
//
//   namespace sp = graft::special;
//   Array lp = sp::gammaln(x) - sp::xlogy(a, b);
//   Array d = grad([](const Array& x) { return sum(sp::log_ndtr(x)); })(x);
#pragma once

#include "graft/ops/ops.h"

namespace graft::special {

/// log |Γ(x)| (lax::lgamma).
Array gammaln(const Array& x);
/// ψ(x) = d/dx log Γ(x); NaN at 0, -1, -2, ... (lax::digamma).
Array digamma(const Array& x);
/// ψ^(n)(x), the n-th derivative of digamma (n a non-negative integer; differentiable in x).
Array polygamma(const Array& n, const Array& x);
/// Hurwitz's ζ(x, q) = Σ_k (k + q)^-x (differentiable in q).
Array zeta(const Array& x, const Array& q);
/// log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).
Array betaln(const Array& a, const Array& b);
/// The regularized lower and upper incomplete gamma functions P(a, x) = γ(a, x) / Γ(a) and Q = 1 - P,
/// differentiable in a and x (lax::igamma, lax::igammac); NaN for a <= 0 or x < 0, as JAX.
Array gammainc(const Array& a, const Array& x);
Array gammaincc(const Array& a, const Array& x);
/// The regularized incomplete beta function I_x(a, b) (lax::regularized_incomplete_beta), differentiable
/// in x only, as JAX's; NaN for a <= 0, b <= 0 or x outside [0, 1].
Array betainc(const Array& a, const Array& b, const Array& x);
/// x log(y), and 0 where x = 0 (whatever y is); its derivative in x is log(y) there too, as JAX's.
Array xlogy(const Array& x, const Array& y);
/// x log(1 + y), and 0 where x = 0.
Array xlog1py(const Array& x, const Array& y);
/// The entropy term -x log(x): 0 at 0, -inf below.
Array entr(const Array& x);
/// 1 / (1 + e^-x), and its inverse log(p / (1 - p)).
Array expit(const Array& x);
Array logit(const Array& p);
/// The standard normal CDF, its logarithm (accurate far into both tails: log1p(-Φ(-x)) above 0, JAX's
/// asymptotic series below -20 in f64 / -10 in f32), and its inverse.
Array ndtr(const Array& x);
Array log_ndtr(const Array& x);
Array ndtri(const Array& p);
/// erf, erfc and the inverse of erf.
Array erf(const Array& x);
Array erfc(const Array& x);
Array erfinv(const Array& x);
/// The modified Bessel functions of the first kind of orders 0 and 1, and the same scaled by e^-|x|
/// (which do not overflow).
Array i0(const Array& x);
Array i0e(const Array& x);
Array i1(const Array& x);
Array i1e(const Array& x);
/// log Σ e^x and the softmax, over `axis` (as graft::logsumexp and graft::softmax).
Array logsumexp(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array softmax(const Array& x, int64_t axis = -1);

}  // namespace graft::special
