// NumPy indexing (x[...]) and functional updates (x.at(...).set/add/...), on slice, dynamic_slice,
// gather and scatter.
#include <numeric>

#include "graft/ops/internal.h"

namespace graft {

using namespace ops_detail;

namespace {

struct Adv {
  int64_t dim;  // position in the intermediate array
  Array idx;
};

// Python slice semantics: (start, step, length) over a dimension of size n.
struct SliceSpec {
  int64_t start, step, len;
};
SliceSpec resolve_slice(const Slice& s, int64_t n) {
  if (s.step == 0) fail<ValueError>("index: slice step cannot be zero");
  int64_t step = s.step, start, stop;
  if (step > 0) {
    start = s.start ? (*s.start < 0 ? std::max<int64_t>(0, *s.start + n) : std::min(*s.start, n)) : 0;
    stop = s.stop ? (*s.stop < 0 ? std::max<int64_t>(0, *s.stop + n) : std::min(*s.stop, n)) : n;
    return {start, step, std::max<int64_t>(0, (stop - start + step - 1) / step)};
  }
  start = s.start ? (*s.start < 0 ? std::max<int64_t>(-1, *s.start + n) : std::min(*s.start, n - 1)) : n - 1;
  stop = s.stop ? (*s.stop < 0 ? std::max<int64_t>(-1, *s.stop + n) : std::min(*s.stop, n - 1)) : -1;
  return {start, step, std::max<int64_t>(0, (start - stop + (-step) - 1) / (-step))};
}

Array apply_slice(const Array& x, int64_t d, const SliceSpec& sp) {
  int64_t n = x.shape()[d];
  if (sp.len == 0) return lax::slice_in_dim(x, 0, 0, 1, d);
  if (sp.step > 0) return lax::slice_in_dim(x, sp.start, sp.start + (sp.len - 1) * sp.step + 1, sp.step, d);
  Array r = lax::rev(x, {d});
  int64_t r0 = n - 1 - sp.start;
  return lax::slice_in_dim(r, r0, r0 + (sp.len - 1) * (-sp.step) + 1, -sp.step, d);
}

[[noreturn]] void index_error(int64_t i, int64_t axis, int64_t n) {
  fail<ValueError>("index ", i, " is out of bounds for axis ", axis, " with size ", n);
}

// Negative indices count from the end (for a traced index too).
Array normalize_index(const Array& idx, int64_t n, int64_t axis) {
  Array i = idx;
  if (!is_integer(i.dtype())) fail<TypeError>("index: array indices must be integers, got ", i.aval().str());
  if (i.dtype() != DType::i32 && i.dtype() != DType::i64) i = convert(i, DType::i32);
  if (i.is_concrete()) {  // eager: report out-of-range indices like NumPy
    auto v = i.to_vector<int64_t>();
    for (auto e : v)
      if (e < -n || e >= n) index_error(e, axis, n);
  }
  if (is_unsigned(idx.dtype())) return i;
  Array zero = Array::scalar(0, i.dtype());
  Array shifted = lax::add(i, Array::scalar(static_cast<double>(n), i.dtype()));
  return lax::select(lax::lt(i, zero), shifted, i);
}

// Expands ellipsis and concrete boolean masks; checks the number of indexed dims.
Index expand(const Array& x, const Index& idx) {
  Index items;
  for (auto& it : idx) {
    if (auto* a = std::get_if<Array>(&it.v); a && a->valid() && is_bool(a->dtype())) {
      if (!a->is_concrete())
        fail<ConcretizationError>(
            "index: a boolean mask of a traced value has a data-dependent shape; use graft::where(mask, x, other) "
            "instead (under jit and vmap shapes must be static)");
      // nonzero(): one integer index array per mask dimension
      auto m = a->to_vector<uint8_t>();
      Shape st = strides_of(a->shape());
      std::vector<std::vector<int32_t>> coords(static_cast<size_t>(a->ndim()));
      for (int64_t f = 0; f < static_cast<int64_t>(m.size()); ++f)
        if (m[static_cast<size_t>(f)])
          for (int64_t k = 0; k < a->ndim(); ++k) coords[static_cast<size_t>(k)].push_back(static_cast<int32_t>((f / st[k]) % a->shape()[k]));
      for (auto& c : coords) items.push_back(Array::from_data(c.data(), {static_cast<int64_t>(c.size())}, DType::i32));
    } else {
      items.push_back(it);
    }
  }
  int64_t consumed = 0, ellipses = 0;
  for (auto& it : items) {
    if (std::holds_alternative<EllipsisT>(it.v)) {
      ++ellipses;
    } else if (!std::holds_alternative<NewAxis>(it.v)) {
      ++consumed;
    }
  }
  if (ellipses > 1) fail<ValueError>("index: an index can only have a single ellipsis");
  if (consumed > x.ndim())
    fail<ValueError>("too many indices for array: array is ", x.ndim(), "-dimensional, but ", consumed,
                     " were indexed");
  Index out;
  for (auto& it : items) {
    if (std::holds_alternative<EllipsisT>(it.v)) {
      for (int64_t k = 0; k < x.ndim() - consumed; ++k) out.push_back(Slice{});
    } else {
      out.push_back(it);
    }
  }
  return out;
}

bool is_array_index(const IndexItem& it, bool rank0_too) {
  auto* a = std::get_if<Array>(&it.v);
  return a && (rank0_too || a->ndim() > 0);
}

}  // namespace

Array index(const Array& x0, const Index& idx0) {
  Array x = checked(x0, "index");
  Index idx = expand(x, idx0);
  bool adv_mode = false;
  for (auto& it : idx) adv_mode = adv_mode || is_array_index(it, false);
  std::vector<Adv> adv;
  Axes squeeze_dims;
  int64_t d = 0;
  for (auto& it : idx) {
    if (auto* k = std::get_if<int64_t>(&it.v)) {
      int64_t n = x.shape()[d];
      if (*k < -n || *k >= n) index_error(*k, d, n);
      int64_t kk = *k < 0 ? *k + n : *k;
      if (adv_mode) {
        adv.push_back({d, Array::scalar(static_cast<double>(kk), DType::i32)});
      } else {
        x = lax::slice_in_dim(x, kk, kk + 1, 1, d);
        squeeze_dims.push_back(d);
      }
    } else if (auto* s = std::get_if<Slice>(&it.v)) {
      x = apply_slice(x, d, resolve_slice(*s, x.shape()[d]));
    } else if (std::holds_alternative<NewAxis>(it.v)) {
      x = lax::expand_dims(x, {d});
    } else {
      const Array& a = std::get<Array>(it.v);
      if (!a.valid()) fail<ValueError>("index: null array index");
      Array i = normalize_index(a, x.shape()[d], d);
      if (adv_mode) {
        adv.push_back({d, i});
      } else {  // a single (traced) scalar: dynamic_slice
        Arrays starts;
        for (int64_t k = 0; k < x.ndim(); ++k) starts.push_back(k == d ? i : Array::scalar(0, i.dtype()));
        Shape sizes = x.shape();
        sizes[d] = 1;
        x = lax::dynamic_slice(x, starts, sizes);
        squeeze_dims.push_back(d);
      }
    }
    ++d;
  }
  if (!adv_mode) return lax::squeeze(x, squeeze_dims);
  // advanced indexing: one gather over the indexed dims
  std::vector<Array> idxs;
  DType it = DType::i32;
  for (auto& a : adv) {
    if (a.idx.dtype() == DType::i64) it = DType::i64;
    idxs.push_back(a.idx);
  }
  Shape bshape;
  for (auto& i : idxs) bshape = broadcast_shapes(bshape, i.shape(), "index");
  Arrays cols;
  for (auto& i : idxs) {
    Array b = ops_detail::broadcast_to(convert(i, it), bshape, "index");
    cols.push_back(lax::expand_dims(b, {static_cast<int64_t>(bshape.size())}));
  }
  Array ind = lax::concatenate(cols, static_cast<int64_t>(bshape.size()));
  bool contiguous = true;
  for (size_t k = 1; k < adv.size(); ++k) contiguous = contiguous && adv[k].dim == adv[k - 1].dim + 1;
  IntList collapsed, offset;
  Shape slice_sizes = x.shape();
  for (auto& a : adv) {
    collapsed.push_back(a.dim);
    slice_sizes[a.dim] = 1;
  }
  int64_t nb = static_cast<int64_t>(bshape.size());
  int64_t rest = x.ndim() - static_cast<int64_t>(adv.size());
  int64_t p = contiguous ? adv[0].dim : 0;
  for (int64_t k = 0; k < rest; ++k) offset.push_back(k < p ? k : k + nb);
  return lax::gather(x, ind, lax::GatherDims(offset, collapsed, collapsed), slice_sizes, lax::GatherMode::clip);
}

Array take(const Array& x, const Array& indices, std::optional<int64_t> axis) {
  checked(x, "take");
  if (!axis) return index(ravel(x), {indices});
  int64_t a = normalize_axis(*axis, x.ndim(), "take");
  Index idx;
  for (int64_t k = 0; k < a; ++k) idx.push_back(Slice{});
  idx.push_back(indices);
  return index(x, idx);
}

Array take_along_axis(const Array& x, const Array& indices, int64_t axis) {
  checked(x, "take_along_axis");
  int64_t a = normalize_axis(axis, x.ndim(), "take_along_axis");
  if (indices.ndim() != x.ndim())
    fail<ShapeError>("take_along_axis: indices ", indices.aval().str(), " must have the rank of ", x.aval().str());
  for (int64_t k = 0; k < x.ndim(); ++k)
    if (k != a && indices.shape()[k] != x.shape()[k])
      fail<ShapeError>("take_along_axis: indices ", indices.aval().str(), " must match ", x.aval().str(),
                       " except along axis ", a);
  // nothing to take (a zero-size dimension): the gather's unit slices would not fit an empty operand
  if (indices.size() == 0) return zeros(indices.shape(), x.dtype());
  return lax::take_along_axis(x, normalize_index(indices, x.shape()[a], a), a);
}

Array one_hot(const Array& labels, int64_t num_classes, DType d, int64_t axis) {
  checked(labels, "one_hot");
  int64_t a = normalize_axis(axis, labels.ndim() + 1, "one_hot");
  Array l = lax::expand_dims(labels, {a});
  Shape s = l.shape();
  s[a] = num_classes;
  Array cls = lax::iota(is_integer(labels.dtype()) ? labels.dtype() : DType::i32, s, a);
  Array lb = ops_detail::broadcast_to(convert(l, cls.dtype()), s, "one_hot");
  return convert(lax::eq(lb, cls), d);
}

// ---- x[...] and x.at(...) ----------------------------------------------------------------------------------

namespace {
// A static rectangular region (ints and unit-step slices only): its start and size per dim, and the
// shape the indexing result has (int dims dropped).
struct Region {
  Shape start, size, result;
};
std::optional<Region> static_region(const Array& x, const Index& idx0) {
  Index idx = expand(x, idx0);
  Region r;
  int64_t d = 0;
  for (auto& it : idx) {
    if (auto* k = std::get_if<int64_t>(&it.v)) {
      int64_t n = x.shape()[d];
      if (*k < -n || *k >= n) index_error(*k, d, n);
      r.start.push_back(*k < 0 ? *k + n : *k);
      r.size.push_back(1);
    } else if (auto* s = std::get_if<Slice>(&it.v)) {
      SliceSpec sp = resolve_slice(*s, x.shape()[d]);
      if (sp.step != 1) return std::nullopt;
      r.start.push_back(sp.start);
      r.size.push_back(sp.len);
      r.result.push_back(sp.len);
    } else {
      return std::nullopt;
    }
    ++d;
  }
  for (; d < x.ndim(); ++d) {
    r.start.push_back(0);
    r.size.push_back(x.shape()[d]);
    r.result.push_back(x.shape()[d]);
  }
  return r;
}

enum class Upd { set, add, mul, min, max };

Array combine(Upd u, const Array& old, const Array& v) {
  switch (u) {
    case Upd::add: return lax::add(old, v);
    case Upd::mul: return lax::mul(old, v);
    case Upd::min: return lax::min(old, v);
    case Upd::max: return lax::max(old, v);
    default: return v;
  }
}

Array update(const AtRef& ref, const Array& v0, Upd u) {
  const Array& x = checked(ref.x, "at");
  Array v = convert(checked(v0, "at"), x.dtype(), false);
  if (auto r = static_region(x, ref.idx)) {
    Array vv = ops_detail::broadcast_to(v, r->result, "at");
    vv = lax::reshape(vv, r->size);
    Arrays starts;
    for (auto s : r->start) starts.push_back(Array::scalar(static_cast<double>(s), DType::i32));
    if (u != Upd::set) vv = combine(u, lax::dynamic_slice(x, starts, r->size), vv);
    return lax::dynamic_update_slice(x, vv, starts);
  }
  // general index: scatter into the flattened array at the flat positions the index selects
  int64_t n = x.size();
  DType pd = n > (int64_t(1) << 31) - 1 ? DType::i64 : DType::i32;
  Array pos = index(lax::reshape(lax::iota(pd, {n}, 0), x.shape()), ref.idx);
  Array vv = ops_detail::broadcast_to(v, pos.shape(), "at");
  int64_t m = pos.size();
  Array flat = lax::reshape(x, {n});
  Array ind = lax::reshape(pos, {m, 1});
  Array upd = lax::reshape(vv, {m});
  lax::ScatterDims sd({}, {0}, {0});
  Array out;
  switch (u) {
    case Upd::add: out = lax::scatter_add(flat, ind, upd, sd); break;
    case Upd::mul: out = lax::scatter_mul(flat, ind, upd, sd); break;
    case Upd::min: out = lax::scatter_min(flat, ind, upd, sd); break;
    case Upd::max: out = lax::scatter_max(flat, ind, upd, sd); break;
    default: out = lax::scatter(flat, ind, upd, sd); break;
  }
  return lax::reshape(out, x.shape());
}
}  // namespace

Array AtRef::get() const { return index(x, idx); }
Array AtRef::set(const Array& v) const { return update(*this, v, Upd::set); }
Array AtRef::add(const Array& v) const { return update(*this, v, Upd::add); }
Array AtRef::mul(const Array& v) const { return update(*this, v, Upd::mul); }
Array AtRef::min(const Array& v) const { return update(*this, v, Upd::min); }
Array AtRef::max(const Array& v) const { return update(*this, v, Upd::max); }

}  // namespace graft
