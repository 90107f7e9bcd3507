#include "graft/runtime/cpu/dnnl_util.h"

#ifdef GRAFT_HAVE_DNNL
namespace graft::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);  // never destroyed: used at exit
  return *e;
}

dnnl::primitive_attr dnnl_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

std::mutex& dnnl_create_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

void dnnl_execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratch, dnnl::stream& s,
                  std::unordered_map<int, dnnl::memory> args) {
  Ref<Buffer> held;
  if (size_t n = scratch.get_size(); n > 0) {
    held = Buffer::allocate_cpu(n);
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch, dnnl_engine(), held->data());
  }
  prim.execute(s, args);
  s.wait();  // the scratch memory is released on return
}

}  // namespace graft::cpu
#endif
