// The compiler's speed against the machine's limits, measured in one process:
//   - roofline: STREAM triad bandwidth (two threads) and oneDNN's sgemm peak (1024^3, 4096^3)
//   - jit(tanh(x)*0.5 + x*x - 1) on 2^24 floats, as GB/s counting one read of x and one write of y
//   - jit(softmax) over the rows of a 4096x4096 matrix, counting one read and one write
//   - both again on inputs that stay in L2 (2^17 floats, 32x4096): the arithmetic's own limit
//   - both again interleaved with triad passes (ratios per round, robust to the machine's drift)
//   - jit(dot_general) 1024^3 and 4096^3 against oneDNN's sgemm
//   - one jitted SGD training step of the MLP 784-512-512-10 at batch 128 (parameters donated): time,
//     the memory plan's peak (parameters, batch and intermediates), and the first call's extra
//     latency (trace + compile); bench/run_memory.sh measures the heap beside PyTorch; the same step
//     written by hand on sgemm and OpenMP loops, in alternating rounds (what the machine gives a step)
// Prints one JSON object per line (the peers' format). `bench_compiler --first-call-only` measures only
// the MLP step's first call (bench/run_compiler.sh runs it twice, the second time from the disk cache).
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "graft/compiler/executable.h"
#include "graft/graft.h"

namespace g = graft;
using g::Array;
using g::Tree;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Times {
  double median, best;
};
template <class F>
Times time_it(F f, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double t0 = now();
    f();
    t.push_back(now() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[0]};
}

void emit(const char* name, double value, const char* unit, const std::string& extra = "") {
  std::printf("{\"name\": \"%s\", \"value\": %.4g, \"unit\": \"%s\"%s%s}\n", name, value, unit,
              extra.empty() ? "" : ", ", extra.c_str());
  std::fflush(stdout);
}

std::string kv(const char* k, double v) {
  char b[96];
  std::snprintf(b, sizeof b, "\"%s\": %.4g", k, v);
  return b;
}

// ---- roofline ------------------------------------------------------------------------------------------
// STREAM's triad a = b + 3c over three 128 MiB arrays (far beyond the caches), two OpenMP threads.
// Counted as STREAM counts it: 12 bytes an element, no write-allocate traffic.
struct Triad {
  static constexpr int64_t n = int64_t(1) << 25;
  float* a = static_cast<float*>(std::aligned_alloc(64, n * 4));
  float* b = static_cast<float*>(std::aligned_alloc(64, n * 4));
  float* c = static_cast<float*>(std::aligned_alloc(64, n * 4));
  Triad() {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      a[i] = 0;
      b[i] = 1;
      c[i] = 2;
    }
  }
  ~Triad() {
    std::free(a);
    std::free(b);
    std::free(c);
  }
  Triad(const Triad&) = delete;
  Triad& operator=(const Triad&) = delete;
  void pass() {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
  }
  static double gbps(double seconds) { return 3.0 * 4 * n / seconds / 1e9; }
};

double stream_triad(Triad& tr) {
  Times t = time_it([&] { tr.pass(); }, 10);
  double gbs = Triad::gbps(t.best);  // STREAM reports its best run
  emit("stream_triad", gbs, "GB/s", kv("median_GBps", Triad::gbps(t.median)) + ", \"threads\": " +
                                        std::to_string(omp_get_max_threads()));
  return gbs;
}

double dnnl_peak(int64_t n, int reps) {
  std::vector<float> A(n * n, 0.5f), B(n * n, 0.25f), C(n * n);
  dnnl_sgemm('N', 'N', n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
  Times t = time_it([&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n); }, reps);
  double fl = 2.0 * n * n * n;
  emit(("dnnl_sgemm_" + std::to_string(n)).c_str(), fl / t.median / 1e9, "GFLOP/s", kv("best_GFLOPs", fl / t.best / 1e9));
  return fl / t.median / 1e9;
}

// ---- graft -------------------------------------------------------------------------------------------------
// A jitted f over 2^24 floats, as GB/s counting one read of the input and one write of the output.
template <class F>
void bandwidth(const char* name, F f, const Array& x, double triad, int reps = 20) {
  auto jf = g::jit(f);
  jf(x);
  Times t = time_it([&] { Array y = jf(x); }, reps);
  double bytes = 8.0 * static_cast<double>(x.size());
  emit(name, bytes / t.median / 1e9, "GB/s",
       kv("best_GBps", bytes / t.best / 1e9) + ", " + kv("median_ms", t.median * 1e3) + ", " +
           kv("fraction_of_triad", bytes / t.median / 1e9 / triad) + ", " +
           kv("best_fraction_of_triad", bytes / t.best / 1e9 / triad));
}

// The same program interleaved with triad passes: each round times one triad pass and the median of
// three program passes back to back, so both see the same state of a shared machine (whose bandwidth
// moves by 30-40% within minutes); reports the median and spread of the rounds' ratios.
template <class F>
void paired(const char* name, F f, const Array& x, Triad& tr, int rounds = 21) {
  auto jf = g::jit(f);
  jf(x);
  double bytes = 8.0 * static_cast<double>(x.size());
  std::vector<double> ratio, triad;
  for (int r = 0; r < rounds; ++r) {
    double t0 = now();
    tr.pass();
    double tt = now() - t0;
    Times tp = time_it([&] { Array y = jf(x); }, 3);
    ratio.push_back(bytes / tp.median / 1e9 / Triad::gbps(tt));
    triad.push_back(Triad::gbps(tt));
  }
  std::sort(ratio.begin(), ratio.end());
  std::sort(triad.begin(), triad.end());
  emit(name, ratio[ratio.size() / 2], "fraction of triad",
       kv("q1", ratio[ratio.size() / 4]) + ", " + kv("q3", ratio[3 * ratio.size() / 4]) + ", " +
           kv("triad_median_GBps", triad[triad.size() / 2]) + ", \"rounds\": " + std::to_string(rounds));
}

// The store variants of a program side by side: each round times one triad pass, then three runs
// each with GRAFT_STREAMING_STORES=on (non-temporal stores), off (ordinary stores) and unset (the
// kernel's tuner picks), in rotating order; reports each one's median ratio to the triad.
template <class F>
void stores(const char* name, F f, const Array& x, Triad& tr, int rounds = 15) {
  auto jf = g::jit(f);
  jf(x);
  double bytes = 8.0 * static_cast<double>(x.size());
  const char* modes[3] = {"on", "off", nullptr};
  std::vector<double> ratio[3];
  for (int r = 0; r < rounds; ++r) {
    double t0 = now();
    tr.pass();
    double triad = Triad::gbps(now() - t0);
    for (int k = 0; k < 3; ++k) {
      int m = (r + k) % 3;
      if (modes[m]) setenv("GRAFT_STREAMING_STORES", modes[m], 1);
      Times t = time_it([&] { Array y = jf(x); }, 3);
      unsetenv("GRAFT_STREAMING_STORES");
      ratio[m].push_back(bytes / t.median / 1e9 / triad);
    }
  }
  for (auto& v : ratio) std::sort(v.begin(), v.end());
  emit(name, ratio[2][ratio[2].size() / 2], "fraction of triad",
       kv("non_temporal", ratio[0][ratio[0].size() / 2]) + ", " + kv("ordinary", ratio[1][ratio[1].size() / 2]) +
           ", \"rounds\": " + std::to_string(rounds));
}

void dot(int64_t n, int reps, double dnnl) {
  Array a = g::random::normal(g::random::key(2), {n, n}), b = g::random::normal(g::random::key(3), {n, n});
  auto jf = g::jit([](const Array& p, const Array& q) { return g::matmul(p, q); });
  jf(a, b);
  Times t = time_it([&] { Array c = jf(a, b); }, reps);
  double gf = 2.0 * n * n * n / t.median / 1e9;
  emit(("graft_dot_" + std::to_string(n)).c_str(), gf, "GFLOP/s",
       kv("best_GFLOPs", 2.0 * n * n * n / t.best / 1e9) + ", " + kv("fraction_of_dnnl", gf / dnnl));
}

struct Mlp {
  g::nn::MLP net{{784, 512, 512, 10}};
  Tree params = net.init(g::random::key(0));
  Array x = g::random::uniform(g::random::key(1), {128, 784});
  Array y = (g::random::uniform(g::random::key(2), {128}) * 10.0).astype(g::i32);
  std::function<std::pair<Tree, Array>(const Tree&, const Array&, const Array&)> step;
  Mlp() {
    auto loss = [this](const Tree& p, const Array& xb, const Array& yb) { return g::nn::cross_entropy(net(p, xb), yb); };
    auto jitted = g::jit(
        [loss](const Tree& p, const Array& xb, const Array& yb) {
          auto [l, grads] = g::value_and_grad(loss)(p, xb, yb);
          return std::make_pair(g::tree_map([](const Array& w, const Array& dw) { return w - dw * 0.01; }, p, grads), l);
        },
        {.name = "mlp_step", .donate_argnums = {0}});
    step = jitted;
  }
};

// The same SGD step written by hand on the same libraries: oneDNN's sgemm for the eight products (with
// their transposes) and OpenMP loops for the rest; no framework. What the machine gives a step built
// from these GEMMs -- graft's step is set against it in the same run.
struct HandMlp {
  static constexpr int B = 128, I = 784, H = 512, O = 10;
  std::vector<float> x, w1, b1, w2, b2, w3, b3, h1, h2, lg, dl, dw3, db3, dh2, dw2, db2, dh1, dw1, db1;
  std::vector<int> y;
  HandMlp()
      : x(B * I), w1(I * H), b1(H), w2(H * H), b2(H), w3(H * O), b3(O), h1(B * H), h2(B * H), lg(B * O),
        dl(B * O), dw3(H * O), db3(O), dh2(B * H), dw2(H * H), db2(H), dh1(B * H), dw1(I * H), db1(H), y(B) {
    uint32_t s = 1;
    auto u = [&s] { return (s = s * 1664525u + 1013904223u) / 4294967296.0f; };
    for (auto& v : x) v = u();
    for (auto* w : {&w1, &w2, &w3})
      for (auto& v : *w) v = (u() - 0.5f) * 0.08f;
    for (auto& v : y) v = static_cast<int>(u() * 10);
  }
  static void mm(char ta, char tb, int m, int n, int k, const float* a, const float* b, float* c) {
    dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, ta == 'N' ? k : m, b, tb == 'N' ? n : k, 0.0f, c, n);
  }
  static void bias_relu(float* h, const float* b, int rows, int cols) {
#pragma omp parallel for
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) h[r * cols + c] = std::max(0.0f, h[r * cols + c] + b[c]);
  }
  static void relu_grad(float* d, const float* h, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; ++i) d[i] = h[i] > 0 ? d[i] : 0.0f;
  }
  static void col_sum(const float* d, float* s, int rows, int cols) {
    std::fill(s, s + cols, 0.0f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) s[c] += d[r * cols + c];
  }
  static void sgd(std::vector<float>& w, const std::vector<float>& dw) {
    int n = static_cast<int>(w.size());
#pragma omp parallel for if (n > 65536)
    for (int i = 0; i < n; ++i) w[i] -= 0.01f * dw[i];
  }
  void step() {
    mm('N', 'N', B, H, I, x.data(), w1.data(), h1.data());
    bias_relu(h1.data(), b1.data(), B, H);
    mm('N', 'N', B, H, H, h1.data(), w2.data(), h2.data());
    bias_relu(h2.data(), b2.data(), B, H);
    mm('N', 'N', B, O, H, h2.data(), w3.data(), lg.data());
    for (int r = 0; r < B; ++r) {  // softmax cross-entropy's gradient, mean over the batch
      float* l = &lg[r * O];
      float m = -INFINITY, s = 0;
      for (int c = 0; c < O; ++c) m = std::max(m, l[c] += b3[c]);
      for (int c = 0; c < O; ++c) s += std::exp(l[c] - m);
      for (int c = 0; c < O; ++c) dl[r * O + c] = (std::exp(l[c] - m) / s - (c == y[r] ? 1.0f : 0.0f)) / B;
    }
    mm('T', 'N', H, O, B, h2.data(), dl.data(), dw3.data());
    col_sum(dl.data(), db3.data(), B, O);
    mm('N', 'T', B, H, O, dl.data(), w3.data(), dh2.data());
    relu_grad(dh2.data(), h2.data(), B * H);
    mm('T', 'N', H, H, B, h1.data(), dh2.data(), dw2.data());
    col_sum(dh2.data(), db2.data(), B, H);
    mm('N', 'T', B, H, H, dh2.data(), w2.data(), dh1.data());
    relu_grad(dh1.data(), h1.data(), B * H);
    mm('T', 'N', I, H, B, x.data(), dh1.data(), dw1.data());
    col_sum(dh1.data(), db1.data(), B, H);
    sgd(w1, dw1), sgd(b1, db1), sgd(w2, dw2), sgd(b2, db2), sgd(w3, dw3), sgd(b3, db3);
  }
};

void mlp_step(bool first_call_only) {
  Mlp m;
  double t0 = now();
  auto r = m.step(m.params, m.x, m.y);
  double first = now() - t0;
  if (first_call_only) {
    Times t = time_it([&] { r = m.step(r.first, m.x, m.y); }, 20);
    emit("graft_mlp_first_call_overhead", (first - t.median) * 1e3, "ms",
         kv("first_call_ms", first * 1e3) + ", " + kv("step_ms", t.median * 1e3));
    return;
  }
  // graft's step and the hand-written one in alternating rounds of 50 steps (the machine drifts)
  HandMlp hand;
  for (int i = 0; i < 20; ++i) hand.step();
  std::vector<double> tg, th;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 50; ++i) {
      double a = now();
      r = m.step(r.first, m.x, m.y);
      tg.push_back(now() - a);
    }
    for (int i = 0; i < 50; ++i) {
      double a = now();
      hand.step();
      th.push_back(now() - a);
    }
  }
  std::sort(tg.begin(), tg.end());
  std::sort(th.begin(), th.end());
  double med = tg[tg.size() / 2], hmed = th[th.size() / 2];
  emit("graft_mlp_first_call_overhead", (first - med) * 1e3, "ms",
       kv("first_call_ms", first * 1e3) + ", " + kv("step_ms", med * 1e3));
  emit("graft_mlp_step_sgd", med * 1e6, "us/step", kv("best_us", tg[0] * 1e6) + ", \"batch\": 128");
  emit("hand_mlp_step_sgd", hmed * 1e6, "us/step",
       kv("best_us", th[0] * 1e6) + ", " + kv("graft_over_hand", med / hmed) + ", \"what\": \"sgemm + OpenMP loops\"");
}

void mlp_memory() {
  // the peak of the step's intermediates (liveness-planned), plus what it reads and returns
  Mlp m;
  auto loss = [&m](const Tree& p, const Array& xb, const Array& yb) { return g::nn::cross_entropy(m.net(p, xb), yb); };
  g::ClosedJaxpr j = g::make_jaxpr([&](const Tree& p, const Array& xb, const Array& yb) {
    auto [l, grads] = g::value_and_grad(loss)(p, xb, yb);
    return std::make_pair(g::tree_map([](const Array& w, const Array& dw) { return w - dw * 0.01; }, p, grads), l);
  })(m.params, m.x, m.y);
  // the parameters are donated, as in the timed step: the plan counts them from the start
  std::vector<bool> donated(j.jaxpr->invars.size(), false);
  int64_t params = 0;
  for (size_t i = 0; i < m.params.leaves().size(); ++i) {
    donated[i] = true;
    params += static_cast<int64_t>(m.params.leaves()[i].nbytes());
  }
  g::Executable exe(j, "mlp_step", donated);
  emit("graft_mlp_step_planned_peak", (exe.peak_bytes() + exe.argument_bytes()) / 1048576.0, "MiB",
       kv("params_MiB", params / 1048576.0) + ", " + kv("argument_MiB", exe.argument_bytes() / 1048576.0) + ", " +
           kv("steps", static_cast<double>(exe.num_steps())));
}

}  // namespace

int main(int argc, char** argv) {
  bool first_only = argc > 1 && std::strcmp(argv[1], "--first-call-only") == 0;
  if (first_only) {
    mlp_step(true);
    return 0;
  }
  Triad tr;
  double triad = stream_triad(tr);
  double d1 = dnnl_peak(1024, 20), d4 = dnnl_peak(4096, 5);
  bandwidth("graft_chain_2^24", [](const Array& x) { return g::tanh(x) * 0.5 + x * x - 1.0; },
            g::random::normal(g::random::key(0), {int64_t(1) << 24}), triad);
  bandwidth("graft_softmax_4096x4096", [](const Array& x) { return g::softmax(x); },
            g::random::normal(g::random::key(1), {4096, 4096}), triad);
  // the same programs on inputs that stay in the caches (L2): what the arithmetic alone allows,
  // in the same units; a program below the triad here cannot reach the triad from memory
  bandwidth("graft_chain_2^17_in_cache", [](const Array& x) { return g::tanh(x) * 0.5 + x * x - 1.0; },
            g::random::normal(g::random::key(0), {int64_t(1) << 17}), triad, 200);
  bandwidth("graft_softmax_32x4096_in_cache", [](const Array& x) { return g::softmax(x); },
            g::random::normal(g::random::key(1), {32, 4096}), triad, 200);
  paired("graft_chain_2^24_paired", [](const Array& x) { return g::tanh(x) * 0.5 + x * x - 1.0; },
         g::random::normal(g::random::key(0), {int64_t(1) << 24}), tr);
  paired("graft_softmax_4096x4096_paired", [](const Array& x) { return g::softmax(x); },
         g::random::normal(g::random::key(1), {4096, 4096}), tr);
  stores("graft_chain_2^24_stores", [](const Array& x) { return g::tanh(x) * 0.5 + x * x - 1.0; },
         g::random::normal(g::random::key(0), {int64_t(1) << 24}), tr);
  stores("graft_softmax_4096x4096_stores", [](const Array& x) { return g::softmax(x); },
         g::random::normal(g::random::key(1), {4096, 4096}), tr);
  dot(1024, 20, d1);
  dot(4096, 5, d4);
  mlp_step(false);
  mlp_memory();
  return 0;
}
