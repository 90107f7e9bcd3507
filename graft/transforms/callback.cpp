// The host-callback primitives. The function travels in a parameter; the shape rule reads the promised
// result types from it, so tracing never calls it: only execution does (eagerly, or the compiled program
// through the primitive's impl).
#include "graft/transforms/callback.h"

#include <sstream>

#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"

namespace graft {

namespace {

struct CallbackParam final : ParamObject {
  HostFn fn;
  std::vector<Aval> results;
  CallbackParam(HostFn f, std::vector<Aval> r) : fn(std::move(f)), results(std::move(r)) {}
  void print(std::ostream& os) const override {
    os << "<host function: ";
    for (size_t i = 0; i < results.size(); ++i) os << (i ? ", " : "") << results[i].str();
    os << ">";
  }
};

const CallbackParam& callback_of(const Params& params) { return params.get_object<CallbackParam>("callback"); }

Avals callback_shape(const Primitive&, AvalPtrs, const Params& params) {
  const auto& r = callback_of(params).results;
  return Avals(r.begin(), r.end());
}

Arrays callback_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  const CallbackParam& cb = callback_of(params);
  std::vector<Array> args(in.begin(), in.end());
  std::vector<Array> out = cb.fn(args);
  if (out.size() != cb.results.size())
    fail<TypeError>(p.name, ": the callback returned ", out.size(), " arrays, ", cb.results.size(), " were promised");
  Arrays r;
  for (size_t i = 0; i < out.size(); ++i) {
    const Aval& want = cb.results[i];
    if (!out[i].valid() || out[i].shape() != want.shape || out[i].dtype() != want.dtype)
      fail<TypeError>(p.name, ": result ", i, " of the callback has type ",
                      out[i].valid() ? out[i].aval().str() : std::string("null"), ", ", want.str(), " was promised");
    r.push_back(out[i]);
  }
  return r;
}

// As JAX's: no derivative for a function graft cannot see into (custom_jvp gives it one); debug
// callbacks run on the primal values and have no outputs to differentiate.
JvpResult callback_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                       const Params& params) {
  bool debug = callback_of(params).results.empty();
  if (!debug)
    for (auto& t : tangents)
      if (!prims::is_zero(t))
        fail<NotImplementedError>(p.name, ": a host callback has no derivative (wrap it in custom_jvp or "
                                          "custom_vjp to give it one)");
  Arrays out = graft::bind(p, primals, params);
  return {out, Arrays(out.size())};
}

// vmap calls the callback once per example (JAX's vmap_method="sequential"), unrolled so that effectful
// calls stay in order and are never dropped.
BatchResult callback_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                           const BatchInfo& axis, const Params& params) {
  std::vector<Arrays> per_example(callback_of(params).results.size());
  for (int64_t i = 0; i < axis.size; ++i) {
    Arrays args;
    for (size_t k = 0; k < vals.size(); ++k) {
      if (dims[k] == kNotMapped) {
        args.push_back(vals[k]);
      } else {
        Array s = lax::slice_in_dim(vals[k], i, i + 1, 1, dims[k]);
        args.push_back(lax::squeeze(s, {dims[k]}));
      }
    }
    Arrays out = graft::bind(p, args, params);
    for (size_t j = 0; j < out.size(); ++j) per_example[j].push_back(lax::expand_dims(out[j], {0}));
  }
  Arrays outs;
  for (auto& ys : per_example) outs.push_back(lax::concatenate(ys, 0));
  return {outs, BatchDims(outs.size(), 0)};
}

}  // namespace

const Primitive pure_callback_p{"pure_callback", kMultipleResults, &callback_shape, &callback_impl, &callback_jvp,
                                nullptr,         &callback_batch};
const Primitive io_callback_p{"io_callback", kMultipleResults | kEffectful, &callback_shape, &callback_impl,
                              &callback_jvp, nullptr, &callback_batch};
const Primitive debug_callback_p{"debug_callback", kMultipleResults | kEffectful, &callback_shape, &callback_impl,
                                 &callback_jvp,    nullptr,                       &callback_batch};

namespace {
void register_all() {
  static bool registered = (prims::register_primitive(&pure_callback_p), prims::register_primitive(&io_callback_p),
                            prims::register_primitive(&debug_callback_p), true);
  (void)registered;
}

std::vector<Array> call(const Primitive& p, HostFn f, const std::vector<Aval>& result_avals,
                        const std::vector<Array>& args) {
  register_all();
  if (!f) fail<ValueError>(p.name, ": the callback is empty");
  Params params{{"callback", Ref<const ParamObject>(new CallbackParam(std::move(f), result_avals))}};
  Arrays out = graft::bind(p, args, params);
  return std::vector<Array>(out.begin(), out.end());
}
}  // namespace

std::vector<Array> pure_callback(HostFn f, const std::vector<Aval>& result_avals, const std::vector<Array>& args) {
  return call(pure_callback_p, std::move(f), result_avals, args);
}

std::vector<Array> io_callback(HostFn f, const std::vector<Aval>& result_avals, const std::vector<Array>& args) {
  return call(io_callback_p, std::move(f), result_avals, args);
}

void debug_callback(std::function<void(const std::vector<Array>&)> f, const std::vector<Array>& args) {
  if (!f) fail<ValueError>("debug_callback: the callback is empty");
  call(debug_callback_p, [f = std::move(f)](const std::vector<Array>& a) {
    f(a);
    return std::vector<Array>{};
  }, {}, args);
}

}  // namespace graft
