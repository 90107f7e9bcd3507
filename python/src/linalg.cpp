// Linear algebra (graft/ops/linalg.h and the lax.linalg primitives) for graft.numpy.linalg,
// graft.scipy.linalg and graft.lax.linalg, which give them NumPy's, SciPy's and JAX's signatures.
#include "common.h"

namespace graft::python {

namespace {

linalg::NormOrd to_ord(py::handle h) {
  if (h.is_none()) return {};
  if (py::isinstance<py::str>(h)) return linalg::NormOrd(h.cast<std::string>());
  return linalg::NormOrd(h.cast<double>());
}

std::optional<double> opt_double(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<double>();
}

py::tuple tuple_of(const Arrays& xs) {
  py::tuple t(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) t[i] = py::cast(xs[i]);
  return t;
}

}  // namespace

void bind_linalg(py::module_& m) {
  using namespace py::literals;
  m.def("tril", [](py::handle x, int64_t k) { return tril(to_array(x), k); }, "m"_a, "k"_a = 0);
  m.def("triu", [](py::handle x, int64_t k) { return triu(to_array(x), k); }, "m"_a, "k"_a = 0);

  // graft::linalg, as linalg_<name>
  m.def("linalg_cholesky", [](py::handle a, bool sym) { return linalg::cholesky(to_array(a), sym); }, "a"_a,
        "symmetrize_input"_a = true);
  m.def("linalg_cho_solve", [](py::handle c, py::handle b, bool lower) {
    return linalg::cho_solve(to_array(c), to_array(b), lower);
  }, "c"_a, "b"_a, "lower"_a = true);
  m.def("linalg_solve_triangular", [](py::handle a, py::handle b, bool lower, int trans, bool unit) {
    return linalg::solve_triangular(to_array(a), to_array(b), lower, trans, unit);
  }, "a"_a, "b"_a, "lower"_a = false, "trans"_a = 0, "unit_diagonal"_a = false);
  m.def("linalg_lu_factor", [](py::handle a) { return linalg::lu_factor(to_array(a)); }, "a"_a);
  m.def("linalg_lu_solve", [](py::handle lu, py::handle piv, py::handle b, int trans) {
    return linalg::lu_solve(to_array(lu), to_array(piv), to_array(b), trans);
  }, "lu"_a, "piv"_a, "b"_a, "trans"_a = 0);
  m.def("linalg_lu", [](py::handle a) { return linalg::lu(to_array(a)); }, "a"_a);
  m.def("linalg_solve", [](py::handle a, py::handle b) { return linalg::solve(to_array(a), to_array(b)); }, "a"_a,
        "b"_a);
  m.def("linalg_inv", [](py::handle a) { return linalg::inv(to_array(a)); }, "a"_a);
  m.def("linalg_det", [](py::handle a) { return linalg::det(to_array(a)); }, "a"_a);
  m.def("linalg_slogdet", [](py::handle a) { return linalg::slogdet(to_array(a)); }, "a"_a);
  m.def("linalg_expm", [](py::handle a, int64_t max_squarings) { return linalg::expm(to_array(a), max_squarings); },
        "a"_a, "max_squarings"_a = 16);
  m.def("linalg_matrix_power", [](py::handle a, int64_t n) { return linalg::matrix_power(to_array(a), n); }, "a"_a,
        "n"_a);
  m.def("linalg_eigh", [](py::handle a, const std::string& uplo, bool sym) {
    return linalg::eigh(to_array(a), uplo, sym);
  }, "a"_a, "UPLO"_a = "L", "symmetrize_input"_a = true);
  m.def("linalg_eig", [](py::handle a) { return linalg::eig(to_array(a)); }, "a"_a);
  m.def("linalg_eigvals", [](py::handle a) { return linalg::eigvals(to_array(a)); }, "a"_a);
  m.def("linalg_qr", [](py::handle a, const std::string& mode) { return linalg::qr(to_array(a), mode); }, "a"_a,
        "mode"_a = "reduced");
  m.def("linalg_svd", [](py::handle a, bool full) { return linalg::svd(to_array(a), full); }, "a"_a,
        "full_matrices"_a = true);
  m.def("linalg_svdvals", [](py::handle a) { return linalg::svdvals(to_array(a)); }, "a"_a);
  m.def("linalg_pinv", [](py::handle a, py::handle rtol) { return linalg::pinv(to_array(a), opt_double(rtol)); },
        "a"_a, "rtol"_a = py::none());
  m.def("linalg_matrix_rank", [](py::handle a, py::handle tol) {
    return linalg::matrix_rank(to_array(a), opt_double(tol));
  }, "a"_a, "tol"_a = py::none());
  m.def("linalg_lstsq", [](py::handle a, py::handle b, py::handle rcond) {
    return linalg::lstsq(to_array(a), to_array(b), opt_double(rcond));
  }, "a"_a, "b"_a, "rcond"_a = py::none());
  m.def("linalg_norm", [](py::handle x, py::handle ord, py::handle axis, bool keepdims) {
    return linalg::norm(to_array(x), to_ord(ord), to_axis(axis), keepdims);
  }, "x"_a, "ord"_a = py::none(), "axis"_a = py::none(), "keepdims"_a = false);
  m.def("linalg_cond", [](py::handle x, py::handle p) { return linalg::cond(to_array(x), to_ord(p)); }, "x"_a,
        "p"_a = py::none());
  m.def("linalg_multi_dot", [](py::handle arrays) { return linalg::multi_dot(to_arrays(arrays)); }, "arrays"_a);

  // the primitives, as lax_<name> (graft/prims/lax.h's argument order)
  m.def("lax_cholesky", [](py::handle x) { return lax::cholesky(to_array(x)); }, "x"_a);
  m.def("lax_triangular_solve",
        [](py::handle a, py::handle b, bool left, bool lower, bool trans, bool unit, bool conj) {
          return lax::triangular_solve(to_array(a), to_array(b), left, lower, trans, unit, conj);
        },
        "a"_a, "b"_a, "left_side"_a, "lower"_a, "transpose_a"_a, "unit_diagonal"_a, "conjugate_a"_a = false);
  m.def("lax_eig", [](py::handle x, bool left, bool right) { return tuple_of(lax::eig(to_array(x), left, right)); },
        "x"_a, "compute_left_eigenvectors"_a = true, "compute_right_eigenvectors"_a = true);
  m.def("lax_lu", [](py::handle x) { return tuple_of(lax::lu(to_array(x))); }, "x"_a);
  m.def("lax_lu_pivots_to_permutation", [](py::handle p, int64_t n) {
    return lax::lu_pivots_to_permutation(to_array(p), n);
  }, "pivots"_a, "permutation_size"_a);
  m.def("lax_eigh", [](py::handle x) { return tuple_of(lax::eigh(to_array(x))); }, "x"_a);
  m.def("lax_qr", [](py::handle x, bool full) { return tuple_of(lax::qr(to_array(x), full)); }, "x"_a,
        "full_matrices"_a);
  m.def("lax_svd", [](py::handle x, bool full, bool uv) { return tuple_of(lax::svd(to_array(x), full, uv)); }, "x"_a,
        "full_matrices"_a, "compute_uv"_a);
}

}  // namespace graft::python
