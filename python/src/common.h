// Shared by the files of graft's Python extension (python/src/): conversions between Python values and
// graft's arrays, and one binding function per topic, which module.cpp calls in order.
#pragma once

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::python {

namespace py = pybind11;

// ---- conversions (convert.cpp) ------------------------------------------------------------------------
/// JAX's jax_enable_x64 (GRAFT_ENABLE_X64=1 or JAX_ENABLE_X64=1 at start, graft.config.update later):
/// off, the Python front end makes 32-bit values where it would make 64-bit ones.
bool x64_enabled();
void set_x64(bool on);
/// d, or its 32-bit sibling without x64 (f64 -> f32, i64 -> i32, u64 -> u32).
DType canonical_dtype(DType d);
/// A dtype from a name ('float32', 'f32', 'bfloat16'), a NumPy dtype or scalar type (np.float32), or a
/// graft dtype name.
DType to_dtype(py::handle h);
/// The NumPy dtype of d ('bfloat16', which NumPy lacks, as a string).
py::object numpy_dtype(DType d);
/// Any Python value graft takes as an array: an Array, a Python scalar (weakly typed, as in JAX), a
/// NumPy array or anything NumPy turns into one (lists, NumPy scalars), converted to `want` if given.
Array to_array(py::handle h, std::optional<DType> want = std::nullopt);
std::vector<Array> to_arrays(const py::handle& seq);
py::tuple shape_tuple(const Shape& s);
Shape to_shape(py::handle h);
AxisArg to_axis(py::handle h);
/// The value a traced array stands for where its transformation knows it (grad, jvp, a tape), else null.
std::optional<Array> known_value(const Array& x);
/// A read-only NumPy view of a concrete array's storage (bf16 arrays: a float32 copy; device arrays: read
/// back).
py::array to_numpy(const Array& arg);
/// x.__dlpack__(): a capsule that shares x's storage (no copy).
py::capsule to_dlpack(const Array& arg);
/// gf.from_dlpack(x): an array over x's memory (no copy when it is row-major), else a copy.
Array from_dlpack(py::handle producer);
/// A Python index (int, slice, None, Ellipsis, arrays, or a tuple of them) as graft's.
Index to_index(py::handle h);
/// Array(...) as JAX prints it; Traced<f32[3]> for a value without data.
std::string array_repr(const Array& x);
/// A Python function of a list of arrays returning a list (or tuple) of arrays, as a FlatFn. Errors
/// raised in Python propagate through graft as pybind11's error_already_set.
FlatFn flat_fn(py::function f);
std::vector<std::optional<int64_t>> to_axes_list(const py::handle& h);

// ---- the shapes most bindings of graft's functions take ----------------------------------------------------
/// name(x) = f(x), name(a, b) = f(a, b), and name(x, axis=None, keepdims=False) for a reduction; operands
/// converted with to_array, axes with to_axis.
inline void def_unary(py::module_& m, const char* name, Array (*f)(const Array&)) {
  m.def(name, [f](py::handle x) { return f(to_array(x)); }, py::arg("x"));
}
inline void def_binary(py::module_& m, const char* name, Array (*f)(const Array&, const Array&)) {
  m.def(name, [f](py::handle a, py::handle b) { return f(to_array(a), to_array(b)); }, py::arg("a"), py::arg("b"));
}
inline void def_reduction(py::module_& m, const char* name, Array (*f)(const Array&, AxisArg, bool)) {
  m.def(name, [f](py::handle x, py::handle axis, bool keepdims) { return f(to_array(x), to_axis(axis), keepdims); },
        py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
}
/// name(x, axis=None, keepdims=False, ddof=0) for var / std and their NaN-ignoring forms.
inline void def_moment(py::module_& m, const char* name, Array (*f)(const Array&, AxisArg, bool, int64_t)) {
  m.def(name, [f](py::handle x, py::handle axis, bool keepdims, int64_t ddof) {
    return f(to_array(x), to_axis(axis), keepdims, ddof);
  }, py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdims") = false, py::arg("ddof") = 0);
}

// ---- bindings, one function per topic ---------------------------------------------------------------------
void bind_arrays(py::module_& m);              // arrays.cpp: the Array class
void bind_devices(py::module_& m);             // operations.cpp: asarray, DLPack, device_put, dtypes
void bind_elementwise(py::module_& m);         // operations.cpp: elementwise graft.numpy functions
void bind_operations(py::module_& m);          // operations.cpp: the rest of graft.numpy and graft.lax
void bind_special(py::module_& m);             // operations.cpp: jax.scipy.special's functions
void bind_numpy_more(py::module_& m);          // numpy_more.cpp: jax.numpy's rarer functions (graft/ops/numpy_more.h)
void bind_random(py::module_& m);              // random.cpp: jax.random's samplers
void bind_lax(py::module_& m);                 // lax.cpp: jax.lax's functions on the primitives
void bind_linalg(py::module_& m);              // linalg.cpp: numpy.linalg, scipy.linalg, lax.linalg
void bind_fft(py::module_& m);                 // fft.cpp: numpy.fft, lax.fft
void bind_collectives_and_random(py::module_& m);  // operations.cpp
void bind_nn_and_data(py::module_& m);         // operations.cpp: layers' functional forms, datasets
void bind_layers(py::module_& m);              // layers.cpp: nn's C++ layers as classes
void bind_io(py::module_& m);                  // io.cpp: .npy / .npz, exported programs
void bind_transformations(py::module_& m);     // transformations.cpp: jvp, vjp, vmap, control flow, make_jaxpr
void bind_paradigms(py::module_& m);           // transformations.cpp: the tape, graphs, custom rules, checkpoint
void bind_jit(py::module_& m);                 // transformations.cpp: jit's front end
void bind_spmd(py::module_& m);                // spmd.cpp: devices, meshes, shard_map

}  // namespace graft::python
