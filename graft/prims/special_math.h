// Scalar special functions behind the primitives lgamma, digamma, polygamma, zeta, bessel_i0e,
// bessel_i1e, igamma, igammac, igamma_grad_a, random_gamma_grad and regularized_incomplete_beta
// (graft/prims/unary.cpp, binary.cpp, ternary.cpp). All compute in double; the kernels round to the
// operand's type. Domains and poles follow JAX (XLA's kernels) and SciPy: NaN outside a function's
// domain, and at digamma's poles.
#pragma once

namespace graft::prims::special {

/// log |Γ(x)| (lgamma_r: no global sign, safe from many threads); +inf at the poles.
double lgamma(double x);
/// ψ(x) = d/dx log Γ(x): recurrence to x >= 10, then the asymptotic series; reflection for x < 0.
/// NaN at x = 0, -1, -2, ...
double digamma(double x);
/// The Hurwitz zeta function ζ(s, q) = Σ_{k>=0} (k + q)^-s by Euler–Maclaurin summation: +inf at s = 1
/// and where q is a non-positive integer, NaN for s < 1 and for q < 0 with s not an integer.
double zeta(double s, double q);
/// ψ^(n)(x): ψ for n = 0, (-1)^(n+1) n! ζ(n + 1, x) above; NaN for n negative or not an integer.
double polygamma(double n, double x);
/// e^-|x| I0(x) and e^-|x| I1(x), the exponentially scaled modified Bessel functions of the first kind:
/// their power series for |x| <= 30, the asymptotic expansion above.
double bessel_i0e(double x);
double bessel_i1e(double x);
/// dx/da for x ~ Gamma(a) drawn by inverting its CDF at a fixed uniform (the implicit reparameterization
/// gradient, XLA's RandomGammaGrad): -(∂P(a, x)/∂a) / p(x; a), by the series of P below x = a + 1 and the
/// continued fraction of Q = 1 - P (differentiated in a) above. NaN for a <= 0, 0 at x <= 0.
double random_gamma_grad(double a, double x);
/// The regularized incomplete gamma functions P(a, x) = γ(a, x) / Γ(a) and Q = 1 - P (XLA's Igamma and
/// Igammac), and ∂P/∂a: P's power series below x = a + 1, Q's continued fraction above, each carried
/// relative to the density so that only the final product under- or overflows. NaN for a <= 0, x < 0.
double igamma(double a, double x);
double igammac(double a, double x);
double igamma_grad_a(double a, double x);
/// The regularized incomplete beta function I_x(a, b) by its continued fraction (modified Lentz), with
/// I_x(a, b) = 1 - I_{1-x}(b, a) above x = (a + 1) / (a + b + 2). NaN for a <= 0, b <= 0, x outside [0, 1].
double betainc(double a, double b, double x);

}  // namespace graft::prims::special
