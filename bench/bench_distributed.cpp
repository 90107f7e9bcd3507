// Collectives across processes, run under `mpirun -np 2` by bench/run_distributed.sh:
//   - graft's psum (a jitted shard_map over the mesh axis "data") of 1 KiB to 64 MiB of f32 against a
//     bare MPI_Allreduce of the same bytes on the same ranks, and against MPI_Iallreduce + MPI_Wait
//     (the engine call graft makes), interleaved in one process, medians;
//   - the MLP's data-parallel training step (784-512-512-10, Adam, the global batch split over the
//     ranks, the loss pmean'd inside the jitted step), median over 200 steps after warm-up, and the
//     fraction of the step spent in collectives (graft::collective_stats()).
// Rank 0 prints one JSON object per line.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "graft/graft.h"

namespace g = graft;
using g::Array;
using g::Tree;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void psum_sweep(int rank) {
  g::Mesh mesh(g::devices(), {"data"});
  auto allsum = g::jit(g::shard_map([](const Array& b) { return g::psum(b, "data"); }, mesh, {g::P()}, {g::P()}));
  for (int64_t bytes = 1 << 10; bytes <= int64_t{64} << 20; bytes *= 4) {
    int64_t n = bytes / 4;
    Array x = g::random::uniform(g::random::key(1), {n});
    std::vector<float> in(static_cast<size_t>(n), 1.0f), out(static_cast<size_t>(n));
    int reps = bytes >= (16 << 20) ? 15 : bytes >= (1 << 20) ? 40 : 300;
    std::vector<double> tg, tm, tn;
    for (int r = -2; r < reps; ++r) {  // two warm-up rounds (tracing, first touch of the buffers)
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now();
      Array y = allsum(x);
      double t1 = now();
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = now();
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t3 = now();
      MPI_Barrier(MPI_COMM_WORLD);
      double t4 = now();
      MPI_Request req;
      MPI_Iallreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      double t5 = now();
      if (r < 0) continue;
      tg.push_back(t1 - t0);
      tm.push_back(t3 - t2);
      tn.push_back(t5 - t4);
    }
    double g_us = median(tg) * 1e6, m_us = median(tm) * 1e6, n_us = median(tn) * 1e6;
    if (rank == 0)
      std::printf("{\"name\": \"psum\", \"bytes\": %lld, \"graft_us\": %.2f, \"mpi_us\": %.2f, \"mpi_nb_us\": %.2f, "
                  "\"graft_GBps\": %.3f, \"mpi_GBps\": %.3f}\n",
                  static_cast<long long>(bytes), g_us, m_us, n_us, double(bytes) / g_us * 1e-3,
                  double(bytes) / m_us * 1e-3);
    std::fflush(stdout);
  }
}

void mlp_step(int rank, int nproc) {
  constexpr int64_t kGlobal = 128;
  constexpr int kWarm = 20, kSteps = 200;
  int64_t share = kGlobal / nproc;
  g::nn::MLP net{{784, 512, 512, 10}};
  auto opt = g::optim::adam(1e-3);
  Tree params = net.init(g::random::key(0)), state = opt.init(params);
  auto local = [&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
    auto [l, grads] = g::value_and_grad([&](const Tree& q) { return g::pmean(g::nn::cross_entropy(net(q, x), y), "data"); })(p);
    auto [u, s2] = opt.update(grads, s, p);
    return std::make_tuple(g::optim::apply_updates(p, u), s2, l);
  };
  auto step = g::jit(g::shard_map(local, g::Mesh(g::devices(), {"data"}), {g::P(), g::P(), g::P("data"), g::P("data")},
                                  {g::P()}),
                     {.name = "dp_step", .donate_argnums = {0, 1}});
  Array keys = g::random::split(g::random::key(2), 2);
  Array x = g::random::normal(keys[0], {kGlobal, 784}), y = (g::random::uniform(keys[1], {kGlobal}) * 10.0f).astype(g::DType::i32);
  Array xb = x[{g::slice(rank * share, (rank + 1) * share)}] + 0.0f, yb = y[{g::slice(rank * share, (rank + 1) * share)}];
  std::vector<double> t;
  double total = 0;
  for (int i = 0; i < kWarm + kSteps; ++i) {
    if (i == kWarm) {
      MPI_Barrier(MPI_COMM_WORLD);
      g::reset_collective_stats();
    }
    double t0 = now();
    Array loss;
    std::tie(params, state, loss) = step(params, state, xb, yb);
    (void)loss.item<float>();  // a training loop reads its loss every step
    double dt = now() - t0;
    if (i >= kWarm) {
      t.push_back(dt);
      total += dt;
    }
  }
  g::CollectiveStats st = g::collective_stats();
  if (rank == 0)
    std::printf("{\"name\": \"dp_mlp_step\", \"ranks\": %d, \"global_batch\": %lld, \"step_us\": %.1f, "
                "\"collectives_per_step\": %.1f, \"comm_fraction\": %.3f}\n",
                nproc, static_cast<long long>(kGlobal), median(t) * 1e6, double(st.calls) / kSteps, st.seconds / total);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  g::distributed::initialize();
  int rank = g::process_index(), nproc = g::process_count();
  std::string only = argc > 1 ? argv[1] : "";
  if (only.empty() || only == "psum") psum_sweep(rank);
  if (only.empty() || only == "step") mlp_step(rank, nproc);
  return 0;
}
