// The gamma family of jax.random: gamma and loggamma (Marsaglia and Tsang's rejection sampler, one key per
// element, as JAX), with JAX's implicit reparameterization gradient in the shape parameter (the primitive
// random_gamma_grad), and the samplers built on them: beta, dirichlet, chisquare, t, f, generalized_normal
// and ball.
#include <cmath>
#include <limits>

#include "graft/ops/ops.h"
#include "graft/random/internal.h"
#include "graft/random/random.h"
#include "graft/transforms/api.h"
#include "graft/transforms/control.h"
#include "graft/transforms/custom.h"

namespace graft::random {

using namespace detail;

namespace {

// JAX's _gamma_one: one sample of Gamma(alpha) (alpha a scalar of dtype d) from one key. Below 1, alpha is
// boosted to alpha + 1 and the sample scaled by u^(1/alpha).
Array gamma_one(const Array& key, const Array& alpha, bool log_space) {
  DType d = alpha.dtype();
  auto cst = [d](double v) { return Array::scalar(v, d); };
  Array zero = cst(0), one = cst(1);
  Array boost_mask = lax::ge(alpha, one);
  Array a = lax::select(boost_mask, alpha, lax::add(alpha, one));
  Array dd = lax::sub(a, cst(1.0 / 3.0));
  Array c = lax::div(cst(1.0 / 3.0), lax::sqrt(dd));
  Array ks = random::split(key, 2);
  Array u_boost = uniform(ks[1], {}, d);
  FlatFn accept_not_yet = [&](const std::vector<Array>& s) {
    const Array &X = s[1], &V = s[2], &U = s[3];
    Array squeeze_test = lax::ge(U, lax::sub(one, lax::mul(cst(0.0331), lax::mul(X, X))));
    Array log_test = lax::ge(lax::log(U), lax::add(lax::mul(X, cst(0.5)),
                                                   lax::mul(dd, lax::add(lax::sub(one, V), lax::log(V)))));
    return std::vector<Array>{lax::bitwise_and(squeeze_test, log_test)};
  };
  FlatFn propose = [&](const std::vector<Array>& s) {
    Array k3 = random::split(s[0], 3);
    // a normal x with v = (1 + c x) > 0
    FlatFn v_not_positive = [&](const std::vector<Array>& t) { return std::vector<Array>{lax::le(t[2], zero)}; };
    FlatFn draw = [&](const std::vector<Array>& t) {
      Array kk = random::split(t[0], 2);
      Array x = normal(kk[1], {}, d);
      return std::vector<Array>{kk[0], x, lax::add(one, lax::mul(x, c))};
    };
    std::vector<Array> xv = while_flat(v_not_positive, draw, {k3[1], zero, cst(-1)});
    Array X = lax::mul(xv[1], xv[1]);
    Array V = lax::mul(lax::mul(xv[2], xv[2]), xv[2]);
    Array U = uniform(k3[2], {}, d);
    return std::vector<Array>{k3[0], X, V, U};
  };
  // the initial state makes the first test fail, so that one proposal is always drawn
  std::vector<Array> out = while_flat(accept_not_yet, propose, {ks[0], zero, one, cst(2)});
  const Array& V = out[2];
  // the boost draws from the key split off first: 1 - u in (0, 1], and its log as -exponential (JAX >= 0.4.14)
  if (log_space) {
    Array log_u = lax::log1p(lax::neg(u_boost));
    Array log_boost = lax::select(lax::bitwise_or(boost_mask, lax::eq(log_u, zero)), zero,
                                  lax::mul(log_u, lax::div(one, alpha)));
    return lax::add(lax::add(lax::log(dd), lax::log(V)), log_boost);
  }
  Array boost = lax::select(boost_mask, one, lax::pow(lax::sub(one, u_boost), lax::div(one, alpha)));
  return lax::mul(lax::mul(dd, V), boost);
}

// One sample per element of a (one key each: split(key, a.size)), without a derivative rule.
Array gamma_samples(const Array& key, const Array& a, bool log_space) {
  int64_t n = a.size();
  if (n == 0) return zeros_like(a);
  Array keys = random::split(key, n);
  FlatFn one = [log_space](const std::vector<Array>& x) { return std::vector<Array>{gamma_one(x[0], x[1], log_space)}; };
  std::vector<Array> s = vmap_flat(one, {keys, lax::reshape(a, {n})}, {0, 0}, {0});
  return lax::reshape(s[0], a.shape());
}

Array gamma_with_grad(const Array& key, const Array& a, bool log_space);

// Gamma samples of the shape of a whose derivative in a is the implicit reparameterization gradient:
// dx/da = random_gamma_grad(a, x) (and d log x / da = that / x in log space).
Array gamma_with_grad(const Array& key, const Array& a, bool log_space) {
  FlatFn f = [log_space](const std::vector<Array>& x) { return std::vector<Array>{gamma_samples(x[0], x[1], log_space)}; };
  CustomJvpRule rule = [log_space](const std::vector<Array>& p, const std::vector<Array>& t) {
    // the samples through this same rule, so that an outer derivative of them is the implicit one too (and one
    // of the gradient below stops at random_gamma_grad, which has none, as in JAX)
    Array s = gamma_with_grad(p[0], p[1], log_space);
    Array g;
    if (log_space) {
      Array x = exp(s);
      x = where(x == 0.0, full_like(x, tiny_of(x.dtype())), x);
      g = lax::random_gamma_grad(p[1], x) / x;
    } else {
      g = lax::random_gamma_grad(p[1], s);
    }
    return std::make_pair(std::vector<Array>{s}, std::vector<Array>{t[1] * g});
  };
  return custom_jvp_apply(f, rule, {key, a}, log_space ? "random_loggamma" : "random_gamma")[0];
}

Shape shape_or(std::optional<Shape> shape, const Shape& params, const char* op) {
  if (!shape) return params;
  if (!broadcasts_to(params, *shape))
    fail<ValueError>(op, ": the parameters' shape (", shape_str(params), ") must broadcast to the shape argument (",
                     shape_str(*shape), ")");
  return *shape;
}

Array gamma_impl(const Array& key, const Array& a0, std::optional<Shape> shape, DType d, bool log_space,
                 const char* op) {
  check_key(key, op);
  if (!is_floating(d)) fail<ValueError>("random.", op, ": dtype must be a float dtype, got ", short_name(d));
  if (!a0.valid()) fail<ValueError>("random.", op, ": a is a null array");
  Shape s = shape_or(shape, a0.shape(), op);
  Array a = broadcast_to(a0.astype(d), s);
  return gamma_with_grad(key, a, log_space);
}

}  // namespace

Array gamma(const Array& key, const Array& a, std::optional<Shape> shape, DType d) {
  return gamma_impl(key, a, shape, d, false, "gamma");
}

Array loggamma(const Array& key, const Array& a, std::optional<Shape> shape, DType d) {
  return gamma_impl(key, a, shape, d, true, "loggamma");
}

Array beta(const Array& key, const Array& a, const Array& b, std::optional<Shape> shape, DType d) {
  check_key(key, "beta");
  Shape s = shape_or(shape, broadcast_shapes(a.shape(), b.shape(), "random.beta"), "random.beta");
  Array ks = random::split(key, 2);
  Array lga = loggamma(ks[0], broadcast_to(a.astype(d), s), s, d);
  Array lgb = loggamma(ks[1], broadcast_to(b.astype(d), s), s, d);
  // gamma_a / (gamma_a + gamma_b) without overflow or underflow
  Array log_max = maximum(lga, lgb);
  Array ga = exp(lga - log_max), gb = exp(lgb - log_max);
  return ga / (ga + gb);
}

Array dirichlet(const Array& key, const Array& alpha, std::optional<Shape> shape, DType d) {
  check_key(key, "dirichlet");
  if (alpha.ndim() < 1) fail<ValueError>("random.dirichlet: needs alpha.ndim >= 1, got ", alpha.aval().str());
  Shape batch(alpha.shape().begin(), alpha.shape().end() - 1);
  Shape s = shape_or(shape, batch, "random.dirichlet");
  s.push_back(alpha.shape().back());
  Array lg = loggamma(key, alpha.astype(d), s, d);
  // the normalized gammas, as a softmax of their logs
  Array e = exp(lg - stop_gradient(max(lg, -1, true)));
  return e / sum(e, -1, true);
}

Array chisquare(const Array& key, const Array& df, std::optional<Shape> shape, DType d) {
  check_key(key, "chisquare");
  Shape s = shape_or(shape, df.shape(), "random.chisquare");
  return exp(loggamma(key, df.astype(d) / 2.0, s, d)) * 2.0;
}

Array t(const Array& key, const Array& df0, std::optional<Shape> shape, DType d) {
  check_key(key, "t");
  Shape s = shape_or(shape, df0.shape(), "random.t");
  Array ks = random::split(key, 2);
  Array n = normal(ks[0], s, d);
  Array half_df = df0.astype(d) / 2.0;
  Array g = gamma(ks[1], half_df, s, d);
  return n * sqrt(half_df / g);
}

Array f(const Array& key, const Array& dfnum, const Array& dfden, std::optional<Shape> shape, DType d) {
  check_key(key, "f");
  Shape s = shape_or(shape, broadcast_shapes(dfden.shape(), dfnum.shape(), "random.f"), "random.f");
  Array ks = random::split(key, 2);  // (key for dfden, key for dfnum), as JAX
  Array num = chisquare(ks[1], dfnum, s, d) / broadcast_to(dfnum.astype(d), s);
  Array den = chisquare(ks[0], dfden, s, d) / broadcast_to(dfden.astype(d), s);
  return num / den;
}

Array generalized_normal(const Array& key, double p, const Shape& shape, DType d) {
  check_key(key, "generalized_normal");
  if (!(p > 0)) fail<ValueError>("random.generalized_normal: p must be positive, got ", p);
  Array ks = random::split(key, 2);
  // p is traced by JAX's jitted helper: 1 / p is computed in the default float dtype
  DType fd = default_float_dtype();
  Array inv = lax::div(Array::scalar(1.0, fd), Array::scalar(p, fd));
  Array g = gamma(ks[0], inv.astype(d), shape, d);
  Array r = rademacher(ks[1], shape, d);
  return r * power(g, inv.astype(d));
}

Array ball(const Array& key, int64_t dim, double p, const Shape& shape, DType d) {
  check_key(key, "ball");
  if (dim < 0) fail<ValueError>("random.ball: d must be non-negative, got ", dim);
  Array ks = random::split(key, 2);
  Shape gs = shape;
  gs.push_back(dim);
  Array g = generalized_normal(ks[0], p, gs, d);
  Array e = exponential(ks[1], shape, d);
  DType fd = default_float_dtype();
  Array pa = Array::scalar(p, fd), inv = lax::div(Array::scalar(1.0, fd), pa);
  return g / expand_dims(power(sum(power(abs(g), pa.astype(d)), -1) + e, inv.astype(d)), -1);
}

}  // namespace graft::random
