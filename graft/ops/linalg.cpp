// Linear algebra composites on dot_general: matmul, dot, tensordot, einsum, ...
#include <map>
#include <numeric>

#include "graft/ops/internal.h"

namespace graft {

using namespace ops_detail;

namespace {
std::pair<Array, Array> promote_only(const Array& a, const Array& b, const char* op) {
  checked(a, op);
  checked(b, op);
  bool weak;
  DType d = result_type({&a, &b}, &weak);
  return {convert(a, d, a.weak_type() && weak), convert(b, d, b.weak_type() && weak)};
}
IntList range(int64_t lo, int64_t hi) {
  IntList v;
  for (int64_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}
}  // namespace

Array matmul(const Array& a0, const Array& b0) {
  auto [a, b] = promote_only(a0, b0, "matmul");
  if (a.ndim() == 0 || b.ndim() == 0)
    fail<ValueError>("matmul: operands must have at least one dimension, got ", a.aval().str(), " and ", b.aval().str(),
                     " (use multiply for scalars)");
  bool a1 = a.ndim() == 1, b1 = b.ndim() == 1;
  if (a1) a = lax::reshape(a, {1, a.shape()[0]});
  if (b1) b = lax::reshape(b, {b.shape()[0], 1});
  int64_t k = a.shape().back();
  if (b.shape()[b.ndim() - 2] != k)
    fail<ShapeError>("matmul: contracting dimensions differ: ", a0.aval().str(), " @ ", b0.aval().str(), " (", k,
                     " vs ", b.shape()[b.ndim() - 2], ")");
  Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Array r;
  if (bb.empty()) {
    // [*B, m, k] x [k, n] -> [*B, m, n]: the batch dims are free dims of the lhs
    r = lax::dot_general(a, b, lax::DotDims({a.ndim() - 1}, {0}, {}, {}));
  } else {
    Shape batch = broadcast_shapes(ab, bb, "matmul");
    auto full = [&](const Array& x) {
      Shape s = batch;
      s.push_back(x.shape()[x.ndim() - 2]);
      s.push_back(x.shape()[x.ndim() - 1]);
      return ops_detail::broadcast_to(x, s, "matmul");
    };
    Array af = full(a), bf = full(b);
    int64_t nb = static_cast<int64_t>(batch.size());
    r = lax::dot_general(af, bf, lax::DotDims({nb + 1}, {nb}, range(0, nb), range(0, nb)));
  }
  if (a1 && b1) return lax::reshape(r, Shape(r.shape().begin(), r.shape().end() - 2));
  if (a1) {
    Shape s = r.shape();
    s.erase(s.end() - 2);
    return lax::reshape(r, s);
  }
  if (b1) return lax::reshape(r, Shape(r.shape().begin(), r.shape().end() - 1));
  return r;
}

Array dot(const Array& a0, const Array& b0) {
  auto [a, b] = promote_only(a0, b0, "dot");
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b);
  if (b.ndim() == 1) {
    if (a.shape().back() != b.shape()[0])
      fail<ShapeError>("dot: shapes ", a.aval().str(), " and ", b.aval().str(), " not aligned");
    return lax::dot_general(a, b, lax::DotDims({a.ndim() - 1}, {0}, {}, {}));
  }
  if (a.shape().back() != b.shape()[b.ndim() - 2])
    fail<ShapeError>("dot: shapes ", a.aval().str(), " and ", b.aval().str(), " not aligned");
  return lax::dot_general(a, b, lax::DotDims({a.ndim() - 1}, {b.ndim() - 2}, {}, {}));
}

// NumPy's vdot conjugates its first argument
Array vdot(const Array& a, const Array& b) { return dot(ravel(conj(a)), ravel(b)); }

Array inner(const Array& a0, const Array& b0) {
  auto [a, b] = promote_only(a0, b0, "inner");
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b);
  if (a.shape().back() != b.shape().back())
    fail<ShapeError>("inner: last dimensions differ: ", a.aval().str(), " and ", b.aval().str());
  return lax::dot_general(a, b, lax::DotDims({a.ndim() - 1}, {b.ndim() - 1}, {}, {}));
}

Array outer(const Array& a, const Array& b) {
  Array x = ravel(a), y = ravel(b);
  return multiply(lax::expand_dims(x, {1}), lax::expand_dims(y, {0}));
}

Array tensordot(const Array& a, const Array& b, int64_t axes) {
  if (axes < 0 || axes > a.ndim() || axes > b.ndim()) fail<ValueError>("tensordot: axes out of range");
  Axes aa, ba;
  for (int64_t i = 0; i < axes; ++i) {
    aa.push_back(a.ndim() - axes + i);
    ba.push_back(i);
  }
  return tensordot(a, b, aa, ba);
}

Array tensordot(const Array& a0, const Array& b0, const Axes& a_axes, const Axes& b_axes) {
  auto [a, b] = promote_only(a0, b0, "tensordot");
  if (a_axes.size() != b_axes.size()) fail<ValueError>("tensordot: axes lists must have the same length");
  IntList ac, bc;
  for (size_t i = 0; i < a_axes.size(); ++i) {
    ac.push_back(normalize_axis(a_axes[i], a.ndim(), "tensordot"));
    bc.push_back(normalize_axis(b_axes[i], b.ndim(), "tensordot"));
    if (a.shape()[ac.back()] != b.shape()[bc.back()])
      fail<ShapeError>("tensordot: shape mismatch along contracted axes: ", a.aval().str(), " and ", b.aval().str());
  }
  return lax::dot_general(a, b, lax::DotDims(ac, bc, {}, {}));
}

Array diagonal(const Array& x) {
  checked(x, "diagonal");
  if (x.ndim() != 2) fail<ValueError>("diagonal: expects a 2-D array, got ", x.aval().str());
  int64_t n = std::min(x.shape()[0], x.shape()[1]);
  Array idx = lax::iota(DType::i32, {n, 1}, 0);
  Array sq = lax::slice(x, {0, 0}, {n, n});
  return lax::reshape(take_along_axis(sq, idx, 1), {n});
}

Array trace(const Array& x) { return sum(diagonal(x)); }

// ---- einsum ---------------------------------------------------------------------------------------------
namespace {
struct Term {
  Array x;
  std::string idx;
};

// Sums out the indices of t that are not in `keep`.
Term reduce_unused(Term t, const std::string& keep) {
  Axes axes;
  std::string rest;
  for (size_t i = 0; i < t.idx.size(); ++i) {
    if (keep.find(t.idx[i]) == std::string::npos) {
      axes.push_back(static_cast<int64_t>(i));
    } else {
      rest += t.idx[i];
    }
  }
  if (!axes.empty()) t.x = lax::reduce_sum(t.x, axes);
  t.idx = rest;
  return t;
}

// An index repeated within one operand ("ii", "bii") reads its diagonal: for each repeat, the entries where
// the two axes agree are kept (a select against their iotas) and the second axis summed away.
Term take_diagonals(Term t) {
  for (size_t a = 0; a < t.idx.size(); ++a) {
    size_t b;
    while ((b = t.idx.find(t.idx[a], a + 1)) != std::string::npos) {
      int64_t ia = static_cast<int64_t>(a), ib = static_cast<int64_t>(b);
      const Shape& s = t.x.shape();
      if (s[a] != s[b])
        fail<ShapeError>("einsum: index '", t.idx[a], "' has sizes ", s[a], " and ", s[b], " within one operand");
      Array on = lax::eq(lax::iota(DType::i32, s, ia), lax::iota(DType::i32, s, ib));
      t.x = lax::reduce_sum(lax::select(on, t.x, zeros_like(t.x)), {ib});
      t.idx.erase(b, 1);
    }
  }
  return t;
}

Term contract(const Term& a, const Term& b, const std::string& needed_after) {
  IntList lc, rc, lb, rb;
  std::string out_idx;
  for (size_t i = 0; i < a.idx.size(); ++i) {
    char c = a.idx[i];
    size_t j = b.idx.find(c);
    if (j == std::string::npos) continue;
    if (needed_after.find(c) != std::string::npos) {
      lb.push_back(static_cast<int64_t>(i));
      rb.push_back(static_cast<int64_t>(j));
    } else {
      lc.push_back(static_cast<int64_t>(i));
      rc.push_back(static_cast<int64_t>(j));
    }
  }
  for (auto i : lb) out_idx += a.idx[static_cast<size_t>(i)];
  for (size_t i = 0; i < a.idx.size(); ++i)
    if (b.idx.find(a.idx[i]) == std::string::npos) out_idx += a.idx[i];
  for (size_t j = 0; j < b.idx.size(); ++j)
    if (a.idx.find(b.idx[j]) == std::string::npos) out_idx += b.idx[j];
  for (size_t k = 0; k < lc.size(); ++k)
    if (a.x.shape()[lc[k]] != b.x.shape()[rc[k]])
      fail<ShapeError>("einsum: index '", a.idx[static_cast<size_t>(lc[k])], "' has sizes ", a.x.shape()[lc[k]], " and ",
                       b.x.shape()[rc[k]]);
  return {lax::dot_general(a.x, b.x, lax::DotDims(lc, rc, lb, rb)), out_idx};
}
}  // namespace

Array einsum(const std::string& subscripts, const std::vector<Array>& operands) {
  std::string spec;
  for (char c : subscripts)
    if (c != ' ') spec += c;
  size_t arrow = spec.find("->");
  std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> ins;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    ins.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (ins.size() != operands.size())
    fail<ValueError>("einsum: '", subscripts, "' names ", ins.size(), " operands, got ", operands.size());
  std::string out;
  if (arrow != std::string::npos) {
    out = spec.substr(arrow + 2);
  } else {
    std::map<char, int> count;
    for (auto& s : ins)
      for (char c : s) ++count[c];
    for (auto& [c, n] : count)
      if (n == 1) out += c;
  }
  std::vector<Term> terms;
  bool weak;
  DType d = operands[0].dtype();
  weak = operands[0].weak_type();
  for (size_t i = 1; i < operands.size(); ++i) d = promote_types(d, weak, operands[i].dtype(), operands[i].weak_type(), &weak);
  for (size_t i = 0; i < ins.size(); ++i) {
    const Array& x = checked(operands[i], "einsum");
    if (static_cast<int64_t>(ins[i].size()) != x.ndim())
      fail<ValueError>("einsum: subscripts '", ins[i], "' do not match ", x.aval().str());
    terms.push_back(take_diagonals({convert(x, d), ins[i]}));
  }
  // indices still needed by later operands or the output
  auto needed = [&](size_t from) {
    std::string s = out;
    for (size_t i = from; i < terms.size(); ++i) s += terms[i].idx;
    return s;
  };
  Term acc = reduce_unused(terms[0], needed(1));
  for (size_t i = 1; i < terms.size(); ++i) {
    std::string later = needed(i + 1);
    Term t = reduce_unused(terms[i], acc.idx + later);
    acc = contract(acc, t, later);
  }
  acc = reduce_unused(acc, out);
  Axes perm;
  for (char c : out) {
    size_t p = acc.idx.find(c);
    if (p == std::string::npos) fail<ValueError>("einsum: output index '", c, "' does not appear in the inputs");
    perm.push_back(static_cast<int64_t>(p));
  }
  return lax::transpose(acc.x, perm);
}

}  // namespace graft
