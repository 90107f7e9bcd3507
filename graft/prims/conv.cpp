// conv_general_dilated: XLA's general convolution (strides, padding, input and kernel dilation,
// feature and batch groups, any dimension layout). All its rules. The CPU kernel gathers input
// windows into columns (im2col) per group and multiplies with GEMM; the transposes are themselves
// convolutions (the gradient of a strided convolution is a convolution with input dilation).
#include <numeric>
#include <optional>

#include "graft/runtime/cpu/conv.h"
#include "graft/runtime/cpu/gemm.h"
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

struct ConvP {
  const lax::ConvDims* dn;
  IntList strides, lhs_dil, rhs_dil;
  Pairs padding;
  int64_t fgc, bgc;
};

ConvP read(const Params& p) {
  ConvP c{&p.get_object<lax::ConvDims>("dimension_numbers"),
          p.get_ints("window_strides"),
          p.get_ints("lhs_dilation"),
          p.get_ints("rhs_dilation"),
          {},
          p.get_int("feature_group_count"),
          p.get_int("batch_group_count")};
  for (auto& t : p.get_object<lax::IntTuples>("padding").items) c.padding.emplace_back(t.at(0), t.at(1));
  return c;
}

bool is_perm(const IntList& v, size_t n) {
  if (v.size() != n) return false;
  std::vector<bool> seen(n, false);
  for (auto x : v) {
    if (x < 0 || x >= static_cast<int64_t>(n) || seen[static_cast<size_t>(x)]) return false;
    seen[static_cast<size_t>(x)] = true;
  }
  return true;
}

Avals conv_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  const Aval &l = *in[0], &r = *in[1];
  ConvP c = read(params);
  size_t rank = static_cast<size_t>(l.ndim()), nsp = rank - 2;
  if (l.dtype != r.dtype) type_error(p, in, "operands must have the same dtype");
  if (is_bool(l.dtype)) type_error(p, in, "operands must be numeric");
  if (rank < 2 || static_cast<size_t>(r.ndim()) != rank) shape_error(p, in, "operands must have the same rank (>= 2)");
  if (!is_perm(c.dn->lhs_spec, rank) || !is_perm(c.dn->rhs_spec, rank) || !is_perm(c.dn->out_spec, rank))
    shape_error(p, in, "dimension_numbers must be permutations of the operand dimensions");
  if (c.strides.size() != nsp || c.lhs_dil.size() != nsp || c.rhs_dil.size() != nsp || c.padding.size() != nsp)
    shape_error(p, in, "window_strides, padding and dilations need one entry per spatial dimension");
  int64_t N = l.shape[c.dn->lhs_spec[0]], C = l.shape[c.dn->lhs_spec[1]];
  int64_t O = r.shape[c.dn->rhs_spec[0]], I = r.shape[c.dn->rhs_spec[1]];
  if (c.fgc < 1 || c.bgc < 1 || (c.fgc > 1 && c.bgc > 1))
    shape_error(p, in, "feature_group_count and batch_group_count must be >= 1, and not both > 1");
  if (C != I * c.fgc)
    shape_error(p, in, "input features (" + std::to_string(C) + ") must equal kernel input features (" +
                           std::to_string(I) + ") times feature_group_count (" + std::to_string(c.fgc) + ")");
  if (O % c.fgc != 0 || O % c.bgc != 0) shape_error(p, in, "output features must be divisible by the group count");
  if (N % c.bgc != 0) shape_error(p, in, "the batch must be divisible by batch_group_count");
  Shape out(rank);
  out[c.dn->out_spec[0]] = N / c.bgc;
  out[c.dn->out_spec[1]] = O;
  for (size_t i = 0; i < nsp; ++i) {
    if (c.strides[i] < 1 || c.lhs_dil[i] < 1 || c.rhs_dil[i] < 1)
      shape_error(p, in, "strides and dilations must be >= 1");
    int64_t S = l.shape[c.dn->lhs_spec[2 + i]], K = r.shape[c.dn->rhs_spec[2 + i]];
    int64_t padded = dilate_dim(S, c.lhs_dil[i]) + c.padding[i].first + c.padding[i].second;
    int64_t w = dilate_dim(K, c.rhs_dil[i]);
    out[c.dn->out_spec[2 + i]] = padded < w ? 0 : (padded - w) / c.strides[i] + 1;
  }
  return {Aval(out, l.dtype, l.weak_type && r.weak_type)};
}

Array to_layout(const Array& x, const IntList& spec) {
  return eval_primitive(transpose_p, {&x, 1}, {{"permutation", spec}})[0];
}

template <class T>
void conv_canonical(const T* L, const T* R, T* Out, const Shape& ls, const Shape& rs, const Shape& os, const ConvP& c) {
  size_t nsp = ls.size() - 2;
  int64_t N = ls[0], I = rs[1], O = rs[0], Nout = os[0];
  int64_t prodK = 1, prodS = 1, prodSo = 1;
  for (size_t d = 0; d < nsp; ++d) {
    prodK *= rs[2 + d];
    prodS *= ls[2 + d];
    prodSo *= os[2 + d];
  }
  // per spatial dim: input position for (kernel offset k, output position s), -1 when it is padding
  // or falls between the points of a dilated input
  std::vector<std::vector<int64_t>> table(nsp);
  for (size_t d = 0; d < nsp; ++d) {
    int64_t K = rs[2 + d], So = os[2 + d], S = ls[2 + d];
    table[d].resize(static_cast<size_t>(K * So));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t s = 0; s < So; ++s) {
        int64_t pos = s * c.strides[d] + k * c.rhs_dil[d] - c.padding[d].first;
        int64_t q = -1;
        if (pos >= 0 && pos % c.lhs_dil[d] == 0 && pos / c.lhs_dil[d] < S) q = pos / c.lhs_dil[d];
        table[d][static_cast<size_t>(k * So + s)] = q;
      }
  }
  // for the last spatial dim: per kernel offset, the interval of output positions that read the input
  // and whether they read it at a fixed step (no input dilation): then a run is one strided copy
  struct Span {
    int64_t lo = 0, hi = 0, q0 = 0;
  };
  std::vector<Span> spans;
  bool affine = nsp > 0;
  int64_t step = nsp > 0 ? c.strides[nsp - 1] : 1;
  if (nsp > 0) {
    int64_t K = rs[2 + nsp - 1], So = os[2 + nsp - 1];
    for (int64_t k = 0; k < K && affine; ++k) {
      const int64_t* t = table[nsp - 1].data() + k * So;
      Span sp;
      while (sp.lo < So && t[sp.lo] < 0) ++sp.lo;
      sp.hi = sp.lo;
      while (sp.hi < So && t[sp.hi] >= 0) ++sp.hi;
      sp.q0 = sp.lo < So ? t[sp.lo] : 0;
      for (int64_t j = sp.hi; j < So && affine; ++j) affine = t[j] < 0;
      for (int64_t j = sp.lo; j < sp.hi && affine; ++j) affine = t[j] == sp.q0 + (j - sp.lo) * step;
      spans.push_back(sp);
    }
  }
  int64_t groups = c.fgc * c.bgc, Oper = O / groups, rows = I * prodK, cols = Nout * prodSo;
  ScratchBuffer<T> col(static_cast<size_t>(rows * cols)), res(static_cast<size_t>(Oper * cols));
  Shape lstr = strides_of(ls);
  for (int64_t grp = 0; grp < groups; ++grp) {
    int64_t c0 = c.fgc > 1 ? grp * I : 0, n0 = c.bgc > 1 ? grp * Nout : 0;
    // rows (channel, kernel offset) x columns (example, output position); the last spatial dim is
    // copied as a run, the outer ones are resolved once per run
    int64_t last = nsp > 0 ? os[2 + nsp - 1] : 1, runs = prodSo / std::max<int64_t>(1, last);
    int64_t last_stride = nsp > 0 ? lstr[2 + nsp - 1] : 0;
    cpu::parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> kidx(nsp), sidx(nsp);
      for (int64_t r = r0; r < r1; ++r) {
        int64_t i = r / prodK, kf = r % prodK;
        for (size_t d = nsp; d-- > 0;) {
          kidx[d] = kf % rs[2 + d];
          kf /= rs[2 + d];
        }
        const int64_t* tlast = nsp > 0 ? table[nsp - 1].data() + kidx[nsp - 1] * last : nullptr;
        T* dst = col.data() + r * cols;
        for (int64_t n = 0; n < Nout; ++n) {
          const T* src = L + (n0 + n) * lstr[0] + (c0 + i) * lstr[1];
          std::fill(sidx.begin(), sidx.end(), 0);
          for (int64_t run = 0; run < runs; ++run) {
            int64_t base = 0;
            bool ok = true;
            for (size_t d = 0; d + 1 < nsp && ok; ++d) {
              int64_t q = table[d][static_cast<size_t>(kidx[d] * os[2 + d] + sidx[d])];
              ok = q >= 0;
              base += q * lstr[2 + d];
            }
            T* out = dst + n * prodSo + run * last;
            if (!ok) {
              std::fill_n(out, last, T(0));
            } else if (nsp == 0) {
              out[0] = src[base];
            } else if (affine) {
              const Span& sp = spans[static_cast<size_t>(kidx[nsp - 1])];
              const T* s = src + base + sp.q0 * last_stride;
              std::fill_n(out, sp.lo, T(0));
              int64_t n_in = sp.hi - sp.lo, st = step * last_stride;
              if (st == 1) {
                std::copy_n(s, n_in, out + sp.lo);
              } else {
                for (int64_t j = 0; j < n_in; ++j) out[sp.lo + j] = s[j * st];
              }
              std::fill(out + sp.hi, out + last, T(0));
            } else {
              const T* s = src + base;
              for (int64_t j = 0; j < last; ++j) out[j] = tlast[j] >= 0 ? s[tlast[j] * last_stride] : T(0);
            }
            for (size_t d = nsp > 0 ? nsp - 1 : 0; d-- > 0;) {
              if (++sidx[d] < os[2 + d]) break;
              sidx[d] = 0;
            }
          }
        }
      }
    });
    const T* W = R + grp * Oper * rows;
    cpu::gemm(dtype_v<T>, false, false, Oper, cols, rows, W, rows, col.data(), cols, res.data(), cols);
    int64_t o0 = grp * Oper;
    for (int64_t n = 0; n < Nout; ++n)
      for (int64_t o = 0; o < Oper; ++o)
        std::copy_n(res.data() + o * cols + n * prodSo, prodSo, Out + (n * O + o0 + o) * prodSo);
  }
  (void)N;
  (void)prodS;
}

// A convolution whose kernel is larger than its output is what a kernel gradient looks like
// (transpose_rhs): out[b, o, y, x] = sum over (i, kh, kw) of lhs[b, i, y*s + kh*d - p] * rhs[o, i, kh, kw].
// With the first two dimensions of every operand swapped it is exactly oneDNN's backward-weights
// problem: src (i, b, H, W), diff_dst = rhs as (i, o, KH, KW), diff_weights = out as (o, b, Y, X),
// with the stride and the dilation trading places.
std::optional<cpu::Conv2dDesc> as_backward_weights(const cpu::Conv2dDesc& d) {
  if (d.groups != 1 || d.wei_dims[2] * d.wei_dims[3] <= d.dst_dims[2] * d.dst_dims[3]) return std::nullopt;
  cpu::Conv2dDesc b = d;
  auto swap01 = [](const int64_t* dims, const int64_t* strides, int64_t* bd, int64_t* bs) {
    for (int j = 0; j < 4; ++j) {
      int k = j < 2 ? 1 - j : j;
      bd[j] = dims[k];
      bs[j] = strides[k];
    }
  };
  swap01(d.src_dims, d.src_strides, b.src_dims, b.src_strides);
  swap01(d.wei_dims, d.wei_strides, b.dst_dims, b.dst_strides);
  swap01(d.dst_dims, d.dst_strides, b.wei_dims, b.wei_strides);
  for (int i = 0; i < 2; ++i) {
    b.strides[i] = d.dilation[i];
    b.dilation[i] = d.strides[i];
    // the padding past the end that makes oneDNN's output size (the kernel's here) come out exact
    b.pad_hi[i] = (b.dst_dims[2 + i] - 1) * b.strides[i] + (b.wei_dims[2 + i] - 1) * b.dilation[i] + 1 -
                  b.src_dims[2 + i] - b.pad_lo[i];
    if (b.pad_hi[i] < 0) return std::nullopt;
  }
  return b;
}

// 2-D convolutions without input dilation or batch groups go to oneDNN's direct convolution, which
// reads and writes every operand in its own layout (the dimension numbers become strides): f32, and
// bf16 where the CPU has bf16 dot products (cpu::conv2d).
bool dnnl_takes(int64_t ndim, const ConvP& c) {
  if (!cpu::conv2d_available() || ndim != 4 || c.bgc != 1) return false;
  for (auto v : c.lhs_dil)
    if (v != 1) return false;
  for (auto [lo, hi] : c.padding)
    if (lo < 0 || hi < 0) return false;
  return true;
}

bool conv_dnnl(const Array& l, const Array& r, Array& out, const ConvP& c) {
  if (!dnnl_takes(l.ndim(), c)) return false;
  cpu::Conv2dDesc d;
  auto fill = [](const Array& x, const IntList& spec, int64_t* dims, int64_t* strides) {
    Shape st = strides_of(x.shape());
    for (size_t j = 0; j < 4; ++j) {
      dims[j] = x.shape()[static_cast<size_t>(spec[j])];
      strides[j] = st[static_cast<size_t>(spec[j])];
    }
  };
  fill(l, c.dn->lhs_spec, d.src_dims, d.src_strides);
  fill(r, c.dn->rhs_spec, d.wei_dims, d.wei_strides);
  fill(out, c.dn->out_spec, d.dst_dims, d.dst_strides);
  for (size_t i = 0; i < 2; ++i) {
    d.strides[i] = c.strides[i];
    d.dilation[i] = c.rhs_dil[i];
    d.pad_lo[i] = c.padding[i].first;
    d.pad_hi[i] = c.padding[i].second;
  }
  d.groups = c.fgc;
  const DType t = l.dtype();
  const void *lp = l.raw_data(), *rp = r.raw_data();
  void* op = out.concrete()->data();
  if (auto b = as_backward_weights(d); b && cpu::conv2d_backward_weights(t, *b, lp, rp, op)) return true;
  return cpu::conv2d(t, d, lp, rp, op);
}

Array converted(const Array& x, DType to, bool weak = false) {
  return eval_primitive(convert_element_type_p, {&x, 1}, {{"new_dtype", to}, {"weak_type", weak}})[0];
}

Arrays conv_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  ConvP c = read(params);
  if (out[0].size() > 0 && in[0].size() > 0 && in[1].size() > 0) {
    Array direct = Array::empty(out[0]);
    if (conv_dnnl(in[0], in[1], direct, c)) return {direct};
    // half types without native kernels compute in f32, as their GEMMs do (cpu::gemm): widened
    // operands, one rounding of each result, the same values as the column kernel below gives
    const DType t = out[0].dtype;
    if ((t == DType::bf16 || t == DType::f16) && dnnl_takes(in[0].ndim(), c)) {
      Array wide = Array::empty(Aval(out[0].shape, DType::f32));
      if (conv_dnnl(converted(in[0], DType::f32), converted(in[1], DType::f32), wide, c))
        return {converted(wide, t, out[0].weak_type)};
    }
  }
  Array L = to_layout(in[0], c.dn->lhs_spec), R = to_layout(in[1], c.dn->rhs_spec);
  size_t rank = static_cast<size_t>(L.ndim());
  Shape os(rank);
  for (size_t j = 0; j < rank; ++j) os[j] = out[0].shape[c.dn->out_spec[j]];
  Array canon = Array::empty(Aval(os, out[0].dtype));
  if (canon.size() > 0) {
    visit_dtype(L.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        conv_canonical<T>(static_cast<const T*>(L.raw_data()), static_cast<const T*>(R.raw_data()),
                          static_cast<T*>(canon.concrete()->data()), L.shape(), R.shape(), os, c);
      }
    });
  }
  IntList perm(rank);
  for (size_t j = 0; j < rank; ++j) perm[static_cast<size_t>(c.dn->out_spec[j])] = static_cast<int64_t>(j);
  return {to_layout(canon, perm)};
}

// ---- rules written with convolutions ----------------------------------------------------------------------
Array conv(const Array& l, const Array& r, const IntList& strides, const Pairs& pad, const IntList& lhs_dil,
           const IntList& rhs_dil, const lax::ConvDims& dn, int64_t fgc, int64_t bgc) {
  return lax::conv_general_dilated(l, r, to_shape(strides), pad, to_shape(lhs_dil), to_shape(rhs_dil), dn, fgc, bgc);
}

// Splits axis `src` of size n into (size1, n / size1) in place.
Array axis_out_of(int64_t src, int64_t size1, const Array& x) {
  Shape s = x.shape();
  int64_t n = s[src];
  s[src] = n / size1;
  s.insert(s.begin() + src, size1);
  return lax::reshape(x, s);
}
// Moves axis `src` in front of the axis at `dst` (counted without src) and merges the two.
Array axis_into(int64_t src, int64_t dst, const Array& x) {
  Axes perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Shape s;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) s.push_back(x.shape()[i]);
  s[dst] *= x.shape()[src];
  return lax::reshape(lax::transpose(x, perm), s);
}

IntList swap01(const IntList& spec) {
  IntList s = spec;
  std::swap(s[0], s[1]);
  return s;
}

IntList taken(const Shape& shape, const IntList& spec, size_t from = 2) {
  IntList v;
  for (size_t i = from; i < spec.size(); ++i) v.push_back(shape[spec[i]]);
  return v;
}

// Padding of the convolution that computes the gradient with respect to the kernel.
Pairs rhs_grad_padding(const IntList& in, const IntList& win, const IntList& strides, const IntList& out,
                       const Pairs& padding, const IntList& lhs_dil, const IntList& rhs_dil) {
  Pairs p;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t ld = dilate_dim(in[i], lhs_dil[i]), rd = dilate_dim(win[i], rhs_dil[i]), od = dilate_dim(out[i], strides[i]);
    int64_t lo = padding[i].first;
    p.emplace_back(lo, (od - ld) + (rd - lo - 1));
  }
  return p;
}

JvpResult conv_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  Array y = bind1(p, primals, params);
  Array a = is_zero(tangents[0]) ? Array() : bind1(p, {tangents[0], primals[1]}, params);
  Array b = is_zero(tangents[1]) ? Array() : bind1(p, {primals[0], tangents[1]}, params);
  return {{y}, {add_tangents(a, b)}};
}

Array transpose_lhs(const Array& g, const Aval& lhs, Array rhs, const ConvP& c) {
  const auto& dn = *c.dn;
  int64_t fgc = c.fgc;
  if (c.fgc > 1) {
    rhs = axis_out_of(dn.rhs_spec[0], c.fgc, rhs);
    rhs = axis_into(dn.rhs_spec[0], dn.rhs_spec[1], rhs);
  } else if (c.bgc > 1) {
    rhs = axis_out_of(dn.rhs_spec[0], c.bgc, rhs);
    rhs = axis_into(dn.rhs_spec[0], dn.rhs_spec[1], rhs);
    fgc = c.bgc;
  }
  lax::ConvDims tdn(dn.out_spec, swap01(dn.rhs_spec), dn.lhs_spec);
  Pairs pad = window_grad_padding(taken(lhs.shape, dn.lhs_spec), taken(rhs.shape(), dn.rhs_spec), c.strides,
                               taken(g.shape(), dn.out_spec), c.padding, c.lhs_dil, c.rhs_dil);
  Axes sdims;
  for (size_t i = 2; i < dn.rhs_spec.size(); ++i) sdims.push_back(dn.rhs_spec[i]);
  Array out = conv(g, lax::rev(rhs, sdims), c.lhs_dil, pad, c.strides, c.rhs_dil, tdn, fgc, 1);
  if (c.bgc > 1) {
    out = axis_out_of(dn.lhs_spec[1], c.bgc, out);
    out = axis_into(dn.lhs_spec[1], dn.lhs_spec[0], out);
  }
  return out;
}

Array transpose_rhs(const Array& g, const Array& lhs, const Aval& rhs, const ConvP& c) {
  const auto& dn = *c.dn;
  int64_t fgc = c.fgc, bgc = c.bgc;
  if (bgc > 1) {
    fgc = bgc;
    bgc = 1;
  } else if (fgc > 1) {
    bgc = fgc;
    fgc = 1;
  }
  lax::ConvDims tdn(swap01(dn.lhs_spec), swap01(dn.out_spec), swap01(dn.rhs_spec));
  Pairs pad = rhs_grad_padding(taken(lhs.shape(), dn.lhs_spec), taken(rhs.shape, dn.rhs_spec), c.strides,
                               taken(g.shape(), dn.out_spec), c.padding, c.lhs_dil, c.rhs_dil);
  return conv(lhs, g, c.rhs_dil, pad, c.lhs_dil, c.strides, tdn, fgc, bgc);
}

Arrays conv_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  if (args[0].linear && args[1].linear)
    fail<ValueError>("conv_general_dilated: cannot transpose with respect to both operands (not linear)");
  ConvP c = read(params);
  Arrays out(2);
  if (cts[0].size() == 0) {
    for (int i = 0; i < 2; ++i)
      if (args[static_cast<size_t>(i)].linear) out[static_cast<size_t>(i)] = lax::zeros(args[static_cast<size_t>(i)].aval);
    return out;
  }
  if (args[0].linear) out[0] = transpose_lhs(cts[0], args[0].aval, args[1].value, c);
  if (args[1].linear) out[1] = transpose_rhs(cts[0], args[0].value, args[1].aval, c);
  return out;
}

// vmap: the batch dimension is folded into the batch (lhs only), the output features (rhs only), or
// the feature groups (both batched); the output then splits it out again.
BatchResult conv_batch(const Primitive&, std::span<const Array> vals, std::span<const int64_t> dims,
                       const BatchInfo& axis, const Params& params) {
  ConvP c = read(params);
  const auto& dn = *c.dn;
  Array lhs = vals[0], rhs = vals[1];
  int64_t ld = dims[0], rd = dims[1], B = axis.size;
  bool grouped = c.fgc > 1 || c.bgc > 1;
  // cases the folding below does not cover: batch the other operand too (more FLOPs, same result)
  if (ld == kNotMapped && grouped) {
    lhs = batch_to_front(lhs, kNotMapped, B);
    ld = 0;
  }
  if (rd == kNotMapped && c.bgc > 1) {
    rhs = batch_to_front(rhs, kNotMapped, B);
    rd = 0;
  }
  if (ld != kNotMapped && rd != kNotMapped) {
    int64_t fgc = c.fgc, bgc = c.bgc;
    Array nl;
    if (bgc > 1) {
      nl = axis_into(ld, dn.lhs_spec[0], lhs);
      bgc *= B;
    } else {
      nl = axis_into(ld, dn.lhs_spec[1], lhs);
      fgc *= B;
    }
    Array nr = axis_into(rd, dn.rhs_spec[0], rhs);
    Array out = conv(nl, nr, c.strides, c.padding, c.lhs_dil, c.rhs_dil, dn, fgc, bgc);
    return {{axis_out_of(dn.out_spec[1], B, out)}, {dn.out_spec[1]}};
  }
  if (ld != kNotMapped) {  // bgc == 1 here
    Array nl = axis_into(ld, dn.lhs_spec[0], lhs);
    Array out = conv(nl, rhs, c.strides, c.padding, c.lhs_dil, c.rhs_dil, dn, c.fgc, c.bgc);
    return {{axis_out_of(dn.out_spec[0], B, out)}, {dn.out_spec[0]}};
  }
  // only the kernel is batched, no batch groups
  if (c.fgc == 1) {
    Array nr = axis_into(rd, dn.rhs_spec[0], rhs);
    Array out = conv(lhs, nr, c.strides, c.padding, c.lhs_dil, c.rhs_dil, dn, 1, 1);
    return {{axis_out_of(dn.out_spec[1], B, out)}, {dn.out_spec[1]}};
  }
  // feature groups: groups must stay outermost in the output features
  int64_t G = c.fgc;
  Array nr = axis_out_of(dn.rhs_spec[0] + (rd <= dn.rhs_spec[0] ? 1 : 0), G, rhs);
  nr = axis_into(rd + (dn.rhs_spec[0] < rd ? 1 : 0), dn.rhs_spec[0] + 1, nr);
  nr = axis_into(dn.rhs_spec[0], dn.rhs_spec[0], nr);
  Array out = conv(lhs, nr, c.strides, c.padding, c.lhs_dil, c.rhs_dil, dn, c.fgc, 1);
  out = axis_out_of(dn.out_spec[1], G, out);
  out = axis_out_of(dn.out_spec[1] + 1, B, out);
  out = axis_into(dn.out_spec[1], dn.out_spec[1] + 1, out);
  return {{out}, {dn.out_spec[1]}};
}

}  // namespace

const Primitive conv_general_dilated_p{"conv_general_dilated", 0, &conv_shape, &conv_impl, &conv_jvp,
                                       &conv_transpose,        &conv_batch};

}  // namespace graft::prims

namespace graft::lax {
Array conv_general_dilated(const Array& lhs, const Array& rhs, const Shape& window_strides,
                           const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& lhs_dilation,
                           const Shape& rhs_dilation, const ConvDims& dims, int64_t feature_group_count,
                           int64_t batch_group_count) {
  size_t nsp = window_strides.size();
  auto ones_if_empty = [nsp](const Shape& s) { return s.empty() ? IntList(nsp, 1) : prims::to_ints(s); };
  std::vector<IntList> pad;
  for (auto& [lo, hi] : padding) pad.push_back({lo, hi});
  Params p{{"batch_group_count", batch_group_count},
           {"dimension_numbers", Ref<const ParamObject>(new ConvDims(dims))},
           {"feature_group_count", feature_group_count},
           {"lhs_dilation", ones_if_empty(lhs_dilation)},
           {"padding", Ref<const ParamObject>(new IntTuples(pad))},
           {"precision", ParamValue()},
           {"preferred_element_type", ParamValue()},
           {"rhs_dilation", ones_if_empty(rhs_dilation)},
           {"window_strides", prims::to_ints(window_strides)}};
  return bind1(prims::conv_general_dilated_p, {lhs, rhs}, p);
}
}  // namespace graft::lax
