// Collectives across processes (run under mpirun with 1, 2, 3 and 4 ranks; see tests/CMakeLists.txt).
// Every rank knows every rank's data (it is made from the rank number), so each checks its result
// against what the whole job must produce.
#include <gtest/gtest.h>

#include <graft/graft.h>

#include "parallel/pjit_programs.h"
#include "testing.h"

namespace graft::testing {
namespace {

int R() { return process_count(); }
int me() { return process_index(); }

// Rank r's block: [2, 5] values r * 100 + k + 0.5 (10 elements: sizes that do not divide by 3 ranks),
// in dtype d (i32 truncates them).
Array block(int r, DType d = DType::f64) {
  std::vector<double> v;
  for (int k = 0; k < 10; ++k) v.push_back(r * 100 + k + 0.5);
  return Rng::from_doubles(v, {2, 5}, d);
}
Array all_blocks(DType d = DType::f64) {
  std::vector<Array> b;
  for (int r = 0; r < R(); ++r) b.push_back(block(r, d));
  return stack(b, 0);  // [R, 2, 5]
}

Mesh mesh() { return Mesh(devices(), {"data"}); }

template <class F>
Array on_mesh(F f, const Array& x, PartitionSpec out = P("data")) {
  return shard_map(f, mesh(), {P("data")}, {out})(x);
}

const DType kTypes[] = {DType::f32, DType::f64, DType::i32, DType::bf16};

// got == want: exact for integers and f64, to the type's rounding otherwise (sums in another order)
::testing::AssertionResult same(const Array& got, const Array& want) {
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "dtype " << got.dtype() << ", want " << want.dtype();
  double tol = got.dtype() == DType::bf16 ? 1e-2 : got.dtype() == DType::f32 ? 1e-6 : 1e-12;
  if (!is_floating(got.dtype())) tol = 0;
  return close(got, want, tol, 0);
}

TEST(Distributed, Initialized) {
  EXPECT_TRUE(distributed::is_initialized());
  EXPECT_EQ(devices().size(), static_cast<size_t>(R()));
  EXPECT_EQ(distributed::world()->size(), R());
  EXPECT_EQ(distributed::world()->kind(), R() > 1 ? "mpi" : "self");
}

TEST(Distributed, Reductions) {
  for (DType d : kTypes) {
    SCOPED_TRACE(std::string(short_name(d)));
    Array x = block(me(), d);
    Array all = all_blocks(d).astype(DType::f64);  // the reference computes in f64
    EXPECT_TRUE(same(on_mesh([](const Array& b) { return psum(b, "data"); }, x, P()), sum(all, 0).astype(d)));
    EXPECT_TRUE(same(on_mesh([](const Array& b) { return pmax(b, "data"); }, x, P()), max(all, 0).astype(d)));
    EXPECT_TRUE(same(on_mesh([](const Array& b) { return pmin(b, "data"); }, x, P()), min(all, 0).astype(d)));
    if (is_floating(d)) {
      EXPECT_TRUE(same(on_mesh([](const Array& b) { return pmean(b, "data"); }, x, P()), mean(all, 0).astype(d)));
    }
  }
}

TEST(Distributed, Movement) {
  for (DType d : kTypes) {
    SCOPED_TRACE(std::string(short_name(d)));
    Array x = block(me(), d);
    Array all = all_blocks(d);
    // all_gather (stacked and tiled): every rank holds everything
    // (all_gather's result is typed as varying, as in JAX: each device holds its own copy)
    EXPECT_TRUE(same(on_mesh([](const Array& b) { return all_gather(b, "data"); }, x), all));
    std::vector<Array> blocks;
    for (int r = 0; r < R(); ++r) blocks.push_back(block(r, d));
    EXPECT_TRUE(same(on_mesh([](const Array& b) { return all_gather(b, "data", 1, true); }, x), concatenate(blocks, 1)));
    // psum_scatter: rank r keeps row-block r of the sum of [R, ...] values
    Array big = stack(std::vector<Array>(static_cast<size_t>(R()), x), 0) + Array(1.0).astype(d);  // [R, 2, 5]
    Array rs = on_mesh([](const Array& b) { return psum_scatter(b, "data", 0); }, big);
    EXPECT_TRUE(same(rs, (sum(all.astype(DType::f64), 0) + double(R())).astype(d)));
    // ppermute: a ring shift
    std::vector<std::pair<int64_t, int64_t>> ring;
    for (int r = 0; r < R(); ++r) ring.push_back({r, (r + 1) % R()});
    EXPECT_TRUE(same(on_mesh([&](const Array& b) { return ppermute(b, "data", ring); }, x), block((me() + R() - 1) % R(), d)));
    // all_to_all: block k of rank r's [R, 5] goes to rank k
    Array a = (reshape(arange(R() * 5, DType::f64), {R(), 5}) + double(me() * 1000)).astype(d);
    Array t = on_mesh([](const Array& b) { return all_to_all(b, "data", 0, 0, true); }, a);
    std::vector<Array> want;
    for (int r = 0; r < R(); ++r)
      want.push_back((reshape(arange(R() * 5, DType::f64), {R(), 5})[me()] + double(r * 1000)).astype(d));
    EXPECT_TRUE(same(t, stack(want, 0)));
  }
  Array idx = on_mesh([](const Array& b) { return expand_dims(axis_index("data"), 0) + b; }, zeros({1}, DType::i32));
  EXPECT_EQ(idx.to_vector<int32_t>()[0], me());
}

// Data-parallel step: each rank its block of the batch, the pmean'd gradient equals the full-batch
// gradient of the mean on every rank, bit for bit the same on all ranks.
Array loss(const Array& w, const Array& x, const Array& y) {
  Array d = tanh(matmul(x, w)) - y;
  return mean(d * d);
}
TEST(Distributed, DataParallelGradient) {
  Rng rng(9);  // the same on every rank
  int per = 3;
  Array w = rng.uniform({4, 2}, DType::f64), x = rng.uniform({R() * per, 4}, DType::f64),
        y = rng.uniform({R() * per, 2}, DType::f64);
  Array xb = x[{slice(me() * per, (me() + 1) * per)}], yb = y[{slice(me() * per, (me() + 1) * per)}];
  auto step = [](const Array& w, const Array& x, const Array& y) {
    return value_and_grad([&](const Array& v) { return pmean(loss(v, x, y), "data"); })(w);
  };
  auto sm = shard_map(step, mesh(), {P(), P("data"), P("data")}, {P()});
  auto [l, g] = sm(w, xb, yb);
  EXPECT_NEAR(l.item<double>(), loss(w, x, y).item<double>(), 1e-12);
  EXPECT_TRUE(close(g, grad(loss)(w, x, y), 1e-12, 1e-12));
  auto jstep = jit(sm);
  auto [lj, gj] = jstep(w, xb, yb);
  auto [lj2, gj2] = jstep(w, xb, yb);  // cached
  EXPECT_TRUE(close(gj, g, 1e-12, 1e-12));
  EXPECT_TRUE(close(gj2, gj, 0, 0));
  EXPECT_EQ(jstep.num_traces(), 1u);
  // identical on every rank: rank 0's gradient, broadcast by a psum of it masked to rank 0
  Array g0 = shard_map([](const Array& v) { return psum(where(axis_index("data") == 0, v, zeros_like(v)), "data"); },
                       mesh(), {P()}, {P()})(gj);
  EXPECT_TRUE(close(g0, gj, 0, 0));
  // across processes, the staged program shows the SPMD call and its collectives (one process runs
  // the in-process path: nested vmaps)
  if (R() == 1) return;
  std::ostringstream s;
  s << make_jaxpr(sm)(w, xb, yb);
  EXPECT_NE(s.str().find("shard_map["), std::string::npos) << s.str();
  EXPECT_NE(s.str().find("psum[axes=('data',)"), std::string::npos) << s.str();
}

// Transformations *of* a shard_map that runs across processes (the staged call's rules: jvp, transpose,
// batching are the staged calls of the transformed body), against the same math on the whole batch.
TEST(Distributed, TransformsOfAShardMap) {
  Rng rng(17);  // the same on every rank
  int per = 3;
  Array w = rng.uniform({4, 2}, DType::f64), t = rng.uniform({4, 2}, DType::f64);
  Array x = rng.uniform({R() * per, 4}, DType::f64), y = rng.uniform({R() * per, 2}, DType::f64);
  Array xb = x[{slice(me() * per, (me() + 1) * per)}], yb = y[{slice(me() * per, (me() + 1) * per)}];
  auto spmd_loss = [&](const Array& v) {
    return shard_map([](const Array& v, const Array& x, const Array& y) { return pmean(loss(v, x, y), "data"); },
                     mesh(), {P(), P("data"), P("data")}, {P()})(v, xb, yb);
  };
  auto full = [&](const Array& v) { return loss(v, x, y); };
  EXPECT_NEAR(spmd_loss(w).item<double>(), full(w).item<double>(), 1e-12);
  EXPECT_TRUE(close(grad(spmd_loss)(w), grad(full)(w), 1e-12, 1e-12));
  EXPECT_TRUE(close(jit(grad(spmd_loss))(w), grad(full)(w), 1e-12, 1e-12));
  auto [p1, t1] = jvp(spmd_loss, {w}, {t});
  auto [p2, t2] = jvp(full, {w}, {t});
  EXPECT_NEAR(t1.item<double>(), t2.item<double>(), 1e-12);
  // second order: the Hessian-vector product
  auto hvp = [&](auto f) { return jvp(grad(f), {w}, {t}).second; };
  EXPECT_TRUE(close(hvp(spmd_loss), hvp(full), 1e-10, 1e-10));
  // vmap over several parameter sets
  Array ws = stack({w, w * 2.0, w - 1.0}, 0);
  Array got = vmap(spmd_loss)(ws), want = vmap(full)(ws);
  EXPECT_TRUE(close(got, want, 1e-12, 1e-12));
  // an output left split over the processes: each rank differentiates the sum of its own block, and
  // the replicated parameter's gradient is summed over the ranks (the gradient of the whole sum)
  auto blocks = [&](const Array& v) {
    return sum(shard_map([](const Array& v, const Array& x) { return tanh(matmul(x, v)); }, mesh(), {P(), P("data")},
                         {P("data")})(v, xb));
  };
  EXPECT_TRUE(close(grad(blocks)(w), grad([&](const Array& v) { return sum(tanh(matmul(x, v))); })(w), 1e-12, 1e-12));
  if (R() == 1) return;
  std::ostringstream s;
  s << make_jaxpr(grad(spmd_loss))(w);
  EXPECT_NE(s.str().find("shard_map["), std::string::npos) << s.str();
}

// Sharded arrays across processes: each process holds its own block; gather all-gathers them.
TEST(Distributed, ShardedArrays) {
  Array x = reshape(arange(R() * 2 * 5, DType::f32), {R() * 2, 5});  // the same on every rank
  NamedSharding rows{mesh(), P("data")};
  ShardedArray xs = device_put(x, rows);
  EXPECT_EQ(xs.is_fully_addressable(), R() == 1);
  ASSERT_EQ(xs.addressable_shards().size(), 1u);
  const Shard& mine = xs.addressable_shards()[0];
  EXPECT_EQ(mine.device.process_index, me());
  EXPECT_EQ(mine.index[0], (std::pair<int64_t, int64_t>{2 * me(), 2 * me() + 2}));
  EXPECT_TRUE(close(mine.data, x[{slice(2 * me(), 2 * me() + 2)}], 0, 0));
  EXPECT_TRUE(close(xs.gather(), x, 0, 0));
  // a shard_map over the blocks, its results wrapped as a sharded array and gathered
  Array yb = shard_map([](const Array& b) { return b * 2.0f + axis_index("data").astype(DType::f32); }, mesh(),
                       {P("data")}, {P("data")})(xs.addressable_data(0));
  Array y = make_array_from_single_device_arrays({R() * 2, 5}, rows, {yb}).gather();
  Array want = x * 2.0f + reshape(repeat(arange(R(), DType::f32), 2), {R() * 2, 1});
  EXPECT_TRUE(close(y, want, 0, 0));
  // replicated: every process holds the whole array
  ShardedArray rep = device_put(x, NamedSharding{mesh(), P()});
  EXPECT_TRUE(close(rep.addressable_data(0), x, 0, 0));
  EXPECT_TRUE(close(rep.gather(), x, 0, 0));
}

// Data-parallel equivalence: a model trained for `steps` Adam steps with each global batch split over
// the ranks (the loss pmean'd inside the jitted shard_map step) ends with the parameters one process
// gets from the whole batches, on every rank: in f64 every parameter to 1e-5 of its leaf's largest; in
// f32 each leaf to 1e-5 relative in norm (the sums run in another order, and Adam divides the
// rounding of a near-zero gradient by its own small size, so single elements may differ more).
template <class Apply>
void expect_data_parallel_matches_one_process(const Tree& init, Apply apply, const Shape& example, int64_t global,
                                              int steps, DType dtype) {
  ASSERT_EQ(global % R(), 0);
  int64_t share = global / R();
  auto opt = optim::adam(1e-3);
  auto make_step = [&](bool spmd) {
    return [&, spmd](const Tree& p, const Tree& s, const Array& x, const Array& y) {
      auto objective = [&](const Tree& q) {
        Array l = nn::cross_entropy(apply(q, x), y);
        return spmd ? pmean(l, "data") : l;
      };
      auto [l, g] = value_and_grad(objective)(p);
      auto [u, s2] = opt.update(g, s, p);
      return std::make_tuple(optim::apply_updates(p, u), s2, l);
    };
  };
  auto dp = jit(shard_map(make_step(true), mesh(), {P(), P(), P("data"), P("data")}, {P()}));
  auto one = jit(make_step(false));
  Tree p_dp = init, s_dp = opt.init(init), p_one = init, s_one = opt.init(init);
  Rng rng(31);  // the same batches on every rank
  Shape xs{global};
  xs.insert(xs.end(), example.begin(), example.end());
  for (int t = 0; t < steps; ++t) {
    Array x = rng.uniform(xs, dtype), y = rng.ints({global}, DType::i32, 0, 9);
    Array l_dp, l_one;
    std::tie(p_dp, s_dp, l_dp) = dp(p_dp, s_dp, x[{slice(me() * share, (me() + 1) * share)}],
                                    y[{slice(me() * share, (me() + 1) * share)}]);
    std::tie(p_one, s_one, l_one) = one(p_one, s_one, x, y);
    EXPECT_NEAR(l_dp.item<double>(), l_one.item<double>(), 1e-5 * std::abs(l_one.item<double>())) << "step " << t;
  }
  std::vector<Array> a = p_dp.leaves(), b = p_one.leaves(), w = init.leaves();
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].dtype(), dtype);
    double moved = max(abs(b[k] - w[k])).item<double>();
    if (dtype == DType::f64) {
      double scale = max(abs(b[k])).item<double>(), diff = max(abs(a[k] - b[k])).item<double>();
      EXPECT_LE(diff, 1e-5 * scale) << "leaf " << k << ": data parallel and one process differ by " << diff;
    } else {
      double norm = sqrt(sum(square(b[k].astype(DType::f64)))).item<double>(),
             diff = sqrt(sum(square((a[k] - b[k]).astype(DType::f64)))).item<double>();
      EXPECT_LE(diff, 1e-5 * norm) << "leaf " << k << ": data parallel and one process differ by " << diff / norm;
    }
    EXPECT_GT(moved, 1e-3) << "leaf " << k << " did not train";  // the comparison means something
  }
  // the same parameters on every rank: rank 0's, broadcast, equal this rank's bit for bit
  for (const Array& leaf : a) {
    Array r0 = shard_map([](const Array& v) { return psum(where(axis_index("data") == 0, v, zeros_like(v)), "data"); },
                         mesh(), {P()}, {P()})(leaf);
    EXPECT_TRUE(close(r0, leaf, 0, 0));
  }
}

TEST(Distributed, DataParallelMlpMatchesOneProcess) {
  nn::MLP net{{784, 512, 512, 10}};  // the seeds' MLP, the main job's model
  auto apply = [&](const Tree& p, const Array& x) { return net(p, x); };
  Tree init = net.init(random::key(0));
  expect_data_parallel_matches_one_process(init, apply, {784}, 48, 20, DType::f32);
  // f64 (a narrower MLP: f64 matmuls take the slow path), where every element must agree
  nn::MLP narrow{{784, 64, 64, 10}};
  expect_data_parallel_matches_one_process(
      tree_map([](const Array& w) { return w.astype(DType::f64); }, narrow.init(random::key(0))),
      [&](const Tree& p, const Array& x) { return narrow(p, x); }, {784}, 48, 20, DType::f64);
}

TEST(Distributed, DataParallelCnnMatchesOneProcess) {
  nn::Conv2d c1{1, 8, {3, 3}}, c2{8, 16, {3, 3}};
  nn::Linear d1{16 * 5 * 5, 32}, d2{32, 10};
  Array ks = random::split(random::key(1), 4);
  Tree init = Tree::dict({{"c1", c1.init(ks[0])}, {"c2", c2.init(ks[1])}, {"d1", d1.init(ks[2])}, {"d2", d2.init(ks[3])}});
  auto apply = [&](const Tree& p, const Array& x) {
    Array h = nn::max_pool2d(relu(c1(p["c1"], x)), {2, 2});
    h = nn::max_pool2d(relu(c2(p["c2"], h)), {2, 2});
    return d2(p["d2"], relu(d1(p["d1"], reshape(h, {h.shape(0), -1}))));
  };
  expect_data_parallel_matches_one_process(init, apply, {1, 28, 28}, 12, 8, DType::f32);
}

// Sharded jit across processes: each process holds its blocks of sharded arrays; the partitioned
// program's collectives run over MPI. Data parallel, FSDP (parameters and gradients split by rows) and
// Megatron (the hidden layer split) each equal one process's jit, gathered on every rank.
TEST(Distributed, ShardedJitMatchesOneProcess) {
  Rng rng(21);
  Array w1 = rng.uniform({12, 24}, DType::f64), b1 = rng.uniform({24}, DType::f64);
  Array w2 = rng.uniform({24, 12}, DType::f64), b2 = rng.uniform({12}, DType::f64);
  Array x = rng.uniform({24, 12}, DType::f64), y = softmax(rng.uniform({24, 12}, DType::f64), -1);
  auto loss = [](const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x, const Array& y) {
    Array logits = matmul(relu(matmul(x, w1) + b1), w2) + b2;
    return -mean(sum((logits - logsumexp(logits, {-1}, true)) * y, {-1}));
  };
  auto vg = value_and_grad(loss, {0, 1, 2, 3});
  auto [lr, gr] = jit(vg)(w1, b1, w2, b2, x, y);
  Mesh m = mesh();
  NamedSharding rep{m, P()}, rows{m, P("data")}, cols{m, P(std::nullopt, "data")};
  struct Plan {
    const char* name;
    NamedSharding w1, b1, w2, b2;
  };
  for (const Plan& plan : {Plan{"data parallel", rep, rep, rep, rep}, Plan{"fsdp", rows, rows, rows, rows},
                           Plan{"megatron", cols, rows, rows, rep}}) {
    SCOPED_TRACE(plan.name);
    auto f = pjit(vg, {.out_shardings = {std::optional<NamedSharding>(rep), plan.w1, plan.b1, plan.w2, plan.b2}});
    std::vector<ShardedArray> r = f(device_put(w1, plan.w1), device_put(b1, plan.b1), device_put(w2, plan.w2),
                                    device_put(b2, plan.b2), device_put(x, rows), device_put(y, rows));
    ASSERT_EQ(r.size(), 5u);
    EXPECT_NEAR(r[0].gather().item<double>(), lr.item<double>(), 1e-12);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_TRUE(close(r[k + 1].gather(), gr[k], 1e-12, 1e-12)) << "gradient " << k;
    }
    EXPECT_EQ(r[1].sharding().spec, plan.w1.spec);
    EXPECT_EQ(r[1].addressable_data(0).shape(), plan.w1.shard_shape({12, 24}));
  }
}

// The shared table of programs (tests/parallel/pjit_programs.h) across processes: each process passes
// its blocks of every argument, the partitioned program's collectives run over MPI, and the results,
// gathered, equal one process's jit — on a mesh of all ranks over "data" and, with an even number of
// ranks, of half of them over "data" and two over "model".
TEST(Distributed, ShardedJitProgramsMatchOneProcess) {
  std::vector<PjitProgram> programs = pjit_programs();
  std::vector<std::pair<int64_t, int64_t>> shapes{{R(), 1}};
  if (R() % 2 == 0) shapes.push_back({R() / 2, 2});
  // the ranks draw the same random layouts (one generator, seeded alike)
  std::mt19937 gen(33);
  for (auto [data, model] : shapes) {
    Mesh m(devices(), {"data", "model"}, {data, model});
    for (const PjitProgram& p : programs) {
      std::vector<Array> want = jit(p.f)(p.args);
      std::vector<std::optional<PartitionSpec>> drawn;
      for (const Array& x : p.args) drawn.push_back(random_spec(m, x.shape(), gen));
      for (const auto& in : {p.in, drawn}) {
        std::vector<Array> blocks;
        std::string layouts;
        for (size_t i = 0; i < p.args.size(); ++i) {
          PartitionSpec s = in[i].value_or(P());
          blocks.push_back(device_put(p.args[i], NamedSharding{m, s}).addressable_data(0));
          layouts += " " + s.str();
        }
        auto run = [&] {
          std::vector<PartitionSpec> specs;
          std::vector<Array> outs = pjit_flat(p.f, m, in, {}, blocks, &specs);
          std::vector<Array> got;
          for (size_t k = 0; k < outs.size(); ++k) got.push_back(detail::sharded_result(outs[k], m, specs.at(k)).gather());
          return got;
        };
        EXPECT_TRUE(runs_like(p, run, want)) << p.name << " on a " << data << " x " << model << " mesh:" << layouts;
      }
    }
  }
}

// collective_stats() counts what a partitioned step sends over MPI, and it is the analytic minimum:
// data parallelism all-reduces each gradient and the loss once; FSDP gathers each parameter's blocks
// once (forward and backward share the gather), reduce-scatters each gradient and all-reduces the loss.
// Both equal the operand bytes of the lowered program's collectives.
TEST(Distributed, ShardedJitCollectiveBytesAreTheMinimum) {
  if (R() < 2) GTEST_SKIP() << "needs 2 or more processes";
  std::vector<PjitProgram> programs = pjit_programs();
  Mesh m(devices(), {"data", "model"}, {R(), 1});
  const uint64_t params = (24 * 48 + 48 + 48 * 24 + 24) * 8;  // the MLP's parameter bytes (f64)
  for (auto [name, want] : std::vector<std::pair<std::string, uint64_t>>{
           {"mlp, data parallel", params + 8}, {"mlp, fsdp", params / static_cast<uint64_t>(R()) + params + 8}}) {
    auto it = std::find_if(programs.begin(), programs.end(), [&](const PjitProgram& p) { return p.name == name; });
    ASSERT_NE(it, programs.end()) << name;
    const PjitProgram& p = *it;
    std::vector<Array> blocks;
    std::vector<Aval> avals;
    for (size_t i = 0; i < p.args.size(); ++i) {
      blocks.push_back(device_put(p.args[i], NamedSharding{m, p.in[i].value_or(P())}).addressable_data(0));
      avals.push_back(p.args[i].aval());
    }
    (void)pjit_flat(p.f, m, p.in, {}, blocks);  // compiled and warm
    reset_collective_stats();
    std::vector<Array> outs = pjit_flat(p.f, m, p.in, {}, blocks);
    for (Array& o : outs) o.block_until_ready();
    CollectiveStats st = collective_stats();
    uint64_t lowered = 0;
    for (auto& [n, b] : pjit_lower_flat(p.f, m, p.in, {}, avals).collectives()) lowered += static_cast<uint64_t>(b);
    std::printf("[rank %d] %s over %d processes: %llu bytes in %llu collectives (analytic minimum %llu)\n", me(),
                name.c_str(), R(), static_cast<unsigned long long>(st.bytes), static_cast<unsigned long long>(st.calls),
                static_cast<unsigned long long>(want));
    EXPECT_EQ(st.bytes, want) << name;
    EXPECT_EQ(st.bytes, lowered) << name;
  }
}

// On four processes as a 2 x 2 mesh: the batch, and FSDP's parameter rows, split over both axes
// (P(('data', 'model'))); the gathers and reduce-scatters run per axis over MPI.
TEST(Distributed, ShardedJitOverTwoAxesOfProcesses) {
  if (R() != 4) GTEST_SKIP() << "needs 4 processes";
  Rng rng(22);
  Array w1 = rng.uniform({12, 24}, DType::f64), b1 = rng.uniform({24}, DType::f64);
  Array x = rng.uniform({16, 12}, DType::f64);
  auto loss = [](const Array& w1, const Array& b1, const Array& x) { return mean(square(tanh(matmul(x, w1) + b1))); };
  auto vg = value_and_grad(loss, {0, 1});
  auto [lr, gr] = jit(vg)(w1, b1, x);
  Mesh m(devices(), {"data", "model"}, {2, 2});
  NamedSharding rep{m, P()}, both{m, P(SpecDim{"data", "model"})};
  for (const NamedSharding& ps : {rep, both}) {
    auto f = pjit(vg, {.out_shardings = {std::optional<NamedSharding>(rep), ps, ps}});
    std::vector<ShardedArray> r = f(device_put(w1, ps), device_put(b1, ps), device_put(x, both));
    EXPECT_NEAR(r[0].gather().item<double>(), lr.item<double>(), 1e-12);
    EXPECT_TRUE(close(r[1].gather(), gr[0], 1e-12, 1e-12)) << ps.spec.str();
    EXPECT_TRUE(close(r[2].gather(), gr[1], 1e-12, 1e-12)) << ps.spec.str();
    EXPECT_EQ(r[1].addressable_data(0).shape(), ps.shard_shape({12, 24}));
  }
}

// A scan whose body all-reduces, inside the jitted SPMD program.
TEST(Distributed, ScanWithPsum) {
  Array x = block(me());  // [2, 3]: 2 steps
  auto f = [](const Array& xs) {
    return scan([](const Array& c, const Array& xt) { return std::pair{c + psum(xt, "data"), c}; },
                zeros({5}, DType::f64), xs).first;
  };
  Array got = jit(shard_map(f, mesh(), {P("data")}, {P()}))(x);
  EXPECT_TRUE(close(got, sum(all_blocks(), {0, 1}), 1e-12, 0));
}

TEST(Distributed, Errors) {
  // a replicated out_spec for a varying output
  EXPECT_THROW(on_mesh([](const Array& b) { return b; }, block(me()), P()), ValueError);
  if (R() > 1) {
    // with GRAFT_DEBUG_COLLECTIVES the ranks compare each collective: sizes that differ are an error
    // on every rank instead of a hang or garbage
    setenv("GRAFT_DEBUG_COLLECTIVES", "1", 1);
    Mesh m(devices(), {"dbg"});  // a new mesh: communicators made with the debug setting
    Array x = zeros({me() == 0 ? 3 : 4}, DType::f64);
    EXPECT_THROW(shard_map([](const Array& b) { return psum(b, "dbg"); }, m, {P()}, {P()})(x), Error);
    unsetenv("GRAFT_DEBUG_COLLECTIVES");
  }
}

}  // namespace
}  // namespace graft::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  graft::distributed::initialize();
  return RUN_ALL_TESTS();
}
