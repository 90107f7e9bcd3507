#include "graft/runtime/cpu/conv.h"

#ifdef GRAFT_HAVE_DNNL
#include <omp.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graft/core/buffer.h"
#include "graft/runtime/cpu/dnnl_util.h"
#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/parallel.h"
#endif

namespace graft::cpu {

#ifdef GRAFT_HAVE_DNNL
namespace {
// One oneDNN convolution per problem (shapes, strides, parameters), made on first use: the primitive
// picks its own memory formats (blocked for AVX-512) and the operands are reordered into them and the
// result out of them, which costs a pass over each tensor instead of an im2col matrix K times larger.
struct Entry {
  // an operand as the caller holds it (user) and as the primitive wants it (inner); a reorder
  // between the two when they differ (into inner for inputs, out of it for the output)
  struct Operand {
    int arg = 0;
    bool output = false;
    dnnl::memory::desc user, inner, scratch;
    std::unique_ptr<dnnl::reorder> r;
  };
  dnnl::primitive prim;
  dnnl::memory::desc scratch;  ///< the primitive's scratchpad, supplied at each execution (dnnl_util.h)
  Operand ops[3];  ///< two inputs, then the output
};

dnnl::engine& engine() { return dnnl_engine(); }

void set_operand(Entry::Operand& o, int arg, bool output, const dnnl::memory::desc& user,
                 const dnnl::memory::desc& inner) {
  o.arg = arg;
  o.output = output;
  o.user = user;
  o.inner = inner;
  if (inner != user) {
    auto pd = output ? dnnl::reorder::primitive_desc(engine(), inner, engine(), user, dnnl_attr())
                     : dnnl::reorder::primitive_desc(engine(), user, engine(), inner, dnnl_attr());
    o.r = std::make_unique<dnnl::reorder>(pd);
    o.scratch = pd.scratchpad_desc();
  }
}

// oneDNN's reference loops are far slower than graft's own kernels: a problem only they take is refused.
bool reference(const std::string& impl) { return impl.find("ref") != std::string::npos; }

std::shared_ptr<Entry> make_entry(const Conv2dDesc& d, dnnl::memory::data_type type) {
  using namespace dnnl;
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
  memory::desc user_src(dims(d.src_dims, 4), type, dims(d.src_strides, 4));
  memory::desc user_wei(wdims, type, wstr);
  memory::desc user_dst(dims(d.dst_dims, 4), type, dims(d.dst_strides, 4));
  memory::desc any_src(dims(d.src_dims, 4), type, memory::format_tag::any);
  memory::desc any_wei(wdims, type, memory::format_tag::any);
  memory::desc any_dst(dims(d.dst_dims, 4), type, memory::format_tag::any);
  memory::dims st = dims(d.strides, 2), dil{d.dilation[0] - 1, d.dilation[1] - 1}, pl = dims(d.pad_lo, 2),
               pr = dims(d.pad_hi, 2);
  // Prefer an implementation that reads and writes the operands where they are (no reorder); take one
  // that wants its own formats only when the in-place ones would be reference or GEMM-based kernels.
  auto make_pd = [&](const memory::desc& src, const memory::desc& dst) -> std::optional<convolution_forward::primitive_desc> {
    try {
      convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, src, any_wei, dst, st,
                                   dil, pl, pr);
      convolution_forward::primitive_desc pd(cd, dnnl_attr(), engine());
      std::string impl = pd.impl_info_str();
      if (reference(impl) || impl.find("gemm") != std::string::npos) return std::nullopt;
      return pd;
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  };
  std::optional<convolution_forward::primitive_desc> best;
  for (auto [src, dst] : {std::pair{user_src, user_dst}, std::pair{any_src, user_dst}, std::pair{user_src, any_dst}})
    if (!best) best = make_pd(src, dst);
  convolution_forward::primitive_desc pd =
      best ? *best
           : convolution_forward::primitive_desc(convolution_forward::desc(prop_kind::forward_inference,
                                                                           algorithm::convolution_direct, any_src,
                                                                           any_wei, any_dst, st, dil, pl, pr),
                                                 dnnl_attr(), engine());
  if (type != memory::data_type::f32 && reference(pd.impl_info_str())) return nullptr;
  e->prim = convolution_forward(pd);
  e->scratch = pd.scratchpad_desc();
  set_operand(e->ops[0], DNNL_ARG_SRC, false, user_src, pd.src_desc());
  set_operand(e->ops[1], DNNL_ARG_WEIGHTS, false, user_wei, pd.weights_desc());
  set_operand(e->ops[2], DNNL_ARG_DST, true, user_dst, pd.dst_desc());
  return e;
}

// The primitive `make` builds for problem d, made on first use (oneDNN generates code for it) and
// kept. The key names the maker too: a kernel gradient's problem has the same description as the
// forward convolution it differentiates.
// Null when the maker refuses the problem (kept: it is asked once).
std::shared_ptr<Entry> cached(const Conv2dDesc& d, dnnl::memory::data_type type,
                              std::shared_ptr<Entry> (*make)(const Conv2dDesc&, dnnl::memory::data_type)) {
  std::vector<int64_t> key(reinterpret_cast<const int64_t*>(&d),
                           reinterpret_cast<const int64_t*>(&d) + sizeof(Conv2dDesc) / sizeof(int64_t));
  key.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(make)));
  key.push_back(static_cast<int64_t>(type));
  key.push_back(omp_get_max_threads());  // a primitive made for a team of two runs two (parallel.h)
  static std::mutex mu;
  static auto* cache = new std::map<std::vector<int64_t>, std::shared_ptr<Entry>>();
  {
    std::lock_guard<std::mutex> lk(mu);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> made(dnnl_create_mutex());
    try {
      e = make(d, type);
    } catch (const dnnl::error& err) {
      if (err.status != dnnl_unimplemented) throw;  // not remembered: it may pass next time
      e = nullptr;                                  // oneDNN has no implementation for the problem
    }
  }
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

// Backward weights: oneDNN picks the formats (blocked for AVX-512) as for the forward convolution.
std::shared_ptr<Entry> make_bwd_entry(const Conv2dDesc& d, dnnl::memory::data_type type) {
  using namespace dnnl;
  auto dims = [](const int64_t* v, int n) { return memory::dims(v, v + n); };
  auto e = std::make_shared<Entry>();
  auto any = [&](const int64_t* v) { return memory::desc(dims(v, 4), type, memory::format_tag::any); };
  memory::dims st = dims(d.strides, 2), dil{d.dilation[0] - 1, d.dilation[1] - 1}, pl = dims(d.pad_lo, 2),
               pr = dims(d.pad_hi, 2);
  convolution_forward::primitive_desc hint(
      convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, any(d.src_dims),
                                any(d.wei_dims), any(d.dst_dims), st, dil, pl, pr),
      engine());
  convolution_backward_weights::primitive_desc pd(
      convolution_backward_weights::desc(algorithm::convolution_direct, any(d.src_dims), any(d.wei_dims),
                                         any(d.dst_dims), st, dil, pl, pr),
      dnnl_attr(), engine(), hint);
  if (type != memory::data_type::f32 && reference(pd.impl_info_str())) return nullptr;
  e->prim = convolution_backward_weights(pd);
  e->scratch = pd.scratchpad_desc();
  auto user = [&](const int64_t* v, const int64_t* st) {
    return memory::desc(dims(v, 4), type, dims(st, 4));
  };
  set_operand(e->ops[0], DNNL_ARG_SRC, false, user(d.src_dims, d.src_strides), pd.src_desc());
  set_operand(e->ops[1], DNNL_ARG_DIFF_DST, false, user(d.dst_dims, d.dst_strides), pd.diff_dst_desc());
  set_operand(e->ops[2], DNNL_ARG_DIFF_WEIGHTS, true, user(d.wei_dims, d.wei_strides), pd.diff_weights_desc());
  return e;
}

// Runs e on the caller's operands (two inputs, then the output), staging reordered ones. False when
// oneDNN refuses.
bool run_entry(const Entry& e, const void* in0, const void* in1, void* out) {
  try {
    dnnl::stream s(engine());
    Staging staging;
    void* ptrs[3] = {const_cast<void*>(in0), const_cast<void*>(in1), out};
    dnnl::memory user[3], inner[3];
    std::unordered_map<int, dnnl::memory> args;
    for (int k = 0; k < 3; ++k) {
      const Entry::Operand& o = e.ops[k];
      user[k] = dnnl::memory(o.user, engine(), ptrs[k]);
      inner[k] = o.r ? staging.make(o.inner) : user[k];
      if (o.r && !o.output) dnnl_execute(*o.r, o.scratch, s, {{DNNL_ARG_FROM, user[k]}, {DNNL_ARG_TO, inner[k]}});
      args[o.arg] = inner[k];
    }
    dnnl_execute(e.prim, e.scratch, s, args);
    if (e.ops[2].r) dnnl_execute(*e.ops[2].r, e.ops[2].scratch, s, {{DNNL_ARG_FROM, inner[2]}, {DNNL_ARG_TO, user[2]}});
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

// The oneDNN type of a dtype conv2d takes where the CPU runs it natively; nullopt otherwise.
std::optional<dnnl::memory::data_type> dnnl_type(DType t) {
  if (t == DType::f32) return dnnl::memory::data_type::f32;
  if (t == DType::bf16 && native_half_gemm(t)) return dnnl::memory::data_type::bf16;
  return std::nullopt;
}

// Runs the primitive `make` builds for d, or says that there is none.
bool run(DType dtype, const Conv2dDesc& d,
         std::shared_ptr<Entry> (*make)(const Conv2dDesc&, dnnl::memory::data_type), const void* in0,
         const void* in1, void* out) {
  auto type = dnnl_type(dtype);
  if (!type || !valid_window(d)) return false;
  try {
    use_kernel_threads();  // the OpenMP team follows GRAFT_NUM_THREADS and contention (parallel.h)
    std::shared_ptr<Entry> e = cached(d, *type, make);
    return e && run_entry(*e, in0, in1, out);
  } catch (const dnnl::error&) {
    return false;  // oneDNN has no implementation for the problem
  }
}
}  // namespace

bool conv2d_backward_weights(DType dtype, const Conv2dDesc& d, const void* src, const void* diff_dst,
                             void* diff_wei) {
  return d.groups == 1 && run(dtype, d, &make_bwd_entry, src, diff_dst, diff_wei);
}

bool conv2d(DType dtype, const Conv2dDesc& d, const void* src, const void* wei, void* dst) {
  return run(dtype, d, &make_entry, src, wei, dst);
}
bool conv2d_available() { return true; }
#else
bool conv2d_available() { return false; }
bool conv2d(DType, const Conv2dDesc&, const void*, const void*, void*) { return false; }
bool conv2d_backward_weights(DType, const Conv2dDesc&, const void*, const void*, void*) { return false; }
#endif

}  // namespace graft::cpu
