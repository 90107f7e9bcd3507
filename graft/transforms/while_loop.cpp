// while: the primitive with all its rules, and the tracing of its bodies.
//
// Operands: the predicate's consts, the body's consts, the initial carry. Result: the final carry.
#include "graft/core/axis_names.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control.h"
#include "graft/transforms/control_util.h"

namespace graft {

namespace control {
Arrays bind_scan(JaxprPtr body, std::span<const Array> args, int64_t length, bool reverse, size_t nconst,
                 size_t ncar);
}

namespace {

using control::share;

struct WhileInfo {
  const ClosedJaxpr *cond, *body;
  size_t ncc, nbc;
  int64_t max_steps;
  JaxprPtr cond_ptr, body_ptr;
};

WhileInfo info_of(const Params& p) {
  const ParamValue* m = p.find("max_steps");
  return {&p.get_jaxpr("cond_jaxpr"),
          &p.get_jaxpr("body_jaxpr"),
          static_cast<size_t>(p.get_int("cond_nconsts")),
          static_cast<size_t>(p.get_int("body_nconsts")),
          m ? p.get_int("max_steps") : -1,
          p.get<JaxprPtr>("cond_jaxpr"),
          p.get<JaxprPtr>("body_jaxpr")};
}

Params make_params(JaxprPtr cond, JaxprPtr body, size_t ncc, size_t nbc, int64_t max_steps) {
  Params p{{"cond_jaxpr", std::move(cond)},
           {"body_jaxpr", std::move(body)},
           {"cond_nconsts", static_cast<int64_t>(ncc)},
           {"body_nconsts", static_cast<int64_t>(nbc)}};
  if (max_steps >= 0) p.set("max_steps", max_steps);
  return p;
}

Avals while_shape(const Primitive&, AvalPtrs in, const Params& params) {
  WhileInfo w = info_of(params);
  if (w.ncc + w.nbc > in.size()) fail<ValueError>("while: fewer operands than consts");
  size_t ncar = in.size() - w.ncc - w.nbc;
  AxisSet extra = 0;  // named axes operands vary over beyond what the predicate and body were traced with
  auto check_inputs = [&](const ClosedJaxpr& j, size_t nconsts, size_t first, const char* which) {
    const auto& iv = j.jaxpr->invars;
    if (iv.size() != nconsts + ncar)
      fail<ValueError>("while: the ", which, " takes ", iv.size(), " arrays, expected ", nconsts + ncar);
    for (size_t i = 0; i < nconsts; ++i) {
      if (!iv[i]->aval.same_type(*in[first + i]))
        fail<TypeError>("while: const ", i, " of the ", which, " has type ", in[first + i]->str(), ", expected ",
                        iv[i]->aval.str());
      extra |= in[first + i]->vma & ~iv[i]->aval.vma;
    }
    for (size_t k = 0; k < ncar; ++k) {
      if (!iv[nconsts + k]->aval.same_type(*in[w.ncc + w.nbc + k]))
        fail<TypeError>("while: carry ", k, " has type ", in[w.ncc + w.nbc + k]->str(), ", the ", which, " expects ",
                        iv[nconsts + k]->aval.str());
      extra |= in[w.ncc + w.nbc + k]->vma & ~iv[nconsts + k]->aval.vma;
    }
  };
  check_inputs(*w.cond, w.ncc, 0, "predicate");
  check_inputs(*w.body, w.nbc, w.ncc, "body");
  std::vector<Aval> co = w.cond->out_avals();
  if (co.size() != 1 || !co[0].shape.empty() || co[0].dtype != DType::bool_)
    fail<TypeError>("while_loop: the predicate must return one boolean scalar, it returns ", control::types_str(co));
  std::vector<Aval> bo = w.body->out_avals();
  Avals out;
  for (size_t k = 0; k < ncar; ++k) {
    const Aval& c = *in[w.ncc + w.nbc + k];
    if (k >= bo.size() || !bo[k].same_type(c))
      fail<TypeError>("while_loop: the body returns ", control::types_str(bo), " but carry ", k, " has type ",
                      c.str(), "; the body must keep the carry's types");
    out.push_back(c);
  }
  if (bo.size() != ncar)
    fail<TypeError>("while_loop: the body returns ", bo.size(), " arrays for a carry of ", ncar);
  // A carry varies over the named axes its initial value or the body's result does, and over the
  // predicate's (members that iterate differently differ everywhere); when the body makes some carry
  // vary over more than it was traced with, every carry may, after another iteration. A refinement of
  // the operands' union, never more (a body batched by vmap carries its lanes' axes in its types): a
  // loop whose body gathers or sums over an axis keeps such carries invariant.
  AxisSet all = 0;
  for (auto* a : in) all |= a->vma;
  extra |= co[0].vma;
  for (size_t k = 0; k < ncar; ++k) extra |= bo[k].vma & ~out[k].vma;
  for (size_t k = 0; k < ncar; ++k) out[k].vma = (out[k].vma | bo[k].vma | extra) & all;
  return out;
}

// Runs the loop on concrete values; calls `step` with the body's outputs after every iteration.
template <class Step>
Arrays run_loop(const WhileInfo& w, const ClosedJaxpr& body, std::span<const Array> in, size_t ncar, Step&& step) {
  Arrays cargs(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(w.ncc));
  Arrays bargs(in.begin() + static_cast<std::ptrdiff_t>(w.ncc), in.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc));
  Arrays carry(in.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc), in.end());
  cargs.resize(w.ncc + ncar);
  bargs.resize(w.nbc + ncar);
  for (int64_t n = 0; w.max_steps < 0 || n < w.max_steps; ++n) {
    std::copy(carry.begin(), carry.end(), cargs.begin() + static_cast<std::ptrdiff_t>(w.ncc));
    if (!control::run_body(*w.cond, cargs)[0].item<bool>()) break;
    std::copy(carry.begin(), carry.end(), bargs.begin() + static_cast<std::ptrdiff_t>(w.nbc));
    Arrays outs = control::run_body(body, bargs);
    carry.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(ncar));
    step(outs);
  }
  return carry;
}

Arrays while_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out_avals, const Params& params) {
  WhileInfo w = info_of(params);
  return run_loop(w, *w.body, in, out_avals.size(), [](const Arrays&) {});
}

struct Layout {
  size_t ncar = 0;
  std::vector<bool> body_nz;      ///< body consts with tangents, then every floating carry
  std::vector<bool> carry_float;
  size_t nbct = 0, ncart = 0;
};

Layout layout_of(const WhileInfo& w, std::span<const Array> primals, std::span<const Array> tangents) {
  Layout L;
  L.ncar = primals.size() - w.ncc - w.nbc;
  for (size_t i = 0; i < w.nbc; ++i) {
    bool nz = tangents[w.ncc + i].valid();
    L.body_nz.push_back(nz);
    L.nbct += nz ? 1 : 0;
  }
  for (size_t k = 0; k < L.ncar; ++k) {
    bool f = is_inexact(primals[w.ncc + w.nbc + k].dtype());
    L.body_nz.push_back(f);
    L.carry_float.push_back(f);
    L.ncart += f ? 1 : 0;
  }
  return L;
}

Array tangent_or_zeros(const Array& t, const Array& primal) {
  return t.valid() ? t : lax::zeros(Aval(primal.shape(), primal.dtype()));
}

// Forward mode: one loop carrying (carry, tangents of the floating carries).
JvpResult while_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                    const Params& params) {
  WhileInfo w = info_of(params);
  Layout L = layout_of(w, primals, tangents);
  auto body = *w.body->derived<JaxprPtr>(control::mask_key("while.jvp", L.body_nz), [&] {
    ClosedJaxpr jb = jvp_jaxpr(*w.body, L.body_nz);
    // inputs (bconsts, carry, bconst_t, carry_t) -> (bconsts, bconst_t, carry, carry_t)
    size_t n = w.nbc + L.ncar;
    std::vector<size_t> order;
    for (size_t i = 0; i < w.nbc; ++i) order.push_back(i);
    for (size_t i = 0; i < L.nbct; ++i) order.push_back(n + i);
    for (size_t i = 0; i < L.ncar; ++i) order.push_back(w.nbc + i);
    for (size_t i = 0; i < L.ncart; ++i) order.push_back(n + L.nbct + i);
    std::vector<size_t> keep;
    for (size_t k = 0; k < L.ncar; ++k) keep.push_back(k);
    for (size_t k = 0; k < L.ncar; ++k)
      if (L.carry_float[k]) keep.push_back(L.ncar + k);
    return share(select_outvars(permute_invars(jb, order), keep));
  });
  std::vector<Aval> extra;
  for (size_t k = 0; k < L.ncar; ++k)
    if (L.carry_float[k]) extra.push_back(primals[w.ncc + w.nbc + k].aval());
  auto cond = *w.cond->derived<JaxprPtr>(control::mask_key("while.jvp_cond", L.carry_float),
                                          [&] { return share(append_invars(*w.cond, extra)); });
  Arrays args(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc));
  for (size_t i = 0; i < w.nbc; ++i)
    if (L.body_nz[i]) args.push_back(tangents[w.ncc + i]);
  args.insert(args.end(), primals.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc), primals.end());
  for (size_t k = 0; k < L.ncar; ++k) {
    size_t i = w.ncc + w.nbc + k;
    if (L.carry_float[k]) args.push_back(tangent_or_zeros(tangents[i], primals[i]));
  }
  Arrays outs = bind(p, args, make_params(cond, body, w.ncc, w.nbc + L.nbct, w.max_steps));
  JvpResult r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(L.ncar));
  r.tangents.resize(L.ncar);
  for (size_t k = 0, t = L.ncar; k < L.ncar; ++k)
    if (L.carry_float[k]) r.tangents[k] = outs[t++];
  return r;
}

// Under grad. The loop runs now, recording the residuals of each iteration; the trip count n is then
// known, and the linear program gets a scan of length n over the body's linear part (its transpose,
// the backward pass, walks the iterations in reverse). Residuals that are body consts are passed once.
struct WhileLinearization {
  JaxprPtr known, linear;
  std::vector<size_t> const_res, stacked;  ///< residual indices: body consts / per iteration
  std::vector<int> residual_input;
  std::vector<Aval> residual_avals;
};

// The linear scan's leading operands: const residuals, body-const tangents (consts), carry tangents.
Arrays linear_scan_prefix(const WhileInfo& w, const Layout& L, const WhileLinearization& lin,
                          std::span<const Array> primals, std::span<const Array> tangents) {
  Arrays args;
  for (size_t k : lin.const_res) args.push_back(primals[w.ncc + static_cast<size_t>(lin.residual_input[k])]);
  for (size_t i = 0; i < w.nbc; ++i)
    if (L.body_nz[i]) args.push_back(tangents[w.ncc + i]);
  for (size_t k = 0; k < L.ncar; ++k) {
    size_t i = w.ncc + w.nbc + k;
    if (L.carry_float[k]) args.push_back(tangent_or_zeros(tangents[i], primals[i]));
  }
  return args;
}

// Under a staging transformation (jit) the trip count is a traced value: the forward loop writes each
// iteration's residuals into buffers of max_steps rows, and the linear scan runs max_steps steps of
// which those at or past the trip count leave the tangents unchanged.
struct BoundedLoops {
  JaxprPtr cond, body, linear;
};

JvpResult bounded_linearize(const WhileInfo& w, const Layout& L, const WhileLinearization& lin,
                            std::span<const Array> primals, std::span<const Array> tangents) {
  size_t ns = lin.stacked.size(), ncr = lin.const_res.size();
  std::vector<Aval> bufs;
  for (size_t k : lin.stacked) {
    Aval a = lin.residual_avals[k];
    a.shape.insert(a.shape.begin(), w.max_steps);
    bufs.push_back(Aval(a.shape, a.dtype));
  }
  std::string key = control::mask_key("while.bounded", L.body_nz) + std::to_string(w.max_steps);
  auto loops = w.body->derived<BoundedLoops>(key, [&] {
    BoundedLoops b;
    Aval i32s(Shape{}, DType::i32);
    std::vector<Aval> carry_avals = w.body->out_avals();
    // forward: (cond consts, i, carry, buffers) -> i < max_steps and cond(carry)
    std::vector<Aval> cin = w.cond->in_avals();
    cin.resize(w.ncc);
    cin.push_back(i32s);
    cin.insert(cin.end(), carry_avals.begin(), carry_avals.end());
    cin.insert(cin.end(), bufs.begin(), bufs.end());
    FlatFn cf = [&](const std::vector<Array>& a) {
      std::vector<Array> ca(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(w.ncc));
      ca.insert(ca.end(), a.begin() + static_cast<std::ptrdiff_t>(w.ncc + 1),
                a.begin() + static_cast<std::ptrdiff_t>(w.ncc + 1 + L.ncar));
      Array more = lax::lt(a[w.ncc], lax::scalar(static_cast<double>(w.max_steps), DType::i32));
      return std::vector<Array>{lax::bitwise_and(more, eval_jaxpr(*w.cond, ca)[0])};
    };
    b.cond = share(make_jaxpr_flat(cf, cin, "while_grad"));
    // (body consts, i, carry, buffers) -> (i + 1, body(carry), buffers with row i set)
    std::vector<Aval> bin = w.body->in_avals();
    bin.resize(w.nbc);
    bin.push_back(i32s);
    bin.insert(bin.end(), carry_avals.begin(), carry_avals.end());
    bin.insert(bin.end(), bufs.begin(), bufs.end());
    FlatFn bf = [&](const std::vector<Array>& a) {
      std::vector<Array> ka(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(w.nbc));
      ka.insert(ka.end(), a.begin() + static_cast<std::ptrdiff_t>(w.nbc + 1),
                a.begin() + static_cast<std::ptrdiff_t>(w.nbc + 1 + L.ncar));
      Array i = a[w.nbc];
      Arrays outs = eval_jaxpr(*lin.known, ka);
      std::vector<Array> r{lax::add(i, lax::scalar(1, DType::i32))};
      r.insert(r.end(), outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(L.ncar));
      for (size_t k = 0; k < ns; ++k) {
        const Array& buf = a[w.nbc + 1 + L.ncar + k];
        const Array& res = outs[L.ncar + k];
        std::vector<Array> start{i};
        for (int64_t d = 0; d < res.ndim(); ++d) start.push_back(lax::scalar(0, DType::i32));
        r.push_back(lax::dynamic_update_slice(buf, lax::expand_dims(res, {0}), start));
      }
      return r;
    };
    b.body = share(make_jaxpr_flat(bf, bin, "while_grad"));
    // linear: (const residuals, body-const tangents, n, carry tangents, stacked rows, k) -> masked step
    std::vector<Aval> lin_in = lin.linear->in_avals();
    size_t nconst_t = ncr + L.nbct;
    std::vector<Aval> lav(lin_in.begin(), lin_in.begin() + static_cast<std::ptrdiff_t>(nconst_t));
    lav.push_back(i32s);
    lav.insert(lav.end(), lin_in.begin() + static_cast<std::ptrdiff_t>(nconst_t), lin_in.end());
    lav.push_back(i32s);
    FlatFn lf = [&](const std::vector<Array>& a) {
      // steps past the trip count keep the tangents; a cond, not a select, so that their (unwritten,
      // zero) residual rows are never used: 0 * inf in a masked-out step would still poison the sums
      auto old = [&](const std::vector<Array>& o) {
        return std::vector<Array>(o.begin() + static_cast<std::ptrdiff_t>(nconst_t + 1),
                                  o.begin() + static_cast<std::ptrdiff_t>(nconst_t + 1 + L.ncart));
      };
      auto step = [&](const std::vector<Array>& o) {
        std::vector<Array> la(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(nconst_t));
        la.insert(la.end(), o.begin() + static_cast<std::ptrdiff_t>(nconst_t + 1), o.end() - 1);
        Arrays next = eval_jaxpr(*lin.linear, la);
        return std::vector<Array>(next.begin(), next.end());
      };
      return cond_flat(lax::lt(a.back(), a[nconst_t]), {old, step}, a);
    };
    b.linear = share(make_jaxpr_flat(lf, lav, "while_grad"));
    return b;
  });
  // the forward loop (known inputs only: it runs in, or is staged into, the parent)
  Arrays fargs(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc));
  fargs.push_back(lax::scalar(0, DType::i32));
  fargs.insert(fargs.end(), primals.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc), primals.end());
  for (auto& a : bufs) fargs.push_back(lax::zeros(a));
  Arrays fouts = bind(while_p, fargs, make_params(loops->cond, loops->body, w.ncc, w.nbc, -1));
  Arrays args = linear_scan_prefix(w, L, lin, primals, tangents);
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(ncr + L.nbct), fouts[0]);  // the trip count
  args.insert(args.end(), fouts.begin() + static_cast<std::ptrdiff_t>(1 + L.ncar), fouts.end());
  args.push_back(lax::iota(DType::i32, {w.max_steps}));
  Arrays touts = control::bind_scan(loops->linear, args, w.max_steps, false, ncr + L.nbct + 1, L.ncart);
  JvpResult r;
  r.primals.assign(fouts.begin() + 1, fouts.begin() + static_cast<std::ptrdiff_t>(1 + L.ncar));
  r.tangents.resize(L.ncar);
  for (size_t k = 0, t = 0; k < L.ncar; ++k)
    if (L.carry_float[k]) r.tangents[k] = touts[t++];
  return r;
}

JvpResult while_linearize(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                          const Params& params) {
  WhileInfo w = info_of(params);
  Layout L = layout_of(w, primals, tangents);
  bool concrete = true;
  for (auto& x : primals) concrete = concrete && x.is_concrete();
  if (!concrete && w.max_steps < 0)
    fail<NotImplementedError>(
        "while_loop: reverse-mode differentiation needs the number of iterations, which is not known while tracing "
        "(under jit or another staging transformation); give the loop a bound (WhileOptions::max_steps), "
        "differentiate outside jit, or use scan / fori_loop with static bounds");
  auto lin = w.body->derived<WhileLinearization>(control::mask_key("while.lin", L.body_nz), [&] {
    LinearizedJaxpr lj = linearize_jaxpr(*w.body, L.body_nz, /*instantiate=*/true);
    WhileLinearization r;
    r.residual_input = lj.residual_input;
    std::vector<Aval> kout = lj.known.out_avals();
    for (size_t k = 0; k < lj.num_residuals; ++k) {
      int ri = lj.residual_input[k];
      (ri >= 0 && static_cast<size_t>(ri) < w.nbc ? r.const_res : r.stacked).push_back(k);
      r.residual_avals.push_back(kout[L.ncar + k]);
    }
    std::vector<size_t> keep;
    for (size_t k = 0; k < L.ncar; ++k) keep.push_back(k);
    for (size_t k : r.stacked) keep.push_back(L.ncar + k);
    r.known = share(select_outvars(lj.known, keep));
    // linear inputs (residuals, bconst_t, carry_t) -> (const residuals, bconst_t, carry_t, stacked)
    size_t R = lj.num_residuals;
    std::vector<size_t> order(r.const_res);
    for (size_t i = 0; i < L.nbct + L.ncart; ++i) order.push_back(R + i);
    order.insert(order.end(), r.stacked.begin(), r.stacked.end());
    r.linear = share(permute_invars(lj.linear, order));
    return r;
  });
  if (!concrete) return bounded_linearize(w, L, *lin, primals, tangents);
  std::vector<std::vector<Array>> rows(lin->stacked.size());
  int64_t n = 0;
  Arrays carry = run_loop(w, *lin->known, primals, L.ncar, [&](const Arrays& outs) {
    ++n;
    for (size_t k = 0; k < rows.size(); ++k) rows[k].push_back(outs[L.ncar + k]);
  });
  Arrays args = linear_scan_prefix(w, L, *lin, primals, tangents);
  for (size_t k = 0; k < rows.size(); ++k) args.push_back(control::stack_rows(rows[k], lin->residual_avals[lin->stacked[k]]));
  Arrays touts = control::bind_scan(lin->linear, args, n, false, lin->const_res.size() + L.nbct, L.ncart);
  JvpResult r;
  r.primals = carry;
  r.tangents.resize(L.ncar);
  for (size_t k = 0, t = 0; k < L.ncar; ++k)
    if (L.carry_float[k]) r.tangents[k] = touts[t++];
  return r;
}

// vmap: every lane runs until its own predicate is false; the loop runs while any lane is active and
// finished lanes keep their carry (a select on the lane's predicate).
// A carry is batched when its initial value is, or when the body makes it so (a fixpoint, as scan's).
// While the predicate stays the same on every lane (it reads only unbatched carries, or a psum under a
// named axis), the loop runs as it is on the batched body and unbatched carries stay so: under
// shard_map a loop whose predicate is reduced across devices keeps its invariant carries invariant.
// A predicate that differs between lanes makes every carry batched; the loop then runs while any lane
// is active and steps only the active ones (a select per carry).
BatchResult while_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                        const BatchInfo& axis, const Params& params) {
  WhileInfo w = info_of(params);
  size_t ncar = vals.size() - w.ncc - w.nbc;
  std::vector<bool> carry_batched(ncar);
  for (size_t k = 0; k < ncar; ++k) carry_batched[k] = dims[w.ncc + w.nbc + k] != kNotMapped;
  auto dims_for = [&](size_t first, size_t n) {  // consts [first, first + n) at their dims, carries at 0
    std::vector<int64_t> d(dims.begin() + static_cast<std::ptrdiff_t>(first), dims.begin() + static_cast<std::ptrdiff_t>(first + n));
    for (size_t k = 0; k < ncar; ++k) d.push_back(carry_batched[k] ? 0 : kNotMapped);
    return d;
  };
  struct Uniform {  // the loop batched with a predicate the same on every lane
    JaxprPtr cond, body;
    std::vector<bool> mapped;
    bool pred_batched = false;
    JaxprPtr keyed_cond;
  };
  std::shared_ptr<const Uniform> u;
  for (;;) {
    std::vector<int64_t> cd = dims_for(0, w.ncc), bd = dims_for(w.ncc, w.nbc);
    std::string key = control::batch_key("while.vmap.uniform", axis, cd) + control::batch_key("B", axis, bd) +
                      control::mask_key("C", carry_batched) + std::to_string(reinterpret_cast<uintptr_t>(w.cond));
    u = w.body->derived<Uniform>(key, [&] {
      Uniform r;
      r.mapped = carry_batched;  // carries batched on entry stay so
      r.body = share(batch_jaxpr(*w.body, bd, axis.size, axis.name, &r.mapped));
      std::vector<bool> pm{false};
      r.cond = share(batch_jaxpr(*w.cond, cd, axis.size, axis.name, &pm));
      r.pred_batched = pm[0];
      r.keyed_cond = w.cond_ptr;
      return r;
    });
    if (u->pred_batched) break;
    bool changed = false;
    for (size_t k = 0; k < ncar; ++k)
      if (u->mapped[k] && !carry_batched[k]) carry_batched[k] = changed = true;
    if (!changed) break;
  }
  if (!u->pred_batched) {
    Arrays args(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc));
    for (size_t k = 0; k < ncar; ++k) {
      const Array& v = vals[w.ncc + w.nbc + k];
      args.push_back(carry_batched[k] ? control::batched_at_front(v, dims[w.ncc + w.nbc + k], axis.size) : v);
    }
    Arrays outs = bind(p, args, make_params(u->cond, u->body, w.ncc, w.nbc, w.max_steps));
    BatchDims od;
    for (size_t k = 0; k < ncar; ++k) od.push_back(carry_batched[k] ? 0 : kNotMapped);
    return {outs, od};
  }
  Arrays args(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc));
  std::vector<int64_t> cdims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(w.ncc)),
      bdims(dims.begin() + static_cast<std::ptrdiff_t>(w.ncc), dims.begin() + static_cast<std::ptrdiff_t>(w.ncc + w.nbc));
  for (size_t k = 0; k < ncar; ++k) {
    args.push_back(control::batched_at_front(vals[w.ncc + w.nbc + k], dims[w.ncc + w.nbc + k], axis.size));
    cdims.push_back(0);
    bdims.push_back(0);
  }
  std::string key = control::batch_key("while.vmap", axis, dims);
  key += std::to_string(reinterpret_cast<uintptr_t>(w.cond));  // cached on the body, valid for this predicate
  struct BatchedLoop {
    JaxprPtr cond, body;
    JaxprPtr keyed_cond;  ///< keeps the predicate the key names alive (its address is in the key)
  };
  auto loop = w.body->derived<BatchedLoop>(key, [&] {
    ClosedJaxpr bcond = batch_jaxpr(*w.cond, cdims, axis.size, axis.name);  // -> bool[B]
    ClosedJaxpr bbody = batch_jaxpr(*w.body, bdims, axis.size, axis.name);
    std::vector<Aval> cin = bcond.in_avals(), bin = bbody.in_avals();
    // predicate: any lane active
    FlatFn cf = [&](const std::vector<Array>& a) {
      return std::vector<Array>{lax::reduce_or(eval_jaxpr(bcond, a)[0], {0})};
    };
    // body: (cond consts, body consts, carry) -> carry, stepping only the active lanes
    FlatFn bf = [&](const std::vector<Array>& a) {
      std::vector<Array> ca(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(w.ncc));
      std::vector<Array> ba(a.begin() + static_cast<std::ptrdiff_t>(w.ncc), a.end());
      std::vector<Array> carry(a.end() - static_cast<std::ptrdiff_t>(ncar), a.end());
      ca.insert(ca.end(), carry.begin(), carry.end());
      Array active = eval_jaxpr(bcond, ca)[0];
      Arrays next = eval_jaxpr(bbody, ba);
      std::vector<Array> out;
      for (size_t k = 0; k < ncar; ++k)
        out.push_back(lax::select(lax::broadcast_in_dim(active, next[k].shape(), {0}), next[k], carry[k]));
      return out;
    };
    std::vector<Aval> avals(cin.begin(), cin.begin() + static_cast<std::ptrdiff_t>(w.ncc));
    avals.insert(avals.end(), bin.begin(), bin.end());
    return BatchedLoop{share(make_jaxpr_flat(cf, cin, "while_vmap")), share(make_jaxpr_flat(bf, avals, "while_vmap")),
                       w.cond_ptr};
  });
  // the body now also takes the predicate's consts
  Arrays full(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(w.ncc));
  full.insert(full.end(), args.begin(), args.end());
  Arrays outs = bind(p, full, make_params(loop->cond, loop->body, w.ncc, w.ncc + w.nbc, w.max_steps));
  return {outs, BatchDims(outs.size(), 0)};
}

}  // namespace

const Primitive while_p{"while",       kHigherOrder | kMultipleResults | kVmaRule, &while_shape, &while_impl, &while_jvp,
                        nullptr,       &while_batch,                    &while_linearize};

std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body, const std::vector<Array>& init,
                              const WhileOptions& opts) {
  static bool registered = (prims::register_primitive(&while_p), true);
  (void)registered;
  std::vector<Array> carry = init;
  for (size_t k = 0; k < carry.size(); ++k)
    if (!carry[k].valid()) fail<ValueError>("while_loop: carry ", k, " is a null array");
  for (int attempt = 0;; ++attempt) {
    std::vector<Aval> avals;
    for (auto& c : carry) avals.push_back(c.aval());
    control::TracedBody c = control::trace_body(cond_fn, avals, "while_loop");
    std::vector<Aval> co = c.jaxpr->out_avals();
    if (co.size() != 1 || !co[0].shape.empty() || co[0].dtype != DType::bool_)
      fail<TypeError>("while_loop: the predicate must return one boolean scalar, it returns ", control::types_str(co));
    control::TracedBody b = control::trace_body(body, avals, "while_loop");
    std::vector<Aval> bo = b.jaxpr->out_avals();
    if (bo.size() != carry.size())
      fail<TypeError>("while_loop: the body returns ", bo.size(), " arrays for a carry of ", carry.size());
    bool retry = false;
    for (size_t k = 0; k < carry.size(); ++k) {
      if (bo[k].same_type(avals[k])) continue;
      if (attempt == 0 && carry[k].weak_type() && bo[k].shape == avals[k].shape) {
        carry[k] = lax::convert_element_type(carry[k], bo[k].dtype, bo[k].weak_type);
        retry = true;
        continue;
      }
      fail<TypeError>("while_loop: the body returns carry ", k, " of type ", bo[k].str(),
                      " but the carry has type ", avals[k].str(), "; the body must keep the carry's types");
    }
    if (retry) continue;
    std::vector<Array> args = c.consts;
    args.insert(args.end(), b.consts.begin(), b.consts.end());
    args.insert(args.end(), carry.begin(), carry.end());
    Arrays r = bind(while_p, args, make_params(c.jaxpr, b.jaxpr, c.consts.size(), b.consts.size(), opts.max_steps));
    return std::vector<Array>(r.begin(), r.end());
  }
}

}  // namespace graft
