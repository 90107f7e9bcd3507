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

// Under vmap every case must end up with the batched shape (select_n does not broadcast its cases, and its
// selector is either rank 0 or shaped like them): batched operands move their batch dimension to the
// front, unbatched cases (and an unbatched selector that is not rank 0) are broadcast along it, and a
// batched selector of rank-0 examples is broadcast to the cases' shape.
BatchResult select_n_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                           const BatchInfo& axis, const Params& params) {
  Shape case_shape;
  for (size_t i = 1; i < vals.size(); ++i) {
    case_shape = vals[i].shape();
    if (dims[i] != kNotMapped) case_shape.erase(case_shape.begin() + dims[i]);
    break;
  }
  Shape full{axis.size};
  for (int64_t d : case_shape) full.push_back(d);
  Arrays args;
  for (size_t i = 0; i < vals.size(); ++i) {
    const Array& x = vals[i];
    if (dims[i] == kNotMapped) {
      args.push_back(i == 0 && x.ndim() == 0 ? x : batch_to_front(x, kNotMapped, axis.size));
      continue;
    }
    Array y = lax::moveaxis(x, dims[i], 0);
    if (y.ndim() == 1 && !case_shape.empty()) y = lax::broadcast_in_dim(y, full, {0});  // a per-example scalar selector
    args.push_back(y);
  }
  return {graft::bind(p, args, params), BatchDims{0}};
}

// out[i] = cases[which[i]][i] (a bool selector picks case 1 when true). Operands with step 0 are
// repeated (a rank-0 selector, or uniform values inside a fused loop).
template <size_t kSize>
void select_tile(const TileKernel& k, void* out, const void* const* in, const uint8_t* step, int64_t n) {
  struct E {
    unsigned char b[kSize];
  };
  E* o = static_cast<E*>(out);
  int64_t ncases = k.num_inputs - 1;
  bool all_steps = true;
  for (int64_t c = 0; c <= ncases; ++c) all_steps = all_steps && step[c];
  if (k.in_dtype == DType::bool_ && ncases == 2 && all_steps) {  // select(pred, a, b): branch-free
    const bool* w = static_cast<const bool*>(in[0]);
    const E* c0 = static_cast<const E*>(in[1]);
    const E* c1 = static_cast<const E*>(in[2]);
    for (int64_t i = 0; i < n; ++i) o[i] = w[i] ? c1[i] : c0[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t wi = step[0] ? i : 0;
    int64_t c = k.in_dtype == DType::bool_ ? static_cast<const bool*>(in[0])[wi] : static_cast<const int32_t*>(in[0])[wi];
    c = c < 0 ? 0 : (c >= ncases ? ncases - 1 : c);
    o[i] = static_cast<const E*>(in[c + 1])[step[c + 1] ? i : 0];
  }
}

MapTileFn select_tile_for(size_t size) {
  switch (size) {
    case 1: return &select_tile<1>;
    case 2: return &select_tile<2>;
    case 4: return &select_tile<4>;
    case 16: return &select_tile<16>;  // c128
    default: return &select_tile<8>;
  }
}

TileKernel select_n_tile_rule(const Primitive&, std::span<const Aval> in, const Params&) {
  TileKernel k;
  k.map = select_tile_for(itemsize(in[1].dtype));
  k.in_dtype = in[0].dtype;
  k.num_inputs = static_cast<int32_t>(in.size());
  return k;
}

Arrays select_n_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Array r = Array::empty(out[0]);
  Avals avals = avals_of(in);
  TileKernel k = select_n_tile_rule(p, {avals.data(), avals.size()}, params);
  SmallVector<uint8_t, 4> step;
  for (auto& x : in) step.push_back(x.ndim() == 0 && r.ndim() != 0 ? 0 : 1);
  size_t sz = itemsize(r.dtype());
  char* o = static_cast<char*>(r.concrete()->data());
  elementwise_for(r.size(), [&](int64_t b, int64_t e) {
    SmallVector<const void*, 4> ptrs;
    for (size_t i = 0; i < in.size(); ++i)
      ptrs.push_back(static_cast<const char*>(in[i].raw_data()) + (step[i] ? b * static_cast<int64_t>(itemsize(in[i].dtype())) : 0));
    k.map(k, o + b * static_cast<int64_t>(sz), ptrs.data(), step.data(), e - b);
  });
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

template <class T>
void clamp_tile(const TileKernel&, void* out, const void* const* in, const uint8_t* step, int64_t n) {
  using C = compute_t<T>;
  if constexpr (!std::is_same_v<T, bool>) {
    const T* lo = static_cast<const T*>(in[0]);
    const T* x = static_cast<const T*>(in[1]);
    const T* hi = static_cast<const T*>(in[2]);
    T* o = static_cast<T*>(out);
    for (int64_t i = 0; i < n; ++i) {
      C v = static_cast<C>(x[step[1] ? i : 0]), l = static_cast<C>(lo[step[0] ? i : 0]),
        h = static_cast<C>(hi[step[2] ? i : 0]);
      // min(max(x, lo), hi), as XLA and NumPy: crossed bounds (lo > hi) give hi
      C r = v < l ? l : v;
      r = r > h ? h : r;
      if constexpr (std::is_floating_point_v<C>) r = v != v ? v : r;  // NaN stays NaN
      o[i] = static_cast<T>(r);
    }
  }
}

TileKernel clamp_tile_rule(const Primitive&, std::span<const Aval> in, const Params&) {
  TileKernel k;
  visit_dtype(in[1].dtype, [&](auto tag) { k.map = &clamp_tile<typename decltype(tag)::type>; });
  k.num_inputs = 3;
  return k;
}

Arrays clamp_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Array r = Array::empty(out[0]);
  Avals avals = avals_of(in);
  run_tiles(clamp_tile_rule(p, {avals.data(), avals.size()}, params), r, in);
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
  Array t_hi = term(lax::bitwise_or(lax::lt(hi, x), lax::lt(hi, lo)), tangents[2]);  // max(x, lo) > hi
  Array t = add_tangents(add_tangents(t_lo, t_x), t_hi);
  return {{y}, {t}};
}

}  // namespace

const Primitive select_n_p{"select_n",          kElementwise,       &select_n_shape, &select_n_impl, &select_n_jvp,
                           &select_n_transpose, &select_n_batch,    nullptr,         nullptr,        &select_n_tile_rule};
const Primitive clamp_p{"clamp",  kElementwise,       &clamp_shape, &clamp_impl, &clamp_jvp,
                        nullptr,  &batch_elementwise, nullptr,      nullptr,     &clamp_tile_rule};

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
