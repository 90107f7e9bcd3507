#include "graft/backend/cpu/conv.h"

#ifdef GRAFT_HAVE_DNNL
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "graft/backend/cpu/parallel.h"
#include "graft/core/buffer.h"
#endif

namespace graft::cpu {

#ifdef GRAFT_HAVE_DNNL
namespace {
// One oneDNN convolution per problem (shapes, strides, parameters), made on first use: the primitive
// picks its own memory formats (blocked for AVX-512) and the operands are reordered into them and the
// result out of them, which costs a pass over each tensor instead of an im2col matrix K times larger.
struct Entry {
  dnnl::convolution_forward prim;
  dnnl::memory::desc user_src, user_wei, user_dst, src, wei, dst;
  std::unique_ptr<dnnl::reorder> r_src, r_wei, r_dst;
};

dnnl::engine& engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

std::shared_ptr<Entry> make_entry(const Conv2dDesc& d) {
  using namespace dnnl;
  using dt = memory::data_type;
  auto dims = [](const int64_t* v, int n) { return memory::dims(v, v + n); };
  memory::dims wdims, wstr;
  int64_t G = d.groups;
  if (G == 1) {
    wdims = dims(d.wei_dims, 4);
    wstr = dims(d.wei_strides, 4);
  } else {
    wdims = {G, d.wei_dims[0] / G, d.wei_dims[1], d.wei_dims[2], d.wei_dims[3]};
    wstr = {d.wei_strides[0] * (d.wei_dims[0] / G), d.wei_strides[0], d.wei_strides[1], d.wei_strides[2],
            d.wei_strides[3]};
  }
  auto e = std::make_shared<Entry>();
  e->user_src = memory::desc(dims(d.src_dims, 4), dt::f32, dims(d.src_strides, 4));
  e->user_wei = memory::desc(wdims, dt::f32, wstr);
  e->user_dst = memory::desc(dims(d.dst_dims, 4), dt::f32, dims(d.dst_strides, 4));
  memory::desc any_src(dims(d.src_dims, 4), dt::f32, memory::format_tag::any);
  memory::desc any_wei(wdims, dt::f32, memory::format_tag::any);
  memory::desc any_dst(dims(d.dst_dims, 4), dt::f32, memory::format_tag::any);
  memory::dims st = dims(d.strides, 2), dil{d.dilation[0] - 1, d.dilation[1] - 1}, pl = dims(d.pad_lo, 2),
               pr = dims(d.pad_hi, 2);
  // Prefer an implementation that reads and writes the operands where they are (no reorder); take one
  // that wants its own formats only when the in-place ones would be reference or GEMM-based kernels.
  auto make_pd = [&](const memory::desc& src, const memory::desc& dst) -> std::optional<convolution_forward::primitive_desc> {
    try {
      convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, src, any_wei, dst, st,
                                   dil, pl, pr);
      convolution_forward::primitive_desc pd(cd, engine());
      std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos || impl.find("gemm") != std::string::npos) return std::nullopt;
      return pd;
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  };
  std::optional<convolution_forward::primitive_desc> best;
  for (auto [src, dst] : {std::pair{e->user_src, e->user_dst}, std::pair{any_src, e->user_dst},
                          std::pair{e->user_src, any_dst}})
    if (!best) best = make_pd(src, dst);
  convolution_forward::primitive_desc pd =
      best ? *best
           : convolution_forward::primitive_desc(convolution_forward::desc(prop_kind::forward_inference,
                                                                           algorithm::convolution_direct, any_src,
                                                                           any_wei, any_dst, st, dil, pl, pr),
                                                 engine());
  e->prim = convolution_forward(pd);
  e->src = pd.src_desc();
  e->wei = pd.weights_desc();
  e->dst = pd.dst_desc();
  if (e->src != e->user_src) e->r_src = std::make_unique<reorder>(reorder::primitive_desc(engine(), e->user_src, engine(), e->src));
  if (e->wei != e->user_wei) e->r_wei = std::make_unique<reorder>(reorder::primitive_desc(engine(), e->user_wei, engine(), e->wei));
  if (e->dst != e->user_dst) e->r_dst = std::make_unique<reorder>(reorder::primitive_desc(engine(), e->dst, engine(), e->user_dst));
  return e;
}

// The primitive for problem d, made on first use (oneDNN generates code for it) and kept.
template <class E>
std::shared_ptr<E> cached(const Conv2dDesc& d, std::shared_ptr<E> (*make)(const Conv2dDesc&)) {
  std::vector<int64_t> key(reinterpret_cast<const int64_t*>(&d),
                           reinterpret_cast<const int64_t*>(&d) + sizeof(Conv2dDesc) / sizeof(int64_t));
  static std::mutex mu;
  static auto* cache = new std::map<std::vector<int64_t>, std::shared_ptr<E>>();
  {
    std::lock_guard<std::mutex> lk(mu);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  std::shared_ptr<E> e = make(d);
  std::lock_guard<std::mutex> lk(mu);
  cache->emplace(key, e);
  return e;
}

// Memory in oneDNN's own format for an operand, drawn from graft's recycling allocator: oneDNN's
// allocator would map fresh pages for every large tensor on every call (page faults cost more than
// the convolution itself at batch 1000).
struct Staging {
  std::vector<Ref<Buffer>> held;
  dnnl::memory make(const dnnl::memory::desc& d) {
    held.push_back(Buffer::allocate_cpu(d.get_size()));
    return dnnl::memory(d, engine(), held.back()->data());
  }
};

bool valid_window(const Conv2dDesc& d) {
  for (int i = 0; i < 2; ++i)
    if (d.pad_lo[i] < 0 || d.pad_hi[i] < 0 || d.strides[i] < 1 || d.dilation[i] < 1) return false;
  return true;
}

// Backward weights: oneDNN picks the formats (blocked for AVX-512); src and diff_dst are reordered
// into them and diff_weights out of them.
struct BwdEntry {
  dnnl::convolution_backward_weights prim;
  dnnl::memory::desc user_src, user_ddst, user_dwei, src, ddst, dwei;
  std::unique_ptr<dnnl::reorder> r_src, r_ddst, r_dwei;
};

std::shared_ptr<BwdEntry> make_bwd_entry(const Conv2dDesc& d) {
  using namespace dnnl;
  using dt = memory::data_type;
  auto dims = [](const int64_t* v, int n) { return memory::dims(v, v + n); };
  auto e = std::make_shared<BwdEntry>();
  e->user_src = memory::desc(dims(d.src_dims, 4), dt::f32, dims(d.src_strides, 4));
  e->user_dwei = memory::desc(dims(d.wei_dims, 4), dt::f32, dims(d.wei_strides, 4));
  e->user_ddst = memory::desc(dims(d.dst_dims, 4), dt::f32, dims(d.dst_strides, 4));
  auto any = [&](const int64_t* v) { return memory::desc(dims(v, 4), dt::f32, memory::format_tag::any); };
  memory::dims st = dims(d.strides, 2), dil{d.dilation[0] - 1, d.dilation[1] - 1}, pl = dims(d.pad_lo, 2),
               pr = dims(d.pad_hi, 2);
  convolution_forward::primitive_desc hint(
      convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, any(d.src_dims),
                                any(d.wei_dims), any(d.dst_dims), st, dil, pl, pr),
      engine());
  convolution_backward_weights::primitive_desc pd(
      convolution_backward_weights::desc(algorithm::convolution_direct, any(d.src_dims), any(d.wei_dims),
                                         any(d.dst_dims), st, dil, pl, pr),
      engine(), hint);
  e->prim = convolution_backward_weights(pd);
  e->src = pd.src_desc();
  e->ddst = pd.diff_dst_desc();
  e->dwei = pd.diff_weights_desc();
  auto re = [](const memory::desc& a, const memory::desc& b) {
    return a == b ? nullptr : std::make_unique<reorder>(reorder::primitive_desc(engine(), a, engine(), b));
  };
  e->r_src = re(e->user_src, e->src);
  e->r_ddst = re(e->user_ddst, e->ddst);
  e->r_dwei = re(e->dwei, e->user_dwei);
  return e;
}
}  // namespace

bool conv2d_backward_weights_f32(const Conv2dDesc& d, const float* src, const float* diff_dst, float* diff_wei) {
  using namespace dnnl;
  if (!valid_window(d) || d.groups != 1) return false;
  try {
    std::shared_ptr<BwdEntry> e = cached(d, &make_bwd_entry);
    (void)num_threads();  // the OpenMP team follows GRAFT_NUM_THREADS
    stream s(engine());
    Staging staging;
    memory us(e->user_src, engine(), const_cast<float*>(src)), ud(e->user_ddst, engine(), const_cast<float*>(diff_dst)),
        uw(e->user_dwei, engine(), diff_wei);
    memory ms = us, md = ud, mw = uw;
    if (e->r_src) {
      ms = staging.make(e->src);
      e->r_src->execute(s, us, ms);
    }
    if (e->r_ddst) {
      md = staging.make(e->ddst);
      e->r_ddst->execute(s, ud, md);
    }
    if (e->r_dwei) mw = staging.make(e->dwei);
    e->prim.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DIFF_DST, md}, {DNNL_ARG_DIFF_WEIGHTS, mw}});
    if (e->r_dwei) e->r_dwei->execute(s, mw, uw);
    s.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

bool conv2d_f32(const Conv2dDesc& d, const float* src, const float* wei, float* dst) {
  using namespace dnnl;
  if (!valid_window(d)) return false;
  try {
    std::shared_ptr<Entry> e = cached(d, &make_entry);
    (void)num_threads();  // the OpenMP team follows GRAFT_NUM_THREADS
    stream s(engine());
    Staging staging;
    memory us(e->user_src, engine(), const_cast<float*>(src)), uw(e->user_wei, engine(), const_cast<float*>(wei)),
        ud(e->user_dst, engine(), dst);
    memory ms = us, mw = uw, md = ud;
    if (e->r_src) {
      ms = staging.make(e->src);
      e->r_src->execute(s, us, ms);
    }
    if (e->r_wei) {
      mw = staging.make(e->wei);
      e->r_wei->execute(s, uw, mw);
    }
    if (e->r_dst) md = staging.make(e->dst);
    e->prim.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}});
    if (e->r_dst) e->r_dst->execute(s, md, ud);
    s.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}
#else
bool conv2d_f32(const Conv2dDesc&, const float*, const float*, float*) { return false; }
bool conv2d_backward_weights_f32(const Conv2dDesc&, const float*, const float*, float*) { return false; }
#endif

}  // namespace graft::cpu
