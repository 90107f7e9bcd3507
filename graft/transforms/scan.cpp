// scan: the primitive with all its rules, and the tracing of its body.
//
// Operands: consts (loop-invariant), the initial carry, xs (sliced along axis 0). Results: the final
// carry, then ys (the body's per-iteration outputs stacked along a new axis 0).
#include "graft/core/trace.h"
#include "graft/ir/print_rules.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/core/axis_names.h"
#include "graft/transforms/control.h"
#include "graft/transforms/control_util.h"

namespace graft {

namespace {

using control::share;

struct ScanInfo {
  const ClosedJaxpr* body;
  int64_t length;
  bool reverse;
  size_t nconst, ncar;
};

ScanInfo info_of(const Params& p) {
  return {&p.get_jaxpr("jaxpr"), p.get_int("length"), p.get_bool("reverse"),
          static_cast<size_t>(p.get_int("num_consts")), static_cast<size_t>(p.get_int("num_carry"))};
}

Params make_params(JaxprPtr body, int64_t length, bool reverse, size_t nconst, size_t ncar) {
  return Params{{"jaxpr", std::move(body)},
                {"length", length},
                {"reverse", reverse},
                {"num_consts", static_cast<int64_t>(nconst)},
                {"num_carry", static_cast<int64_t>(ncar)}};
}

// (the varying named axes carry over: a slice of a value that varies over "i" does too)
Aval unstacked(const Aval& a) {
  Aval r = a;
  r.shape.erase(r.shape.begin());
  return r;
}
Aval stacked(const Aval& a, int64_t n) {
  Aval r = a;
  r.shape.insert(r.shape.begin(), n);
  return r;
}

Avals scan_shape(const Primitive&, AvalPtrs in, const Params& params) {
  ScanInfo s = info_of(params);
  const auto& invars = s.body->jaxpr->invars;
  if (in.size() != invars.size() || s.nconst + s.ncar > in.size())
    fail<ValueError>("scan: the body takes ", invars.size(), " arrays, got ", in.size(), " operands");
  for (size_t i = 0; i < in.size(); ++i) {
    bool is_x = i >= s.nconst + s.ncar;
    if (is_x && (in[i]->shape.empty() || in[i]->shape[0] != s.length))
      fail<ShapeError>("scan: xs operand ", i - s.nconst - s.ncar, " has type ", in[i]->str(),
                       ", expected a leading axis of length ", s.length);
    Aval a = is_x ? unstacked(*in[i]) : *in[i];
    if (!a.same_type(invars[i]->aval))
      fail<TypeError>("scan: operand ", i, " has type ", in[i]->str(), ", the body expects ", invars[i]->aval.str(),
                      is_x ? " per iteration" : "");
  }
  std::vector<Aval> body_out = s.body->out_avals();
  if (body_out.size() < s.ncar) fail<ValueError>("scan: the body returns fewer values than the carry has");
  Avals out;
  for (size_t k = 0; k < s.ncar; ++k) {
    const Aval& c = *in[s.nconst + k];
    if (!body_out[k].same_type(c))
      fail<TypeError>("scan: the body returns carry ", k, " of type ", body_out[k].str(),
                      " but the carry has type ", c.str(), "; the body must keep the carry's types");
    Aval o = c;
    o.vma |= body_out[k].vma;  // a zero tangent carry is typed invariant; what the body returns decides
    out.push_back(o);
  }
  for (size_t k = s.ncar; k < body_out.size(); ++k) out.push_back(stacked(body_out[k], s.length));
  return out;
}

Arrays scan_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out_avals, const Params& params) {
  ScanInfo s = info_of(params);
  size_t nxs = in.size() - s.nconst - s.ncar;
  Arrays args(in.begin(), in.end());
  Arrays ys;
  for (size_t k = s.ncar; k < out_avals.size(); ++k) ys.push_back(Array::empty(out_avals[k]));
  for (int64_t t = 0; t < s.length; ++t) {
    int64_t i = s.reverse ? s.length - 1 - t : t;
    for (size_t k = 0; k < nxs; ++k) args[s.nconst + s.ncar + k] = control::row(in[s.nconst + s.ncar + k], i);
    Arrays outs = control::run_body(*s.body, args);
    for (size_t k = 0; k < s.ncar; ++k) args[s.nconst + k] = outs[k];
    for (size_t k = 0; k < ys.size(); ++k) control::write_row(ys[k], i, outs[s.ncar + k]);
  }
  Arrays r(args.begin() + static_cast<std::ptrdiff_t>(s.nconst),
           args.begin() + static_cast<std::ptrdiff_t>(s.nconst + s.ncar));
  r.insert(r.end(), ys.begin(), ys.end());
  return r;
}

// Which inputs of the body get tangents: the given ones for consts and xs, every floating carry (a
// carry's tangent generally becomes nonzero after one iteration, so it is instantiated up front).
struct TangentLayout {
  std::vector<bool> body_nz;  ///< per body input
  std::vector<bool> carry_float, out_float;
  size_t nct = 0, ncart = 0, nxt = 0;  ///< tangents of consts, carries, xs
};

TangentLayout tangent_layout(const ScanInfo& s, std::span<const Array> tangents) {
  TangentLayout L;
  std::vector<Aval> in = s.body->in_avals();
  for (size_t i = 0; i < in.size(); ++i) {
    bool carry = i >= s.nconst && i < s.nconst + s.ncar;
    bool nz = carry ? is_inexact(in[i].dtype) : tangents[i].valid();
    L.body_nz.push_back(nz);
    if (carry) L.carry_float.push_back(nz);
    size_t& count = i < s.nconst ? L.nct : carry ? L.ncart : L.nxt;
    count += nz ? 1 : 0;
  }
  L.out_float = control::float_mask(s.body->out_avals());
  return L;
}

// The tangent operands in the order consts, carry (instantiated), xs.
void push_tangents(Arrays& args, const TangentLayout& L, std::span<const Array> tangents,
                   std::span<const Array> primals, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    if (!L.body_nz[i]) continue;
    args.push_back(tangents[i].valid() ? tangents[i] : lax::zeros(Aval(primals[i].shape(), primals[i].dtype())));
  }
}

// Splits the outputs (carry, carry tangents, ys, y tangents) of a jvp/linear scan into a JvpResult.
JvpResult split_outputs(const Arrays& primal_carry_ys, const Arrays& tangent_outs, const TangentLayout& L) {
  JvpResult r;
  r.primals = primal_carry_ys;
  size_t t = 0;
  r.tangents.resize(r.primals.size());
  for (size_t k = 0; k < L.out_float.size(); ++k)
    if (L.out_float[k]) r.tangents[k] = tangent_outs[t++];
  return r;
}

JvpResult scan_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  ScanInfo s = info_of(params);
  TangentLayout L = tangent_layout(s, tangents);
  size_t n = primals.size(), ny = L.out_float.size() - s.ncar;
  auto body = *s.body->derived<JaxprPtr>(control::mask_key("scan.jvp", L.body_nz), [&] {
    ClosedJaxpr jb = jvp_jaxpr(*s.body, L.body_nz);
    // inputs (consts, carry, xs, const_t, carry_t, x_t) -> (consts, const_t, carry, carry_t, xs, x_t)
    std::vector<size_t> order;
    auto range = [&](size_t a, size_t b) {
      for (size_t i = a; i < b; ++i) order.push_back(i);
    };
    range(0, s.nconst);
    range(n, n + L.nct);
    range(s.nconst, s.nconst + s.ncar);
    range(n + L.nct, n + L.nct + L.ncart);
    range(s.nconst + s.ncar, n);
    range(n + L.nct + L.ncart, n + L.nct + L.ncart + L.nxt);
    // outputs (carry, ys, tangents of all) -> (carry, carry_t of floats, ys, y_t of floats)
    size_t no = s.ncar + ny;
    std::vector<size_t> keep;
    for (size_t k = 0; k < s.ncar; ++k) keep.push_back(k);
    for (size_t k = 0; k < s.ncar; ++k)
      if (L.out_float[k]) keep.push_back(no + k);
    for (size_t k = s.ncar; k < no; ++k) keep.push_back(k);
    for (size_t k = s.ncar; k < no; ++k)
      if (L.out_float[k]) keep.push_back(no + k);
    return share(select_outvars(permute_invars(jb, order), keep));
  });
  Arrays args;
  auto add_primals = [&](size_t a, size_t b) { args.insert(args.end(), primals.begin() + a, primals.begin() + b); };
  add_primals(0, s.nconst);
  push_tangents(args, L, tangents, primals, 0, s.nconst);
  add_primals(s.nconst, s.nconst + s.ncar);
  push_tangents(args, L, tangents, primals, s.nconst, s.nconst + s.ncar);
  add_primals(s.nconst + s.ncar, n);
  push_tangents(args, L, tangents, primals, s.nconst + s.ncar, n);
  Arrays outs = bind(p, args, make_params(body, s.length, s.reverse, s.nconst + L.nct, s.ncar + L.ncart));
  // outs: carry, carry_t, ys, y_t
  Arrays prim(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(s.ncar));
  Arrays tan(outs.begin() + static_cast<std::ptrdiff_t>(s.ncar),
             outs.begin() + static_cast<std::ptrdiff_t>(s.ncar + L.ncart));
  size_t y0 = s.ncar + L.ncart;
  prim.insert(prim.end(), outs.begin() + static_cast<std::ptrdiff_t>(y0),
              outs.begin() + static_cast<std::ptrdiff_t>(y0 + ny));
  tan.insert(tan.end(), outs.begin() + static_cast<std::ptrdiff_t>(y0 + ny), outs.end());
  return split_outputs(prim, tan, L);
}

// Under grad: the primal scan runs now and also stacks, per iteration, the residuals that the
// tangent computation needs; the linear program gets a scan of the body's linear part over them.
// Residuals that are loop-invariant consts or slices of xs are passed as they are, not stacked.
struct ScanLinearization {
  JaxprPtr known, linear;
  std::vector<int> residual_input;
  std::vector<size_t> stacked;  ///< residual indices the known scan stacks
};

JvpResult scan_linearize(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  ScanInfo s = info_of(params);
  TangentLayout L = tangent_layout(s, tangents);
  size_t n = primals.size(), ny = L.out_float.size() - s.ncar;
  auto lin = s.body->derived<ScanLinearization>(control::mask_key("scan.lin", L.body_nz), [&] {
    LinearizedJaxpr lj = linearize_jaxpr(*s.body, L.body_nz, /*instantiate=*/true);
    ScanLinearization r;
    r.residual_input = lj.residual_input;
    std::vector<size_t> keep;
    for (size_t k = 0; k < s.ncar + ny; ++k) keep.push_back(k);
    std::vector<size_t> const_res, xs_res;
    for (size_t k = 0; k < lj.num_residuals; ++k) {
      int ri = lj.residual_input[k];
      if (ri >= 0 && static_cast<size_t>(ri) < s.nconst) {
        const_res.push_back(k);
      } else if (ri >= 0 && static_cast<size_t>(ri) >= s.nconst + s.ncar) {
        xs_res.push_back(k);
      } else {
        r.stacked.push_back(k);
        keep.push_back(s.ncar + ny + k);
      }
    }
    r.known = share(select_outvars(lj.known, keep));
    // linear inputs (residuals, const_t, carry_t, x_t) -> (const residuals, const_t, carry_t,
    // stacked residuals, xs residuals, x_t)
    size_t R = lj.num_residuals;
    std::vector<size_t> order(const_res);
    for (size_t i = 0; i < L.nct + L.ncart; ++i) order.push_back(R + i);
    order.insert(order.end(), r.stacked.begin(), r.stacked.end());
    order.insert(order.end(), xs_res.begin(), xs_res.end());
    for (size_t i = 0; i < L.nxt; ++i) order.push_back(R + L.nct + L.ncart + i);
    r.linear = share(permute_invars(lj.linear, order));
    return r;
  });
  // the primal scan, with the stacked residuals as extra ys
  Arrays outs = bind(p, primals, make_params(lin->known, s.length, s.reverse, s.nconst, s.ncar));
  Arrays prim(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(s.ncar + ny));
  // the linear scan
  Arrays args;
  size_t nconst_res = 0;
  for (int ri : lin->residual_input)
    if (ri >= 0 && static_cast<size_t>(ri) < s.nconst) {
      args.push_back(primals[static_cast<size_t>(ri)]);
      ++nconst_res;
    }
  push_tangents(args, L, tangents, primals, 0, s.nconst);
  push_tangents(args, L, tangents, primals, s.nconst, s.nconst + s.ncar);
  args.insert(args.end(), outs.begin() + static_cast<std::ptrdiff_t>(s.ncar + ny), outs.end());
  for (int ri : lin->residual_input)
    if (ri >= 0 && static_cast<size_t>(ri) >= s.nconst + s.ncar) args.push_back(primals[static_cast<size_t>(ri)]);
  push_tangents(args, L, tangents, primals, s.nconst + s.ncar, n);
  Arrays tan = bind(p, args, make_params(lin->linear, s.length, s.reverse, nconst_res + L.nct, L.ncart));
  return split_outputs(prim, tan, L);
}

// The transpose of a scan that is linear in its carry (and in some consts and xs): a scan in the
// opposite direction whose carry holds the carry's cotangent and the running sums of the linear
// consts' cotangents, and whose ys are the linear xs' cotangents.
Arrays scan_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                      const Params& params) {
  ScanInfo s = info_of(params);
  size_t n = args.size();
  std::vector<bool> linear;
  for (auto& a : args) linear.push_back(a.linear);
  // Scans reach the backward pass only from the linearize rules, which make them linear in their
  // carry; a carry that is a known value there is a zero tangent (a carry whose input tangent was
  // symbolically zero), so it is transposed as linear and its cotangent dropped.
  for (size_t k = 0; k < s.ncar; ++k) linear[s.nconst + k] = true;
  std::vector<Aval> body_in = s.body->in_avals(), body_out = s.body->out_avals();
  size_t nlc = 0, nlx = 0, nkc = 0, nkx = 0;
  for (size_t i = 0; i < s.nconst; ++i) (linear[i] ? nlc : nkc)++;
  for (size_t i = s.nconst + s.ncar; i < n; ++i) (linear[i] ? nlx : nkx)++;
  size_t ny = body_out.size() - s.ncar;
  auto bodyT = *s.body->derived<JaxprPtr>(control::mask_key("scan.T", linear), [&] {
    ClosedJaxpr tb = transpose_jaxpr(*s.body, linear);  // (known consts, known xs, ct_carry, ct_y) -> cts
    std::vector<Aval> avals;
    for (size_t i = 0; i < s.nconst; ++i)
      if (!linear[i]) avals.push_back(body_in[i]);
    for (size_t i = 0; i < s.nconst; ++i)
      if (linear[i]) avals.push_back(body_in[i]);
    for (size_t k = 0; k < s.ncar; ++k) avals.push_back(body_out[k]);
    for (size_t i = s.nconst + s.ncar; i < n; ++i)
      if (!linear[i]) avals.push_back(body_in[i]);
    for (size_t k = 0; k < ny; ++k) avals.push_back(body_out[s.ncar + k]);
    FlatFn f = [&](const std::vector<Array>& a) {
      // a: known consts, const-ct accumulators, ct_carry, known xs, ct_y
      auto at = [&](size_t off, size_t cnt) {
        return std::vector<Array>(a.begin() + static_cast<std::ptrdiff_t>(off),
                                  a.begin() + static_cast<std::ptrdiff_t>(off + cnt));
      };
      std::vector<Array> in = at(0, nkc), kx = at(nkc + nlc + s.ncar, nkx);
      in.insert(in.end(), kx.begin(), kx.end());
      std::vector<Array> ctc = at(nkc + nlc, s.ncar), cty = at(nkc + nlc + s.ncar + nkx, ny);
      in.insert(in.end(), ctc.begin(), ctc.end());
      in.insert(in.end(), cty.begin(), cty.end());
      Arrays o = eval_jaxpr(tb, in);  // cts of (linear consts, carry, linear xs)
      std::vector<Array> r;
      for (size_t k = 0; k < nlc; ++k) r.push_back(lax::add_any(a[nkc + k], o[k]));
      r.insert(r.end(), o.begin() + static_cast<std::ptrdiff_t>(nlc), o.end());
      return r;
    };
    return share(make_jaxpr_flat(f, avals, "scan_transpose"));
  });
  Arrays in;
  for (size_t i = 0; i < s.nconst; ++i)
    if (!linear[i]) in.push_back(args[i].value);
  for (size_t i = 0; i < s.nconst; ++i)
    if (linear[i]) in.push_back(lax::zeros(Aval(args[i].aval.shape, args[i].aval.dtype)));
  for (size_t k = 0; k < s.ncar; ++k) in.push_back(cts[k].valid() ? cts[k] : lax::zeros(Aval(body_out[k].shape, body_out[k].dtype)));
  for (size_t i = s.nconst + s.ncar; i < n; ++i)
    if (!linear[i]) in.push_back(args[i].value);
  for (size_t k = 0; k < ny; ++k) {
    const Aval& ya = stacked(body_out[s.ncar + k], s.length);
    in.push_back(cts[s.ncar + k].valid() ? cts[s.ncar + k] : lax::zeros(Aval(ya.shape, ya.dtype)));
  }
  Arrays outs = bind(p, in, make_params(bodyT, s.length, !s.reverse, nkc, nlc + s.ncar));
  // outs: const-ct sums, carry cts, linear xs cts
  Arrays r(n);
  size_t k = 0;
  for (size_t i = 0; i < s.nconst; ++i)
    if (linear[i]) r[i] = outs[k++];
  for (size_t c = 0; c < s.ncar; ++c, ++k)
    if (args[s.nconst + c].linear) r[s.nconst + c] = outs[k];
  for (size_t i = s.nconst + s.ncar; i < n; ++i)
    if (linear[i]) r[i] = outs[k++];
  return r;
}

BatchResult scan_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                       const BatchInfo& axis, const Params& params) {
  ScanInfo s = info_of(params);
  // A carry is batched when its initial value is, or when the body makes it so (found by a fixpoint:
  // batch the body, mark the carries it returns batched, again until nothing changes). The others stay
  // unbatched, and so do the per-step outputs that are the same on every lane: under a named axis, a
  // carry accumulated from psums stays invariant.
  std::vector<bool> carry_batched(s.ncar);
  for (size_t c = 0; c < s.ncar; ++c) carry_batched[c] = dims[s.nconst + c] != kNotMapped;
  std::vector<int64_t> body_dims;
  std::vector<bool> mapped;
  JaxprPtr body;
  for (;;) {
    body_dims.clear();
    for (size_t i = 0; i < vals.size(); ++i) {
      bool carry = i >= s.nconst && i < s.nconst + s.ncar;
      if (carry) {
        body_dims.push_back(carry_batched[i - s.nconst] ? 0 : kNotMapped);
      } else {
        body_dims.push_back(dims[i] == kNotMapped ? kNotMapped : i < s.nconst ? dims[i] : 0);
      }
    }
    std::string key = control::batch_key("scan.vmap", axis, body_dims) + control::mask_key("C", carry_batched);
    struct Batched {
      JaxprPtr jaxpr;
      std::vector<bool> mapped;
    };
    auto b = s.body->derived<Batched>(key, [&] {
      Batched r;
      r.mapped.assign(carry_batched.begin(), carry_batched.end());  // carries batched on entry stay so
      r.jaxpr = share(batch_jaxpr(*s.body, body_dims, axis.size, axis.name, &r.mapped));
      return r;
    });
    bool changed = false;
    for (size_t c = 0; c < s.ncar; ++c)
      if (b->mapped[c] && !carry_batched[c]) carry_batched[c] = changed = true;
    if (!changed) {
      body = b->jaxpr;
      mapped = b->mapped;
      break;
    }
  }
  Arrays args;
  for (size_t i = 0; i < vals.size(); ++i) {
    if (i >= s.nconst && i < s.nconst + s.ncar) {
      args.push_back(carry_batched[i - s.nconst] ? control::batched_at_front(vals[i], dims[i], axis.size) : vals[i]);
    } else if (i < s.nconst || dims[i] == kNotMapped) {
      args.push_back(vals[i]);
    } else {
      args.push_back(lax::moveaxis(vals[i], dims[i], 1));  // axis 0 stays the scanned one
    }
  }
  Arrays outs = bind(p, args, make_params(body, s.length, s.reverse, s.nconst, s.ncar));
  BatchDims od;
  for (size_t k = 0; k < outs.size(); ++k) od.push_back(!mapped[k] ? kNotMapped : k < s.ncar ? 0 : 1);
  return {outs, od};
}

// ---- JAX 0.11's spelling: scan[ft_in=... ft_out=... jaxpr=... length=... reverse=... unroll=1] ----------
// JAX 0.11 describes the operands and results by flat trees: ft_in = (consts, carry, xs) and ft_out =
// (carry, ys), each leaf printed as None and each kept ys leaf as RightsOnly(Right(None)) (jax/_src/
// flattree.py's reprs); the parameters print sorted, as JAX's pp does. graft's num_consts / num_carry are
// read back from ft_in.
struct TextParam final : ParamObject {
  std::string text;
  explicit TextParam(std::string t) : text(std::move(t)) {}
  void print(std::ostream& os) const override { os << text; }
  size_t hash() const override { return std::hash<std::string>()(text); }
  bool equals(const ParamObject& o) const override {
    auto* t = dynamic_cast<const TextParam*>(&o);
    return t && t->text == text;
  }
};

// A Python tuple's repr of n copies of `leaf`: (), (x,), (x, x).
std::string py_tuple(size_t n, const char* leaf) {
  std::string s = "(";
  for (size_t i = 0; i < n; ++i) s += std::string(i ? ", " : "") + leaf;
  return s + (n == 1 ? ",)" : ")");
}

std::vector<PrintedParam> print_scan(const Eqn& e) {
  ScanInfo s = info_of(e.params);
  size_t nx = s.body->jaxpr->invars.size() - s.nconst - s.ncar, ny = s.body->jaxpr->outvars.size() - s.ncar;
  auto text = [](std::string t) { return ParamValue(Ref<const ParamObject>(new TextParam(std::move(t)))); };
  return {{"ft_in", text("(" + py_tuple(s.nconst, "None") + ", " + py_tuple(s.ncar, "None") + ", " +
                         py_tuple(nx, "None") + ")")},
          {"ft_out", text("(" + py_tuple(s.ncar, "None") + ", " + py_tuple(ny, "RightsOnly(Right(None))") + ")")},
          {"jaxpr", *e.params.find("jaxpr")},
          {"length", s.length},
          {"reverse", s.reverse},
          {"unroll", int64_t{1}}};
}

// num_consts and num_carry from ft_in's first two groups: the leaves (None) of each.
void derive_scan(std::string_view key, std::string_view text, Params& own) {
  if (key != "ft_in") return;
  std::vector<int64_t> leaves;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '(') {
      if (++depth == 2) leaves.push_back(0);
    } else if (c == ')') {
      --depth;
    } else if (depth >= 2 && text.compare(i, 4, "None") == 0) {
      ++leaves.back();
      i += 3;
    }
  }
  if (leaves.size() != 3 || depth != 0)
    fail<ValueError>("scan: ft_in must be (consts, carry, xs) flat trees, got '", text, "'");
  own.set("num_consts", leaves[0]);
  own.set("num_carry", leaves[1]);
}

}  // namespace

const Primitive scan_p{"scan",          kHigherOrder | kMultipleResults | kVmaRule, &scan_shape, &scan_impl, &scan_jvp,
                       &scan_transpose, &scan_batch,                     &scan_linearize};

namespace control {
// scan_p and JAX's spelling of its parameters (graft/ir/print_rules.h), once.
void register_scan();

Arrays bind_scan(JaxprPtr body, std::span<const Array> args, int64_t length, bool reverse, size_t nconst,
                 size_t ncar) {
  register_scan();
  return bind(scan_p, args, make_params(std::move(body), length, reverse, nconst, ncar));
}

void register_scan() {
  static bool registered = [] {
    prims::register_primitive(&scan_p);
    register_param_spelling("scan", {.print = &print_scan,
                                     .dropped = {"ft_in", "ft_out", "unroll"},
                                     .derive = &derive_scan});
    return true;
  }();
  (void)registered;
}
}  // namespace control

std::vector<Array> scan_flat(const FlatFn& f, const std::vector<Array>& init, const std::vector<Array>& xs,
                             const ScanOptions& opts) {
  std::optional<int64_t> length = opts.length;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k].valid() || xs[k].ndim() == 0)
      fail<ShapeError>("scan: xs must have a leading axis to scan over; xs ", k, " has type ",
                       xs[k].valid() ? xs[k].aval().str() : std::string("null"));
    if (length && *length != xs[k].shape(0))
      fail<ShapeError>("scan: xs ", k, " has type ", xs[k].aval().str(), " but the scan's length is ", *length);
    length = xs[k].shape(0);
  }
  if (!length) fail<ValueError>("scan: with no xs, ScanOptions::length must be given");
  if (*length < 0) fail<ValueError>("scan: the length must be non-negative, got ", *length);
  std::vector<Array> carry = init;
  for (int attempt = 0;; ++attempt) {
    std::vector<Aval> avals;
    for (auto& c : carry) avals.push_back(c.aval());
    for (auto& x : xs) avals.push_back(unstacked(x.aval()));
    control::TracedBody t = control::trace_body(f, avals, "scan");
    std::vector<Aval> outs = t.jaxpr->out_avals();
    if (outs.size() < carry.size())
      fail<ValueError>("scan: the body returns ", outs.size(), " arrays, fewer than the carry's ", carry.size());
    bool retry = false;
    for (size_t k = 0; k < carry.size(); ++k) {
      // a carry the body makes vary over a named axis (carry + x_i) varies from the start: traced again
      // with it marked so (pvary), so that reverse mode sees its true type in every iteration
      if (AxisSet extra = outs[k].vma & ~carry[k].aval().vma; extra && attempt < 4) {
        carry[k] = lax::pvary(carry[k], axis_set_names(extra));
        retry = true;
      }
      if (outs[k].same_type(carry[k].aval())) continue;
      // a weakly typed initial carry (a C++ scalar) takes the dtype the body gives it, as in JAX
      if (attempt == 0 && carry[k].weak_type() && outs[k].shape == carry[k].shape()) {
        carry[k] = lax::convert_element_type(carry[k], outs[k].dtype, outs[k].weak_type);
        retry = true;
        continue;
      }
      fail<TypeError>("scan: the body returns carry ", k, " of type ", outs[k].str(), " but the initial carry has type ",
                      carry[k].aval().str(), "; the body must keep the carry's types");
    }
    if (retry) continue;
    std::vector<Array> args = t.consts;
    args.insert(args.end(), carry.begin(), carry.end());
    args.insert(args.end(), xs.begin(), xs.end());
    Arrays r = control::bind_scan(t.jaxpr, args, *length, opts.reverse, t.consts.size(), carry.size());
    return std::vector<Array>(r.begin(), r.end());
  }
}

}  // namespace graft
