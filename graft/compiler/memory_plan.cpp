#include "graft/compiler/memory_plan.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "graft/compiler/cpu/accumulate.h"
#include "graft/compiler/cpu/fused_kernel.h"

namespace graft::compiler {

MemoryPlan plan_memory(const ClosedJaxpr& cj, const std::vector<bool>& donated) {
  const Jaxpr& j = *cj.jaxpr;
  size_t ne = j.eqns.size();
  MemoryPlan p;
  p.buffer.resize(ne);
  p.in_place.resize(ne);
  p.release.resize(ne);
  // last use of every intermediate (program outputs live to the end)
  std::unordered_map<const Var*, int64_t> last_use;
  std::unordered_set<const Var*> produced;
  for (size_t i = 0; i < ne; ++i) {
    for (auto& a : j.eqns[i].inputs)
      if (!a.is_literal()) last_use[a.var.get()] = static_cast<int64_t>(i);
    for (auto& v : j.eqns[i].outputs) produced.insert(v.get());
  }
  for (auto& a : j.outvars)
    if (!a.is_literal()) last_use[a.var.get()] = static_cast<int64_t>(ne);
  std::unordered_map<const Var*, int> buffer_of;
  std::multimap<int64_t, int> free_by_size;  // bytes -> buffer
  int64_t live = 0;
  auto new_buffer = [&](int64_t bytes) {
    p.buffer_bytes.push_back(bytes);
    return static_cast<int>(p.buffer_bytes.size() - 1);
  };
  // a donated argument belongs to the program from the start: it dies at its last use like an
  // intermediate, and its buffer can take an output in place; the others stay the caller's
  p.arg_buffer.assign(j.invars.size(), -1);
  for (size_t i = 0; i < j.invars.size(); ++i) {
    const Var* v = j.invars[i].get();
    int64_t bytes = static_cast<int64_t>(v->aval.nbytes());
    if (i < donated.size() && donated[i]) {
      produced.insert(v);
      p.arg_buffer[i] = buffer_of[v] = new_buffer(bytes);
      live += bytes;
    } else {
      p.argument_bytes += bytes;
    }
  }
  p.peak_bytes = live;
  for (size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    // operands whose last use this is (each once, intermediates only)
    std::vector<const Var*> dying;
    for (auto& a : e.inputs)
      if (!a.is_literal() && produced.count(a.var.get()) && last_use[a.var.get()] == static_cast<int64_t>(i) &&
          std::find(dying.begin(), dying.end(), a.var.get()) == dying.end())
        dying.push_back(a.var.get());
    const FusedKernel* fk = e.prim == &fusion_p ? &FusedKernel::of(fusion_body(e.params)) : nullptr;
    static constexpr int32_t kAddend[1] = {2};  // dot_general_add accumulates into its addend
    std::unordered_set<const Var*> taken;
    p.in_place[i].assign(e.outputs.size(), -1);
    for (size_t o = 0; o < e.outputs.size(); ++o) {
      const Var* v = e.outputs[o].get();
      int64_t bytes = static_cast<int64_t>(v->aval.nbytes());
      // the first candidate operand that dies here, once in this equation and not taken yet (the
      // order FusedKernel::run tries them in)
      int k = -1;
      const Var* src = nullptr;
      std::span<const int32_t> candidates;
      if (fk) candidates = fk->reusable_operands(o);
      if (e.prim == &dot_general_add_p && e.params.get<double>("beta") != 0.0) candidates = kAddend;
      for (int32_t c : candidates) {
        const Atom& a = e.inputs[static_cast<size_t>(c)];
        if (a.is_literal() || taken.count(a.var.get()) || !buffer_of.count(a.var.get()) ||
            std::find(dying.begin(), dying.end(), a.var.get()) == dying.end())
          continue;
        int uses = 0;
        for (auto& b : e.inputs) uses += !b.is_literal() && b.var == a.var ? 1 : 0;
        if (uses != 1) continue;
        k = c;
        src = a.var.get();
        break;
      }
      if (src) {
        taken.insert(src);
        buffer_of[v] = buffer_of[src];
        p.in_place[i][o] = k;
        p.buffer[i].push_back(buffer_of[v]);
        continue;
      }
      auto it = free_by_size.find(bytes);
      int b;
      if (it != free_by_size.end()) {
        b = it->second;
        free_by_size.erase(it);
      } else {
        b = new_buffer(bytes);
      }
      buffer_of[v] = b;
      live += bytes;
      p.buffer[i].push_back(last_use.count(v) ? b : -1);
    }
    p.peak_bytes = std::max(p.peak_bytes, live);
    for (const Var* d : dying) {
      p.release[i].push_back(d);
      if (taken.count(d) || !buffer_of.count(d)) continue;  // its buffer lives on as an output
      int b = buffer_of[d];
      free_by_size.emplace(p.buffer_bytes[static_cast<size_t>(b)], b);
      live -= p.buffer_bytes[static_cast<size_t>(b)];
    }
    // results nobody reads are dropped at once
    for (auto& v : e.outputs)
      if (!last_use.count(v.get())) {
        p.release[i].push_back(v.get());
        int b = buffer_of[v.get()];
        free_by_size.emplace(p.buffer_bytes[static_cast<size_t>(b)], b);
        live -= p.buffer_bytes[static_cast<size_t>(b)];
      }
  }
  return p;
}

std::string MemoryPlan::str(const Jaxpr& j) const {
  std::ostringstream os;
  for (size_t i = 0; i < arg_buffer.size(); ++i)
    if (arg_buffer[i] >= 0) os << "arg " << i << " (donated) -> #" << arg_buffer[i] << " " << j.invars[i]->aval.str() << "\n";
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    os << "eqn " << i << " " << j.eqns[i].prim->name << " ->";
    for (size_t o = 0; o < buffer[i].size(); ++o) {
      os << (o ? "," : "") << " ";
      if (buffer[i][o] < 0) {
        os << "(dropped)";
      } else {
        os << "#" << buffer[i][o];
      }
      os << " " << j.eqns[i].outputs[o]->aval.str();
      if (in_place[i][o] >= 0) os << " (in place of operand " << in_place[i][o] << ")";
    }
    os << "\n";
  }
  os << "peak " << peak_bytes << " bytes in " << buffer_bytes.size() << " buffers";
  if (std::find(arg_buffer.begin(), arg_buffer.end(), -1) != arg_buffer.end())
    os << " (+ " << argument_bytes << " bytes of arguments)";
  return os.str();
}

}  // namespace graft::compiler
