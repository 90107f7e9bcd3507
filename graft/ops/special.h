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
/// log softmax over `axis` (as graft::log_softmax).
Array log_softmax(const Array& x, int64_t axis = -1);

// ---- Γ and its relatives (real arguments) ------------------------------------------------------------------
/// The sign of Γ(x): 1 or -1 (-1 at -0.0), NaN at the poles (negative integers), -inf and NaN.
Array gammasgn(const Array& x);
/// Γ(x) = gammasgn(x) e^gammaln(x): ±inf at ±0, NaN at the negative integers.
Array gamma(const Array& x);
/// log Γ(x) on the principal branch: gammaln(x) for x > 0, NaN otherwise (Γ's logarithm is complex there).
Array loggamma(const Array& x);
/// B(a, b) = Γ(a) Γ(b) / Γ(a + b), signed.
Array beta(const Array& a, const Array& b);
/// n! = Γ(n + 1) as a float; 0 for n < 0 (scipy's exact=False).
Array factorial(const Array& n);
/// N choose k as a float, 0 where k > N, N < 0 or k < 0; with `repetition` the multiset coefficient
/// (N + k - 1 choose k, 1 for k = 0).
Array comb(const Array& n, const Array& k, bool repetition = false);
/// The Pochhammer symbol (z)_m = Γ(z + m) / Γ(z), 1 for m = 0; derivatives ψ(z + m) - ψ(z) and ψ(z + m)
/// times (z)_m in z and m.
Array poch(const Array& z, const Array& m);
/// Σ_{j<d} gammaln(a - j/2) + d(d-1)/4 log π: the log of the multivariate gamma function of dimension d.
Array multigammaln(const Array& a, int64_t d);
/// The Bernoulli numbers B_0 ... B_n (B_1 = -1/2), in the default float dtype.
Array bernoulli(int64_t n);

// ---- exponential integrals and the scaled error function ------------------------------------------------
/// The exponential integral E1(x) = ∫_x^∞ e^-t / t dt for x > 0 (inf at 0, NaN below); its derivative -e^-x / x.
Array exp1(const Array& x);
/// Ei(x) = -E1(-x) for x < 0 and the principal value ∫_-∞^x e^t / t dt above (-inf at 0); derivative e^x / x.
Array expi(const Array& x);
/// erfcx(x) = e^(x²) erfc(x), without the overflow and underflow of that product for large x (≈ 1 / (x √π));
/// derivative 2x erfcx(x) - 2 / √π.
Array erfcx(const Array& x);

// ---- entropies and transforms ---------------------------------------------------------------------------
/// p log(p / q) for p, q > 0; 0 for p = 0, q >= 0; inf otherwise.
Array rel_entr(const Array& p, const Array& q);
/// rel_entr(p, q) - p + q.
Array kl_div(const Array& p, const Array& q);
/// The Box-Cox transform (x^λ - 1) / λ, log(x) at λ = 0, and its form for 1 + x (boxcox1p), computed
/// through expm1 and log1p.
Array boxcox(const Array& x, const Array& lmbda);
Array boxcox1p(const Array& x, const Array& lmbda);

}  // namespace graft::special
