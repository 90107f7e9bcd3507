#include "graft/transforms/control_util.h"

#include <atomic>
#include <cstring>

#include "graft/compiler/executable.h"
#include "graft/core/trace.h"

namespace graft::control {

namespace {
struct RunCount {
  std::shared_ptr<std::atomic<int>> n = std::make_shared<std::atomic<int>>(0);
};
}  // namespace

Arrays run_body(const ClosedJaxpr& j, std::span<const Array> args) {
  TraceScope eager(eval_trace());
  auto runs = j.derived<RunCount>("control.runs", [] { return RunCount{}; });
  if (runs->n->fetch_add(1) == 0 && !j.compiled) return eval_jaxpr(j, args);
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
  if (nb) std::memcpy(static_cast<char*>(dst.concrete()->data()) + static_cast<size_t>(i) * nb, value.raw_data(), nb);
}

std::vector<bool> float_mask(const std::vector<Aval>& avals) {
  std::vector<bool> m;
  for (auto& a : avals) m.push_back(is_floating(a.dtype));
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
