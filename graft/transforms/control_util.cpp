#include "graft/transforms/control_util.h"

#include <atomic>
#include <cstring>

#include "graft/compiler/executable.h"
#include "graft/core/config.h"
#include "graft/core/trace.h"
#include "graft/interp/jvp.h"
#include "graft/prims/lax.h"

namespace graft::control {

namespace {
struct RunCount {
  std::shared_ptr<std::atomic<int>> n = std::make_shared<std::atomic<int>>(0);
};
}  // namespace

Arrays run_body(const ClosedJaxpr& j, std::span<const Array> args) {
  TraceScope eager(eval_trace());
  if (config::debug_numerics()) return eval_jaxpr(j, args);  // op by op: each primitive is checked
  if (!j.compiled) {  // (once compiled, a loop body skips the count: it runs every iteration)
    auto runs = j.derived<RunCount>("control.runs", [] { return RunCount{}; });
    if (runs->n->fetch_add(1) == 0) return eval_jaxpr(j, args);
  }
  return Executable::of(j, "body").run(args);
}

TracedBody trace_body(const FlatFn& fn, const std::vector<Aval>& avals, const char* kind) {
  ClosedJaxpr c = make_jaxpr_flat(fn, avals, kind);
  return {std::make_shared<const ClosedJaxpr>(hoist_consts(*c.jaxpr), std::vector<Array>{}), c.consts};
}

Array row(const Array& xs, int64_t i) {
  ConcreteNode* c = xs.concrete();
  Aval r(Shape(xs.shape().begin() + 1, xs.shape().end()), xs.dtype(), xs.weak_type());
  size_t nb = r.nbytes();
  const char* src = static_cast<const char*>(c->data()) + static_cast<size_t>(i) * nb;
  if (const Ref<Buffer>& buf = c->buffer()) {
    size_t offset = static_cast<size_t>(src - static_cast<const char*>(buf->data()));
    return Array(Ref<ArrayNode>(new ConcreteNode(r, buf, offset)));
  }
  return Array::from_data(src, r.shape, r.dtype, r.weak_type);
}

Array stack_rows(const std::vector<Array>& rows, const Aval& row) {
  Shape s = row.shape;
  s.insert(s.begin(), static_cast<int64_t>(rows.size()));
  Array out = Array::empty(Aval(s, row.dtype, row.weak_type));
  for (size_t i = 0; i < rows.size(); ++i) write_row(out, static_cast<int64_t>(i), rows[i]);
  return out;
}

void write_row(const Array& dst, int64_t i, const Array& value) {
  size_t nb = value.nbytes();
  Array host = value.concretize("write_row");  // a device's value is read on the host
  if (nb) std::memcpy(static_cast<char*>(dst.concrete()->data()) + static_cast<size_t>(i) * nb, host.raw_data(), nb);
}

JvpResult linearize_inline(const ClosedJaxpr& body, std::span<const Array> primals, std::span<const Array> tangents) {
  Trace* rule = current_trace();
  // the same arrangement as linearize_flat: primal work in the rule trace's parent, rules in it
  auto L = make_ref<JVPTrace>(Ref<Trace>(rule->parent()), rule, "grad");
  struct End {
    Trace* t;
    ~End() { t->end(); }
  } end{L.get()};
  Arrays ins;
  for (size_t i = 0; i < primals.size(); ++i) ins.push_back(L->make(primals[i], tangents[i]));
  Arrays outs;
  {
    TraceScope scope(L.get());
    outs = eval_jaxpr(body, ins);
  }
  JvpResult r;
  for (auto& o : outs) {
    auto [p, t] = L->unpack(o);
    r.primals.push_back(p);
    r.tangents.push_back(t);
  }
  return r;
}

Array batched_at_front(const Array& x, int64_t bdim, int64_t size) {
  if (bdim != kNotMapped) return lax::moveaxis(x, bdim, 0);
  Shape sh = x.shape();
  sh.insert(sh.begin(), size);
  Axes bd;
  for (int64_t k = 0; k < x.ndim(); ++k) bd.push_back(k + 1);
  return lax::broadcast_in_dim(x, sh, bd);
}

Arrays transpose_call(std::span<const Array> cts, std::span<const TArg> args, const std::vector<Aval>& out_avals,
                      size_t first, const std::function<Arrays(std::span<const Array>)>& run) {
  Arrays in;
  for (size_t i = 0; i < args.size(); ++i)
    if (i < first || !args[i].linear) in.push_back(args[i].value);
  for (size_t k = 0; k < cts.size(); ++k)
    in.push_back(cts[k].valid() ? cts[k] : lax::zeros(Aval(out_avals[k].shape, out_avals[k].dtype)));
  Arrays outs = run(in);
  Arrays r(args.size());
  for (size_t i = first, k = 0; i < args.size(); ++i)
    if (args[i].linear) r[i] = outs[k++];
  return r;
}

std::string batch_key(const char* tag, const BatchInfo& axis, std::span<const int64_t> dims) {
  // the name is length-prefixed: any character may appear in it
  std::string key = std::string(tag) + std::to_string(axis.size) + ":" + std::to_string(axis.name.size()) + ":" +
                    axis.name + ":";
  for (auto d : dims) key += std::to_string(d) + ",";
  return key;
}

std::vector<bool> float_mask(const std::vector<Aval>& avals) {
  std::vector<bool> m;
  for (auto& a : avals) m.push_back(is_inexact(a.dtype));
  return m;
}

std::string mask_key(const char* tag, const std::vector<bool>& m) {
  std::string k = tag;
  for (bool b : m) k += b ? '1' : '0';
  return k;
}

JaxprPtr share(ClosedJaxpr j) {
  for (auto& c : j.consts)
    if (!c.is_concrete())
      fail<ValueError>("control flow: a derived body captured a traced value (", c.aval().str(), "); this is a graft bug");
  return std::make_shared<const ClosedJaxpr>(std::move(j));
}

std::string types_str(const std::vector<Aval>& avals) {
  std::string s = "(";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + ")";
}

}  // namespace graft::control
