#include "graft/prims/rules.h"

#include <numeric>

namespace graft::prims {

std::string avals_str(AvalPtrs in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) s += ", ";
    s += in[i]->str();
  }
  return s;
}

void shape_error(const Primitive& p, AvalPtrs in, const std::string& why) {
  fail<ShapeError>(p.name, ": ", why, " (operands: ", avals_str(in), ")");
}

void type_error(const Primitive& p, AvalPtrs in, const std::string& why) {
  fail<TypeError>(p.name, ": ", why, " (operands: ", avals_str(in), ")");
}

void check_arity(const Primitive& p, AvalPtrs in, size_t n) {
  if (in.size() != n)
    fail<ValueError>(p.name, ": expected ", n, " operand(s), got ", in.size(), " (", avals_str(in), ")");
}

std::string mask_str(uint32_t mask) {
  if (mask == kMaskFloat) return "floating-point";
  if (mask == kMaskInt) return "integer";
  if (mask == (kMaskInt | kMaskBool)) return "integer or boolean";
  if (mask == kMaskNum) return "numeric (non-boolean)";
  if (mask == (kMaskFloat | kMaskSInt)) return "floating-point or signed integer";
  if (mask == kMaskInexact) return "floating-point or complex";
  if (mask == kMaskComplex) return "complex";
  if (mask == (kMaskNum | kMaskComplex)) return "numeric (non-boolean)";
  if (mask == (kMaskFloat | kMaskSInt | kMaskComplex)) return "floating-point, complex or signed integer";
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i)
    if (mask & (1u << i)) {
      if (!s.empty()) s += "/";
      s += short_name(static_cast<DType>(i));
    }
  return s;
}

IntList to_ints(std::span<const int64_t> s) { return IntList(s.begin(), s.end()); }
Shape to_shape(const IntList& v) { return Shape(v.begin(), v.end()); }

Array instantiate(const Array& t, const Aval& a) { return t.valid() ? t : lax::zeros(Aval(a.shape, a.dtype)); }

Array add_tangents(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return lax::add_any(a, b);
}

Array broadcast_to_aval(const Array& t, const Aval& a) {
  if (!t.valid() || t.shape() == a.shape) return t;
  return lax::broadcast_in_dim(t, a.shape, {});
}

Array unbroadcast(const Array& ct, const Aval& a) {
  if (!ct.valid() || ct.shape() == a.shape) return ct;
  Axes all(static_cast<size_t>(ct.ndim()));
  std::iota(all.begin(), all.end(), 0);
  return lax::reduce_sum(ct, all);
}

Avals avals_of(std::span<const Array> xs) {
  Avals out;
  for (auto& x : xs) out.push_back(x.aval());
  return out;
}

Array batch_to_front(const Array& x, int64_t bdim, int64_t size) {
  if (bdim == kNotMapped) {
    Shape s{size};
    Axes dims;
    for (int64_t i = 0; i < x.ndim(); ++i) {
      s.push_back(x.shape()[i]);
      dims.push_back(i + 1);
    }
    return lax::broadcast_in_dim(x, s, dims);
  }
  return lax::moveaxis(x, bdim, 0);
}

BatchResult batch_elementwise(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                              const BatchInfo& axis, const Params& params) {
  // Fast path: every batched operand has the same batch dim and every unbatched one is rank 0.
  int64_t common = kNotMapped;
  bool simple = true;
  Shape out_shape;
  int64_t out_rank = -1;
  for (size_t i = 0; i < vals.size(); ++i) {
    int64_t r = vals[i].ndim() - (dims[i] != kNotMapped ? 1 : 0);
    if (r > out_rank) {
      out_rank = r;
      out_shape = vals[i].shape();
      if (dims[i] != kNotMapped) out_shape.erase(out_shape.begin() + dims[i]);
    }
    if (dims[i] == kNotMapped) {
      if (r > 0) simple = false;
    } else {
      if (common == kNotMapped) common = dims[i];
      if (common != dims[i] || r == 0) simple = false;
    }
  }
  // a batched rank-0 operand next to full-rank operands needs broadcasting too
  if (simple) {
    Arrays out = graft::bind(p, vals, params);
    BatchDims od(out.size(), common);
    return {std::move(out), od};
  }
  Arrays args;
  for (size_t i = 0; i < vals.size(); ++i) {
    const Array& x = vals[i];
    int64_t r = x.ndim() - (dims[i] != kNotMapped ? 1 : 0);
    if (dims[i] == kNotMapped) {
      args.push_back(r == 0 ? x : batch_to_front(x, kNotMapped, axis.size));
    } else {
      Array y = lax::moveaxis(x, dims[i], 0);
      if (r == 0 && out_rank > 0) {
        Shape s{axis.size};
        for (auto d : out_shape) s.push_back(d);
        y = lax::broadcast_in_dim(y, s, {0});
      }
      args.push_back(y);
    }
  }
  Arrays out = graft::bind(p, args, params);
  BatchDims od(out.size(), 0);
  return {std::move(out), od};
}

Shape elementwise_shape(const Primitive& p, AvalPtrs in) {
  const Shape* shape = nullptr;
  for (auto* a : in) {
    if (a->ndim() == 0) continue;
    if (!shape) {
      shape = &a->shape;
    } else if (*shape != a->shape) {
      shape_error(p, in, "operands must have equal shapes (or be rank 0); use broadcasting ops (graft::" +
                             std::string(p.name) + ") for NumPy-style broadcasting");
    }
  }
  return shape ? *shape : Shape{};
}

BatchResult batch_unary(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                        const BatchInfo&, const Params& params) {
  Arrays out = graft::bind(p, vals, params);
  BatchDims od(out.size(), dims[0]);
  return {std::move(out), od};
}

JvpResult zero_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array>, const Params& params) {
  Arrays y = graft::bind(p, primals, params);
  Arrays t(y.size());
  return {std::move(y), std::move(t)};
}

int64_t scalar_index(const Array& x) {
  int64_t v = 0;
  convert_elements(x.raw_data(), x.dtype(), &v, DType::i64, 1);
  return v;
}

std::vector<std::pair<int64_t, int64_t>> window_grad_padding(const IntList& in, const IntList& win,
                                                             const IntList& strides, const IntList& out,
                                                             const std::vector<std::pair<int64_t, int64_t>>& padding,
                                                             const IntList& base_dilation,
                                                             const IntList& window_dilation) {
  std::vector<std::pair<int64_t, int64_t>> p;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t ld = dilate_dim(in[i], base_dilation[i]), rd = dilate_dim(win[i], window_dilation[i]);
    int64_t od = dilate_dim(out[i], strides[i]);
    int64_t before = rd - padding[i].first - 1;
    p.emplace_back(before, ld + rd - 1 - od - before);
  }
  return p;
}

Arrays alloc_outputs(std::span<const Aval> avals) {
  Arrays out;
  for (auto& a : avals) out.push_back(Array::empty(a));
  return out;
}

}  // namespace graft::prims
