// jax.lax's functions on graft's primitives (graft/prims/lax.h), as lax_<name>; python/graft/lax.py gives
// them JAX's names and signatures. As in JAX, a Python number next to an array takes the array's dtype
// (it is weakly typed); arrays of different dtypes are an error, as lax does not promote.
#include "common.h"
#include "graft/prims/lax.h"

namespace graft::python {
namespace {

// The operands with weakly typed ones (Python numbers) converted to the dtype of the first strong one.
std::vector<Array> lax_operands(std::initializer_list<py::handle> hs) {
  std::vector<Array> xs;
  for (auto h : hs) xs.push_back(to_array(h));
  const Array* strong = nullptr;
  for (auto& x : xs)
    if (!x.weak_type()) {
      strong = &x;
      break;
    }
  if (strong) {
    DType d = strong->dtype();
    for (auto& x : xs)
      if (x.weak_type() && x.dtype() != d) x = lax::convert_element_type(x, d, true);
  }
  return xs;
}

Axes to_axes(const std::vector<int64_t>& v) { return Axes(v.begin(), v.end()); }
IntList to_ints(py::handle h) {
  IntList out;
  for (auto e : h) out.push_back(e.cast<int64_t>());
  return out;
}

}  // namespace

void bind_lax(py::module_& m) {
  using namespace py::literals;
  using Un = Array (*)(const Array&);
  using Bin = Array (*)(const Array&, const Array&);
  auto unary = [&](const char* name, Un f) {
    m.def(name, [f](py::handle x) { return f(to_array(x)); }, "x"_a);
  };
  auto binary = [&](const char* name, Bin f) {
    m.def(name, [f](py::handle a, py::handle b) {
      auto xs = lax_operands({a, b});
      return f(xs[0], xs[1]);
    }, "x"_a, "y"_a);
  };
  // elementwise
  unary("lax_ceil", &lax::ceil);
  unary("lax_floor", &lax::floor);
  unary("lax_is_finite", &lax::is_finite);
  unary("lax_exp2", &lax::exp2);
  unary("lax_log1p", &lax::log1p);
  unary("lax_expm1", &lax::expm1);
  unary("lax_tan", &lax::tan);
  unary("lax_asin", &lax::asin);
  unary("lax_acos", &lax::acos);
  unary("lax_atan", &lax::atan);
  unary("lax_sinh", &lax::sinh);
  unary("lax_cosh", &lax::cosh);
  unary("lax_asinh", &lax::asinh);
  unary("lax_acosh", &lax::acosh);
  unary("lax_atanh", &lax::atanh);
  unary("lax_cbrt", &lax::cbrt);
  unary("lax_erf", &lax::erf);
  unary("lax_erfc", &lax::erfc);
  unary("lax_sign", &lax::sign);
  unary("lax_neg", &lax::neg);
  unary("lax_real", &lax::real);
  unary("lax_imag", &lax::imag);
  unary("lax_conj", &lax::conj);
  unary("lax_bitwise_not", &lax::bitwise_not);
  unary("lax_population_count", &lax::population_count);
  m.def("lax_round", [](py::handle x, int rounding_method) { return lax::round(to_array(x), rounding_method); },
        "x"_a, "rounding_method"_a = 0);
  m.def("lax_integer_pow", [](py::handle x, int64_t y) { return lax::integer_pow(to_array(x), y); }, "x"_a, "y"_a);
  binary("lax_add", &lax::add);
  binary("lax_sub", &lax::sub);
  binary("lax_mul", &lax::mul);
  binary("lax_div", &lax::div);
  binary("lax_rem", &lax::rem);
  binary("lax_pow", &lax::pow);
  binary("lax_max", &lax::max);
  binary("lax_min", &lax::min);
  binary("lax_atan2", &lax::atan2);
  binary("lax_nextafter", &lax::nextafter);
  binary("lax_bitwise_and", &lax::bitwise_and);
  binary("lax_bitwise_or", &lax::bitwise_or);
  binary("lax_bitwise_xor", &lax::bitwise_xor);
  binary("lax_shift_left", &lax::shift_left);
  binary("lax_shift_right_logical", &lax::shift_right_logical);
  binary("lax_shift_right_arithmetic", &lax::shift_right_arithmetic);
  binary("lax_eq", &lax::eq);
  binary("lax_ne", &lax::ne);
  binary("lax_lt", &lax::lt);
  binary("lax_le", &lax::le);
  binary("lax_gt", &lax::gt);
  binary("lax_ge", &lax::ge);
  binary("lax_complex", &lax::complex);
  m.def("lax_clamp", [](py::handle lo, py::handle x, py::handle hi) {
    auto xs = lax_operands({x, lo, hi});
    return lax::clamp(xs[1], xs[0], xs[2]);
  }, "min"_a, "x"_a, "max"_a);
  m.def("lax_select_n", [](py::handle which, py::args cases) {
    std::vector<Array> cs = to_arrays(cases);
    return lax::select_n(to_array(which), cs);
  });
  m.def("lax_convert_element_type", [](py::handle x, py::handle d) {
    return lax::convert_element_type(to_array(x), to_dtype(d));
  }, "operand"_a, "new_dtype"_a);
  m.def("lax_bitcast_convert_type", [](py::handle x, py::handle d) {
    return lax::bitcast_convert_type(to_array(x), to_dtype(d));
  }, "operand"_a, "new_dtype"_a);
  // reductions
  using Red = Array (*)(const Array&, const Axes&);
  auto reduction = [&](const char* name, Red f) {
    m.def(name, [f](py::handle x, const std::vector<int64_t>& axes) { return f(to_array(x), to_axes(axes)); },
          "operand"_a, "axes"_a);
  };
  reduction("lax_reduce_sum", &lax::reduce_sum);
  reduction("lax_reduce_max", &lax::reduce_max);
  reduction("lax_reduce_min", &lax::reduce_min);
  reduction("lax_reduce_prod", &lax::reduce_prod);
  reduction("lax_reduce_and", &lax::reduce_and);
  reduction("lax_reduce_or", &lax::reduce_or);
  m.def("lax_argmax", [](py::handle x, int64_t axis, py::handle d) { return lax::argmax(to_array(x), axis, to_dtype(d)); },
        "operand"_a, "axis"_a, "index_dtype"_a = "int32");
  m.def("lax_argmin", [](py::handle x, int64_t axis, py::handle d) { return lax::argmin(to_array(x), axis, to_dtype(d)); },
        "operand"_a, "axis"_a, "index_dtype"_a = "int32");
  // shapes
  m.def("lax_broadcast_in_dim", [](py::handle x, py::handle shape, const std::vector<int64_t>& dims) {
    return lax::broadcast_in_dim(to_array(x), to_shape(shape), to_axes(dims));
  }, "operand"_a, "shape"_a, "broadcast_dimensions"_a);
  m.def("lax_reshape", [](py::handle x, py::handle shape) { return lax::reshape(to_array(x), to_shape(shape)); });
  m.def("lax_transpose", [](py::handle x, const std::vector<int64_t>& perm) {
    return lax::transpose(to_array(x), to_axes(perm));
  }, "operand"_a, "permutation"_a);
  m.def("lax_squeeze", [](py::handle x, const std::vector<int64_t>& dims) { return lax::squeeze(to_array(x), to_axes(dims)); },
        "array"_a, "dimensions"_a);
  m.def("lax_expand_dims", [](py::handle x, const std::vector<int64_t>& dims) {
    return lax::expand_dims(to_array(x), to_axes(dims));
  }, "array"_a, "dimensions"_a);
  m.def("lax_rev", [](py::handle x, const std::vector<int64_t>& dims) { return lax::rev(to_array(x), to_axes(dims)); },
        "operand"_a, "dimensions"_a);
  m.def("lax_iota", [](py::handle d, int64_t size) { return lax::iota(to_dtype(d), Shape{size}, 0); }, "dtype"_a, "size"_a);
  m.def("lax_broadcasted_iota", [](py::handle d, py::handle shape, int64_t dim) {
    return lax::iota(to_dtype(d), to_shape(shape), dim);
  }, "dtype"_a, "shape"_a, "dimension"_a);
  m.def("lax_slice", [](py::handle x, py::handle start, py::handle limit, py::handle strides) {
    return lax::slice(to_array(x), to_shape(start), to_shape(limit), strides.is_none() ? Shape{} : to_shape(strides));
  }, "operand"_a, "start_indices"_a, "limit_indices"_a, "strides"_a = py::none());
  m.def("lax_slice_in_dim", [](py::handle x, int64_t start, int64_t limit, int64_t stride, int64_t axis) {
    return lax::slice_in_dim(to_array(x), start, limit, stride, axis);
  }, "operand"_a, "start_index"_a, "limit_index"_a, "stride"_a = 1, "axis"_a = 0);
  m.def("lax_pad", [](py::handle x, py::handle value, py::handle config) {
    std::vector<IntList> cfg;
    for (auto c : config) cfg.push_back(to_ints(c));
    auto xs = lax_operands({x, value});
    return lax::pad(xs[0], xs[1], cfg);
  }, "operand"_a, "padding_value"_a, "padding_config"_a);
  m.def("lax_concatenate", [](py::handle xs, int64_t dim) {
    std::vector<Array> a = to_arrays(xs);
    return lax::concatenate(a, dim);
  }, "operands"_a, "dimension"_a);
  m.def("lax_dynamic_slice", [](py::handle x, py::handle starts, py::handle sizes) {
    std::vector<Array> s = to_arrays(starts);
    return lax::dynamic_slice(to_array(x), s, to_shape(sizes));
  }, "operand"_a, "start_indices"_a, "slice_sizes"_a);
  m.def("lax_dynamic_update_slice", [](py::handle x, py::handle update, py::handle starts) {
    std::vector<Array> s = to_arrays(starts);
    return lax::dynamic_update_slice(to_array(x), to_array(update), s);
  }, "operand"_a, "update"_a, "start_indices"_a);
  // contraction, scans, sorting, windows, convolution
  m.def("lax_dot_general", [](py::handle a, py::handle b, py::handle dims, py::handle pet) {
    auto contract = dims[py::int_(0)], batch = dims[py::int_(1)];
    lax::DotDims d(to_ints(contract[py::int_(0)]), to_ints(contract[py::int_(1)]), to_ints(batch[py::int_(0)]),
                   to_ints(batch[py::int_(1)]));
    auto xs = lax_operands({a, b});
    std::optional<DType> pd;
    if (!pet.is_none()) pd = to_dtype(pet);
    return lax::dot_general(xs[0], xs[1], d, pd);
  }, "lhs"_a, "rhs"_a, "dimension_numbers"_a, "preferred_element_type"_a = py::none());
  m.def("lax_cumsum", [](py::handle x, int64_t axis, bool reverse) { return lax::cumsum(to_array(x), axis, reverse); },
        "operand"_a, "axis"_a = 0, "reverse"_a = false);
  m.def("lax_cummax", [](py::handle x, int64_t axis, bool reverse) { return lax::cummax(to_array(x), axis, reverse); },
        "operand"_a, "axis"_a = 0, "reverse"_a = false);
  m.def("lax_cummin", [](py::handle x, int64_t axis, bool reverse) { return lax::cummin(to_array(x), axis, reverse); },
        "operand"_a, "axis"_a = 0, "reverse"_a = false);
  m.def("lax_sort", [](py::handle operands, int64_t dimension, bool is_stable, int64_t num_keys) {
    std::vector<Array> ops = to_arrays(operands);
    Arrays r = lax::sort(ops, dimension, is_stable, num_keys);
    return std::vector<Array>(r.begin(), r.end());
  }, "operands"_a, "dimension"_a = -1, "is_stable"_a = true, "num_keys"_a = 1);
  using Win = Array (*)(const Array&, const Shape&, const Shape&, const std::vector<std::pair<int64_t, int64_t>>&,
                        const Shape&, const Shape&);
  auto window = [&](const char* name, Win f) {
    m.def(name, [f](py::handle x, py::handle dims, py::handle strides,
                    const std::vector<std::pair<int64_t, int64_t>>& padding, py::handle base, py::handle wdil) {
      return f(to_array(x), to_shape(dims), to_shape(strides), padding, base.is_none() ? Shape{} : to_shape(base),
               wdil.is_none() ? Shape{} : to_shape(wdil));
    }, "operand"_a, "window_dimensions"_a, "window_strides"_a, "padding"_a, "base_dilation"_a = py::none(),
          "window_dilation"_a = py::none());
  };
  window("lax_reduce_window_sum", &lax::reduce_window_sum);
  window("lax_reduce_window_max", &lax::reduce_window_max);
  window("lax_reduce_window_min", &lax::reduce_window_min);
  m.def("lax_conv_general_dilated", [](py::handle lhs, py::handle rhs, py::handle strides,
                                       const std::vector<std::pair<int64_t, int64_t>>& padding, py::handle lhs_dil,
                                       py::handle rhs_dil, py::handle specs, int64_t fgc, int64_t bgc) {
    lax::ConvDims d(to_ints(specs[py::int_(0)]), to_ints(specs[py::int_(1)]), to_ints(specs[py::int_(2)]));
    auto xs = lax_operands({lhs, rhs});
    return lax::conv_general_dilated(xs[0], xs[1], to_shape(strides), padding, to_shape(lhs_dil), to_shape(rhs_dil), d,
                                     fgc, bgc);
  });
  // gather / scatter with XLA's dimension numbers (as five int tuples each); mode "clip" or "fill"
  auto mode_of = [](const std::string& m) {
    if (m == "clip" || m == "promise_in_bounds") return lax::GatherMode::clip;
    if (m == "fill" || m == "drop") return lax::GatherMode::fill;
    throw py::value_error("gather / scatter: mode must be 'clip', 'fill', 'drop' or 'promise_in_bounds', got '" + m + "'");
  };
  m.def("lax_gather", [mode_of](py::handle operand, py::handle indices, py::handle dn, py::handle slice_sizes,
                                const std::string& mode, double fill) {
    lax::GatherDims d(to_ints(dn[py::int_(0)]), to_ints(dn[py::int_(1)]), to_ints(dn[py::int_(2)]),
                      to_ints(dn[py::int_(3)]), to_ints(dn[py::int_(4)]));
    return lax::gather(to_array(operand), to_array(indices), d, to_shape(slice_sizes), mode_of(mode), fill);
  });
  using ScatterFn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDims&, lax::GatherMode);
  auto scatter = [&m, mode_of](const char* name, ScatterFn fn) {
    m.def(name, [fn, mode_of](py::handle operand, py::handle indices, py::handle updates, py::handle dn,
                              const std::string& mode) {
      lax::ScatterDims d(to_ints(dn[py::int_(0)]), to_ints(dn[py::int_(1)]), to_ints(dn[py::int_(2)]),
                         to_ints(dn[py::int_(3)]), to_ints(dn[py::int_(4)]));
      auto xs = lax_operands({operand, updates});
      return fn(xs[0], to_array(indices), xs[1], d, mode_of(mode));
    });
  };
  scatter("lax_scatter", &lax::scatter);
  scatter("lax_scatter_add", &lax::scatter_add);
  scatter("lax_scatter_mul", &lax::scatter_mul);
  scatter("lax_scatter_min", &lax::scatter_min);
  scatter("lax_scatter_max", &lax::scatter_max);
  // collectives beyond psum / pmax (named axes of vmap, shard_map, pmap)
  m.def("lax_all_gather", [](py::handle x, const std::string& axis, int64_t a, bool tiled) {
    return all_gather(to_array(x), axis, a, tiled);
  });
  m.def("lax_psum_scatter", [](py::handle x, const std::string& axis, int64_t d, bool tiled) {
    return psum_scatter(to_array(x), axis, d, tiled);
  });
  m.def("lax_ppermute", [](py::handle x, const std::string& axis, const std::vector<std::pair<int64_t, int64_t>>& perm) {
    return ppermute(to_array(x), axis, perm);
  });
  m.def("lax_all_to_all", [](py::handle x, const std::string& axis, int64_t split, int64_t concat, bool tiled) {
    return all_to_all(to_array(x), axis, split, concat, tiled);
  });
  m.def("lax_axis_size", [](const std::string& axis) { return axis_size(axis); });
  m.def("lax_pvary", [](py::handle x, const std::vector<std::string>& axes) { return lax::pvary(to_array(x), axes); });
}

}  // namespace graft::python
