// Counting distributions of jax.random, by JAX's algorithms: poisson (Knuth's product of uniforms below
// lam = 10, Hormann's transformed rejection above), binomial (sums of geometric draws where n q <= 10, the
// BTRS transformed rejection otherwise), multinomial (a binomial per category on what remains), geometric;
// and triangular and lognormal. The rejection loops run over the whole array until every element is done,
// as JAX's (each draw of uniforms covers all of them).
#include <cmath>
#include <limits>

#include "graft/ops/ops.h"
#include "graft/random/internal.h"
#include "graft/random/random.h"
#include "graft/transforms/control.h"

namespace graft::random {

using namespace detail;

namespace {

Shape shape_of(std::optional<Shape> shape, const Shape& params, const char* op) {
  if (!shape) return params;
  if (!broadcasts_to(params, *shape))
    fail<ValueError>("random.", op, ": the parameters' shape (", shape_str(params),
                     ") must broadcast to the shape argument (", shape_str(*shape), ")");
  return *shape;
}

// JAX's promote_dtypes_inexact: floats keep their dtype, integers take the default float (f64 under x64)
DType inexact(DType d) { return is_floating(d) ? d : default_float_dtype(); }

std::vector<Array> split_n(const Array& key, int64_t n) {
  Array ks = random::split(key, n);
  std::vector<Array> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(ks[i]);
  return out;
}

// ---- poisson -------------------------------------------------------------------------------------------
Array poisson_knuth(const Array& key, const Array& lam, const Shape& s, DType d) {
  FlatFn more = [&](const std::vector<Array>& c) { return std::vector<Array>{any(c[2] > negative(lam))}; };
  FlatFn step = [&](const std::vector<Array>& c) {
    std::vector<Array> ks = split_n(c[1], 2);
    Array k = where(c[2] > negative(lam), c[0] + 1, c[0]);
    Array u = uniform(ks[1], s, DType::f32);
    return std::vector<Array>{k, ks[0], c[2] + log(u)};
  };
  std::vector<Array> out = while_flat(more, step, {zeros(s, d), key, zeros(s, DType::f32)});
  return (out[0] - 1).astype(d);
}

Array poisson_rejection(const Array& key, const Array& lam, const Shape& s, DType d) {
  Array log_lam = log(lam);
  Array b = sqrt(lam) * 2.53 + 0.931;
  Array a = b * 0.02483 - 0.059;
  Array inv_alpha = 1.1328 / (b - 3.4) + 1.1239;
  Array v_r = 0.9277 - 3.6224 / (b - 2.0);
  FlatFn more = [](const std::vector<Array>& c) { return std::vector<Array>{any(logical_not(c[1]))}; };
  FlatFn step = [&](const std::vector<Array>& c) {
    std::vector<Array> ks = split_n(c[2], 3);
    Array u = uniform(ks[1], s, lam.dtype()) - 0.5;
    Array v = uniform(ks[2], s, lam.dtype());
    Array us = 0.5 - abs(u);
    Array k = floor((a * 2.0 / us + b) * u + lam + 0.43);
    Array sv = log(v * inv_alpha / (a / (us * us) + b));
    Array t = negative(lam) + k * log_lam - lax::lgamma(k + 1.0);
    Array accept1 = (us >= 0.07) & (v <= v_r);
    Array reject = (k < 0.0) | ((us < 0.013) & (v > us));
    Array accept = accept1 | (logical_not(reject) & (sv <= t));
    return std::vector<Array>{where(accept, k, c[0]), c[1] | accept, ks[0]};
  };
  std::vector<Array> out = while_flat(more, step, {full(s, -1, lam.dtype()), zeros(s, DType::bool_), key});
  return out[0].astype(d);
}

// ---- binomial ------------------------------------------------------------------------------------------
Array binomial_inversion(const Array& key, const Array& count, const Array& prob, const Shape& s, DType d) {
  Array log1mp = log1p(negative(prob));
  FlatFn more = [&](const std::vector<Array>& c) { return std::vector<Array>{any(c[1] <= count)}; };
  FlatFn step = [&](const std::vector<Array>& c) {
    std::vector<Array> ks = split_n(c[2], 2);  // (subkey, key), in JAX's order
    Array num = where(c[1] <= count, c[0] + 1.0, c[0]);
    Array u = uniform(ks[0], s, prob.dtype());
    Array geom = ceil(log(u) / log1mp);
    return std::vector<Array>{num, c[1] + geom, ks[1]};
  };
  std::vector<Array> out = while_flat(more, step, {zeros(s, prob.dtype()), zeros(s, prob.dtype()), key});
  return (out[0] - 1.0).astype(d);
}

// log k! - (k + 1/2) log(k + 1) + (k + 1) - log(2π)/2 for k <= 9 from a table, else its series.
Array stirling_tail(const Array& k) {
  Array table = array(std::vector<double>{0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                                           0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                                           0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                                           0.00833056343336287})
                    .astype(k.dtype());
  Array small = k <= 9.0;
  Array kc = clip(k, Array::scalar(0.0, k.dtype()), Array::scalar(9.0, k.dtype()));
  Array kp1sq = (kc + 1.0) * (kc + 1.0);
  Array approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (kc + 1.0);
  Array looked_up = take(table, floor(kc).astype(DType::i32));
  return where(small, looked_up, approx);
}

Array binomial_btrs(const Array& key, const Array& count, const Array& prob, const Shape& s, DType d) {
  Array stddev = sqrt(count * prob * (1.0 - prob));
  Array b = stddev * 2.53 + 1.15;
  Array a = (b * 0.0248 - 0.0873) + prob * 0.01;  // JAX's order: (-0.0873 + 0.0248 b) + 0.01 p
  Array c = count * prob + 0.5;
  Array v_r = 0.92 - 4.2 / b;
  Array r = prob / (1.0 - prob);
  Array alpha = (5.1 / b + 2.83) * stddev;
  Array m = floor((count + 1.0) * prob);
  FlatFn more = [](const std::vector<Array>& st) { return std::vector<Array>{any(logical_not(st[1]))}; };
  FlatFn step = [&](const std::vector<Array>& st) {
    std::vector<Array> ks = split_n(st[2], 3);
    Array u = uniform(ks[1], s, prob.dtype());
    Array v = uniform(ks[2], s, prob.dtype());
    u = u - 0.5;
    Array us = 0.5 - abs(u);
    Array accept1 = (us >= 0.07) & (v <= v_r);
    Array k = floor((a * 2.0 / us + b) * u + c);
    Array reject = (k < 0.0) | (k > count);
    Array lv = log(v * alpha / (a / (us * us) + b));
    Array ub = (m + 0.5) * log((m + 1.0) / (r * (count - m + 1.0))) +
               (count + 1.0) * log((count - m + 1.0) / (count - k + 1.0)) +
               (k + 0.5) * log(r * (count - k + 1.0) / (k + 1.0)) + stirling_tail(m) + stirling_tail(count - m) -
               stirling_tail(k) - stirling_tail(count - k);
    Array accept = accept1 | (logical_not(reject) & (lv <= ub));
    return std::vector<Array>{where(accept, k, st[0]), st[1] | accept, ks[0]};
  };
  std::vector<Array> out = while_flat(more, step, {full(s, -1, prob.dtype()), zeros(s, DType::bool_), key});
  return out[0].astype(d);
}

}  // namespace

Array poisson(const Array& key, const Array& lam0, std::optional<Shape> shape, DType d) {
  check_key(key, "poisson");
  if (!is_integer(d)) fail<ValueError>("random.poisson: dtype must be an integer dtype, got ", short_name(d));
  Shape s = shape_of(shape, lam0.shape(), "poisson");
  Array lam = broadcast_to(lam0, s).astype(DType::f32);
  Array use_knuth = isnan(lam) | (lam < 10.0);
  Array lam_knuth = where(use_knuth, lam, zeros_like(lam));
  Array lam_rejection = where(use_knuth, full_like(lam, 1e5), lam);
  Array result = where(use_knuth, poisson_knuth(key, lam_knuth, s, d), poisson_rejection(key, lam_rejection, s, d));
  return where(lam == 0.0, zeros_like(result), result);
}

Array binomial(const Array& key, const Array& n0, const Array& p0, std::optional<Shape> shape, DType d) {
  check_key(key, "binomial");
  if (!is_floating(d)) fail<ValueError>("random.binomial: dtype must be a float dtype, got ", short_name(d));
  Shape s = shape_of(shape, broadcast_shapes(n0.shape(), p0.shape(), "random.binomial"), "binomial");
  DType pd = inexact(p0.dtype());
  Array prob = broadcast_to(p0.astype(pd), s), count = broadcast_to(n0.astype(pd), s);
  Array p_lt_half = prob < 0.5;
  Array q = where(p_lt_half, prob, 1.0 - prob);
  Array count_bad = isnan(count) | (count < 0.0);
  Array count_inf = isinf(count);
  Array q_nan = isnan(q), q_neg = q < 0.0;
  q = where(q_nan | q_neg, full_like(q, 0.01), q);
  Array use_inversion = count_bad | (count * q <= 10.0);
  count = floor(count);
  Array count_inv = where(use_inversion, count, zeros_like(count));
  Array count_btrs = where(use_inversion, full_like(count, 1e4), count);
  Array q_btrs = where(use_inversion, full_like(q, 0.5), q);
  Array samples = where(use_inversion, binomial_inversion(key, count_inv, q, s, d),
                        binomial_btrs(key, count_btrs, q_btrs, s, d));
  Array invalid = q_neg | q_nan | count_bad;
  samples = where(invalid, full_like(samples, NAN), samples);
  samples = where(count_inf & logical_not(invalid), full_like(samples, INFINITY), samples);
  // for p >= 1/2 the draw counted failures
  return where(p_lt_half | count_bad | q_nan | count_inf, samples, count.astype(d) - samples);
}

Array multinomial(const Array& key, const Array& n0, const Array& p0, std::optional<Shape> shape, DType d) {
  check_key(key, "multinomial");
  if (p0.ndim() < 1) fail<ValueError>("random.multinomial: p needs at least one dimension, got ", p0.aval().str());
  // JAX's promote_dtypes_inexact(n, p): promoted together (a weak integer n takes p's float), then inexact
  DType pd = inexact(promote_types(n0.dtype(), n0.weak_type(), p0.dtype(), p0.weak_type()));
  Shape s = shape.value_or(p0.shape());
  if (s.empty()) fail<ValueError>("random.multinomial: the shape must end with the number of outcomes");
  Shape batch(s.begin(), s.end() - 1);
  Array n = broadcast_to(n0.astype(pd), batch);
  Array p = moveaxis(broadcast_to(p0.astype(pd), s), -1, 0);
  // each category's share of the probability left after the ones before it
  Array remaining = cumsum(p, 0, /*reverse=*/true);
  Array ratios = p / where(remaining == 0.0, ones_like(remaining), remaining);
  Array keys = random::split(key, s.back());
  auto [rest, counts] = scan(
      [](const Array& remainder, const std::pair<Array, Array>& rk) {
        Array count = binomial(rk.second, remainder, clip(rk.first, Array::scalar(0.0, rk.first.dtype()),
                                                          Array::scalar(1.0, rk.first.dtype())),
                               std::nullopt, remainder.dtype());
        return std::pair{remainder - count, count};
      },
      n, std::pair{ratios, keys});
  (void)rest;
  return moveaxis(counts, 0, -1).astype(d);
}

Array geometric(const Array& key, const Array& p0, std::optional<Shape> shape, DType d) {
  check_key(key, "geometric");
  if (!is_integer(d)) fail<ValueError>("random.geometric: dtype must be an integer dtype, got ", short_name(d));
  Shape s = shape_of(shape, p0.shape(), "geometric");
  Array p = p0.astype(p0.weak_type() ? default_float_dtype() : inexact(p0.dtype()));
  Array u = uniform(key, s, p.dtype());
  u = where(u == 0.0, ones_like(u), u);  // JAX's: a zero draw gives 1, not infinity
  Array g = floor(log(u) / broadcast_to(log1p(negative(p)), s)) + 1.0;
  return g.astype(d);
}

Array triangular(const Array& key, const Array& left0, const Array& mode0, const Array& right0,
                 std::optional<Shape> shape, DType d) {
  check_key(key, "triangular");
  if (!is_floating(d)) fail<ValueError>("random.triangular: dtype must be a float dtype, got ", short_name(d));
  Shape ps = broadcast_shapes(broadcast_shapes(left0.shape(), mode0.shape(), "random.triangular"), right0.shape(),
                              "random.triangular");
  Shape s = shape_of(shape, ps, "triangular");
  Array left = broadcast_to(left0.astype(d), s), mode = broadcast_to(mode0.astype(d), s), right = broadcast_to(right0.astype(d), s);
  Array fc = (mode - left) / (right - left);
  Array u = uniform(key, s, d);
  Array out1 = left + sqrt(u * (right - left) * (mode - left));
  Array out2 = right - sqrt((1.0 - u) * (right - left) * (right - mode));
  return where(u < fc, out1, out2);
}

Array lognormal(const Array& key, const Array& sigma, std::optional<Shape> shape, DType d) {
  check_key(key, "lognormal");
  if (!is_floating(d)) fail<ValueError>("random.lognormal: dtype must be a float dtype, got ", short_name(d));
  Shape s = shape_of(shape, sigma.shape(), "lognormal");
  return exp(normal(key, s, d) * broadcast_to(sigma.astype(d), s));
}

}  // namespace graft::random
