// graft's Python extension, `graft._graft`: arrays (NumPy's buffer protocol both ways), the operations,
// and the transformations over flat lists of arrays. The package in python/graft adds pytrees and
// JAX's interface on top (grad, vmap, jit, ... over Python callables). One file per topic (common.h
// lists them); this one makes the module and translates graft's errors.
//
// The GIL is held while Python code may run (tracing calls back into it) and released while a jitted
// program executes.
#include "common.h"

namespace py = pybind11;
using namespace graft;
using namespace graft::python;

PYBIND11_MODULE(_graft, m) {
  m.doc() = "graft's C++ core: arrays, operations and transformations over flat lists of arrays";
  m.attr("__version__") = graft::version();

  // errors: the base first (pybind11 tries the translators registered last first)
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<ShapeError> shape_error(m, "ShapeError", PyExc_ValueError);
  static py::exception<ConcretizationError> concretization_error(m, "ConcretizationError", PyExc_TypeError);
  static py::exception<TracerLeakError> leak_error(m, "UnexpectedTracerError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConcretizationError& e) {
      concretization_error(e.what());
    } catch (const TracerLeakError& e) {
      leak_error(e.what());
    } catch (const ShapeError& e) {
      shape_error(e.what());
    } catch (const graft::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const graft::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const graft::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const graft::MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const graft::IOError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const graft::FloatingPointError& e) {
      PyErr_SetString(PyExc_FloatingPointError, e.what());
    } catch (const graft::RecursionError& e) {
      PyErr_SetString(PyExc_RecursionError, e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });

  bind_arrays(m);
  bind_devices(m);
  bind_elementwise(m);
  bind_operations(m);
  bind_special(m);
  bind_numpy_more(m);
  bind_lax(m);
  bind_linalg(m);
  bind_fft(m);
  bind_random(m);
  bind_collectives_and_random(m);
  bind_nn_and_data(m);
  bind_layers(m);
  bind_io(m);
  bind_transformations(m);
  bind_paradigms(m);
  bind_jit(m);
  bind_spmd(m);
}
