// Shape manipulation: reshape, transpose, concatenate, stack, split, pad, tile, repeat, ...
#include <numeric>

#include "graft/ops/internal.h"

namespace graft {

using namespace ops_detail;

Array reshape(const Array& x, const Shape& shape) {
  checked(x, "reshape");
  Shape s = shape;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) fail<ValueError>("reshape: only one dimension can be -1, got (", shape_str(shape), ")");
      infer = static_cast<int64_t>(i);
    } else if (s[i] < 0) {
      fail<ValueError>("reshape: invalid dimension ", s[i], " in (", shape_str(shape), ")");
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0)
      fail<ShapeError>("reshape: cannot reshape ", x.aval().str(), " into shape (", shape_str(shape), ")");
    s[infer] = x.size() / known;
  }
  if (numel(s) != x.size())
    fail<ShapeError>("reshape: cannot reshape ", x.aval().str(), " (", x.size(), " elements) into shape (",
                     shape_str(shape), ")");
  return lax::reshape(x, s);
}

Array ravel(const Array& x) { return reshape(x, {-1}); }
Array flatten(const Array& x) { return reshape(x, {-1}); }

Array transpose(const Array& x, const Axes& axes) {
  checked(x, "transpose");
  Axes perm;
  if (axes.empty()) {
    for (int64_t i = x.ndim() - 1; i >= 0; --i) perm.push_back(i);
  } else {
    if (static_cast<int64_t>(axes.size()) != x.ndim())
      fail<ValueError>("transpose: axes don't match array: ", axes.size(), " axes for ", x.aval().str());
    for (auto a : axes) perm.push_back(normalize_axis(a, x.ndim(), "transpose"));
  }
  return lax::transpose(x, perm);
}

Array swapaxes(const Array& x, int64_t a, int64_t b) {
  checked(x, "swapaxes");
  Axes perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[normalize_axis(a, x.ndim(), "swapaxes")], perm[normalize_axis(b, x.ndim(), "swapaxes")]);
  return lax::transpose(x, perm);
}

Array moveaxis(const Array& x, int64_t source, int64_t destination) {
  checked(x, "moveaxis");
  return lax::moveaxis(x, normalize_axis(source, x.ndim(), "moveaxis"),
                       normalize_axis(destination, x.ndim(), "moveaxis"));
}

Array expand_dims(const Array& x, AxisArg axis) {
  checked(x, "expand_dims");
  if (!axis.axes) fail<ValueError>("expand_dims: an axis is required");
  int64_t nd = x.ndim() + static_cast<int64_t>(axis.axes->size());
  Axes dims;
  for (auto a : *axis.axes) dims.push_back(normalize_axis(a, nd, "expand_dims"));
  return lax::expand_dims(x, dims);
}

Array squeeze(const Array& x, AxisArg axis) {
  checked(x, "squeeze");
  Axes dims;
  if (!axis.axes) {
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (x.shape()[i] == 1) dims.push_back(i);
  } else {
    dims = axis.resolve(x.ndim(), "squeeze");
    for (auto d : dims)
      if (x.shape()[d] != 1)
        fail<ValueError>("squeeze: cannot select an axis to squeeze out which has size not equal to one (axis ", d,
                         " of ", x.aval().str(), ")");
  }
  return lax::squeeze(x, dims);
}

Array broadcast_to(const Array& x, const Shape& shape) {
  return ops_detail::broadcast_to(checked(x, "broadcast_to"), shape, "broadcast_to");
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& xs) {
  Shape s;
  for (auto& x : xs) s = broadcast_shapes(s, checked(x, "broadcast_arrays").shape(), "broadcast_arrays");
  std::vector<Array> out;
  for (auto& x : xs) out.push_back(ops_detail::broadcast_to(x, s, "broadcast_arrays"));
  return out;
}

Array concatenate(const std::vector<Array>& xs, int64_t axis) {
  if (xs.empty()) fail<ValueError>("concatenate: need at least one array to concatenate");
  bool weak = true;
  DType d = xs[0].dtype();
  for (size_t i = 0; i < xs.size(); ++i) {
    checked(xs[i], "concatenate");
    if (xs[i].ndim() == 0) fail<ValueError>("concatenate: zero-dimensional arrays cannot be concatenated");
    if (i == 0) {
      weak = xs[0].weak_type();
    } else {
      d = promote_types(d, weak, xs[i].dtype(), xs[i].weak_type(), &weak);
    }
  }
  int64_t a = normalize_axis(axis, xs[0].ndim(), "concatenate");
  Arrays parts;
  for (auto& x : xs) {
    if (x.ndim() != xs[0].ndim())
      fail<ShapeError>("concatenate: all arrays must have the same rank, got ", xs[0].aval().str(), " and ",
                       x.aval().str());
    parts.push_back(convert(x, d, weak && x.weak_type()));
  }
  return lax::concatenate(parts, a);
}

Array stack(const std::vector<Array>& xs, int64_t axis) {
  if (xs.empty()) fail<ValueError>("stack: need at least one array to stack");
  int64_t a = normalize_axis(axis, xs[0].ndim() + 1, "stack");
  std::vector<Array> ex;
  for (auto& x : xs) {
    if (checked(x, "stack").shape() != xs[0].shape())
      fail<ShapeError>("stack: all input arrays must have the same shape, got ", xs[0].aval().str(), " and ",
                       x.aval().str());
    ex.push_back(lax::expand_dims(x, {a}));
  }
  return concatenate(ex, a);
}

std::vector<Array> split(const Array& x, int64_t sections, int64_t axis) {
  checked(x, "split");
  int64_t a = normalize_axis(axis, x.ndim(), "split");
  if (sections <= 0 || x.shape()[a] % sections != 0)
    fail<ValueError>("split: array split does not result in an equal division (", x.shape()[a], " into ", sections,
                     ")");
  std::vector<int64_t> idx;
  int64_t step = x.shape()[a] / sections;
  for (int64_t i = 1; i < sections; ++i) idx.push_back(i * step);
  return split(x, idx, axis);
}

std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis) {
  checked(x, "split");
  int64_t a = normalize_axis(axis, x.ndim(), "split");
  int64_t n = x.shape()[a], start = 0;
  std::vector<Array> out;
  auto piece = [&](int64_t s, int64_t e) {
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, s, n);
    out.push_back(lax::slice_in_dim(x, s, e, 1, a));
  };
  for (auto i : indices) {
    piece(start, i);
    start = i;
  }
  piece(start, n);
  return out;
}

Array flip(const Array& x, AxisArg axis) {
  checked(x, "flip");
  return lax::rev(x, axis.resolve(x.ndim(), "flip"));
}

Array tile(const Array& x0, const Shape& reps) {
  Array x = checked(x0, "tile");
  size_t nd = std::max(static_cast<size_t>(x.ndim()), reps.size());
  Shape xs(nd - static_cast<size_t>(x.ndim()), 1), r(nd - reps.size(), 1);
  for (auto s : x.shape()) xs.push_back(s);
  for (auto s : reps) r.push_back(s);
  x = lax::reshape(x, xs);
  // broadcast to [r0, x0, r1, x1, ...] and merge pairs
  Shape big, out;
  Axes bd;
  for (size_t i = 0; i < nd; ++i) {
    big.push_back(r[i]);
    big.push_back(xs[i]);
    bd.push_back(static_cast<int64_t>(2 * i + 1));
    out.push_back(r[i] * xs[i]);
  }
  return lax::reshape(lax::broadcast_in_dim(x, big, bd), out);
}

Array repeat(const Array& x0, int64_t repeats, std::optional<int64_t> axis) {
  Array x = checked(x0, "repeat");
  if (repeats < 0) fail<ValueError>("repeat: repeats must be non-negative");
  if (!axis) {
    x = lax::reshape(x, {x.size()});
    axis = 0;
  }
  int64_t a = normalize_axis(*axis, x.ndim(), "repeat");
  Shape big, out;
  Axes bd;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    big.push_back(x.shape()[i]);
    bd.push_back(static_cast<int64_t>(big.size()) - 1);
    if (i == a) big.push_back(repeats);
    out.push_back(i == a ? x.shape()[i] * repeats : x.shape()[i]);
  }
  return lax::reshape(lax::broadcast_in_dim(x, big, bd), out);
}

Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, double value) {
  checked(x, "pad");
  std::vector<std::pair<int64_t, int64_t>> pw = pad_width;
  if (pw.size() == 1 && x.ndim() > 1) pw.assign(static_cast<size_t>(x.ndim()), pad_width[0]);
  if (static_cast<int64_t>(pw.size()) != x.ndim())
    fail<ValueError>("pad: pad_width needs one (before, after) pair per axis of ", x.aval().str());
  std::vector<IntList> cfg;
  for (auto& [lo, hi] : pw) {
    if (lo < 0 || hi < 0) fail<ValueError>("pad: negative padding");
    cfg.push_back({lo, hi, 0});
  }
  return lax::pad(x, Array::scalar(value, x.dtype()), cfg);
}

Array atleast_1d(const Array& x) { return checked(x, "atleast_1d").ndim() >= 1 ? x : lax::reshape(x, {1}); }
Array atleast_2d(const Array& x) {
  checked(x, "atleast_2d");
  if (x.ndim() >= 2) return x;
  return lax::reshape(x, {1, x.size()});
}

}  // namespace graft
