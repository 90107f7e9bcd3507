// Control flow: a 1,000-step RNN cell h' = tanh(h W + x_t U + b) (batch 16, input 32, hidden 128) as
//   - jit(scan): one compiled program whose loop body is compiled once,
//   - scan run eagerly (the scan primitive's own loop, its body compiled after the first step),
//   - the same loop unrolled eagerly, one primitive at a time (the PyTorch style),
//   - jit(value_and_grad) of a loss through the scan (forward + reverse scan),
// printing one JSON object per line, like the peers (bench/torch_rnn.py runs PyTorch's eager loop).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "graft/graft.h"

namespace g = graft;
using g::Array;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
double best_ms(F f, int reps) {
  f();  // warm-up (tracing, compiling)
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double t0 = now();
    f();
    t.push_back(now() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e3;
}

void emit(const char* name, double ms) {
  std::printf("{\"name\": \"%s\", \"value\": %.4g, \"unit\": \"ms\"}\n", name, ms);
  std::fflush(stdout);
}

constexpr int64_t kSteps = 1000, kBatch = 16, kIn = 32, kHidden = 128;

Array cell(const Array& W, const Array& U, const Array& b, const Array& h, const Array& x) {
  return g::tanh(g::matmul(h, W) + g::matmul(x, U) + b);
}

Array rnn_scan(const Array& W, const Array& U, const Array& b, const Array& h0, const Array& xs) {
  return g::scan([&](const Array& h, const Array& x) { return std::pair{cell(W, U, b, h, x), std::vector<Array>{}}; },
                 h0, xs)
      .first;
}

}  // namespace

int main() {
  Array key = g::random::key(0);
  auto ks = g::random::split(key, 4);
  Array W = g::random::normal(ks[0], {kHidden, kHidden}) * 0.05f;
  Array U = g::random::normal(ks[1], {kIn, kHidden}) * 0.1f;
  Array b = g::zeros({kHidden});
  Array h0 = g::zeros({kBatch, kHidden});
  Array xs = g::random::normal(ks[2], {kSteps, kBatch, kIn});

  auto jitted = g::jit(rnn_scan);
  emit("rnn_1000_jit_scan", best_ms([&] { jitted(W, U, b, h0, xs).raw_data(); }, 7));
  emit("rnn_1000_eager_scan", best_ms([&] { rnn_scan(W, U, b, h0, xs).raw_data(); }, 5));
  emit("rnn_1000_eager_unrolled", best_ms([&] {
         Array h = h0;
         for (int64_t t = 0; t < kSteps; ++t) h = cell(W, U, b, h, xs[t]);
         h.raw_data();
       }, 5));
  auto loss = [](const Array& W, const Array& U, const Array& b, const Array& h0, const Array& xs) {
    return g::sum(rnn_scan(W, U, b, h0, xs));
  };
  auto step = g::jit(g::value_and_grad(loss, {0, 1, 2}));
  emit("rnn_1000_jit_value_and_grad", best_ms([&] {
         auto [v, gr] = step(W, U, b, h0, xs);
         v.raw_data();
       }, 5));
  return 0;
}
