// Trains the seeds' MLP (784-512-512-10, ReLU) on Fashion-MNIST with graft's core transformations:
// one jitted step = value_and_grad of the loss + an Adam or SGD update written as tree_map.
//
//   train_fashion_mnist [--epochs N] [--batch-size B] [--lr LR] [--optimizer adam|sgd] [--seed S]
//                       [--data DIR]
//
// Data: Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist/*.gz).
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <graft/graft.h>

namespace g = graft;

namespace {

struct Options {
  int epochs = 5;
  int64_t batch = 128;
  double lr = 1e-3;
  std::string optimizer = "adam";
  uint64_t seed = 0;
  std::string data = "/usr/share/datasets/fashion-mnist";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw g::ValueError("missing value after " + a);
      return argv[++i];
    };
    if (a == "--epochs") {
      o.epochs = std::stoi(next());
    } else if (a == "--batch-size") {
      o.batch = std::stoll(next());
    } else if (a == "--lr") {
      o.lr = std::stod(next());
    } else if (a == "--optimizer") {
      o.optimizer = next();
    } else if (a == "--seed") {
      o.seed = std::stoull(next());
    } else if (a == "--data") {
      o.data = next();
    } else {
      std::cout << "usage: train_fashion_mnist [--epochs N] [--batch-size B] [--lr LR] [--optimizer adam|sgd] "
                   "[--seed S] [--data DIR]\n";
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  if (o.optimizer != "adam" && o.optimizer != "sgd") throw g::ValueError("--optimizer must be adam or sgd");
  return o;
}

// Reads a gzipped IDX file (big-endian header: magic, dims) into bytes.
std::vector<uint8_t> read_idx(const std::string& path, std::vector<int64_t>& dims) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw g::Error("cannot open " + path +
                   " (install Debian's dataset-fashion-mnist package: apt-get install dataset-fashion-mnist)");
  std::vector<uint8_t> raw;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) raw.insert(raw.end(), buf, buf + n);
  gzclose(f);
  auto be32 = [&](size_t off) {
    if (off + 4 > raw.size()) throw g::Error(path + ": truncated IDX header");
    return (uint32_t(raw[off]) << 24) | (uint32_t(raw[off + 1]) << 16) | (uint32_t(raw[off + 2]) << 8) | raw[off + 3];
  };
  uint32_t magic = be32(0);
  if ((magic >> 8) != 0x08) throw g::Error(path + ": not an unsigned-byte IDX file");
  size_t nd = magic & 0xff, off = 4 + 4 * nd;
  dims.clear();
  int64_t count = 1;
  for (size_t i = 0; i < nd; ++i) {
    dims.push_back(be32(4 + 4 * i));
    count *= dims.back();
  }
  if (raw.size() < off + static_cast<size_t>(count)) throw g::Error(path + ": truncated IDX data");
  return std::vector<uint8_t>(raw.begin() + static_cast<std::ptrdiff_t>(off), raw.end());
}

struct Split {
  g::Array images;  // f32 [n, 784] in [0, 1]
  g::Array labels;  // i32 [n]
};

Split load(const std::string& dir, const std::string& prefix) {
  std::vector<int64_t> di, dl;
  auto img = read_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz", di);
  auto lab = read_idx(dir + "/" + prefix + "-labels-idx1-ubyte.gz", dl);
  int64_t n = di[0];
  std::vector<float> x(img.size());
  for (size_t i = 0; i < img.size(); ++i) x[i] = img[i] / 255.0f;
  std::vector<int32_t> y(lab.begin(), lab.end());
  return {g::array(x, {n, di[1] * di[2]}), g::array(y, {n})};
}

// Glorot-uniform weights and zero biases (std::mt19937_64 seeded: same seed, same run).
g::Tree init_mlp(const std::vector<int64_t>& sizes, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<g::Tree> layers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    double lim = std::sqrt(6.0 / double(sizes[i] + sizes[i + 1]));
    std::uniform_real_distribution<float> u(float(-lim), float(lim));
    std::vector<float> w(static_cast<size_t>(sizes[i] * sizes[i + 1]));
    for (auto& v : w) v = u(gen);
    layers.push_back(g::Tree::dict({{"w", g::array(w, {sizes[i], sizes[i + 1]})}, {"b", g::zeros({sizes[i + 1]})}}));
  }
  return g::Tree(layers);
}

g::Array predict(const g::Tree& params, const g::Array& x) {
  g::Array h = x;
  size_t n = params.size();
  for (size_t i = 0; i < n; ++i) {
    h = g::matmul(h, params[i]["w"].array()) + params[i]["b"].array();
    if (i + 1 < n) h = g::relu(h);
  }
  return h;
}

g::Array loss_fn(const g::Tree& params, const g::Array& x, const g::Array& y) {
  g::Array logp = g::log_softmax(predict(params, x));
  return -g::mean(g::sum(logp * g::one_hot(y, 10), -1));
}

void progress(int epoch, int64_t done, int64_t total, double loss) {
  int width = 30, filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
  std::printf("\repoch %d [%s%s] %3d%%  loss %.4f", epoch, std::string(static_cast<size_t>(filled), '#').c_str(),
              std::string(static_cast<size_t>(width - filled), '.').c_str(), int(100 * done / std::max<int64_t>(total, 1)),
              loss);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
    Split train = load(o.data, "train"), test = load(o.data, "t10k");
    int64_t n = train.images.shape(0);
    std::printf("Fashion-MNIST: %lld train / %lld test images; MLP 784-512-512-10, %s lr=%g, batch %lld\n",
                (long long)n, (long long)test.images.shape(0), o.optimizer.c_str(), o.lr, (long long)o.batch);
    g::Tree params = init_mlp({784, 512, 512, 10}, o.seed);
    g::Tree m = g::tree_map([](const g::Array& p) { return g::zeros_like(p); }, params), v = m;
    bool adam = o.optimizer == "adam";
    double lr = o.lr;
    // one training step, traced once and then run from the jit cache
    auto step = g::jit([adam, lr](const g::Tree& p, const g::Tree& m, const g::Tree& v, const g::Array& t,
                                  const g::Array& x, const g::Array& y) {
      auto [loss, grads] = g::value_and_grad(loss_fn)(p, x, y);
      if (!adam) {
        g::Tree np = g::tree_map([lr](const g::Array& w, const g::Array& d) { return w - d * lr; }, p, grads);
        return std::make_tuple(np, m, v, loss);
      }
      const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
      g::Tree nm = g::tree_map([&](const g::Array& a, const g::Array& d) { return a * b1 + d * (1 - b1); }, m, grads);
      g::Tree nv = g::tree_map([&](const g::Array& a, const g::Array& d) { return a * b2 + d * d * (1 - b2); }, v, grads);
      g::Array c1 = 1.0 - g::power(g::Array(b1), t), c2 = 1.0 - g::power(g::Array(b2), t);
      auto lv = nv.leaves(), lm = nm.leaves(), lp = p.leaves();
      std::vector<g::Array> out;
      for (size_t i = 0; i < lp.size(); ++i) out.push_back(lp[i] - (lm[i] / c1) * lr / (g::sqrt(lv[i] / c2) + eps));
      return std::make_tuple(p.with_leaves(out), nm, nv, loss);
    });
    auto accuracy = g::jit([](const g::Tree& p, const g::Array& x, const g::Array& y) {
      return g::sum(g::argmax(predict(p, x), 1) == y);
    });
    std::mt19937_64 shuffle_gen(o.seed + 1);
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    int64_t steps = n / o.batch, t = 0;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
      std::shuffle(order.begin(), order.end(), shuffle_gen);
      g::Array perm = g::array(order, {n});
      auto t0 = std::chrono::steady_clock::now();
      double total = 0;
      for (int64_t s = 0; s < steps; ++s) {
        g::Array idx = perm[{g::slice(s * o.batch, (s + 1) * o.batch)}];
        g::Array xb = g::take(train.images, idx, 0), yb = g::take(train.labels, idx, 0);
        g::Array loss;
        std::tie(params, m, v, loss) = step(params, m, v, g::array(float(++t)), xb, yb);
        total += loss.item<double>();
        if (s % 20 == 0 || s + 1 == steps) progress(epoch, s + 1, steps, total / double(s + 1));
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      int64_t correct = 0;
      for (int64_t s = 0; s < test.images.shape(0); s += 1000) {
        g::Array xb = test.images[{g::slice(s, s + 1000)}], yb = test.labels[{g::slice(s, s + 1000)}];
        correct += accuracy(params, xb, yb).item<int64_t>();
      }
      double acc = double(correct) / double(test.images.shape(0));
      std::printf("\repoch %d: %.2f s, %.0f examples/s, train loss %.4f, test accuracy %.4f%30s\n", epoch, secs,
                  double(steps * o.batch) / secs, total / double(steps), acc, "");
    }
    return 0;
  } catch (const g::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
