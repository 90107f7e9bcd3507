// libFuzzer target: the jaxpr verifier and the primitives' shape rules. The input describes a jaxpr —
// any primitive of the closed list, operands that may be undefined, literals of any dtype, parameters
// of any key and type (structured ones included), declared output types right or wrong — and
// verify() must accept it or throw graft::Error, never crash. A jaxpr it accepts is then evaluated
// on zeros, which must succeed or throw graft::Error too.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "graft/core/error.h"
#include "graft/ir/jaxpr.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"

namespace {

using namespace graft;

// Every parameter key a first-order primitive reads (prims/*.cpp).
constexpr const char* kKeys[] = {"dimension",   "axes",          "dimensions",        "slice_sizes",
                                 "start_indices", "permutation",  "broadcast_dimensions", "axis",
                                 "shape",        "new_dtype",     "reverse",           "padding",
                                 "window_strides", "new_sizes",   "limit_indices",     "y",
                                 "num_keys",     "dimension_numbers", "padding_config", "window_dimensions",
                                 "window_dilation", "rhs_dilation", "lhs_dilation",    "base_dilation",
                                 "feature_group_count", "batch_group_count", "index_dtype", "dtype",
                                 "weak_type",    "is_stable",     "select_prim",       "mode",
                                 "strides",      "rounding_method", "precision",       "preferred_element_type",
                                 "unique_indices", "indices_are_sorted", "fill_value"};

Shape small_shape(FuzzedDataProvider& in) {
  Shape s;
  int rank = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < rank; ++i) s.push_back(in.ConsumeIntegralInRange<int64_t>(in.ConsumeBool() ? -2 : 0, 5));
  return s;
}

DType any_dtype(FuzzedDataProvider& in) { return static_cast<DType>(in.ConsumeIntegralInRange(0, kNumDTypes - 1)); }

IntList ints(FuzzedDataProvider& in) {
  IntList v;
  int n = in.ConsumeIntegralInRange(0, 5);
  for (int i = 0; i < n; ++i)
    v.push_back(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-3, 7) : in.ConsumeIntegral<int64_t>());
  return v;
}

ParamValue any_value(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 12)) {
    case 0: return std::monostate{};
    case 1: return in.ConsumeBool();
    case 2: return in.ConsumeIntegralInRange<int64_t>(-3, 8);
    case 3: return in.ConsumeIntegral<int64_t>();
    case 4: return in.ConsumeFloatingPoint<double>();
    case 5: return in.ConsumeRandomLengthString(12);
    case 6: return any_dtype(in);
    case 7: return ints(in);
    case 8: return Ref<const ParamObject>(make_ref<lax::DotDims>(ints(in), ints(in), ints(in), ints(in)));
    case 9:
      return Ref<const ParamObject>(make_ref<lax::GatherDims>(ints(in), ints(in), ints(in), ints(in), ints(in)));
    case 10:
      return Ref<const ParamObject>(make_ref<lax::ScatterDims>(ints(in), ints(in), ints(in), ints(in), ints(in)));
    case 11: return Ref<const ParamObject>(make_ref<lax::ConvDims>(ints(in), ints(in), ints(in)));
    default: {
      std::vector<IntList> items;
      int n = in.ConsumeIntegralInRange(0, 4);
      for (int i = 0; i < n; ++i) items.push_back(ints(in));
      return Ref<const ParamObject>(make_ref<lax::IntTuples>(std::move(items)));
    }
  }
}

Array zeros_of(const Aval& a) {
  Array x = Array::empty(a);
  if (x.nbytes()) std::memset(x.concrete()->data(), 0, x.nbytes());
  return x;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  auto prims = prims::all_primitives();
  auto j = std::make_shared<Jaxpr>();
  std::vector<VarRef> defined;
  int n_in = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < n_in; ++i) {
    VarRef v = make_ref<Var>(Aval(small_shape(in), any_dtype(in)));
    j->invars.push_back(v);
    defined.push_back(v);
  }
  int n_eqns = in.ConsumeIntegralInRange(0, 8);
  for (int e = 0; e < n_eqns && in.remaining_bytes() > 0; ++e) {
    Eqn eq;
    eq.prim = prims[in.ConsumeIntegralInRange<size_t>(0, prims.size() - 1)];
    int n_ops = in.ConsumeIntegralInRange(0, 4);
    for (int k = 0; k < n_ops; ++k) {
      int kind = in.ConsumeIntegralInRange(0, 9);
      if (kind < 7 && !defined.empty()) {
        eq.inputs.push_back(Atom(defined[in.ConsumeIntegralInRange<size_t>(0, defined.size() - 1)]));
      } else if (kind < 9) {
        eq.inputs.push_back(Atom::lit(Array::scalar(in.ConsumeFloatingPoint<double>(), any_dtype(in))));
      } else {  // a variable defined nowhere
        eq.inputs.push_back(Atom(make_ref<Var>(Aval(small_shape(in), any_dtype(in)))));
      }
    }
    int n_params = in.ConsumeIntegralInRange(0, 4);
    for (int k = 0; k < n_params; ++k)
      eq.params.set(kKeys[in.ConsumeIntegralInRange<size_t>(0, std::size(kKeys) - 1)], any_value(in));
    // declared outputs: the shape rule's (when it accepts the operands) or arbitrary ones
    bool declare_right = in.ConsumeBool();
    std::vector<Aval> outs;
    if (declare_right) {
      std::vector<Aval> avals;
      for (auto& a : eq.inputs) avals.push_back(a.aval());
      try {
        Avals r = infer_avals(*eq.prim, avals, eq.params);
        outs.assign(r.begin(), r.end());
      } catch (const Error&) {
        declare_right = false;
      }
    }
    if (!declare_right) {
      int n_out = in.ConsumeIntegralInRange(0, 3);
      for (int k = 0; k < n_out; ++k) outs.push_back(Aval(small_shape(in), any_dtype(in)));
    }
    for (auto& a : outs) {
      eq.outputs.push_back(make_ref<Var>(a));
      defined.push_back(eq.outputs.back());
    }
    j->eqns.push_back(std::move(eq));
  }
  int n_out = in.ConsumeIntegralInRange(0, 3);
  for (int k = 0; k < n_out && !defined.empty(); ++k)
    j->outvars.push_back(Atom(defined[in.ConsumeIntegralInRange<size_t>(0, defined.size() - 1)]));
  try {
    verify(*j);
  } catch (const Error&) {
    return 0;
  }
  // accepted: it must run (or refuse with an error) on zeros of its input types, when it is small
  // enough to run quickly (a valid program may well compute on 2^40 elements)
  for (auto& e : j->eqns)
    for (auto& v : e.outputs)
      if (v->aval.size() > (1 << 16)) return 0;
  try {
    std::vector<Array> args;
    for (auto& v : j->invars) args.push_back(zeros_of(v->aval));
    eval_jaxpr(*j, {}, args);
  } catch (const Error&) {
  }
  return 0;
}
