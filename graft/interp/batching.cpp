#include "graft/interp/batching.h"

#include "graft/core/axis_names.h"

namespace graft {

BatchTrace::BatchTrace(Ref<Trace> parent, BatchInfo axis) : Trace(std::move(parent), "vmap"), axis_(std::move(axis)) {}

std::string BatchTrace::describe() const {
  return "vmap (over an axis of size " + std::to_string(axis_.size) + (axis_.name.empty() ? "" : " named '" + axis_.name + "'") + ")";
}

Array BatchTrace::make(const Array& val, int64_t bdim) {
  if (bdim == kNotMapped) return val;
  if (bdim < 0 || bdim >= val.ndim() || val.shape()[bdim] != axis_.size)
    fail<ShapeError>("vmap: internal error: batch dim ", bdim, " of ", val.aval().str(), " does not have size ",
                     axis_.size);
  Aval a = val.aval();
  a.shape.erase(a.shape.begin() + bdim);
  if (!axis_.name.empty()) a.vma |= axis_bit(axis_.name);  // a batched value differs between the lanes
  return Array(Ref<ArrayNode>(new BatchTracer(std::move(a), Ref<Trace>(this), val, bdim)));
}

std::pair<Array, int64_t> BatchTrace::unpack(const Array& x) const {
  if (Tracer* t = own(x)) {
    auto* b = static_cast<BatchTracer*>(t);
    return {b->val, b->bdim};
  }
  return {x, kNotMapped};
}

Arrays BatchTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  Arrays vals;
  BatchDims dims;
  bool any = false;
  for (const Array& x : in) {
    auto [v, d] = unpack(x);
    any = any || d != kNotMapped;
    vals.push_back(std::move(v));
    dims.push_back(d);
  }
  TraceScope scope(parent());
  // a collective over this vmap's axis is this trace's to compute, batched operands or not (psum of a
  // value every lane shares; axis_index has no operands)
  bool mine = p.has(kCollective) && !axis_.name.empty() && (collective_axes(params) & axis_bit(axis_.name));
  if (!any && !mine) return bind(p, vals, params);
  if (!p.batch) fail<NotImplementedError>(p.name, ": vmap is not implemented for this primitive");
  BatchResult r = p.batch(p, vals, dims, axis_, params);
  Arrays out;
  for (size_t i = 0; i < r.values.size(); ++i) out.push_back(make(r.values[i], r.dims[i]));
  return out;
}

}  // namespace graft
