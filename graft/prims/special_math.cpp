#include "graft/prims/special_math.h"

#include <array>
#include <cmath>
#include <limits>
#include <numbers>

namespace graft::prims::special {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = std::numeric_limits<double>::epsilon();

bool is_integer(double x) { return std::isfinite(x) && std::floor(x) == x; }

// (2j)! / B_2j for j = 1..12: the Euler–Maclaurin remainder's coefficients, from the Bernoulli numbers
// B_2 .. B_24 (as fractions, exactly).
const std::array<double, 12>& euler_maclaurin_divisors() {
  static const std::array<double, 12> d = [] {
    constexpr double num[12] = {1, -1, 1, -1, 5, -691, 7, -3617, 43867, -174611, 854513, -236364091};
    constexpr double den[12] = {6, 30, 42, 30, 66, 2730, 6, 510, 798, 330, 138, 2730};
    std::array<double, 12> out{};
    double fact = 1;  // (2j)!
    for (int j = 1; j <= 12; ++j) {
      fact *= (2.0 * j - 1) * (2.0 * j);
      out[static_cast<size_t>(j - 1)] = fact * den[j - 1] / num[j - 1];
    }
    return out;
  }();
  return d;
}
}  // namespace

double lgamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

double digamma(double x) {
  if (std::isnan(x) || x == kInf) return x;
  if (x == -kInf || (x <= 0 && is_integer(x))) return kNaN;
  double result = 0;
  if (x < 0) {
    // ψ(x) = ψ(1 - x) - π / tan(πx); the argument reduced to (0, 1) keeps tan accurate for large |x|
    double r = x - std::floor(x);
    result = -std::numbers::pi / std::tan(std::numbers::pi * r);
    x = 1 - x;
  }
  for (; x < 10; x += 1) result -= 1 / x;
  // ψ(x) ~ log x - 1/(2x) - Σ B_2k / (2k x^2k)
  double f = 1 / (x * x);
  double series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132 - f * (691.0 / 32760 - f / 12))))));
  return result + std::log(x) - 0.5 / x - series;
}

double zeta(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q <= 0) {
    if (is_integer(q)) return kInf;
    if (!is_integer(s)) return kNaN;  // (k + q)^-s of a negative base
  }
  // Σ_{k<N} (k + q)^-s directly, then the Euler–Maclaurin tail from a = q + N: a^(1-s)/(s-1) + a^-s / 2
  // + Σ_j B_2j / (2j)! s (s+1) ... (s+2j-2) a^(-s-2j+1)
  double sum = std::pow(q, -s), a = q, b = 0;
  for (int i = 0; i < 9 || a <= 9.0; ++i) {
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    if (std::fabs(b / sum) < kEps) return sum;
  }
  sum += b * a / (s - 1) - 0.5 * b;
  double rising = 1, k = 0;  // s (s+1) ... (s+k-1)
  for (double d : euler_maclaurin_divisors()) {
    rising *= s + k;
    b /= a;
    double t = rising * b / d;
    sum += t;
    if (std::fabs(t / sum) < kEps) break;
    k += 1;
    rising *= s + k;
    b /= a;
    k += 1;
  }
  return sum;
}

double polygamma(double n, double x) {
  if (std::isnan(n) || std::isnan(x) || n < 0 || !is_integer(n)) return kNaN;
  if (n == 0) return digamma(x);
  double sign = std::fmod(n, 2.0) == 0 ? -1.0 : 1.0;  // (-1)^(n+1)
  return sign * std::exp(lgamma(n + 1)) * zeta(n + 1, x);
}

namespace {
// I_nu(x) e^-x for x >= 0, nu in {0, 1}
double bessel_scaled(int nu, double x) {
  if (x <= 30) {
    // Σ (x/2)^(2k+nu) / (k! (k+nu)!), all terms positive
    double half = 0.5 * x, q = half * half;
    double term = nu == 0 ? 1.0 : half, sum = term;
    for (int k = 1; k < 500; ++k) {
      term *= q / (k * static_cast<double>(k + nu));
      sum += term;
      if (term < kEps * 0.25 * sum) break;
    }
    return sum * std::exp(-x);
  }
  // e^-x I_nu(x) ~ 1/sqrt(2πx) Σ_k (-1)^k Π_{j<=k} (4nu² - (2j-1)²) / (k! (8x)^k)
  double mu = 4.0 * nu * nu, term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    double odd = 2.0 * k - 1;
    double next = -term * (mu - odd * odd) / (k * 8.0 * x);
    if (std::fabs(next) >= std::fabs(term)) break;  // the asymptotic series starts to diverge
    term = next;
    sum += term;
    if (std::fabs(term) < kEps * 0.25 * std::fabs(sum)) break;
  }
  return sum / std::sqrt(2 * std::numbers::pi * x);
}
}  // namespace

double bessel_i0e(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  return bessel_scaled(0, std::fabs(x));
}

double bessel_i1e(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  double r = bessel_scaled(1, std::fabs(x));
  return x < 0 ? -r : r;  // I1 is odd
}

namespace {
// A number with its derivative in a (forward mode by hand) for the continued fraction below.
struct Dual {
  double v, d;
};
Dual operator+(Dual x, Dual y) { return {x.v + y.v, x.d + y.d}; }
Dual operator*(Dual x, Dual y) { return {x.v * y.v, x.d * y.v + x.v * y.d}; }
Dual inv(Dual x) { return {1 / x.v, -x.d / (x.v * x.v)}; }

// The incomplete gamma functions relative to the density p(x; a) = x^(a-1) e^-x / Γ(a), with their
// derivatives in a (also relative to p; `with_d` false skips them). Relative values stay finite far in
// the tails, where P, Q and p themselves under- or overflow.
//
// P's series, used below x = a + 1: P = Σ_n x^(a+n) e^-x / Γ(a+n+1); relative to p the n-th term is
// r_n = x^(n+1) Γ(a) / Γ(a+n+1), and its derivative in a carries the factor log x - ψ(a+n+1).
Dual p_series(double a, double x, bool with_d) {
  double lx = std::log(x), r = x / a, psi = with_d ? digamma(a + 1) : 0, sum = 0, dsum = 0;
  for (int n = 0; n < 100000; ++n) {
    sum += r;
    if (with_d) dsum += r * (lx - psi);
    bool done = r <= kEps * 1e-2 * sum && (!with_d || std::fabs(r * (lx - psi)) <= kEps * 1e-2 * std::fabs(dsum));
    if (done || r == 0) break;
    r *= x / (a + n + 1);
    if (with_d) psi += 1 / (a + n + 1);
  }
  return {sum, dsum};
}

// Q's continued fraction, used above: Q = e^-x x^a / Γ(a) · h = p x h, h = 1/(x+1-a-) 1(1-a)/(x+3-a-)
// 2(2-a)/(x+5-a-) ... by the modified Lentz method, evaluated with its derivative in a.
Dual q_fraction(double a, double x, bool with_d) {
  const double tiny = 1e-300;
  Dual b{x + 1 - a, -1}, c{1 / tiny, 0}, d = inv(b), h = d;
  for (int i = 1; i < 100000; ++i) {
    Dual an{-i * (i - a), static_cast<double>(i)};
    b = b + Dual{2, 0};
    d = an * d + b;
    if (std::fabs(d.v) < tiny) d.v = tiny;
    c = b + an * inv(c);
    if (std::fabs(c.v) < tiny) c.v = tiny;
    d = inv(d);
    Dual del = d * c;
    h = h * del;
    if (std::fabs(del.v - 1) < kEps * 1e-1 &&
        (!with_d || std::fabs(del.d) <= kEps * 1e-1 * (std::fabs(h.d) + std::fabs(h.v))))
      break;
  }
  // relative to p: Q / p = x h, (dQ/da) / p = x ((log x - ψ(a)) h + dh/da)
  return {x * h.v, with_d ? x * ((std::log(x) - digamma(a)) * h.v + h.d) : 0};
}

// log p(x; a). Written directly, (a-1) log x - x - log Γ(a) loses a few digits per decade of a to
// cancellation (1e-13 relative at a = 1000); from a = 10 on it is taken through Stirling's series instead,
// log Γ(a) = (a - 1/2) log a - a + log(2π)/2 + s(a), which leaves a log1p(t) - t with t = x/a - 1 (small
// where the density matters) and s(a) = 1/(12a) - 1/(360a³) + ... summed on its own.
double log_gamma_density(double a, double x) {
  if (a < 10) return (a - 1) * std::log(x) - x - lgamma(a);
  double t = (x - a) / a, l1p = std::log1p(t);
  double r = 1 / (a * a), s = (1.0 / 12 - r * (1.0 / 360 - r * (1.0 / 1260 - r * (1.0 / 1680 - r * (1.0 / 1188 - r * (691.0 / 360360 - r / 156)))))) / a;
  return a * (l1p - t) - l1p - 0.5 * std::log(2 * std::numbers::pi * a) - s;
}

// Shared edge cases of P and Q: NaN outside the domain (as XLA: a <= 0 or x < 0), P at x = 0 and x = inf.
bool igamma_edge(double a, double x, double& p) {
  if (std::isnan(a) || std::isnan(x) || a <= 0 || x < 0 || std::isinf(a)) {
    p = kNaN;
    return true;
  }
  if (x == 0 || std::isinf(x)) {
    p = x == 0 ? 0 : 1;
    return true;
  }
  return false;
}
}  // namespace

double igamma(double a, double x) {
  double p;
  if (igamma_edge(a, x, p)) return p;
  double dens = std::exp(log_gamma_density(a, x));
  return x < a + 1 ? dens * p_series(a, x, false).v : 1 - dens * q_fraction(a, x, false).v;
}

double igammac(double a, double x) {
  double p;
  if (igamma_edge(a, x, p)) return std::isnan(p) ? p : 1 - p;
  double dens = std::exp(log_gamma_density(a, x));
  return x < a + 1 ? 1 - dens * p_series(a, x, false).v : dens * q_fraction(a, x, false).v;
}

double igamma_grad_a(double a, double x) {
  double p;
  if (igamma_edge(a, x, p)) return std::isnan(p) ? p : 0;
  double dens = std::exp(log_gamma_density(a, x));
  // dP/da = -dQ/da
  return x < a + 1 ? dens * p_series(a, x, true).d : -dens * q_fraction(a, x, true).d;
}

double random_gamma_grad(double a, double x) {
  if (std::isnan(a) || std::isnan(x) || a <= 0) return kNaN;
  if (x <= 0) return 0;
  if (std::isinf(x)) return kInf;
  // x(a) solves P(a, x) = u, so dx/da = -(dP/da) / p = (dQ/da) / p: the relative derivatives themselves
  return x < a + 1 ? -p_series(a, x, true).d : q_fraction(a, x, true).d;
}

double betainc(double a, double b, double x) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(x) || a <= 0 || b <= 0 || x < 0 || x > 1) return kNaN;
  if (x == 0 || x == 1) return x;
  // The continued fraction converges fast below the mean-ish point (a + 1) / (a + b + 2); above it,
  // I_x(a, b) = 1 - I_{1-x}(b, a).
  if (x > (a + 1) / (a + b + 2)) return 1 - betainc(b, a, 1 - x);
  double front = std::exp(a * std::log(x) + b * std::log1p(-x) - (lgamma(a) + lgamma(b) - lgamma(a + b))) / a;
  // I = front / (1 + d_1 / (1 + d_2 / (1 + ...))), d_2m+1 = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),
  // d_2m = m (b-m) x / ((a+2m-1)(a+2m)), by the modified Lentz method
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m < 100000; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                       : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1 + num * d;
      if (std::fabs(d) < tiny) d = tiny;
      c = 1 + num / c;
      if (std::fabs(c) < tiny) c = tiny;
      d = 1 / d;
      h *= d * c;
      if (odd && std::fabs(d * c - 1) < kEps * 0.5) return front * h;
    }
  }
  return front * h;
}

}  // namespace graft::prims::special
