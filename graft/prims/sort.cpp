// sort: sorts several operands along a dimension by the lexicographic order of the first num_keys.
// Floats use a total order: -0.0 before 0.0, NaNs last (as JAX). All its rules.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

Avals sort_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  if (in.empty()) fail<ValueError>("sort: needs at least one operand");
  int64_t dim = params.get_int("dimension");
  int64_t nk = params.get_int("num_keys");
  for (auto* a : in)
    if (a->shape != in[0]->shape) shape_error(p, in, "all operands must have the same shape");
  if (dim < 0 || dim >= in[0]->ndim()) shape_error(p, in, "dimension " + std::to_string(dim) + " out of range");
  if (nk < 1 || nk > static_cast<int64_t>(in.size())) shape_error(p, in, "num_keys out of range");
  Avals out;
  for (auto* a : in) out.push_back(*a);
  return out;
}

// -1, 0, 1 comparing element i and j of one key array (total order for floats)
template <class T>
int cmp_elem(const T* k, int64_t i, int64_t j) {
  using C = compute_t<T>;
  C a = static_cast<C>(k[i]), b = static_cast<C>(k[j]);
  if constexpr (std::is_floating_point_v<C>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
    if (a == b) {
      bool sa = std::signbit(a), sb = std::signbit(b);
      return sa == sb ? 0 : (sa ? -1 : 1);
    }
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

Arrays sort_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  int64_t dim = params.get_int("dimension");
  int64_t nk = params.get_int("num_keys");
  bool stable = params.get_bool("is_stable");
  const Shape& s = in[0].shape();
  int64_t outer = 1, inner = 1, n = s[dim];
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < dim) outer *= s[i];
    if (i > dim) inner *= s[i];
  }
  Arrays res = alloc_outputs(out);
  using Cmp = int (*)(const void*, int64_t, int64_t);
  std::vector<Cmp> cmps;
  for (int64_t k = 0; k < nk; ++k)
    cmps.push_back(visit_dtype(in[k].dtype(), [](auto tag) -> Cmp {
      using T = typename decltype(tag)::type;
      return [](const void* p, int64_t i, int64_t j) { return cmp_elem(static_cast<const T*>(p), i, j); };
    }));
  cpu::parallel_for(outer * inner, 64, [&](int64_t b, int64_t e) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t oi = b; oi < e; ++oi) {
      int64_t base = (oi / inner) * n * inner + oi % inner;
      std::iota(perm.begin(), perm.end(), 0);
      auto less = [&](int64_t a, int64_t c) {
        for (int64_t k = 0; k < nk; ++k) {
          int r = cmps[k](in[k].raw_data(), base + a * inner, base + c * inner);
          if (r) return r < 0;
        }
        return false;
      };
      if (stable) {
        std::stable_sort(perm.begin(), perm.end(), less);
      } else {
        std::sort(perm.begin(), perm.end(), less);
      }
      for (size_t op = 0; op < in.size(); ++op) {
        size_t isz = itemsize(in[op].dtype());
        const char* src = static_cast<const char*>(in[op].raw_data());
        char* dst = static_cast<char*>(res[op].concrete()->data());
        for (int64_t r = 0; r < n; ++r)
          std::memcpy(dst + (base + r * inner) * static_cast<int64_t>(isz),
                      src + (base + perm[r] * inner) * static_cast<int64_t>(isz), isz);
      }
    }
  });
  return res;
}

// Sorts an iota along with the operands to learn the permutation, then permutes the tangents.
JvpResult sort_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  int64_t dim = params.get_int("dimension");
  Arrays args(primals.begin(), primals.end());
  args.push_back(lax::iota(DType::i32, primals[0].shape(), dim));
  Arrays sorted = graft::bind(p, args, params);
  Array perm = sorted.back();
  sorted.pop_back();
  Arrays ts;
  for (auto& t : tangents) ts.push_back(is_zero(t) ? Array() : lax::take_along_axis(t, perm, dim));
  return {std::move(sorted), std::move(ts)};
}

BatchResult sort_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                       const BatchInfo& axis, const Params& params) {
  Arrays xs;
  for (size_t i = 0; i < vals.size(); ++i) xs.push_back(batch_to_front(vals[i], dims[i], axis.size));
  Arrays out = graft::bind(p, xs, params.with("dimension", params.get_int("dimension") + 1));
  BatchDims od(out.size(), 0);
  return {std::move(out), od};
}

}  // namespace

const Primitive sort_p{"sort", kMultipleResults, &sort_shape, &sort_impl, &sort_jvp, nullptr, &sort_batch};

}  // namespace graft::prims

namespace graft::lax {
Arrays sort(std::span<const Array> operands, int64_t dimension, bool is_stable, int64_t num_keys) {
  return graft::bind(prims::sort_p, operands, {{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}});
}
}  // namespace graft::lax
