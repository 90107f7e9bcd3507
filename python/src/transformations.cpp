// The transformations over flat lists of arrays (the package in python/graft adds pytrees), the seeds'
// other paradigms, custom rules, checkpointing, and jit's front end.
#include <sstream>

#include "common.h"
#include "graft/transforms/callback.h"
#include "graft/transforms/jit.h"

namespace graft::python {

using namespace pybind11::literals;

namespace {

/// jit over Python callables: the shared front end (graft::JitFunction, the same one the C++ jit uses)
/// on the call Python flattened; the Python side keys the cache on the pytree structure and the static
/// arguments, and the front end appends the arrays' types.
///
/// The common call — positional arrays only, no static arguments — has a fast path that stays in C++
/// (call_cached): its key is the arrays' types, and the entry remembers how to rebuild the outputs.
class PyJit {
 public:
  PyJit(std::string name, std::vector<int> donate, py::object unflatten, std::vector<std::string> polymorphic,
        std::vector<int64_t> buckets)
      : jit_(JitOptions{std::move(name), std::move(donate), std::move(polymorphic), std::move(buckets)}),
        unflatten_(std::move(unflatten)) {}

  /// A call: `key` names the structure and static values, `leaves` the arrays of the traced
  /// arguments (positional ones, then keywords), `offset[a]` where positional argument a's leaves
  /// start (len(args) + 1 entries), `traced[a]` whether it is traced (static arguments are not).
  std::vector<Array> call(py::function f, std::string key, std::vector<Array> leaves, const std::vector<size_t>& offset,
                          const std::vector<bool>& traced) {
    FlatCall c = flat_call(std::move(f), std::move(key), std::move(leaves), offset, traced);
    return jit_(c);
  }
  size_t num_compiles() const { return jit_.num_compiles(); }
  size_t num_traces() const { return jit_.num_traces(); }
  /// jit(f).lower(...): the call traced and compiled for these types, not run.
  Lowered lower(py::function f, std::string key, std::vector<Array> leaves, const std::vector<size_t>& offset,
                const std::vector<bool>& traced) {
    FlatCall c = flat_call(std::move(f), std::move(key), std::move(leaves), offset, traced);
    return jit_.lower(c);
  }

  /// The fast path: the cached result for positional arrays `args`, or None when this call needs the
  /// general path (other arguments, or not traced yet).
  py::object call_cached(const py::args& args) {
    std::vector<Array> leaves;
    leaves.reserve(args.size());
    for (auto h : args) {
      if (!py::isinstance<Array>(h)) return py::none();
      leaves.push_back(h.cast<Array>());
    }
    std::string k = fast_key(leaves);
    auto it = fast_.find(k);
    if (it == fast_.end()) return py::none();
    std::vector<Array> outs = run(*it->second.entry, leaves);
    if (it->second.shape == Shape::single) return py::cast(outs[0]);
    if (it->second.shape == Shape::tuple) {
      py::tuple t(outs.size());
      for (size_t i = 0; i < outs.size(); ++i) t[i] = py::cast(std::move(outs[i]));
      return t;
    }
    return unflatten_(it->second.out_tree, outs);
  }

  /// After the general path traced positional arrays `args`: remember the entry for the fast path.
  /// `shape`: "leaf" (one array), "tuple" (a flat tuple of arrays) or anything else (unflattened in Python).
  void remember(const py::tuple& args, py::object out_tree, const std::string& shape) {
    std::vector<Array> leaves;
    for (auto h : args) leaves.push_back(h.cast<Array>());
    std::string k = fast_key(leaves);
    auto entry = jit_.cached(k);
    if (!entry) return;  // not cacheable (it closed over a value of an enclosing transformation)
    fast_[k] = Fast{entry, std::move(out_tree),
                    shape == "leaf" ? Shape::single : shape == "tuple" ? Shape::tuple : Shape::other};
  }

  /// The key the general path uses for positional arrays, so that both paths share entries.
  /// The 64-bit mode is part of it: a function traced with x64 made other constants and types.
  static std::string fast_prefix(size_t n) { return (x64_enabled() ? "A" : "a") + std::to_string(n) + "|"; }

 private:
  static FlatCall flat_call(py::function f, std::string key, std::vector<Array> leaves,
                            const std::vector<size_t>& offset, const std::vector<bool>& traced) {
    FlatCall c;
    c.fn = flat_fn(std::move(f));
    c.leaves = std::move(leaves);
    c.offset.assign(offset.begin(), offset.end());
    c.traced.assign(traced.begin(), traced.end());
    c.key = std::move(key);
    return c;
  }
  enum class Shape { single, tuple, other };
  struct Fast {
    std::shared_ptr<const detail::JitEntry> entry;
    py::object out_tree;
    Shape shape = Shape::other;
  };

  std::string fast_key(const std::vector<Array>& leaves) const {
    std::string k = fast_prefix(leaves.size());
    detail::append_aval_key(k, leaves);
    return k;
  }

  std::vector<Array> run(const detail::JitEntry& e, const std::vector<Array>& leaves) {
    // a concrete call runs compiled code only: other Python threads may run meanwhile
    bool eager = std::all_of(leaves.begin(), leaves.end(), [](const Array& x) { return x.is_concrete(); });
    std::optional<py::gil_scoped_release> release;
    if (eager) release.emplace();
    return jit_.run(e, leaves);
  }

  JitFunction jit_;
  py::object unflatten_;
  std::unordered_map<std::string, Fast> fast_;
};

}  // namespace

void bind_transformations(py::module_& m) {
  // ---- transformations over flat lists ----------------------------------------------------------------
  m.def("jvp", [](py::function f, py::handle primals, py::handle tangents) {
    return jvp_flat(flat_fn(f), to_arrays(primals), to_arrays(tangents));
  });
  m.def("vjp", [](py::function f, py::handle primals) {
    VjpResult r = vjp_flat(flat_fn(f), to_arrays(primals));
    std::function<std::vector<Array>(const std::vector<Array>&)> pull = r.pullback;
    // a None cotangent is a zero one
    py::cpp_function pb([pull](py::handle cts) {
      std::vector<Array> c;
      for (auto h : cts) c.push_back(h.is_none() ? Array() : to_array(h));
      return pull(c);
    });
    return py::make_tuple(r.outs, pb);
  });
  // out_axes: a list (one entry for every output, or one for all), or a callable that gives the list
  // once the function has returned (given the number of outputs): the outputs' structure is known then
  m.def("vmap", [](py::function f, py::handle args, py::handle in_axes, py::object out_axes, const std::string& name,
                   std::optional<int64_t> size) {
    std::vector<std::optional<int64_t>> oa;
    FlatFn inner = flat_fn(f);
    FlatFn fn = inner;
    if (PyCallable_Check(out_axes.ptr())) {
      fn = [&oa, inner, out_axes](const std::vector<Array>& xs) {
        std::vector<Array> r = inner(xs);
        oa = to_axes_list(out_axes(r.size()));
        return r;
      };
    } else {
      oa = to_axes_list(out_axes);
    }
    return vmap_flat(fn, to_arrays(args), to_axes_list(in_axes), oa, name, size);
  }, "f"_a, "args"_a, "in_axes"_a, "out_axes"_a, "axis_name"_a = "", "axis_size"_a = py::none());
  m.def("cond", [](py::handle index, py::handle branches, py::handle operands) {
    std::vector<FlatFn> bs;
    for (auto b : branches) bs.push_back(flat_fn(py::reinterpret_borrow<py::function>(b)));
    return cond_flat(to_array(index), bs, to_arrays(operands));
  });
  m.def("while_loop", [](py::function c, py::function b, py::handle init, int64_t max_steps) {
    return while_flat(flat_fn(c), flat_fn(b), to_arrays(init), WhileOptions{max_steps});
  }, "cond_fun"_a, "body_fun"_a, "init"_a, "max_steps"_a = -1);
  m.def("scan", [](py::function f, py::handle init, py::handle xs, std::optional<int64_t> length, bool reverse) {
    return scan_flat(flat_fn(f), to_arrays(init), to_arrays(xs), ScanOptions{length, reverse});
  }, "f"_a, "init"_a, "xs"_a, "length"_a = py::none(), "reverse"_a = false);
  m.def("linearize", [](py::function f, py::handle primals) {
    auto [outs, f_jvp] = linearize_fn(flat_fn(f), to_arrays(primals));
    py::cpp_function jvp_fn([f_jvp = f_jvp](py::handle tangents) { return f_jvp(to_arrays(tangents)); });
    return py::make_tuple(outs, jvp_fn);
  });
  m.def("linear_transpose", [](py::function f, py::handle primals) {
    std::vector<Aval> avals;
    for (auto& x : to_arrays(primals)) avals.push_back(x.aval());
    FlatFn t = linear_transpose_fn(flat_fn(f), avals);
    return py::cpp_function([t](py::handle cts) { return t(to_arrays(cts)); });
  });
  // eval_shape: (shape, dtype name, weak) per input -> the same per output, nothing computed
  m.def("eval_shape", [](py::function f, const std::vector<std::tuple<std::vector<int64_t>, std::string, bool>>& specs) {
    std::vector<Aval> avals;
    for (auto& [shape, dt, weak] : specs) avals.emplace_back(Shape(shape.begin(), shape.end()), canonical_dtype(parse_dtype(dt)), weak);
    std::vector<std::tuple<std::vector<int64_t>, std::string, bool>> out;
    for (auto& a : eval_shape_flat(flat_fn(f), avals))
      out.emplace_back(std::vector<int64_t>(a.shape.begin(), a.shape.end()), std::string(long_name(a.dtype)), a.weak_type);
    return out;
  });
  // host callbacks: f(list of arrays) -> list of array-likes, called with the GIL taken; the function
  // object is released under the GIL too (a compiled program may drop it on any thread)
  m.def("host_callback", [](py::function f, const std::vector<std::tuple<std::vector<int64_t>, std::string>>& results,
                            py::handle args, const std::string& kind) {
    std::shared_ptr<py::function> fp(new py::function(std::move(f)), [](py::function* p) {
      py::gil_scoped_acquire gil;
      delete p;
    });
    HostFn fn = [fp](const std::vector<Array>& xs) {
      py::gil_scoped_acquire gil;
      py::list in;
      for (auto& x : xs) in.append(py::cast(x));
      py::object r = (*fp)(in);
      return to_arrays(r);
    };
    std::vector<Aval> avals;
    for (auto& [shape, dt] : results) avals.emplace_back(Shape(shape.begin(), shape.end()), canonical_dtype(parse_dtype(dt)));
    std::vector<Array> a = to_arrays(args);
    if (kind == "pure") return pure_callback(fn, avals, a);
    if (kind == "io") return io_callback(fn, avals, a);
    debug_callback([fn](const std::vector<Array>& xs) { (void)fn(xs); }, a);
    return std::vector<Array>{};
  }, "f"_a, "results"_a, "args"_a, "kind"_a);
  // make_jaxpr: (the text, the text with each equation's name stack)
  m.def("make_jaxpr", [](py::function f, py::handle args) {
    std::vector<Aval> avals;
    for (auto& x : to_arrays(args)) avals.push_back(x.aval());
    ClosedJaxpr j = make_jaxpr_flat(flat_fn(f), avals);
    std::ostringstream s;
    s << j;
    return py::make_tuple(s.str(), to_string(j, PrintOptions{.name_stack = true}));
  });
  // closure_convert: f traced on args; the constants of its jaxpr that are traced values (an enclosing
  // transformation's tracers that f closes over) come back as a list, and the callable takes them after
  // f's own arguments, so that custom_vjp / custom_jvp rules can receive them explicitly (JAX's
  // jax.closure_convert). Concrete constants stay closed over.
  m.def("closure_convert", [](py::function f, py::handle args) {
    std::vector<Aval> avals;
    for (auto& x : to_arrays(args)) avals.push_back(x.aval());
    ClosedJaxpr j = make_jaxpr_flat(flat_fn(f), avals);
    std::vector<size_t> hoist;
    py::list hoisted;
    std::vector<Array> consts = j.consts;
    for (size_t i = 0; i < consts.size(); ++i)
      if (!consts[i].is_concrete()) {
        hoist.push_back(i);
        hoisted.append(py::cast(consts[i]));
        consts[i] = Array();  // the callable must not keep the tracer alive past its transformation
      }
    size_t nargs = avals.size();
    auto jp = j.jaxpr;
    py::cpp_function call([jp, consts, hoist, nargs](py::args a) {
      std::vector<Array> flat = to_arrays(a);
      if (flat.size() != nargs + hoist.size())
        fail<TypeError>("closure_convert: the converted function takes ", nargs, " argument(s) and ", hoist.size(),
                        " hoisted constant(s), got ", flat.size());
      std::vector<Array> c = consts;
      for (size_t k = 0; k < hoist.size(); ++k) c[hoist[k]] = flat[nargs + k];
      Arrays out = eval_jaxpr(*jp, c, std::span<const Array>(flat).first(nargs));
      return std::vector<Array>(out.begin(), out.end());
    });
    return py::make_tuple(call, hoisted);
  }, "f"_a, "args"_a);
  struct PyNameScope {
    std::string name;
    std::unique_ptr<NameScope> on;
  };
  py::class_<PyNameScope>(m, "NameScope")
      .def(py::init([](std::string n) { return PyNameScope{std::move(n), nullptr}; }), "name"_a)
      .def("__enter__", [](PyNameScope& s) { s.on = std::make_unique<NameScope>(s.name); })
      .def("__exit__", [](PyNameScope& s, py::args) { s.on.reset(); });
}

void bind_paradigms(py::module_& m) {
  // ---- the seeds' other paradigms ------------------------------------------------------------------
  // PyTorch's tape: x.requires_grad_(), y.backward(), x.grad
  auto arr = py::reinterpret_borrow<py::class_<Array>>(m.attr("Array"));
  arr.def("requires_grad_", [](py::object self) {
        self.cast<Array&>().requires_grad_();
        return self;
      })
      .def("backward", [](const Array& y) { y.backward(); })
      .def_property_readonly("grad", [](const Array& x) -> py::object {
        Array g = x.grad();
        return g.valid() ? py::cast(g) : py::none();
      })
      .def("zero_grad_", [](const Array& x) { x.zero_grad_(); })
      .def("_assign", [](Array& self, const Array& v) { self = v; });
  // TF2's GradientTape (graft/python/graft/_paradigms.py gives it TF's `with` and watch semantics)
  py::class_<GradientTape>(m, "_Tape")
      .def(py::init<>())
      .def("watch", &GradientTape::watch)
      .def("stop_recording", &GradientTape::stop_recording)
      .def("gradient", [](const GradientTape& t, const Array& target, const std::vector<Array>& sources) {
        return t.gradient(target, sources);
      });
  // Theano / TF1: placeholders build a graph; function() closes it into a callable
  py::class_<Function>(m, "Function")
      .def("__call__", [](const Function& f, py::args args) { return f(to_arrays(args)); })
      .def_property_readonly("jaxpr", [](const Function& f) {
        std::ostringstream s;
        s << f.jaxpr();
        return s.str();
      })
      .def_property_readonly("name", &Function::name);
  py::class_<Graph>(m, "_Graph")
      .def(py::init<std::string>(), "name"_a = "graph")
      .def("placeholder", [](Graph& g, py::handle shape, py::handle d) { return g.placeholder(to_shape(shape), to_dtype(d)); },
           "shape"_a = py::tuple(), "dtype"_a = "float_")
      .def("function", [](Graph& g, const std::vector<Array>& in, const std::vector<Array>& out) {
        return g.function(in, out);
      });
  m.def("graph_grad", [](const Function& f, std::vector<int> argnums) { return grad(f, argnums); }, "f"_a,
        "argnums"_a = std::vector<int>{0});

  // user-defined derivatives and rematerialization (graft.custom_jvp / custom_vjp / checkpoint wrap these)
  auto pair_of_lists = [](py::handle h) {
    py::tuple t = py::reinterpret_borrow<py::tuple>(h);
    if (t.size() != 2) throw py::type_error("expected a pair (outputs, second list)");
    return std::pair<std::vector<Array>, std::vector<Array>>(to_arrays(t[0]), to_arrays(t[1]));
  };
  m.def("custom_jvp", [pair_of_lists](py::function f, py::function rule, py::handle args, const std::string& name) {
    CustomJvpRule r = [rule, pair_of_lists](const std::vector<Array>& p, const std::vector<Array>& t) {
      return pair_of_lists(rule(p, t));
    };
    // a Python branch on a traced value raises graft's ConcretizationError in Python: raised again as the
    // C++ one, so that custom_jvp_apply falls back to the concrete values where they are known (grad or
    // jvp of an eager call), as JAX allows
    FlatFn body = [g = flat_fn(f)](const std::vector<Array>& xs) {
      try {
        return g(xs);
      } catch (py::error_already_set& e) {
        if (e.matches(py::module_::import("graft._graft").attr("ConcretizationError")))
          throw ConcretizationError(py::str(e.value()).cast<std::string>());
        throw;
      }
    };
    return custom_jvp_apply(body, r, to_arrays(args), name);
  });
  m.def("custom_vjp", [pair_of_lists](py::function f, py::function fwd, py::function bwd, py::handle args,
                                      const std::string& name) {
    CustomFwd fw = [fwd, pair_of_lists](const std::vector<Array>& p) { return pair_of_lists(fwd(p)); };
    CustomBwd bw = [bwd](const std::vector<Array>& res, const std::vector<Array>& ct) {
      std::vector<Array> r;
      for (auto h : bwd(res, ct)) r.push_back(h.is_none() ? Array() : to_array(h));
      return r;
    };
    return custom_vjp_apply(flat_fn(f), fw, bw, to_arrays(args), name);
  });
  m.def("linear_call", [](py::function fun, py::function transpose, py::handle res, py::handle lin,
                          const std::string& name, py::object fun_res_jvp, py::object transpose_res_jvp) {
    // a linear_call stays a step of a compiled program, which runs it (and may drop it) without the GIL:
    // the functions are called with the GIL taken and released under it, as host callbacks are
    auto held = [](py::object f) {
      return std::shared_ptr<py::object>(new py::object(std::move(f)), [](py::object* p) {
        py::gil_scoped_acquire gil;
        delete p;
      });
    };
    auto wrap = [held](py::function f) -> LinearFn {
      return [fp = held(std::move(f))](const std::vector<Array>& r, const std::vector<Array>& l) {
        py::gil_scoped_acquire gil;
        return to_arrays((*fp)(r, l));
      };
    };
    auto wrap_jvp = [held](py::object f) -> LinearResJvp {
      if (f.is_none()) return {};
      return [fp = held(std::move(f))](const std::vector<Array>& r, const std::vector<Array>& dr,
                                       const std::vector<Array>& l, const std::vector<Array>& o) {
        py::gil_scoped_acquire gil;
        return to_arrays((*fp)(r, dr, l, o));
      };
    };
    return linear_call(wrap(fun), wrap(transpose), to_arrays(res), to_arrays(lin), name, wrap_jvp(fun_res_jvp),
                       wrap_jvp(transpose_res_jvp));
  }, "fun"_a, "transpose"_a, "res"_a, "lin"_a, "name"_a, "fun_res_jvp"_a = py::none(),
     "transpose_res_jvp"_a = py::none());
  m.def("checkpoint", [](py::function f, py::handle args, const std::string& policy, std::vector<std::string> names) {
    CheckpointPolicy p = policy == "dots_saveable"         ? CheckpointPolicy::dots_saveable()
                         : policy == "everything_saveable" ? CheckpointPolicy::everything_saveable()
                         : policy == "save_only_these_names" ? CheckpointPolicy::save_only_these_names(names)
                                                             : CheckpointPolicy::nothing_saveable();
    return checkpoint_flat(flat_fn(f), to_arrays(args), p);
  }, "f"_a, "args"_a, "policy"_a = "nothing_saveable", "names"_a = std::vector<std::string>{});
  m.def("checkpoint_name", [](py::handle x, const std::string& n) { return checkpoint_name(to_array(x), n); });
}

py::dict cost_dict(const compiler::CostAnalysis& c) {
  py::dict d;  // JAX's (XLA's) key names
  d["flops"] = c.flops;
  d["transcendentals"] = c.transcendentals;
  d["bytes accessed"] = c.bytes_accessed;
  return d;
}

py::list aval_list(const std::vector<Aval>& avals) {
  py::list l;
  for (auto& a : avals) l.append(py::make_tuple(shape_tuple(a.shape), numpy_dtype(a.dtype), a.weak_type));
  return l;
}

void bind_jit(py::module_& m) {
  // jit's ahead-of-time stages over flat lists (graft/_api.py adds the pytrees)
  py::class_<Compiled>(m, "_Compiled")
      .def("__call__", [](const Compiled& c, const std::vector<Array>& leaves) {
        bool eager = std::all_of(leaves.begin(), leaves.end(), [](const Array& x) { return x.is_concrete(); });
        std::optional<py::gil_scoped_release> release;
        if (eager) release.emplace();
        return c(leaves);
      })
      .def("as_text", &Compiled::as_text)
      .def("cost_analysis", [](const Compiled& c) { return cost_dict(c.cost_analysis()); })
      .def("memory_analysis", [](const Compiled& c) {
        MemoryAnalysis a = c.memory_analysis();
        return py::make_tuple(a.argument_bytes, a.output_bytes, a.peak_bytes);
      })
      .def_property_readonly("in_avals", [](const Compiled& c) { return aval_list(c.in_avals()); })
      .def_property_readonly("out_avals", [](const Compiled& c) { return aval_list(c.out_avals()); });
  py::class_<Lowered>(m, "_Lowered")
      .def("as_text", &Lowered::as_text)
      .def("cost_analysis", [](const Lowered& l) { return cost_dict(l.cost_analysis()); })
      .def("compile", &Lowered::compile)
      .def_property_readonly("in_avals", [](const Lowered& l) { return aval_list(l.in_avals()); })
      .def_property_readonly("out_avals", [](const Lowered& l) { return aval_list(l.out_avals()); });
  py::class_<PyJit>(m, "Jit")
      .def("lower", &PyJit::lower)
      .def(py::init<std::string, std::vector<int>, py::object, std::vector<std::string>, std::vector<int64_t>>(),
           "name"_a, "donate_argnums"_a, "unflatten"_a, "polymorphic"_a = std::vector<std::string>{},
           "buckets"_a = std::vector<int64_t>{})
      .def("call", &PyJit::call)
      .def_property_readonly("num_compiles", &PyJit::num_compiles)
      .def("call_cached", &PyJit::call_cached)
      .def("remember", &PyJit::remember)
      .def_static("fast_prefix", &PyJit::fast_prefix)
      .def_property_readonly("num_traces", &PyJit::num_traces);
}

}  // namespace graft::python
