// Collectives over named axes: psum, pmax, pmin, pvary, all_gather, all_gather_invariant, reduce_scatter (lax::psum_scatter),
// ppermute, all_to_all, axis_index. All their rules.
//
// Meaning: the code runs once per member of a named axis (a lane of vmap(axis_name), a device of
// shard_map / pmap, a process), and a collective combines the members' values. Where the axis is
// carried decides which rule computes it:
//   - vmap over the axis (the reference, and shard_map on this process's devices): the batching rule,
//     over the batch dimension;
//   - an axis frame with a communicator (processes, graft/runtime/collectives.h): the kernel, which
//     calls the communicator.
// Types: each value's Aval::vma says which named axes it varies over. psum / pmax / pmin make their
// result invariant over their axes; pvary (a no-op on data) makes a value varying; the others keep or
// make their result varying. Reverse mode relies on it: psum transposes to pvary (times the axis size
// for an input that was already invariant), pvary to psum, all_gather to reduce_scatter and back,
// ppermute to the inverse permutation, all_to_all to all_to_all with the axes swapped.
#include <algorithm>
#include <numeric>

#include "graft/runtime/collectives.h"
#include "graft/core/axis_names.h"
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

using lax::IntTuples;

const AxisNames& names_param(const Params& p) {
  return p.has("axes") ? p.get_object<AxisNames>("axes") : p.get_object<AxisNames>("axis_name");
}
AxisSet axes_of(const Params& p) { return names_param(p).set(); }
const std::string& single_axis(const Primitive& p, const Params& params) {
  const auto& n = names_param(params).names;
  if (n.size() != 1)
    fail<NotImplementedError>(p.name, ": one axis name at a time (got ", n.size(), "); psum, pmax, pmin and pvary "
                              "take several");
  return n[0];
}
Ref<const ParamObject> names_value(std::vector<std::string> n) { return Ref<const ParamObject>(new AxisNames(std::move(n))); }

[[noreturn]] void bad(const Primitive& p, AvalPtrs in, const std::string& why) { shape_error(p, in, why); }

// ---- shape rules (with the varying axes) ----------------------------------------------------------------
void check_names(const Primitive& p, AvalPtrs in, const Params& params) {
  const auto& n = names_param(params).names;
  if (n.empty()) bad(p, in, "needs at least one axis name");
  for (size_t i = 0; i < n.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (n[i] == n[j]) bad(p, in, "names axis '" + n[i] + "' twice");
}

Avals reduce_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_names(p, in, params);
  if (!(bit(in[0]->dtype) & kMaskNum)) type_error(p, in, "requires a numeric operand");
  Aval a = *in[0];
  a.vma &= ~axes_of(params);  // the result is the same on every member
  return {a};
}

Avals pvary_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_names(p, in, params);
  Aval a = *in[0];
  a.vma |= axes_of(params);
  return {a};
}

int64_t checked_size(const Primitive& p, AvalPtrs in, const Params& params) {
  int64_t n = params.get_int("axis_size");
  if (n < 1) bad(p, in, "axis_size must be positive, got " + std::to_string(n));
  return n;
}

Avals all_gather_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_names(p, in, params);
  int64_t n = checked_size(p, in, params), d = params.get_int("all_gather_dimension");
  bool tiled = params.get_bool("tiled");
  Aval a = *in[0];
  if (d < 0 || d > a.ndim() - (tiled ? 1 : 0)) bad(p, in, "all_gather_dimension " + std::to_string(d) + " out of range");
  if (tiled) {
    a.shape[static_cast<size_t>(d)] *= n;
  } else {
    a.shape.insert(a.shape.begin() + d, n);
  }
  if (&p == &all_gather_invariant_p) {
    a.vma &= ~axes_of(params);  // every member holds the same whole
  } else {
    a.vma |= axes_of(params);
  }
  return {a};
}

Avals reduce_scatter_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_names(p, in, params);
  if (!(bit(in[0]->dtype) & kMaskNum)) type_error(p, in, "requires a numeric operand");
  int64_t n = checked_size(p, in, params), d = params.get_int("scatter_dimension");
  bool tiled = params.get_bool("tiled");
  Aval a = *in[0];
  if (d < 0 || d >= a.ndim()) bad(p, in, "scatter_dimension " + std::to_string(d) + " out of range");
  int64_t s = a.shape[static_cast<size_t>(d)];
  if (tiled) {
    if (s % n != 0)
      bad(p, in, "dimension " + std::to_string(d) + " (" + std::to_string(s) + ") does not divide over the " +
                     std::to_string(n) + " members of the axis");
    a.shape[static_cast<size_t>(d)] = s / n;
  } else {
    if (s != n)
      bad(p, in, "dimension " + std::to_string(d) + " must have the axis size " + std::to_string(n) + " (tiled=False)");
    a.shape.erase(a.shape.begin() + d);
  }
  a.vma |= axes_of(params);
  return {a};
}

const IntTuples& perm_of(const Params& params) { return params.get_object<IntTuples>("perm"); }

Avals ppermute_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_names(p, in, params);
  std::vector<int64_t> srcs, dsts;
  for (auto& pair : perm_of(params).items) {
    if (pair.size() != 2 || pair[0] < 0 || pair[1] < 0) bad(p, in, "perm must be (source, destination) pairs of members");
    srcs.push_back(pair[0]);
    dsts.push_back(pair[1]);
  }
  std::sort(srcs.begin(), srcs.end());
  std::sort(dsts.begin(), dsts.end());
  if (std::adjacent_find(srcs.begin(), srcs.end()) != srcs.end() || std::adjacent_find(dsts.begin(), dsts.end()) != dsts.end())
    bad(p, in, "perm sends from or to a member twice");
  Aval a = *in[0];
  a.vma |= axes_of(params);
  return {a};
}

Avals all_to_all_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_names(p, in, params);
  int64_t n = checked_size(p, in, params), split = params.get_int("split_axis"), concat = params.get_int("concat_axis");
  bool tiled = params.get_bool("tiled");
  Aval a = *in[0];
  int64_t r = a.ndim();
  if (split < 0 || split >= r) bad(p, in, "split_axis " + std::to_string(split) + " out of range");
  int64_t s = a.shape[static_cast<size_t>(split)];
  if (tiled) {
    if (concat < 0 || concat >= r) bad(p, in, "concat_axis " + std::to_string(concat) + " out of range");
    if (s % n != 0)
      bad(p, in, "split_axis " + std::to_string(split) + " (" + std::to_string(s) + ") does not divide over the " +
                     std::to_string(n) + " members of the axis");
    a.shape[static_cast<size_t>(split)] = s / n;
    a.shape[static_cast<size_t>(concat)] *= n;
  } else {
    if (s != n) bad(p, in, "split_axis " + std::to_string(split) + " must have the axis size " + std::to_string(n));
    if (concat < 0 || concat >= r) bad(p, in, "concat_axis " + std::to_string(concat) + " out of range");
    a.shape.erase(a.shape.begin() + split);
    a.shape.insert(a.shape.begin() + concat, n);
  }
  a.vma |= axes_of(params);
  return {a};
}

Avals axis_index_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 0);
  check_names(p, in, params);
  Aval a({}, DType::i32);
  a.vma = axes_of(params);
  return {a};
}

// ---- kernels: across processes, through the axis's communicator ---------------------------------------
// Members of an axis that no vmap handled: either the axis runs across processes (its frame holds a
// communicator) or it has a single member.
struct Bound {
  const AxisFrame* frame;
  bool trivial() const { return frame->size == 1; }
};
Bound bound(const Primitive& p, const std::string& name) {
  const AxisFrame* f = find_axis(name);
  if (!f) (void)axis_size(name, p.name);  // throws: unbound
  if (!f->comm && f->size != 1)
    fail<ValueError>(p.name, ": axis '", name, "' (size ", f->size, ") is mapped by vmap here, yet the collective ",
                     "reached eager evaluation outside it (was a value carried out of the vmap?)");
  return {f};
}

// x as a concrete array (communicators read and write flat buffers; concrete arrays are contiguous
// already, so this copies nothing for them).
Array dense(const Array& x) { return x.concrete() ? x : lax::copy(x); }

// Where a collective's buffers live: on the operand's device with that device's communicator for the
// axis (NCCL for a GPU's memory), or on the host with the axis's own (MPI); device operands without a
// device communicator move to the host and their results back.
struct Wire {
  std::shared_ptr<Communicator> comm;
  Device dev;   // where the buffers are
  Device home;  // where the operand was (the result goes back there)
  Array in(const Array& x) const { return x.device() == dev ? dense(x) : transfer(dense(x), dev); }
  Array empty(const Aval& a) const { return Array::empty_on(a, dev); }
  Array out(const Array& r) const { return r.device() == home ? r : transfer(r, home); }
};
Wire wire_for(const Bound& b, const Array& x) {
  Device home = x.is_concrete() ? x.device() : Device::cpu();
  if (!home.is_cpu())
    if (auto dc = device_communicator(b.frame->comm, home)) return {dc, home, home};
  return {b.frame->comm, Device::cpu(), home};
}
void* data(const Array& a) { return a.concrete()->data(); }

// Half-precision values are reduced in f32 (engines have no 16-bit float sum) and rounded once.
DType wire_type(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }

Arrays reduce_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  ReduceOp op = &p == &psum_p ? ReduceOp::sum : &p == &pmax_p ? ReduceOp::max : ReduceOp::min;
  Array x = in[0];
  for (auto& name : names_param(params).names) {
    Bound b = bound(p, name);
    if (b.trivial()) continue;
    DType d = x.dtype(), wire = wire_type(d);
    Wire w = wire_for(b, x);
    Array src = w.in(wire == d ? x : lax::convert_element_type(x, wire));
    Array out = w.empty(Aval(x.shape(), wire));
    w.comm->allreduce(data(src), data(out), x.size(), wire, op);
    x = w.out(wire == d ? out : lax::convert_element_type(out, d));
  }
  return {x};
}

Arrays pvary_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params&) { return {in[0]}; }

// Runs f with the axis's communicator, or returns `trivial` for an axis of one member.
Arrays all_gather_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Bound b = bound(p, single_axis(p, params));
  const Array& x = in[0];
  int64_t d = params.get_int("all_gather_dimension"), n = b.frame->size;
  bool tiled = params.get_bool("tiled");
  Array gathered;  // [n, x...]
  if (b.trivial()) {
    gathered = lax::expand_dims(x, {0});
  } else {
    Shape s{n};
    for (auto e : x.shape()) s.push_back(e);
    Wire w = wire_for(b, x);
    gathered = w.empty(Aval(s, x.dtype()));
    w.comm->allgather(data(w.in(x)), data(gathered), x.size(), x.dtype());
    gathered = w.out(gathered);
  }
  Array r = lax::moveaxis(gathered, 0, d);  // [.., n, x_d, ..]
  if (tiled) r = lax::reshape(r, out[0].shape);
  return {r};
}

// x with dimension d split into n blocks, the block index moved to the front: [n, ...].
Array blocks_to_front(const Array& x, int64_t d, int64_t n, bool tiled) {
  if (!tiled) return lax::moveaxis(x, d, 0);
  Shape s;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i == d) {
      s.push_back(n);
      s.push_back(x.shape()[i] / n);
    } else {
      s.push_back(x.shape()[i]);
    }
  }
  return lax::moveaxis(lax::reshape(x, s), d, 0);
}

Arrays reduce_scatter_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out,
                           const Params& params) {
  Bound b = bound(p, single_axis(p, params));
  const Array& x = in[0];
  int64_t d = params.get_int("scatter_dimension"), n = b.frame->size;
  bool tiled = params.get_bool("tiled");
  Array front = dense(blocks_to_front(x, d, n, tiled));  // [n, block...]
  if (b.trivial()) return {lax::reshape(front, out[0].shape)};
  DType wire = wire_type(x.dtype());
  if (wire != x.dtype()) front = dense(lax::convert_element_type(front, wire));
  Wire w = wire_for(b, x);
  Array mine = w.empty(Aval(out[0].shape, wire));
  w.comm->reduce_scatter(data(w.in(front)), data(mine), out[0].size(), wire, ReduceOp::sum);
  return {w.out(wire == x.dtype() ? mine : lax::convert_element_type(mine, x.dtype()))};
}

Arrays ppermute_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  Bound b = bound(p, single_axis(p, params));
  const Array& x = in[0];
  int me = b.trivial() ? 0 : b.frame->comm->rank();
  int dst = -1, src = -1;
  for (auto& pair : perm_of(params).items) {
    if (pair[0] >= b.frame->size || pair[1] >= b.frame->size)
      fail<ValueError>(p.name, ": perm names member ", std::max(pair[0], pair[1]), " of an axis of ", b.frame->size);
    if (pair[0] == me) dst = static_cast<int>(pair[1]);
    if (pair[1] == me) src = static_cast<int>(pair[0]);
  }
  Array out = lax::zeros(Aval(x.shape(), x.dtype()));
  if (b.trivial()) return {src == 0 ? x : out};
  Wire w = wire_for(b, x);
  out = w.in(out);
  w.comm->sendrecv(data(w.in(x)), dst, data(out), src, x.size(), x.dtype());
  return {w.out(out)};
}

// The all_to_all of one member's value `x` given the n blocks it receives, [n (source), block...]:
// the received blocks laid along the concat axis.
Array place_received(const Array& received, int64_t concat, bool tiled, const Shape& out_shape) {
  // received: [n, block...] where block has x's shape with the split axis reduced (or removed)
  Array r = lax::moveaxis(received, 0, concat);  // [.., n, block_concat, ..]
  return tiled ? lax::reshape(r, out_shape) : r;
}

Arrays all_to_all_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Bound b = bound(p, single_axis(p, params));
  const Array& x = in[0];
  int64_t split = params.get_int("split_axis"), concat = params.get_int("concat_axis"), n = b.frame->size;
  bool tiled = params.get_bool("tiled");
  Array front = dense(blocks_to_front(x, split, n, tiled));  // [n (destination), block...]
  Array received = front;
  if (!b.trivial()) {
    Wire w = wire_for(b, x);
    received = w.empty(front.aval());
    w.comm->alltoall(data(w.in(front)), data(received), front.size() / n, x.dtype());
    received = w.out(received);
  }
  return {place_received(received, concat, tiled, out[0].shape)};
}

Arrays axis_index_impl(const Primitive& p, std::span<const Array>, std::span<const Aval>, const Params& params) {
  Bound b = bound(p, single_axis(p, params));
  return {Array::scalar(b.trivial() ? 0 : b.frame->comm->rank(), DType::i32)};
}

// ---- batching: the collective over vmap's lanes ---------------------------------------------------------
// The batch rules compute the collectives themselves, so they first check one lane's operands as the
// shape rule does when the collective is staged or run.
void check_lane(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims, const Params& params) {
  SmallVector<Aval, 2> avals;
  for (size_t i = 0; i < vals.size(); ++i) {
    Aval a = vals[i].aval();
    if (dims[i] != kNotMapped) a.shape.erase(a.shape.begin() + dims[i]);
    avals.push_back(std::move(a));
  }
  SmallVector<const Aval*, 2> ptrs;
  for (auto& a : avals) ptrs.push_back(&a);
  (void)p.shape(p, AvalPtrs(ptrs.data(), ptrs.size()), params);
}

bool names_this(const Params& params, const BatchInfo& axis) {
  return !axis.name.empty() && (axes_of(params) & axis_bit(axis.name));
}
std::vector<std::string> other_names(const Params& params, const BatchInfo& axis) {
  std::vector<std::string> rest;
  for (auto& n : names_param(params).names)
    if (n != axis.name) rest.push_back(n);
  return rest;
}
Params with_names(const Params& params, std::vector<std::string> names) {
  return params.with(params.has("axes") ? "axes" : "axis_name", names_value(std::move(names)));
}

BatchResult reduce_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo& axis, const Params& params) {
  check_lane(p, vals, dims, params);
  if (!names_this(params, axis)) return {{bind1(p, vals, params)}, {dims[0]}};  // each lane on its own
  Array r;
  if (dims[0] == kNotMapped) {  // the same value on every lane
    r = &p == &psum_p ? lax::mul(vals[0], lax::scalar(static_cast<double>(axis.size), vals[0].dtype())) : vals[0];
  } else {
    Axes ax{dims[0]};
    r = &p == &psum_p ? lax::reduce_sum(vals[0], ax) : &p == &pmax_p ? lax::reduce_max(vals[0], ax) : lax::reduce_min(vals[0], ax);
  }
  auto rest = other_names(params, axis);
  if (!rest.empty()) r = bind1(p, {r}, with_names(params, rest));
  return {{r}, {kNotMapped}};
}

BatchResult pvary_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                        const BatchInfo& axis, const Params& params) {
  check_lane(p, vals, dims, params);
  // no data moves: a lane's value is its own whether or not it is marked as varying
  if (!names_this(params, axis)) return {{bind1(p, vals, params)}, {dims[0]}};
  // a value every lane shares becomes one per lane (its type says it varies)
  Array r = batch_to_front(vals[0], dims[0], axis.size);
  auto rest = other_names(params, axis);
  if (!rest.empty()) r = bind1(p, {r}, with_names(params, rest));
  return {{r}, {0}};
}

// For the collectives of one axis that is not this vmap's: the lanes are independent; the batch
// dimension goes in front and the collective's dimensions move one place.
BatchResult shifted(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                    const Params& params, std::initializer_list<const char*> dim_keys) {
  Array x = lax::moveaxis(vals[0], dims[0], 0);
  Params q = params;
  for (const char* k : dim_keys) q = q.with(k, params.get_int(k) + 1);
  return {{bind1(p, {x}, q)}, {0}};
}

BatchResult all_gather_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo& axis, const Params& params) {
  check_lane(p, vals, dims, params);
  if (!names_this(params, axis)) return shifted(p, vals, dims, params, {"all_gather_dimension"});
  single_axis(p, params);
  int64_t d = params.get_int("all_gather_dimension");
  Array x = batch_to_front(vals[0], dims[0], axis.size);  // [n, ...]
  Array r = lax::moveaxis(x, 0, d);
  if (params.get_bool("tiled")) {
    Shape s;
    for (int64_t i = 1; i < x.ndim(); ++i) s.push_back(x.shape()[i]);
    s[static_cast<size_t>(d)] *= axis.size;
    r = lax::reshape(r, s);
  }
  // every lane holds the whole: all_gather_invariant returns it once; all_gather returns it mapped (a
  // broadcast) so that it stays typed as varying, as on devices, where each holds its own copy
  if (&p == &all_gather_invariant_p) return {{r}, {kNotMapped}};
  return {{batch_to_front(r, kNotMapped, axis.size)}, {0}};
}

BatchResult reduce_scatter_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                                 const BatchInfo& axis, const Params& params) {
  check_lane(p, vals, dims, params);
  if (!names_this(params, axis)) return shifted(p, vals, dims, params, {"scatter_dimension"});
  single_axis(p, params);
  int64_t d = params.get_int("scatter_dimension");
  Array x = batch_to_front(vals[0], dims[0], axis.size);
  Array total = lax::reduce_sum(x, {0});
  // lane k takes block k of dimension d
  return {{blocks_to_front(total, d, axis.size, params.get_bool("tiled"))}, {0}};
}

BatchResult ppermute_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                           const BatchInfo& axis, const Params& params) {
  check_lane(p, vals, dims, params);
  if (!names_this(params, axis)) return {{bind1(p, vals, params)}, {dims[0]}};
  single_axis(p, params);
  Array x = batch_to_front(vals[0], dims[0], axis.size);
  std::vector<int64_t> src(static_cast<size_t>(axis.size), -1);
  for (auto& pair : perm_of(params).items) {
    if (pair[0] >= axis.size || pair[1] >= axis.size)
      fail<ValueError>(p.name, ": perm names member ", std::max(pair[0], pair[1]), " of an axis of ", axis.size);
    src[static_cast<size_t>(pair[1])] = pair[0];
  }
  Shape row(x.shape());
  row[0] = 1;
  std::vector<Array> lanes;
  for (int64_t k = 0; k < axis.size; ++k) {
    int64_t s = src[static_cast<size_t>(k)];
    lanes.push_back(s < 0 ? lax::zeros(Aval(row, x.dtype())) : lax::slice_in_dim(x, s, s + 1, 1, 0));
  }
  return {{lax::concatenate(lanes, 0)}, {0}};
}

BatchResult all_to_all_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo& axis, const Params& params) {
  check_lane(p, vals, dims, params);
  if (!names_this(params, axis)) return shifted(p, vals, dims, params, {"split_axis", "concat_axis"});
  single_axis(p, params);
  int64_t split = params.get_int("split_axis"), concat = params.get_int("concat_axis"), n = axis.size;
  bool tiled = params.get_bool("tiled");
  Array x = batch_to_front(vals[0], dims[0], n);  // [source lane, ...]
  // member s's blocks for each destination: [source, destination, block...]
  Shape block;
  std::vector<Array> per_source;
  for (int64_t s = 0; s < n; ++s) {
    Array xs = lax::reshape(lax::slice_in_dim(x, s, s + 1, 1, 0), Shape(x.shape().begin() + 1, x.shape().end()));
    per_source.push_back(lax::expand_dims(blocks_to_front(xs, split, n, tiled), {0}));
  }
  Array all = lax::concatenate(per_source, 0);  // [source, destination, block...]
  Array by_dest = lax::moveaxis(all, 1, 0);     // [destination, source, block...]
  // for each destination lane: the received blocks [source, block...] placed along the concat axis
  Shape out_shape;
  {
    Aval a(Shape(x.shape().begin() + 1, x.shape().end()), x.dtype());
    const Aval* ap = &a;
    out_shape = all_to_all_shape(p, AvalPtrs(&ap, 1), params)[0].shape;
  }
  Array r = lax::moveaxis(by_dest, 1, concat + 1);  // [destination, .., source, block_concat, ..]
  if (tiled) {
    Shape s{n};
    for (auto e : out_shape) s.push_back(e);
    r = lax::reshape(r, s);
  }
  return {{r}, {0}};
}

BatchResult axis_index_batch(const Primitive& p, std::span<const Array>, std::span<const int64_t>,
                             const BatchInfo& axis, const Params& params) {
  if (!names_this(params, axis)) return {{bind1(p, {}, params)}, {kNotMapped}};
  single_axis(p, params);
  return {{lax::iota(DType::i32, {axis.size}, 0)}, {0}};
}

// ---- derivatives ------------------------------------------------------------------------------------
// d pmax: the tangent at the members holding the maximum, averaged over ties (as reduce_max's).
JvpResult pext_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  const Array& x = primals[0];
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0])) return {{y}, {Array()}};
  Array hit = lax::eq(x, y);
  Array zero = lax::zeros(x.aval()), one = lax::full(x.shape(), 1, x.dtype());
  Array num = bind1(psum_p, {lax::select(hit, tangents[0], zero)}, params);
  Array den = bind1(psum_p, {lax::select(hit, one, zero)}, params);
  return {{y}, {lax::div(num, den)}};
}

Params axes_params(std::vector<std::string> names) { return Params{{"axes", names_value(std::move(names))}}; }

// psum's input was varying over some of its axes (those reduce) and invariant over the others (those
// multiply by the axis size). Its cotangent is invariant: marked varying again (pvary) where the input
// varied.
Arrays psum_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  Array ct = cts[0];
  double scale = 1;
  std::vector<std::string> varying;
  for (auto& n : names_param(params).names) {
    if (args[0].aval.vma & axis_bit(n)) {
      varying.push_back(n);
    } else {
      scale *= static_cast<double>(axis_size(n, "psum (transpose)"));
    }
  }
  if (scale != 1) ct = lax::mul(ct, lax::scalar(scale, ct.dtype()));
  if (!varying.empty()) ct = bind1(pvary_p, {ct}, axes_params(varying));
  return {ct};
}

// pvary of a value already varying over an axis does nothing there; over the axes it was invariant
// over, it broadcast the value to every member, so the cotangent is the sum over them.
Arrays pvary_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  std::vector<std::string> sum_over;
  for (auto& n : names_param(params).names)
    if (!(args[0].aval.vma & axis_bit(n))) sum_over.push_back(n);
  if (sum_over.empty()) return {cts[0]};
  return {bind1(psum_p, {cts[0]}, axes_params(std::move(sum_over)))};
}

Arrays all_gather_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  return {bind1(reduce_scatter_p, {cts[0]},
                {{"axis_name", params.get<Ref<const ParamObject>>("axis_name")},
                 {"axis_index_groups", std::monostate{}},
                 {"axis_size", params.get_int("axis_size")},
                 {"scatter_dimension", params.get_int("all_gather_dimension")},
                 {"tiled", params.get_bool("tiled")}})};
}

// The gathered value is the same on every member, and so is its cotangent: each member's operand
// contributed its own block, whose cotangent is that block of the cotangent (no communication).
Arrays all_gather_invariant_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                                      const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  const std::string& name = names_param(params).names.at(0);
  int64_t d = params.get_int("all_gather_dimension");
  bool tiled = params.get_bool("tiled");
  int64_t b = tiled ? args[0].aval.shape[static_cast<size_t>(d)] : 1;
  Array idx = lax::axis_index(name);
  std::vector<Array> start(static_cast<size_t>(cts[0].ndim()), lax::scalar(0.0, idx.dtype()));
  start[static_cast<size_t>(d)] = lax::mul(idx, lax::scalar(static_cast<double>(b), idx.dtype()));
  Shape sizes = cts[0].shape();
  sizes[static_cast<size_t>(d)] = b;
  Array block = lax::dynamic_slice(cts[0], start, sizes);
  return {tiled ? block : lax::squeeze(block, {d})};
}

Arrays reduce_scatter_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>,
                                const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  return {bind1(all_gather_p, {cts[0]},
                {{"axis_name", params.get<Ref<const ParamObject>>("axis_name")},
                 {"axis_index_groups", std::monostate{}},
                 {"axis_size", params.get_int("axis_size")},
                 {"all_gather_dimension", params.get_int("scatter_dimension")},
                 {"tiled", params.get_bool("tiled")}})};
}

Arrays ppermute_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  std::vector<IntList> inverse;
  for (auto& pair : perm_of(params).items) inverse.push_back({pair[1], pair[0]});
  return {bind1(ppermute_p, {cts[0]}, params.with("perm", Ref<const ParamObject>(new IntTuples(std::move(inverse)))))};
}

Arrays all_to_all_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  return {bind1(all_to_all_p, {cts[0]},
                params.with("split_axis", params.get_int("concat_axis")).with("concat_axis", params.get_int("split_axis")))};
}

}  // namespace

constexpr uint32_t kColl = kCollective;
const Primitive psum_p{"psum", kColl, &reduce_shape, &reduce_impl, &linear_jvp, &psum_transpose, &reduce_batch};
const Primitive pmax_p{"pmax", kColl, &reduce_shape, &reduce_impl, &pext_jvp, nullptr, &reduce_batch};
const Primitive pmin_p{"pmin", kColl, &reduce_shape, &reduce_impl, &pext_jvp, nullptr, &reduce_batch};
const Primitive pvary_p{"pvary", kColl, &pvary_shape, &pvary_impl, &linear_jvp, &pvary_transpose, &pvary_batch};
const Primitive all_gather_p{"all_gather",       kColl,           &all_gather_shape, &all_gather_impl,
                             &linear_jvp,        &all_gather_transpose, &all_gather_batch};
const Primitive all_gather_invariant_p{"all_gather_invariant", kColl, &all_gather_shape, &all_gather_impl,
                                       &linear_jvp, &all_gather_invariant_transpose, &all_gather_batch};
const Primitive reduce_scatter_p{"reduce_scatter", kColl, &reduce_scatter_shape, &reduce_scatter_impl,
                                 &linear_jvp,      &reduce_scatter_transpose, &reduce_scatter_batch};
const Primitive ppermute_p{"ppermute", kColl, &ppermute_shape, &ppermute_impl, &linear_jvp, &ppermute_transpose,
                           &ppermute_batch};
const Primitive all_to_all_p{"all_to_all",       kColl,           &all_to_all_shape, &all_to_all_impl,
                             &linear_jvp,        &all_to_all_transpose, &all_to_all_batch};
const Primitive axis_index_p{"axis_index", kColl | kNotDifferentiable, &axis_index_shape, &axis_index_impl,
                             &zero_jvp,    nullptr,                    &axis_index_batch};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;

namespace {
Ref<const ParamObject> axis_names(const std::vector<std::string>& n) { return Ref<const ParamObject>(new AxisNames(n)); }
int64_t size_of(const std::vector<std::string>& names, const char* op) {
  int64_t s = 1;
  for (auto& n : names) s *= axis_size(n, op);
  return s;
}
}  // namespace

Array psum(const Array& x, const std::vector<std::string>& axes) {
  return bind1(psum_p, {x}, {{"axes", axis_names(axes)}, {"axis_index_groups", std::monostate{}}});
}
Array pmax(const Array& x, const std::vector<std::string>& axes) {
  return bind1(pmax_p, {x}, {{"axes", axis_names(axes)}, {"axis_index_groups", std::monostate{}}});
}
Array pmin(const Array& x, const std::vector<std::string>& axes) {
  return bind1(pmin_p, {x}, {{"axes", axis_names(axes)}, {"axis_index_groups", std::monostate{}}});
}
Array pmean(const Array& x, const std::vector<std::string>& axes) {
  Array s = psum(x, axes);
  return div(s, scalar(static_cast<double>(size_of(axes, "pmean")), s.dtype()));
}
Array pvary(const Array& x, const std::vector<std::string>& axes) {
  return bind1(pvary_p, {x}, {{"axes", axis_names(axes)}});
}
Array all_gather(const Array& x, const std::string& axis_name, int64_t axis, bool tiled) {
  int64_t a = normalize_axis(axis, x.ndim() + (tiled ? 0 : 1), "all_gather");
  return bind1(all_gather_p, {x},
               {{"all_gather_dimension", a},
                {"axis_index_groups", std::monostate{}},
                {"axis_name", axis_names({axis_name})},
                {"axis_size", axis_size(axis_name, "all_gather")},
                {"tiled", tiled}});
}
Array all_gather_invariant(const Array& x, const std::string& axis_name, int64_t axis, bool tiled) {
  int64_t a = normalize_axis(axis, x.ndim() + (tiled ? 0 : 1), "all_gather_invariant");
  return bind1(all_gather_invariant_p, {x},
               {{"all_gather_dimension", a},
                {"axis_index_groups", std::monostate{}},
                {"axis_name", axis_names({axis_name})},
                {"axis_size", axis_size(axis_name, "all_gather_invariant")},
                {"tiled", tiled}});
}
Array psum_scatter(const Array& x, const std::string& axis_name, int64_t scatter_dimension, bool tiled) {
  return bind1(reduce_scatter_p, {x},
               {{"axis_index_groups", std::monostate{}},
                {"axis_name", axis_names({axis_name})},
                {"axis_size", axis_size(axis_name, "psum_scatter")},
                {"scatter_dimension", normalize_axis(scatter_dimension, x.ndim(), "psum_scatter")},
                {"tiled", tiled}});
}
Array ppermute(const Array& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm) {
  std::vector<IntList> pairs;
  for (auto [s, d] : perm) pairs.push_back({s, d});
  return bind1(ppermute_p, {x},
               {{"axis_name", axis_names({axis_name})}, {"perm", Ref<const ParamObject>(new IntTuples(std::move(pairs)))}});
}
Array all_to_all(const Array& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis, bool tiled) {
  int64_t split = normalize_axis(split_axis, x.ndim(), "all_to_all");
  int64_t concat = normalize_axis(concat_axis, x.ndim(), "all_to_all");
  return bind1(all_to_all_p, {x},
               {{"axis_index_groups", std::monostate{}},
                {"axis_name", axis_names({axis_name})},
                {"axis_size", axis_size(axis_name, "all_to_all")},
                {"concat_axis", concat},
                {"split_axis", split},
                {"tiled", tiled}});
}
Array axis_index(const std::string& axis_name) {
  (void)axis_size(axis_name, "axis_index");
  return bind1(axis_index_p, {}, {{"axis_name", axis_names({axis_name})}});
}

}  // namespace graft::lax
