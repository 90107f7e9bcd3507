// select_n and clamp: all their rules.
#include <cstring>

#include "graft/prims/elementwise.h"

namespace graft::prims {

namespace {

// ---- select_n(which, *cases) ---------------------------------------------------------------------------
Avals select_n_shape(const Primitive& p, AvalPtrs in, const Params&) {
  if (in.size() < 2) fail<ValueError>("select_n: needs a selector and at least one case (", avals_str(in), ")");
  const Aval& which = *in[0];
  const Aval& c0 = *in[1];
  bool weak = c0.weak_type;
  for (size_t i = 2; i < in.size(); ++i) {
    if (!in[i]->same_type(c0)) shape_error(p, in, "all cases must have the same shape and dtype");
    weak = weak && in[i]->weak_type;
  }
  if (which.dtype == DType::bool_) {
    if (in.size() > 3) type_error(p, in, "a boolean selector picks between at most two cases");
  } else if (which.dtype != DType::i32) {
    type_error(p, in, "the selector must be bool or int32, got " + std::string(short_name(which.dtype)));
  }
  if (which.ndim() != 0 && which.shape != c0.shape)
    shape_error(p, in, "the selector must be rank 0 or have the shape of the cases");
  return {Aval(c0.shape, c0.dtype, weak)};
}

template <size_t kSize>
void select_kernel(const void* which, DType wd, bool wscalar, std::span<const void* const> cases, void* out,
                   int64_t n) {
  struct E {
    unsigned char b[kSize];
  };
  E* o = static_cast<E*>(out);
  int64_t ncases = static_cast<int64_t>(cases.size());
  if (wd == DType::bool_ && !wscalar && ncases == 2) {  // select(pred, a, b): the common case, branch-free
    const bool* w = static_cast<const bool*>(which);
    const E* c0 = static_cast<const E*>(cases[0]);
    const E* c1 = static_cast<const E*>(cases[1]);
    elementwise_for(n, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) o[i] = w[i] ? c1[i] : c0[i];
    });
    return;
  }
  elementwise_for(n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      int64_t wi = wscalar ? 0 : i;
      int64_t k = wd == DType::bool_ ? static_cast<const bool*>(which)[wi] : static_cast<const int32_t*>(which)[wi];
      k = k < 0 ? 0 : (k >= ncases ? ncases - 1 : k);
      o[i] = static_cast<const E*>(cases[static_cast<size_t>(k)])[i];
    }
  });
}

Arrays select_n_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Array r = Array::empty(out[0]);
  SmallVector<const void*, 4> cases;
  for (size_t i = 1; i < in.size(); ++i) cases.push_back(in[i].raw_data());
  const void* w = in[0].raw_data();
  bool ws = in[0].ndim() == 0;
  int64_t n = r.size();
  void* o = r.concrete()->data();
  switch (itemsize(r.dtype())) {
    case 1: select_kernel<1>(w, in[0].dtype(), ws, cases, o, n); break;
    case 2: select_kernel<2>(w, in[0].dtype(), ws, cases, o, n); break;
    case 4: select_kernel<4>(w, in[0].dtype(), ws, cases, o, n); break;
    default: select_kernel<8>(w, in[0].dtype(), ws, cases, o, n); break;
  }
  return {r};
}

JvpResult select_n_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                       const Params& params) {
  Array y = bind1(p, primals, params);
  bool any = false;
  for (size_t i = 1; i < tangents.size(); ++i) any = any || !is_zero(tangents[i]);
  if (!any) return {{y}, {Array()}};
  Arrays args{primals[0]};
  for (size_t i = 1; i < tangents.size(); ++i) args.push_back(instantiate(tangents[i], y.aval()));
  return {{y}, {bind1(p, args, params)}};
}

Arrays select_n_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                          const Params& params) {
  if (args[0].linear) fail<ValueError>("select_n: the selector cannot be linear");
  Arrays out(args.size());
  Array zero = lax::zeros_like(cts[0]);
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].linear) continue;
    Arrays sel{args[0].value};
    for (size_t j = 1; j < args.size(); ++j) sel.push_back(i == j ? cts[0] : zero);
    out[i] = bind1(p, sel, params);
  }
  return out;
}

// ---- clamp(lo, x, hi) ------------------------------------------------------------------------------
Avals clamp_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 3);
  const Aval& x = *in[1];
  for (int i : {0, 2}) {
    if (in[i]->dtype != x.dtype) type_error(p, in, "bounds must have the operand's dtype");
    if (in[i]->ndim() != 0 && in[i]->shape != x.shape)
      shape_error(p, in, "bounds must be rank 0 or have the operand's shape");
  }
  if (!(kMaskNum & bit(x.dtype))) type_error(p, in, "requires a numeric operand");
  return {x};
}

Arrays clamp_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Array r = Array::empty(out[0]);
  visit_dtype(r.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* lo = in[0].data<T>();
      const T* x = in[1].data<T>();
      const T* hi = in[2].data<T>();
      T* o = static_cast<T*>(r.concrete()->data());
      bool ls = in[0].ndim() == 0 && in[1].ndim() != 0, hs = in[2].ndim() == 0 && in[1].ndim() != 0;
      elementwise_for(r.size(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          C v = static_cast<C>(x[i]), l = static_cast<C>(lo[ls ? 0 : i]), h = static_cast<C>(hi[hs ? 0 : i]);
          if constexpr (std::is_floating_point_v<C>) {
            if (v != v) {
              o[i] = x[i];
              continue;
            }
          }
          o[i] = static_cast<T>(v < l ? l : (v > h ? h : v));
        }
      });
    }
  });
  return {r};
}

JvpResult clamp_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                    const Params& params) {
  Array y = bind1(p, primals, params);
  const Array &lo = primals[0], &x = primals[1], &hi = primals[2];
  Array zero = lax::zeros_like(y);
  auto term = [&](const Array& cond, const Array& t) {
    if (is_zero(t)) return Array();
    return lax::select(cond, broadcast_to_aval(t, y.aval()), zero);
  };
  Array t_lo = term(lax::bitwise_and(lax::gt(lo, x), lax::lt(lo, hi)), tangents[0]);
  Array t_x = term(lax::bitwise_and(lax::gt(x, lo), lax::lt(x, hi)), tangents[1]);
  Array t_hi = term(lax::lt(hi, x), tangents[2]);
  Array t = add_tangents(add_tangents(t_lo, t_x), t_hi);
  return {{y}, {t}};
}

}  // namespace

const Primitive select_n_p{"select_n",          kElementwise, &select_n_shape, &select_n_impl, &select_n_jvp,
                           &select_n_transpose, &batch_elementwise};
const Primitive clamp_p{"clamp", kElementwise, &clamp_shape, &clamp_impl, &clamp_jvp, nullptr, &batch_elementwise};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;
Array select_n(const Array& which, std::span<const Array> cases) {
  Arrays args{which};
  for (auto& c : cases) args.push_back(c);
  return bind1(select_n_p, args);
}
Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return bind1(select_n_p, {pred, on_false, on_true});
}
Array clamp(const Array& lo, const Array& x, const Array& hi) { return bind1(clamp_p, {lo, x, hi}); }
}  // namespace graft::lax
