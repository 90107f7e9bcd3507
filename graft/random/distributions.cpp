// jax.random's samplers beyond uniform and normal, by JAX's algorithms (jax/_src/random.py): the same
// keys split the same way, the same uniform draws transformed by the same formulas.
#include <cmath>
#include <limits>

#include "graft/ops/linalg.h"
#include "graft/ops/numpy_stats.h"
#include "graft/ops/ops.h"
#include "graft/random/internal.h"
#include "graft/random/random.h"

namespace graft::random {

namespace detail {
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}
}  // namespace detail

using namespace detail;

namespace {

// finfo(d).eps and .epsneg: 2^-nmant and 2^-(nmant + 1).
double eps_of(DType d) { return std::ldexp(1.0, -mantissa_bits(d)); }
double epsneg_of(DType d) { return std::ldexp(1.0, -(mantissa_bits(d) + 1)); }

DType float_dtype_for(DType d, const char* op) {
  if (!is_floating(d)) fail<ValueError>("random.", op, ": dtype must be a float dtype, got ", short_name(d));
  return d;
}

// The two keys of split(key) (JAX's `k1, k2 = _split(key)`).
std::pair<Array, Array> split2(const Array& key) {
  Array ks = random::split(key, 2);
  return {ks[0], ks[1]};
}

Array param(const Array& x, DType d, const char* op) {
  if (!x.valid()) fail<ValueError>("random.", op, ": a parameter is a null array");
  return x.astype(d);
}

// The sample shape: `shape` when given (it must contain the parameters' broadcast shape), else theirs.
Shape sample_shape(std::optional<Shape> shape, std::initializer_list<const Array*> params, const char* op) {
  Shape ps;
  for (const Array* p : params) ps = broadcast_shapes(ps, p->shape(), op);
  if (!shape) return ps;
  if (!broadcasts_to(ps, *shape))
    fail<ValueError>("random.", op, ": the parameters' shape (", shape_str(ps),
                     ") must broadcast to the shape argument (", shape_str(*shape), ")");
  return *shape;
}

int int_bits(DType d) { return static_cast<int>(itemsize(d) * 8); }

// JAX's _convert_and_clip_integer: v (integers, as i64) clipped to d's range, then converted.
Array clip_to(const Array& v, DType d) {
  double lo = 0, hi = 0;
  int bits = int_bits(d);
  if (is_signed_int(d)) {
    lo = -std::ldexp(1.0, bits - 1);
    hi = std::ldexp(1.0, bits - 1) - 1;
  } else {
    hi = std::ldexp(1.0, std::min(bits, 63)) - 1;
  }
  Array w = v.astype(DType::i64);
  return lax::convert_element_type(clip(w, Array::scalar(lo, DType::i64), Array::scalar(hi, DType::i64)), d);
}

}  // namespace

Array randint(const Array& key, const Shape& shape, const Array& minval0, const Array& maxval0, DType d) {
  check_key(key, "randint");
  if (!is_integer(d)) fail<TypeError>("random.randint: dtype must be an integer dtype, got ", short_name(d));
  sample_shape(shape, {&minval0, &maxval0}, "random.randint");
  if (int_bits(d) < 32) {
    // JAX samples 8- and 16-bit integers in int32 (bounds clipped to the dtype's range, maxval to its
    // largest value + 1) and converts: less bias than two words of 8 or 16 bits
    bool sgn = is_signed_int(d);
    double lo = sgn ? -std::ldexp(1.0, int_bits(d) - 1) : 0, hi = sgn ? std::ldexp(1.0, int_bits(d) - 1) - 1 : std::ldexp(1.0, int_bits(d)) - 1;
    Array mn = clip(minval0.astype(DType::i32), Array::scalar(lo, DType::i32), Array::scalar(hi, DType::i32));
    Array mx = clip(maxval0.astype(DType::i32), Array::scalar(lo, DType::i32), Array::scalar(hi + 1, DType::i32));
    return randint(key, shape, mn, mx, DType::i32).astype(d);
  }
  Array minval = is_integer(minval0.dtype()) ? minval0 : minval0.astype(DType::i32);
  Array maxval = is_integer(maxval0.dtype()) ? maxval0 : maxval0.astype(DType::i32);
  int nbits = int_bits(d);
  DType ud = uint_of_bits(nbits);
  // where maxval exceeds the dtype's largest value (randint(k, s, 0, 256, u8)), the span is one larger
  double dmax = is_signed_int(d) ? std::ldexp(1.0, nbits - 1) - 1 : std::ldexp(1.0, nbits) - 1;
  Array out_of_range = maxval.astype(DType::f64) > Array::scalar(dmax, DType::f64);
  Array lo = broadcast_to(clip_to(minval, d), shape), hi = broadcast_to(clip_to(maxval, d), shape);
  out_of_range = broadcast_to(out_of_range, shape);
  auto [k1, k2] = split2(key);
  Array higher = random_bits(k1, nbits, shape), lower = random_bits(k2, nbits, shape);
  Array span = lax::convert_element_type(lax::sub(hi, lo), ud);
  Array one = lax::full(shape, 1, ud);
  span = lax::select(lax::le(hi, lo), one, span);
  span = lax::select(lax::bitwise_and(out_of_range, lax::gt(hi, lo)), lax::add(span, one), span);
  // (a * 2^nbits + b) mod span without wider integers: 2^nbits mod span = (2^(nbits/2) mod span)^2 mod span
  Array mult = lax::rem(lax::full(shape, std::ldexp(1.0, nbits / 2), ud), span);
  mult = lax::rem(lax::mul(mult, mult), span);
  Array offset = lax::add(lax::mul(lax::rem(higher, span), mult), lax::rem(lower, span));
  offset = lax::rem(offset, span);
  return lax::add(lo, lax::convert_element_type(offset, d));
}

Array choice(const Array& key, const Array& a, const Shape& shape, bool replace, std::optional<Array> p, int64_t axis,
             SampleMode mode) {
  check_key(key, "choice");
  if (!a.valid()) fail<ValueError>("random.choice: a is a null array");
  int64_t n_inputs;
  if (a.ndim() == 0) {
    if (!is_integer(a.dtype())) fail<TypeError>("random.choice: a scalar a must be an integer, got ", a.aval().str());
    n_inputs = static_cast<int64_t>(a.concretize("random.choice").item<double>());
  } else {
    axis = normalize_axis(axis, a.ndim(), "random.choice");
    n_inputs = a.shape()[axis];
  }
  int64_t n_draws = numel(shape);
  if (n_draws == 0) return zeros(shape, a.dtype());
  if (n_inputs <= 0) fail<ValueError>("random.choice: a must be greater than 0 unless no samples are taken");
  if (!replace && n_draws > n_inputs)
    fail<ValueError>("random.choice: cannot take a larger sample (", n_draws, ") than the population (", n_inputs,
                     ") with replace=false");
  Array result;
  if (!p) {
    if (replace) {
      DType id = default_int_dtype();
      Array ind = randint(key, shape, Array::scalar(0, id), Array::scalar(static_cast<double>(n_inputs), id), id);
      result = a.ndim() == 0 ? ind : take(a, ind, axis);
    } else {
      Array perm = a.ndim() == 0 ? permutation(key, n_inputs) : permutation(key, a, axis);
      result = lax::slice_in_dim(perm, 0, n_draws, 1, a.ndim() == 0 ? 0 : axis);
    }
  } else {
    Array pa = is_floating(p->dtype()) && !p->weak_type() ? *p : p->astype(default_float_dtype());
    if (pa.shape() != Shape{n_inputs})
      fail<ValueError>("random.choice: p must be None or match the shape of a (", n_inputs, "), got ", pa.aval().str());
    Array ind;
    if (replace) {
      Array cum = cumsum(pa);
      Array total = cum[{-1}];
      Array r = total * (1.0 - uniform(key, shape, cum.dtype()));
      ind = searchsorted(cum, r).astype(default_int_dtype());
    } else {
      // the Gumbel top-k trick
      Array g = negative(gumbel(key, {n_inputs}, pa.dtype(), mode)) - log(pa);
      ind = lax::slice_in_dim(argsort(g), 0, n_draws, 1, 0).reshape(shape).astype(default_int_dtype());
    }
    result = a.ndim() == 0 ? ind : take(a, reshape(ind, {-1}), axis);
  }
  if (a.ndim() == 0) return result.reshape(shape);
  Shape out = a.shape();
  out.erase(out.begin() + axis);
  out.insert(out.begin() + axis, shape.begin(), shape.end());
  return result.reshape(out);
}

Array permutation(const Array& key, const Array& x, int64_t axis, bool independent) {
  check_key(key, "permutation");
  if (x.ndim() == 0) return permutation(key, x.concretize("random.permutation").item<int64_t>());
  axis = normalize_axis(axis, x.ndim(), "random.permutation");
  if (!independent || x.ndim() == 1) {
    if (axis == 0) return permutation(key, x);
    Array ind = permutation(key, x.shape()[axis]);
    return take(x, ind, axis);
  }
  // every vector along axis shuffled on its own: sorts by fresh random keys of x's shape (JAX's _shuffle)
  int rounds = static_cast<int>(std::ceil(3.0 * std::log(std::max<double>(1.0, double(x.size()))) /
                                          std::log(double(std::numeric_limits<uint32_t>::max()))));
  Array out = x, k = key;
  for (int r = 0; r < rounds; ++r) {
    auto [next, sub] = split2(k);
    k = next;
    Array ops[] = {random_bits(sub, 32, x.shape()), out};
    out = lax::sort(ops, axis, true, 1)[1];
  }
  return out;
}

Array exponential(const Array& key, const Shape& shape, DType d) {
  check_key(key, "exponential");
  float_dtype_for(d, "exponential");
  return negative(log1p(negative(uniform(key, shape, d))));
}

Array laplace(const Array& key, const Shape& shape, DType d) {
  check_key(key, "laplace");
  float_dtype_for(d, "laplace");
  Array u = uniform(key, shape, d, -1.0 + epsneg_of(d), 1.0);
  return sign(u) * log1p(negative(abs(u)));
}

Array logistic(const Array& key, const Shape& shape, DType d) {
  check_key(key, "logistic");
  float_dtype_for(d, "logistic");
  Array x = uniform(key, shape, d, tiny_of(d), 1.0);
  return log(x) - log1p(negative(x));
}

Array cauchy(const Array& key, const Shape& shape, DType d) {
  check_key(key, "cauchy");
  float_dtype_for(d, "cauchy");
  Array u = uniform(key, shape, d, eps_of(d), 1.0);
  return tan((u - 0.5) * M_PI);
}

Array pareto(const Array& key, const Array& b0, std::optional<Shape> shape, DType d) {
  check_key(key, "pareto");
  float_dtype_for(d, "pareto");
  Shape s = sample_shape(shape, {&b0}, "random.pareto");
  return exp(exponential(key, s, d) / param(b0, d, "pareto"));
}

Array rademacher(const Array& key, const Shape& shape, DType d) {
  check_key(key, "rademacher");
  Array b = bernoulli(key, Array(0.5), shape).astype(d);
  return (b * 2 - 1).astype(d);
}

Array maxwell(const Array& key, const Shape& shape, DType d) {
  check_key(key, "maxwell");
  float_dtype_for(d, "maxwell");
  Shape s = shape;
  s.push_back(3);
  Array z = normal(key, s, d);
  return sqrt(sum(z * z, -1));
}

Array double_sided_maxwell(const Array& key, const Array& loc, const Array& scale, const Shape& shape, DType d) {
  check_key(key, "double_sided_maxwell");
  float_dtype_for(d, "double_sided_maxwell");
  Shape ps = broadcast_shapes(loc.shape(), scale.shape(), "random.double_sided_maxwell");
  // JAX's shape: the given one (else the parameters') followed by the parameters' shape
  Shape s = shape.empty() ? ps : shape;
  s.insert(s.end(), ps.begin(), ps.end());
  auto [km, kr] = split2(key);
  Array m = maxwell(km, s, d);
  Array sgn = rademacher(kr, s, d);
  return sgn * m * param(scale, d, "double_sided_maxwell") + param(loc, d, "double_sided_maxwell");
}

Array weibull_min(const Array& key, const Array& scale, const Array& concentration, const Shape& shape, DType d) {
  check_key(key, "weibull_min");
  float_dtype_for(d, "weibull_min");
  Array u = uniform(key, shape, d);
  // the inverse CDF
  return power(negative(log1p(negative(u))), 1.0 / param(concentration, d, "weibull_min")) *
         param(scale, d, "weibull_min");
}

Array rayleigh(const Array& key, const Array& scale, std::optional<Shape> shape, DType d) {
  check_key(key, "rayleigh");
  float_dtype_for(d, "rayleigh");
  Shape s = sample_shape(shape, {&scale}, "random.rayleigh");
  Array u = uniform(key, s, d);
  return param(scale, d, "rayleigh") * sqrt(log(u) * -2.0);
}

Array wald(const Array& key, const Array& mean0, std::optional<Shape> shape, DType d) {
  check_key(key, "wald");
  float_dtype_for(d, "wald");
  Shape s = sample_shape(shape, {&mean0}, "random.wald");
  auto [k1, k2] = split2(key);
  Array mean = broadcast_to(param(mean0, d, "wald"), s);
  Array v = normal(k1, s, d), z = uniform(k2, s, d);
  Array y = v * v, y_sq = y * y, mean_sq = mean * mean;
  Array sqrt_term = sqrt(mean * y * 4.0 + mean_sq * y_sq);
  Array x = mean + mean_sq * y / 2.0 - mean / 2.0 * sqrt_term;
  return where(z <= mean / (mean + x), x, mean_sq / x);
}

Array multivariate_normal(const Array& key, const Array& mean0, const Array& cov0, std::optional<Shape> shape,
                          std::optional<DType> dtype, const std::string& method) {
  check_key(key, "multivariate_normal");
  if (method != "cholesky" && method != "eigh" && method != "svd")
    fail<ValueError>("random.multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', got '", method, "'");
  if (mean0.ndim() < 1) fail<ValueError>("random.multivariate_normal: needs mean.ndim >= 1, got ", mean0.aval().str());
  if (cov0.ndim() < 2) fail<ValueError>("random.multivariate_normal: needs cov.ndim >= 2, got ", cov0.aval().str());
  int64_t n = mean0.shape().back();
  if (cov0.shape()[cov0.ndim() - 1] != n || cov0.shape()[cov0.ndim() - 2] != n)
    fail<ValueError>("random.multivariate_normal: needs cov of shape (..., ", n, ", ", n, "), got ", cov0.aval().str());
  DType md = is_floating(mean0.dtype()) ? mean0.dtype() : DType::f32;
  DType cd = is_floating(cov0.dtype()) ? cov0.dtype() : DType::f32;
  DType pd = promote_types(md, false, cd, false);
  DType d = float_dtype_for(dtype.value_or(pd), "multivariate_normal");
  Array mean = mean0.astype(pd), cov = cov0.astype(pd);
  Shape mb(mean.shape().begin(), mean.shape().end() - 1), cb(cov.shape().begin(), cov.shape().end() - 2);
  Shape batch = broadcast_shapes(mb, cb, "random.multivariate_normal");
  if (shape) {
    if (!broadcasts_to(batch, *shape))
      fail<ValueError>("random.multivariate_normal: the parameters' batch shape (", shape_str(batch),
                       ") must broadcast to the shape argument (", shape_str(*shape), ")");
    batch = *shape;
  }
  Array factor;
  if (method == "svd") {
    auto [u, s, vh] = linalg::svd(cov);
    factor = u * expand_dims(sqrt(s), -2);
  } else if (method == "eigh") {
    auto [w, v] = linalg::eigh(cov);
    factor = v * expand_dims(sqrt(w), -2);
  } else {
    factor = linalg::cholesky(cov);
  }
  Shape zs = batch;
  zs.push_back(n);
  Array z = normal(key, zs, d);
  return mean + squeeze(matmul(factor, expand_dims(z, -1)), -1);
}

Array orthogonal(const Array& key, int64_t n, const Shape& shape, DType d, std::optional<int64_t> m0) {
  check_key(key, "orthogonal");
  float_dtype_for(d, "orthogonal");
  int64_t m = m0.value_or(n);
  if (n < 0 || m < 0) fail<ValueError>("random.orthogonal: n and m must be non-negative, got ", n, " and ", m);
  // JAX's: the QR factors of a tall [max, min] normal matrix, transposed when n < m
  int64_t big = std::max(n, m), small = std::min(n, m);
  Shape s = shape;
  s.push_back(big);
  s.push_back(small);
  Array z = normal(key, s, d);
  auto [q, r] = linalg::qr(z);
  // the signs of r's diagonal make the distribution uniform (Haar)
  Array diag = sum(r * eye(small, std::nullopt, 0, d), -1);
  Array x = q * expand_dims(sign(diag), -2);
  return n < m ? swapaxes(x, -2, -1) : x;
}

}  // namespace graft::random
