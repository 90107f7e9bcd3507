// jax.random's samplers beyond the basic ones (graft/random/random.h), for graft.random.
#include "common.h"

namespace graft::python {

namespace {
std::optional<Shape> opt_shape(py::handle s) {
  if (s.is_none()) return std::nullopt;
  return to_shape(s);
}

// JAX's mode= strings ("low", "high", "highest"; None: "low")
random::SampleMode sample_mode(py::handle m, const char* op) {
  if (m.is_none()) return random::SampleMode::low;
  std::string s = py::str(m);
  if (s == "low") return random::SampleMode::low;
  if (s == "high") return random::SampleMode::high;
  if (s == "highest") return random::SampleMode::highest;
  fail<ValueError>("random.", op, ": mode must be 'low', 'high' or 'highest', got '", s, "'");
}
}  // namespace

void bind_random(py::module_& m) {
  using namespace py::literals;
  m.def("random_bits", [](py::handle k, py::handle s, py::handle d) {
    return random::bits(to_array(k), to_shape(s), to_dtype(d));
  }, "key"_a, "shape"_a = py::tuple(), "dtype"_a = "uint32");
  m.def("random_categorical", [](py::handle k, py::handle logits, int64_t axis, py::handle s, bool replace, py::handle mode) {
    return random::categorical(to_array(k), to_array(logits), axis, opt_shape(s), replace, sample_mode(mode, "categorical"));
  }, "key"_a, "logits"_a, "axis"_a = -1, "shape"_a = py::none(), "replace"_a = true, "mode"_a = py::none());
  m.def("random_gumbel", [](py::handle k, py::handle s, py::handle d, py::handle mode) {
    return random::gumbel(to_array(k), to_shape(s), to_dtype(d), sample_mode(mode, "gumbel"));
  }, "key"_a, "shape"_a = py::tuple(), "dtype"_a = "float_", "mode"_a = py::none());
  m.def("random_truncated_normal_arrays", [](py::handle k, py::handle lo, py::handle hi, py::handle s, py::handle d) {
    return random::truncated_normal(to_array(k), to_array(lo), to_array(hi), opt_shape(s), to_dtype(d));
  }, "key"_a, "lower"_a, "upper"_a, "shape"_a = py::none(), "dtype"_a = "float_");
  m.def("random_truncated_normal", [](py::handle k, double lo, double hi, py::handle s, py::handle d) {
    return random::truncated_normal(to_array(k), lo, hi, to_shape(s), to_dtype(d));
  }, "key"_a, "lower"_a, "upper"_a, "shape"_a = py::tuple(), "dtype"_a = "float_");
  m.def("random_randint", [](py::handle k, py::handle s, py::handle lo, py::handle hi, py::handle d) {
    return random::randint(to_array(k), to_shape(s), to_array(lo), to_array(hi), to_dtype(d));
  }, "key"_a, "shape"_a, "minval"_a, "maxval"_a, "dtype"_a = "int_");
  m.def("random_choice", [](py::handle k, py::handle a, py::handle s, bool replace, py::handle p, int64_t axis, py::handle mode) {
    return random::choice(to_array(k), to_array(a), to_shape(s), replace,
                          p.is_none() ? std::nullopt : std::optional<Array>(to_array(p)), axis, sample_mode(mode, "choice"));
  }, "key"_a, "a"_a, "shape"_a = py::tuple(), "replace"_a = true, "p"_a = py::none(), "axis"_a = 0, "mode"_a = py::none());
  m.def("random_uniform_between", [](py::handle k, py::handle s, py::handle d, py::handle lo, py::handle hi) {
    return random::uniform(to_array(k), to_shape(s), to_dtype(d), to_array(lo), to_array(hi));
  }, "key"_a, "shape"_a, "dtype"_a, "minval"_a, "maxval"_a);
  m.def("random_permutation_of", [](py::handle k, py::handle x, int64_t axis, bool independent) {
    return random::permutation(to_array(k), to_array(x), axis, independent);
  }, "key"_a, "x"_a, "axis"_a = 0, "independent"_a = false);
  using Plain = Array (*)(const Array&, const Shape&, DType);
  auto plain = [&](const char* name, Plain f) {
    m.def(name, [f](py::handle k, py::handle s, py::handle d) { return f(to_array(k), to_shape(s), to_dtype(d)); },
          "key"_a, "shape"_a = py::tuple(), "dtype"_a = "float_");
  };
  plain("random_exponential", &random::exponential);
  plain("random_laplace", &random::laplace);
  plain("random_logistic", &random::logistic);
  plain("random_cauchy", &random::cauchy);
  plain("random_maxwell", &random::maxwell);
  m.def("random_rademacher", [](py::handle k, py::handle s, py::handle d) {
    return random::rademacher(to_array(k), to_shape(s), to_dtype(d));
  }, "key"_a, "shape"_a, "dtype"_a = "int_");
  using OneParam = Array (*)(const Array&, const Array&, std::optional<Shape>, DType);
  auto one_param = [&](const char* name, const char* pname, OneParam f) {
    m.def(name, [f](py::handle k, py::handle p, py::handle s, py::handle d) {
      return f(to_array(k), to_array(p), opt_shape(s), to_dtype(d));
    }, "key"_a, py::arg(pname), "shape"_a = py::none(), "dtype"_a = "float_");
  };
  one_param("random_pareto", "b", &random::pareto);
  one_param("random_rayleigh", "scale", &random::rayleigh);
  one_param("random_wald", "mean", &random::wald);
  m.def("random_double_sided_maxwell", [](py::handle k, py::handle loc, py::handle scale, py::handle s, py::handle d) {
    return random::double_sided_maxwell(to_array(k), to_array(loc), to_array(scale), to_shape(s), to_dtype(d));
  }, "key"_a, "loc"_a, "scale"_a, "shape"_a = py::tuple(), "dtype"_a = "float_");
  m.def("random_weibull_min", [](py::handle k, py::handle scale, py::handle c, py::handle s, py::handle d) {
    return random::weibull_min(to_array(k), to_array(scale), to_array(c), to_shape(s), to_dtype(d));
  }, "key"_a, "scale"_a, "concentration"_a, "shape"_a = py::tuple(), "dtype"_a = "float_");
  m.def("random_multivariate_normal", [](py::handle k, py::handle mean, py::handle cov, py::handle s, py::handle d,
                                         const std::string& method) {
    return random::multivariate_normal(to_array(k), to_array(mean), to_array(cov), opt_shape(s),
                                       d.is_none() ? std::nullopt : std::optional<DType>(to_dtype(d)), method);
  }, "key"_a, "mean"_a, "cov"_a, "shape"_a = py::none(), "dtype"_a = py::none(), "method"_a = "cholesky");
  one_param("random_gamma", "a", &random::gamma);
  one_param("random_loggamma", "a", &random::loggamma);
  one_param("random_dirichlet", "alpha", &random::dirichlet);
  one_param("random_chisquare", "df", &random::chisquare);
  one_param("random_t", "df", &random::t);
  using TwoParams = Array (*)(const Array&, const Array&, const Array&, std::optional<Shape>, DType);
  auto two_params = [&](const char* name, const char* p1, const char* p2, TwoParams f) {
    m.def(name, [f](py::handle k, py::handle a, py::handle b, py::handle s, py::handle d) {
      return f(to_array(k), to_array(a), to_array(b), opt_shape(s), to_dtype(d));
    }, "key"_a, py::arg(p1), py::arg(p2), "shape"_a = py::none(), "dtype"_a = "float_");
  };
  two_params("random_beta", "a", "b", &random::beta);
  two_params("random_binomial", "n", "p", &random::binomial);
  two_params("random_multinomial", "n", "p", &random::multinomial);
  m.def("random_poisson", [](py::handle k, py::handle lam, py::handle s, py::handle d) {
    return random::poisson(to_array(k), to_array(lam), opt_shape(s), to_dtype(d));
  }, "key"_a, "lam"_a, "shape"_a = py::none(), "dtype"_a = "int_");
  m.def("random_geometric", [](py::handle k, py::handle p, py::handle s, py::handle d) {
    return random::geometric(to_array(k), to_array(p), opt_shape(s), to_dtype(d));
  }, "key"_a, "p"_a, "shape"_a = py::none(), "dtype"_a = "int_");
  m.def("random_triangular", [](py::handle k, py::handle l, py::handle mo, py::handle r, py::handle s, py::handle d) {
    return random::triangular(to_array(k), to_array(l), to_array(mo), to_array(r), opt_shape(s), to_dtype(d));
  }, "key"_a, "left"_a, "mode"_a, "right"_a, "shape"_a = py::none(), "dtype"_a = "float_");
  one_param("random_lognormal", "sigma", &random::lognormal);
  two_params("random_f", "dfnum", "dfden", &random::f);
  m.def("random_generalized_normal", [](py::handle k, double p, py::handle s, py::handle d) {
    return random::generalized_normal(to_array(k), p, to_shape(s), to_dtype(d));
  }, "key"_a, "p"_a, "shape"_a = py::tuple(), "dtype"_a = "float_");
  m.def("random_ball", [](py::handle k, int64_t dim, double p, py::handle s, py::handle d) {
    return random::ball(to_array(k), dim, p, to_shape(s), to_dtype(d));
  }, "key"_a, "d"_a, "p"_a = 2.0, "shape"_a = py::tuple(), "dtype"_a = "float_");
  m.def("lax_random_gamma_grad", [](py::handle a, py::handle x) {
    return lax::random_gamma_grad(to_array(a), to_array(x));
  }, "a"_a, "x"_a);
  m.def("random_orthogonal", [](py::handle k, int64_t n, py::handle s, py::handle d, std::optional<int64_t> mm) {
    return random::orthogonal(to_array(k), n, to_shape(s), to_dtype(d), mm);
  }, "key"_a, "n"_a, "shape"_a = py::tuple(), "dtype"_a = "float_", "m"_a = py::none());
}

}  // namespace graft::python
