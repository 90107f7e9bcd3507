// cond (and switch_): the primitive with all its rules, and the tracing of branches.
#include "graft/core/axis_names.h"
#include "graft/core/trace.h"
#include "graft/interp/transpose.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control.h"
#include "graft/transforms/control_util.h"

namespace graft {

namespace {

using control::share;

const JaxprList& branches_of(const Params& p) { return p.get_jaxprs("branches"); }

Params with_branches(JaxprList b) { return Params{{"branches", std::move(b)}}; }

Avals cond_shape(const Primitive&, AvalPtrs in, const Params& params) {
  const JaxprList& br = branches_of(params);
  if (br.empty()) fail<ValueError>("cond: needs at least one branch");
  if (in.empty() || !in[0]->shape.empty() || !is_integer(in[0]->dtype))
    fail<TypeError>("cond: the branch index must be an integer scalar, got ",
                    in.empty() ? std::string("nothing") : in[0]->str());
  std::vector<Aval> outs = br[0]->out_avals();
  for (size_t b = 0; b < br.size(); ++b) {
    const auto& invars = br[b]->jaxpr->invars;
    if (invars.size() != in.size() - 1)
      fail<ValueError>("cond: branch ", b, " takes ", invars.size(), " operands, got ", in.size() - 1);
    for (size_t i = 0; i < invars.size(); ++i)
      if (!invars[i]->aval.same_type(*in[i + 1]))
        fail<TypeError>("cond: operand ", i, " has type ", in[i + 1]->str(), ", branch ", b, " expects ",
                        invars[i]->aval.str());
    std::vector<Aval> ob = br[b]->out_avals();
    bool same = ob.size() == outs.size();
    for (size_t k = 0; same && k < ob.size(); ++k) same = ob[k].same_type(outs[k]);
    if (!same)
      fail<TypeError>("cond: branch 0 returns ", control::types_str(outs), " but branch ", b, " returns ",
                      control::types_str(ob), "; every branch must return the same types");
    for (size_t k = 0; k < ob.size(); ++k) outs[k].weak_type = outs[k].weak_type && ob[k].weak_type;
  }
  // The named axes a result varies over: what some branch makes it vary over, and the index's (members
  // that pick different branches differ); an operand that varies over more than the branches were
  // traced with makes every result vary over the excess. A refinement of the operands' union and of
  // branch 0's types (branches batched by vmap carry their lanes' axes in their types): a branch may
  // return an invariant value, e.g. one gathered or summed over the axis. (Not yet: an axis the other
  // branches introduce without an operand varying over it, e.g. axis_index, as before this rule.)
  AxisSet extra = in[0]->vma, all = 0;
  for (auto* a : in) all |= a->vma;
  for (auto& b : br)
    for (size_t i = 0; i < b->jaxpr->invars.size(); ++i) extra |= in[i + 1]->vma & ~b->jaxpr->invars[i]->aval.vma;
  for (size_t k = 0; k < outs.size(); ++k) {
    outs[k].vma = extra;
    for (auto& b : br) outs[k].vma |= b->out_avals()[k].vma;
    // (branch 0's own axes always, as before this rule: an axis_index there varies with no operand)
    outs[k].vma = (outs[k].vma & all) | br[0]->out_avals()[k].vma;
  }
  return Avals(outs.begin(), outs.end());
}

Arrays cond_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  const JaxprList& br = branches_of(params);
  int64_t i = std::clamp<int64_t>(in[0].item<int64_t>(), 0, static_cast<int64_t>(br.size()) - 1);
  return control::run_body(*br[static_cast<size_t>(i)], in.subspan(1));
}

std::vector<bool> nonzero_mask(std::span<const Array> tangents) {
  std::vector<bool> nz;
  for (size_t i = 1; i < tangents.size(); ++i) nz.push_back(tangents[i].valid());
  return nz;
}

JvpResult cond_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  std::vector<bool> nz = nonzero_mask(tangents);
  JaxprList jb;
  for (auto& b : branches_of(params))
    jb.push_back(*b->derived<JaxprPtr>(control::mask_key("cond.jvp", nz), [&] { return share(jvp_jaxpr(*b, nz)); }));
  Arrays args(primals.begin(), primals.end());
  for (size_t i = 1; i < tangents.size(); ++i)
    if (tangents[i].valid()) args.push_back(tangents[i]);
  Arrays outs = bind(p, args, with_branches(jb));
  size_t n = outs.size() / 2;
  JvpResult r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n));
  r.tangents.assign(outs.begin() + static_cast<std::ptrdiff_t>(n), outs.end());
  return r;
}

// Under grad. With a concrete index (eager), only the taken branch is linearized. Otherwise (under
// jit) the primal cond runs in the parent and the linear program gets a cond over the same index whose
// branches compute the output tangents from the (known) operands and the input tangents; its
// transpose recomputes the taken branch's primal values (nothing is saved per branch).
JvpResult cond_linearize(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  const JaxprList& br = branches_of(params);
  if (primals[0].is_concrete()) {
    // the branch is known now (eager grad): linearize just that branch, nothing to recompute later
    int64_t i = std::clamp<int64_t>(primals[0].item<int64_t>(), 0, static_cast<int64_t>(br.size()) - 1);
    return control::linearize_inline(*br[static_cast<size_t>(i)], primals.subspan(1), tangents.subspan(1));
  }
  std::vector<bool> nz = nonzero_mask(tangents);
  JvpResult r;
  r.primals = bind(p, primals, params);
  std::vector<Aval> out_avals = br[0]->out_avals();
  std::vector<size_t> keep;
  for (size_t k = 0; k < out_avals.size(); ++k)
    if (is_inexact(out_avals[k].dtype)) keep.push_back(out_avals.size() + k);
  JaxprList tb;
  for (auto& b : br)
    tb.push_back(*b->derived<JaxprPtr>(control::mask_key("cond.lin", nz),
                                       [&] { return share(select_outvars(jvp_jaxpr(*b, nz), keep)); }));
  Arrays args(primals.begin(), primals.end());
  for (size_t i = 1; i < tangents.size(); ++i)
    if (tangents[i].valid()) args.push_back(tangents[i]);
  Arrays touts = bind(p, args, with_branches(tb));
  r.tangents.resize(r.primals.size());
  for (size_t k = 0, t = 0; k < out_avals.size(); ++k)
    if (is_inexact(out_avals[k].dtype)) r.tangents[k] = touts[t++];
  return r;
}

Arrays cond_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                      const Params& params) {
  if (args[0].linear) fail<ValueError>("cond: the branch index cannot be linear");
  std::vector<bool> linear;
  for (size_t i = 1; i < args.size(); ++i) linear.push_back(args[i].linear);
  JaxprList tb;
  for (auto& b : branches_of(params))
    tb.push_back(*b->derived<JaxprPtr>(control::mask_key("cond.T", linear),
                                       [&] { return share(transpose_jaxpr(*b, linear)); }));
  return control::transpose_call(cts, args, branches_of(params)[0]->out_avals(), 1,
                                 [&](std::span<const Array> in) { return bind(p, in, with_branches(tb)); });
}

BatchResult cond_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                       const BatchInfo& axis, const Params& params) {
  const JaxprList& br = branches_of(params);
  std::vector<int64_t> od(dims.begin() + 1, dims.end());
  std::string key = control::batch_key("cond.vmap", axis, od);
  if (dims[0] == kNotMapped) {
    // One branch runs for every lane. An output stays unbatched when every branch makes it the same on
    // every lane (under shard_map: invariant, e.g. a gathered or psum'd value), and is batched when any
    // branch batches it; the branches are batched once alone to learn which, then to that union.
    size_t nout = br[0]->out_avals().size();
    struct Alone {
      JaxprPtr j;
      std::vector<bool> mapped;
    };
    std::vector<bool> any(nout, false);
    std::vector<std::shared_ptr<const Alone>> alone;
    for (auto& b : br) {
      alone.push_back(b->derived<Alone>(key + ".alone", [&] {
        Alone a;
        a.mapped.assign(nout, false);
        a.j = share(batch_jaxpr(*b, od, axis.size, axis.name, &a.mapped));
        return a;
      }));
      for (size_t k = 0; k < nout; ++k) any[k] = any[k] || alone.back()->mapped[k];
    }
    JaxprList bb;
    for (size_t i = 0; i < br.size(); ++i) {
      if (alone[i]->mapped == any) {
        bb.push_back(alone[i]->j);
        continue;
      }
      bb.push_back(*br[i]->derived<JaxprPtr>(key + control::mask_key("U", any), [&] {
        std::vector<bool> m = any;
        return share(batch_jaxpr(*br[i], od, axis.size, axis.name, &m));
      }));
    }
    Arrays outs = bind(p, vals, with_branches(bb));
    BatchDims out_dims;
    for (size_t k = 0; k < nout; ++k) out_dims.push_back(any[k] ? 0 : kNotMapped);
    return {outs, out_dims};
  }
  JaxprList bb;
  for (auto& b : br)
    bb.push_back(*b->derived<JaxprPtr>(key, [&] { return share(batch_jaxpr(*b, od, axis.size, axis.name)); }));
  // a batched index: every branch runs on the whole batch and each lane selects its branch's result
  Array index = lax::moveaxis(vals[0], dims[0], 0);
  index = lax::convert_element_type(
      lax::clamp(lax::scalar(0, index.dtype()), index, lax::scalar(static_cast<double>(br.size() - 1), index.dtype())),
      DType::i32);
  std::vector<Arrays> per_branch;
  for (auto& b : bb) per_branch.push_back(eval_jaxpr(*b, vals.subspan(1)));
  Arrays outs;
  for (size_t k = 0; k < per_branch[0].size(); ++k) {
    Array which = lax::broadcast_in_dim(index, per_branch[0][k].shape(), {0});
    Arrays cases;
    for (auto& o : per_branch) cases.push_back(o[k]);
    outs.push_back(br.size() == 1 ? cases[0] : lax::select_n(which, cases));
  }
  return {outs, BatchDims(outs.size(), 0)};
}

// An output is linear if it is in some branch (a cond over jvp'd branches also returns primal values).
std::vector<bool> cond_linear_outputs(const Primitive&, const std::vector<bool>& linear_in, const Params& params) {
  std::vector<bool> ops(linear_in.begin() + 1, linear_in.end()), r;
  for (auto& b : branches_of(params)) {
    std::vector<bool> o = linear_outputs(*b->jaxpr, ops);
    if (r.empty()) r = o;
    for (size_t k = 0; k < r.size(); ++k) r[k] = r[k] || o[k];
  }
  return r;
}

}  // namespace

const Primitive cond_p{"cond",         kHigherOrder | kMultipleResults | kVmaRule,
                       &cond_shape,    &cond_impl,
                       &cond_jvp,      &cond_transpose,
                       &cond_batch,    &cond_linearize,
                       nullptr,        nullptr,
                       &cond_linear_outputs};

namespace detail {
void check_same_structure(const char* what, const std::vector<TreeDef>& defs) {
  for (size_t b = 1; b < defs.size(); ++b)
    if (defs[b].repr != defs[0].repr)
      fail<TypeError>(what, ": branch 0 returns a structure ", defs[0].repr, " but branch ", b, " returns ",
                      defs[b].repr);
}
}  // namespace detail

std::vector<Array> cond_flat(const Array& index, const std::vector<FlatFn>& branches,
                             const std::vector<Array>& operands) {
  static bool registered = (prims::register_primitive(&cond_p), true);
  (void)registered;
  if (branches.empty()) fail<ValueError>("cond: needs at least one branch");
  if (!index.valid() || index.ndim() != 0 || !(is_bool(index.dtype()) || is_integer(index.dtype())))
    fail<TypeError>("cond: the predicate must be a boolean scalar (or an integer scalar index for switch), got ",
                    index.valid() ? index.aval().str() : std::string("a null array"));
  Array idx = index.dtype() == DType::i32 ? index : lax::convert_element_type(index, DType::i32);
  std::vector<Aval> avals;
  for (auto& x : operands) avals.push_back(x.aval());
  // trace every branch; each one's captured values become operands that all branches accept
  std::vector<control::TracedBody> traced;
  for (auto& f : branches) traced.push_back(control::trace_body(f, avals, "cond"));
  // the captured values of all branches, each once (branches often capture the same arrays)
  Arrays args{idx};
  std::vector<Aval> const_avals;
  std::vector<std::vector<size_t>> slot(traced.size());  // branch const -> position among all consts
  for (size_t b = 0; b < traced.size(); ++b)
    for (auto& c : traced[b].consts) {
      size_t k = 0;
      while (k < const_avals.size() && args[k + 1].node() != c.node()) ++k;
      if (k == const_avals.size()) {
        args.push_back(c);
        const_avals.push_back(c.aval());
      }
      slot[b].push_back(k);
    }
  args.insert(args.end(), operands.begin(), operands.end());
  JaxprList br;
  for (size_t b = 0; b < traced.size(); ++b) {
    // invars: [all consts (the ones this branch does not use are unused)..., operands...]
    auto j = std::make_shared<Jaxpr>(*traced[b].jaxpr->jaxpr);
    size_t nc = traced[b].consts.size();
    std::vector<VarRef> invars;
    for (auto& a : const_avals) invars.push_back(make_ref<Var>(a));
    for (size_t i = 0; i < nc; ++i) invars[slot[b][i]] = j->invars[i];
    invars.insert(invars.end(), j->invars.begin() + static_cast<std::ptrdiff_t>(nc), j->invars.end());
    j->invars = std::move(invars);
    br.push_back(std::make_shared<const ClosedJaxpr>(std::move(j), std::vector<Array>{}));
  }
  Arrays outs = bind(cond_p, args, with_branches(std::move(br)));
  return std::vector<Array>(outs.begin(), outs.end());
}

}  // namespace graft
