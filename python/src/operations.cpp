// Operations (graft.numpy and graft.lax call these), collectives, random, neural-network layers and data.
#include "common.h"
#include "graft/core/config.h"

namespace graft::python {

using namespace pybind11::literals;

void bind_devices(py::module_& m) {
  // ---- operations (graft.numpy and graft.lax call these) ----------------------------------------------------
  m.def("asarray", [](py::handle h, py::object d) {
    return to_array(h, d.is_none() ? std::nullopt : std::optional<DType>(to_dtype(d)));
  }, "x"_a, "dtype"_a = py::none());
  m.def("from_dlpack", &from_dlpack, "x"_a);
  // process-wide switches behind graft.config (JAX's jax.config names)
  m.def("_x64_enabled", &x64_enabled);
  m.def("_set_x64", &set_x64, "on"_a);
  m.def("_debug_nans", &config::debug_nans);
  m.def("_set_debug_nans", &config::set_debug_nans, "on"_a);
  m.def("_debug_infs", &config::debug_infs);
  m.def("_set_debug_infs", &config::set_debug_infs, "on"_a);
  m.def("_threefry_partitionable", &config::threefry_partitionable);
  m.def("_set_threefry_partitionable", &config::set_threefry_partitionable, "on"_a);
  // devices: "cpu", "cuda", "cuda:1" (JAX's device_put commits the array there)
  m.def("device_put", [](py::handle x, const std::string& d) { return device_put(to_array(x), parse_device(d)); }, "x"_a,
        "device"_a);
  m.def("default_device_name", [] { return default_device().str(); });
  struct DefaultDeviceScope {
    Device d;
    std::unique_ptr<DefaultDevice> on;
  };
  py::class_<DefaultDeviceScope>(m, "DefaultDevice")
      .def(py::init([](const std::string& d) { return DefaultDeviceScope{parse_device(d), nullptr}; }), "device"_a)
      .def("__enter__", [](DefaultDeviceScope& s) { s.on = std::make_unique<DefaultDevice>(s.d); })
      .def("__exit__", [](DefaultDeviceScope& s, py::args) { s.on.reset(); });
  m.def("canonical_dtype", [](py::handle d) { return std::string(long_name(to_dtype(d))); });
  // graft.ensure_compile_time_eval(): operations on concrete values run now, even under jit
  struct CompileTimeEval {
    std::unique_ptr<CompileTimeEvalScope> on;
  };
  py::class_<CompileTimeEval>(m, "CompileTimeEval")
      .def(py::init([] { return CompileTimeEval{}; }))
      .def("__enter__", [](CompileTimeEval& s) { s.on = std::make_unique<CompileTimeEvalScope>(); })
      .def("__exit__", [](CompileTimeEval& s, py::args) { s.on.reset(); });
}

void bind_elementwise(py::module_& m) {
  using Un = Array (*)(const Array&);
  using Bin = Array (*)(const Array&, const Array&);
  auto unary = [&](const char* name, Un f) { m.def(name, [f](py::handle x) { return f(to_array(x)); }, "x"_a); };
  unary("negative", &negative);
  unary("abs", &abs);
  unary("sign", &sign);
  unary("real", &graft::real);
  unary("imag", &graft::imag);
  unary("conj", &graft::conj);
  m.def("angle", [](py::handle x, bool deg) { return graft::angle(to_array(x), deg); }, "x"_a, "deg"_a = false);
  m.def("complex", [](py::handle re, py::handle im) { return graft::complex(to_array(re), to_array(im)); }, "re"_a,
        "im"_a);
  unary("floor", &floor);
  unary("ceil", &ceil);
  // NumPy's round(a, decimals): half to even at 10^-decimals (integers are already whole for decimals >= 0)
  m.def("round", [](py::handle a, int64_t decimals) {
    Array x = to_array(a);
    if (decimals == 0) return graft::round(x);
    if (!is_floating(x.dtype())) {
      if (decimals > 0) return x;
      Array f = Array::scalar(std::pow(10.0, static_cast<double>(-decimals)), default_float_dtype());
      return astype(multiply(graft::round(divide(x, f)), f), x.dtype());
    }
    Array f = Array::scalar(std::pow(10.0, static_cast<double>(decimals)), x.dtype());
    return divide(graft::round(multiply(x, f)), f);
  }, "a"_a, "decimals"_a = 0);
  unary("exp", &exp);
  unary("exp2", &exp2);
  unary("log", &log);
  unary("log1p", &log1p);
  unary("log2", &log2);
  unary("log10", &log10);
  unary("expm1", &expm1);
  unary("sqrt", &sqrt);
  unary("rsqrt", &rsqrt);
  unary("cbrt", &cbrt);
  unary("square", &square);
  unary("reciprocal", &reciprocal);
  unary("sin", &sin);
  unary("cos", &cos);
  unary("tan", &tan);
  unary("arcsin", &arcsin);
  unary("arccos", &arccos);
  unary("arctan", &arctan);
  unary("sinh", &sinh);
  unary("cosh", &cosh);
  unary("tanh", &tanh);
  unary("arcsinh", &arcsinh);
  unary("arccosh", &arccosh);
  unary("arctanh", &arctanh);
  unary("erf", &erf);
  unary("erfc", &erfc);
  unary("erf_inv", &erfinv);
  unary("sigmoid", &sigmoid);
  unary("isfinite", &isfinite);
  unary("isnan", &isnan);
  unary("isinf", &isinf);
  unary("logical_not", &logical_not);
  unary("stop_gradient", &stop_gradient);
  unary("relu", &relu);
  unary("relu6", &relu6);
  unary("silu", &silu);
  unary("softplus", &softplus);
  unary("log_sigmoid", &log_sigmoid);
  unary("ravel", &ravel);
  m.def("gelu", [](py::handle x, bool approximate) { return gelu(to_array(x), approximate); }, "x"_a,
        "approximate"_a = true);
  auto binary = [&](const char* name, Bin f) {
    m.def(name, [f](py::handle a, py::handle b) { return f(to_array(a), to_array(b)); }, "x"_a, "y"_a);
  };
  binary("add", &add);
  binary("subtract", &subtract);
  binary("multiply", &multiply);
  binary("divide", &divide);
  binary("floor_divide", &floor_divide);
  binary("remainder", &remainder);
  binary("power", &power);
  binary("maximum", &maximum);
  binary("minimum", &minimum);
  binary("arctan2", &arctan2);
  binary("logaddexp", &logaddexp);
  binary("logical_and", &logical_and);
  binary("logical_or", &logical_or);
  binary("logical_xor", &logical_xor);
  binary("equal", &equal);
  binary("not_equal", &not_equal);
  binary("less", &less);
  binary("less_equal", &less_equal);
  binary("greater", &greater);
  binary("greater_equal", &greater_equal);
  binary("matmul", &matmul);
  binary("dot", &dot);
  binary("vdot", &vdot);
  binary("inner", &inner);
  binary("outer", &outer);
}

void bind_operations(py::module_& m) {
  m.def("where", [](py::handle c, py::handle x, py::handle y) { return where(to_array(c), to_array(x), to_array(y)); });
  m.def("clip", [](py::handle x, py::handle lo, py::handle hi) {
    auto opt = [](py::handle h) { return h.is_none() ? std::nullopt : std::optional<Array>(to_array(h)); };
    return clip(to_array(x), opt(lo), opt(hi));
  }, "x"_a, "min"_a = py::none(), "max"_a = py::none());
  auto reduction = [&](const char* name, Array (*f)(const Array&, AxisArg, bool)) { def_reduction(m, name, f); };
  reduction("sum", &sum);
  reduction("prod", &prod);
  reduction("max", &max);
  reduction("min", &min);
  reduction("mean", &mean);
  reduction("all", &all);
  reduction("any", &any);
  reduction("logsumexp", &logsumexp);
  reduction("norm", &norm);
  def_moment(m, "var", &var);
  def_moment(m, "std", &graft::std);
  m.def("argmax", [](py::handle x, std::optional<int64_t> axis, bool keepdims) { return argmax(to_array(x), axis, keepdims); },
        "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  m.def("argmin", [](py::handle x, std::optional<int64_t> axis, bool keepdims) { return argmin(to_array(x), axis, keepdims); },
        "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  m.def("softmax", [](py::handle x, int64_t axis) { return softmax(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("log_softmax", [](py::handle x, int64_t axis) { return log_softmax(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("cumsum", [](py::handle x, std::optional<int64_t> axis) { return cumsum(to_array(x), axis); }, "x"_a,
        "axis"_a = py::none());
  m.def("sort", [](py::handle x, int64_t axis) { return sort(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("argsort", [](py::handle x, int64_t axis) { return argsort(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("reshape", [](py::handle x, py::handle s) { return reshape(to_array(x), to_shape(s)); }, "x"_a, "shape"_a);
  m.def("transpose", [](py::handle x, py::handle axes) {
    return transpose(to_array(x), axes.is_none() ? Axes{} : to_shape(axes));
  }, "x"_a, "axes"_a = py::none());
  m.def("swapaxes", [](py::handle x, int64_t a, int64_t b) { return swapaxes(to_array(x), a, b); }, "a"_a, "axis1"_a,
        "axis2"_a);
  // moveaxis with sequences of axes too (NumPy's): the other axes keep their order
  m.def("moveaxis", [](py::handle x, py::handle s, py::handle d) {
    Array a = to_array(x);
    if (py::isinstance<py::int_>(s) && py::isinstance<py::int_>(d)) return moveaxis(a, s.cast<int64_t>(), d.cast<int64_t>());
    Shape src = to_shape(s), dst = to_shape(d);
    int64_t n = a.ndim();
    if (src.size() != dst.size())
      fail<ValueError>("moveaxis: source ", shape_str(src), " and destination ", shape_str(dst),
                       " must have the same number of elements");
    auto norm = [&](int64_t v) {
      if (v < -n || v >= n) fail<ValueError>("moveaxis: axis ", v, " is out of bounds for an array of rank ", n);
      return v < 0 ? v + n : v;
    };
    Shape perm(static_cast<size_t>(n), -1);
    std::vector<bool> used(static_cast<size_t>(n), false);
    for (size_t i = 0; i < src.size(); ++i) {
      int64_t si = norm(src[i]), di = norm(dst[i]);
      if (perm[di] != -1 || used[si]) fail<ValueError>("moveaxis: repeated axis");
      perm[di] = si;
      used[si] = true;
    }
    int64_t next = 0;
    for (auto& p : perm) {
      if (p != -1) continue;
      while (used[next]) ++next;
      p = next++;
    }
    return transpose(a, perm);
  }, "a"_a, "source"_a, "destination"_a);
  m.def("expand_dims", [](py::handle x, py::handle axis) { return expand_dims(to_array(x), to_axis(axis)); }, "a"_a,
        "axis"_a);
  m.def("squeeze", [](py::handle x, py::handle axis) { return squeeze(to_array(x), to_axis(axis)); }, "x"_a,
        "axis"_a = py::none());
  m.def("broadcast_to", [](py::handle x, py::handle s) { return broadcast_to(to_array(x), to_shape(s)); }, "array"_a,
        "shape"_a);
  m.def("concatenate", [](py::handle xs, int64_t axis) { return concatenate(to_arrays(xs), axis); }, "arrays"_a,
        "axis"_a = 0);
  m.def("stack", [](py::handle xs, int64_t axis) { return stack(to_arrays(xs), axis); }, "arrays"_a, "axis"_a = 0);
  m.def("flip", [](py::handle x, py::handle axis) { return flip(to_array(x), to_axis(axis)); }, "x"_a,
        "axis"_a = py::none());
  m.def("tile", [](py::handle x, py::handle reps) { return tile(to_array(x), to_shape(reps)); }, "A"_a, "reps"_a);
  m.def("repeat", [](py::handle x, int64_t r, std::optional<int64_t> axis) { return repeat(to_array(x), r, axis); },
        "x"_a, "repeats"_a, "axis"_a = py::none());
  m.def("take", [](py::handle x, py::handle i, std::optional<int64_t> axis) {
    return take(to_array(x), to_array(i), axis);
  }, "x"_a, "indices"_a, "axis"_a = py::none());
  m.def("one_hot", [](py::handle x, int64_t n, py::handle d) { return one_hot(to_array(x), n, to_dtype(d)); }, "x"_a,
        "num_classes"_a, "dtype"_a = "float_");
  m.def("einsum", [](const std::string& s, py::args ops) { return einsum(s, to_arrays(ops)); });
  // graft/ops/ops.h functions that graft.numpy exposes under NumPy's names
  auto bin = [&](const char* name, Array (*f)(const Array&, const Array&)) {
    m.def(name, [f](py::handle a, py::handle b) { return f(to_array(a), to_array(b)); }, "x1"_a, "x2"_a);
  };
  bin("bitwise_and", &bitwise_and);
  bin("bitwise_or", &bitwise_or);
  bin("bitwise_xor", &bitwise_xor);
  bin("left_shift", &left_shift);
  bin("right_shift", &right_shift);
  m.def("bitwise_not", [](py::handle x) { return bitwise_not(to_array(x)); }, "x"_a);
  m.def("isclose", [](py::handle a, py::handle b, double rtol, double atol) {
    return isclose(to_array(a), to_array(b), rtol, atol);
  }, "a"_a, "b"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8);
  m.def("cumprod", [](py::handle x, std::optional<int64_t> axis) { return cumprod(to_array(x), axis); }, "x"_a,
        "axis"_a = py::none());
  m.def("broadcast_arrays", [](py::args xs) { return broadcast_arrays(to_arrays(xs)); });
  m.def("pad_constant", [](py::handle x, const std::vector<std::pair<int64_t, int64_t>>& widths, double value) {
    return pad(to_array(x), widths, value);
  }, "x"_a, "pad_width"_a, "value"_a = 0.0);
  m.def("tensordot_axes", [](py::handle a, py::handle b, const std::vector<int64_t>& aa, const std::vector<int64_t>& ba) {
    return tensordot(to_array(a), to_array(b), Axes(aa.begin(), aa.end()), Axes(ba.begin(), ba.end()));
  });
  m.def("take_along_axis", [](py::handle x, py::handle i, int64_t axis) {
    return take_along_axis(to_array(x), to_array(i), axis);
  }, "arr"_a, "indices"_a, "axis"_a);
  m.def("zeros", [](py::handle s, py::handle d) { return zeros(to_shape(s), to_dtype(d)); }, "shape"_a,
        "dtype"_a = "float_");
  m.def("ones", [](py::handle s, py::handle d) { return ones(to_shape(s), to_dtype(d)); }, "shape"_a,
        "dtype"_a = "float_");
  m.def("full", [](py::handle s, py::handle v, py::handle d) {
    // without a dtype, the fill value's (a Python number: the default float / int, canonical)
    Array fill = to_array(v);
    return full(to_shape(s), fill.item<double>(), d.is_none() ? fill.dtype() : to_dtype(d));
  }, "shape"_a, "fill_value"_a, "dtype"_a = py::none());
  m.def("zeros_like", [](py::handle x) { return zeros_like(to_array(x)); });
  m.def("ones_like", [](py::handle x) { return ones_like(to_array(x)); });
  m.def("arange", [](double start, py::object stop, double step, py::object d) {
    std::optional<DType> dt = d.is_none() ? std::nullopt : std::optional<DType>(to_dtype(d));
    if (stop.is_none()) return arange(start, dt);
    return arange(start, stop.cast<double>(), step, dt);
  }, "start"_a, "stop"_a = py::none(), "step"_a = 1.0, "dtype"_a = py::none());
  m.def("linspace", [](double a, double b, int64_t n, py::handle d, bool endpoint) {
    return linspace(a, b, n, to_dtype(d), endpoint);
  }, "start"_a, "stop"_a, "num"_a = 50, "dtype"_a = "float_", "endpoint"_a = true);
  m.def("eye", [](int64_t n, std::optional<int64_t> mm, int64_t k, py::handle d) { return eye(n, mm, k, to_dtype(d)); },
        "N"_a, "M"_a = py::none(), "k"_a = 0, "dtype"_a = "float_");
}

void bind_special(py::module_& m) {
  // jax.scipy.special's functions (graft/ops/special.h), as special_<name>; graft.scipy.special and
  // graft.lax name them
  auto unary = [&](const char* name, Array (*f)(const Array&)) { def_unary(m, name, f); };
  auto binary = [&](const char* name, Array (*f)(const Array&, const Array&)) { def_binary(m, name, f); };
  unary("special_gammaln", &special::gammaln);
  unary("special_digamma", &special::digamma);
  binary("special_polygamma", &special::polygamma);
  binary("special_zeta", &special::zeta);
  binary("special_gammainc", &special::gammainc);
  binary("special_gammaincc", &special::gammaincc);
  m.def("special_betainc", [](py::handle a, py::handle b, py::handle x) {
    return special::betainc(to_array(a), to_array(b), to_array(x));
  }, "a"_a, "b"_a, "x"_a);
  // lax's forms take operands of one dtype already (JAX's lax.igamma_grad_a has no graft::special name)
  binary("lax_igamma_grad_a", &lax::igamma_grad_a);
  binary("special_betaln", &special::betaln);
  binary("special_xlogy", &special::xlogy);
  binary("special_xlog1py", &special::xlog1py);
  unary("special_entr", &special::entr);
  unary("special_expit", &special::expit);
  unary("special_logit", &special::logit);
  unary("special_ndtr", &special::ndtr);
  unary("special_log_ndtr", &special::log_ndtr);
  unary("special_ndtri", &special::ndtri);
  unary("special_i0", &special::i0);
  unary("special_i0e", &special::i0e);
  unary("special_i1", &special::i1);
  unary("special_i1e", &special::i1e);
  unary("special_gammasgn", &special::gammasgn);
  unary("special_gamma", &special::gamma);
  unary("special_loggamma", &special::loggamma);
  unary("special_factorial", &special::factorial);
  unary("special_exp1", &special::exp1);
  unary("special_expi", &special::expi);
  unary("special_erfcx", &special::erfcx);
  binary("special_beta", &special::beta);
  binary("special_poch", &special::poch);
  binary("special_rel_entr", &special::rel_entr);
  binary("special_kl_div", &special::kl_div);
  binary("special_boxcox", &special::boxcox);
  binary("special_boxcox1p", &special::boxcox1p);
  m.def("special_comb", [](py::handle n, py::handle k, bool repetition) {
    return special::comb(to_array(n), to_array(k), repetition);
  }, "N"_a, "k"_a, "repetition"_a = false);
  m.def("special_multigammaln", [](py::handle a, int64_t d) { return special::multigammaln(to_array(a), d); }, "a"_a, "d"_a);
  m.def("special_bernoulli", &special::bernoulli, "n"_a);
}

void bind_collectives_and_random(py::module_& m) {
  // collectives over named axes (inside vmap(axis_name=...), shard_map, pmap)
  auto names = [](py::handle h) {
    std::vector<std::string> n;
    if (py::isinstance<py::str>(h)) {
      n.push_back(h.cast<std::string>());
    } else {
      for (auto e : h) n.push_back(e.cast<std::string>());
    }
    return AxisNameArg(n);
  };
  m.def("psum", [names](py::handle x, py::handle axis) { return psum(to_array(x), names(axis)); });
  m.def("pmean", [names](py::handle x, py::handle axis) { return pmean(to_array(x), names(axis)); });
  m.def("pmax", [names](py::handle x, py::handle axis) { return pmax(to_array(x), names(axis)); });
  m.def("pmin", [names](py::handle x, py::handle axis) { return pmin(to_array(x), names(axis)); });
  m.def("axis_index", [](const std::string& name) { return axis_index(name); });

  // random (threefry keys)
  m.def("random_key", [](uint64_t seed) { return random::key(seed); });
  m.def("random_split", [](py::handle k, int64_t n) { return random::split(to_array(k), n); }, "key"_a, "num"_a = 2);
  m.def("random_fold_in", [](py::handle k, uint32_t d) { return random::fold_in(to_array(k), d); });
  m.def("random_normal", [](py::handle k, py::handle s, py::handle d) {
    return random::normal(to_array(k), to_shape(s), to_dtype(d));
  }, "key"_a, "shape"_a = py::tuple(), "dtype"_a = "float_");
  m.def("random_uniform", [](py::handle k, py::handle s, py::handle d, double lo, double hi) {
    return random::uniform(to_array(k), to_shape(s), to_dtype(d), lo, hi);
  }, "key"_a, "shape"_a = py::tuple(), "dtype"_a = "float_", "minval"_a = 0.0, "maxval"_a = 1.0);
  m.def("random_bernoulli", [](py::handle k, py::handle p, py::handle s, bool high) {
    return random::bernoulli(to_array(k), to_array(p), s.is_none() ? std::nullopt : std::optional<Shape>(to_shape(s)),
                             high ? random::SampleMode::high : random::SampleMode::low);
  }, "key"_a, "p"_a = 0.5, "shape"_a = py::none(), "high"_a = false);
  m.def("random_permutation", [](py::handle k, int64_t n) { return random::permutation(to_array(k), n); });
}

void bind_nn_and_data(py::module_& m) {
  // neural-network layers' functional forms (graft.nn builds its layers on these)
  auto padding_of = [](py::handle h) -> nn::Padding {
    if (py::isinstance<py::str>(h)) return nn::Padding(h.cast<std::string>());
    return nn::Padding(h.cast<std::vector<std::pair<int64_t, int64_t>>>());
  };
  m.def("conv2d", [padding_of](py::handle x, py::handle w, std::array<int64_t, 2> stride, py::handle padding,
                               std::array<int64_t, 2> dilation, int64_t groups) {
    Array xa = to_array(x), wa = to_array(w);
    if (xa.ndim() != 4 || wa.ndim() != 4)
      throw graft::ShapeError("conv2d: expects x [N, C, H, W] and w [O, C / groups, KH, KW], got " + xa.aval().str() +
                              " and " + wa.aval().str());
    Shape spatial{xa.shape()[2], xa.shape()[3]}, s{stride[0], stride[1]};
    Shape dk{(wa.shape()[2] - 1) * dilation[0] + 1, (wa.shape()[3] - 1) * dilation[1] + 1};
    return lax::conv_general_dilated(xa, wa.astype(xa.dtype()), s, padding_of(padding).resolve(spatial, dk, s), {1, 1},
                                     {dilation[0], dilation[1]}, lax::ConvDims::nchw(2), groups);
  }, "x"_a, "w"_a, "stride"_a = std::array<int64_t, 2>{1, 1}, "padding"_a = "VALID",
        "dilation"_a = std::array<int64_t, 2>{1, 1}, "groups"_a = 1);
  m.def("max_pool2d", [padding_of](py::handle x, std::array<int64_t, 2> window,
                                   std::optional<std::array<int64_t, 2>> stride, py::handle padding) {
    return nn::max_pool2d(to_array(x), window, stride, padding_of(padding));
  }, "x"_a, "window"_a, "stride"_a = py::none(), "padding"_a = "VALID");
  m.def("avg_pool2d", [padding_of](py::handle x, std::array<int64_t, 2> window,
                                   std::optional<std::array<int64_t, 2>> stride, py::handle padding) {
    return nn::avg_pool2d(to_array(x), window, stride, padding_of(padding));
  }, "x"_a, "window"_a, "stride"_a = py::none(), "padding"_a = "VALID");
  m.def("dropout", [](py::handle key, py::handle x, double rate, bool train) {
    return nn::dropout(to_array(key), to_array(x), rate, train);
  }, "key"_a, "x"_a, "rate"_a, "train"_a = true);
  m.def("cross_entropy", [](py::handle l, py::handle y) { return nn::cross_entropy(to_array(l), to_array(y)); });
  m.def("softmax_cross_entropy", [](py::handle l, py::handle y) { return nn::softmax_cross_entropy(to_array(l), to_array(y)); });
  m.def("accuracy", [](py::handle l, py::handle y) { return nn::accuracy(to_array(l), to_array(y)); });
  m.def("load_fashion_mnist", [](const std::string& dir) {
    data::FashionMnist d = data::load_fashion_mnist(dir);
    py::dict r;
    r["train_images"] = d.train_images;
    r["train_labels"] = d.train_labels;
    r["test_images"] = d.test_images;
    r["test_labels"] = d.test_labels;
    return r;
  }, "dir"_a = data::kFashionMnistDir);
}

}  // namespace graft::python
