// The main job: train a classifier on Fashion-MNIST with graft, or a small transformer language model
// on text.
//
//   train_fashion_mnist --model mlp|cnn|transformer --epochs 5 --batch-size 128 --lr 1e-3 --optimizer adam
//                       [--seed 0] [--dtype f32|bf16] [--schedule cosine|constant] [--dropout 0.3] [--flip]
//                       [--limit N] [--out dir] [--resume dir] [--seq-len 128] [--text file-or-dir ...]
//                       [--device cpu|cuda] [--mesh data=2,model=2 [--fsdp | --auto]]
//
// --model transformer trains a byte-level GPT-style model (2 causal blocks of width 128, 4 heads) to
// predict the next byte of Debian's license texts (/usr/share/common-licenses, on every Debian
// machine; --text names others): the first 90% of each file trains, the rest tests, and "test
// accuracy" is the share of test bytes it predicts; the run ends with a sample of generated text.
//
// One training step (forward, value_and_grad, optimizer update) is a single jitted function of
// (params, optimizer state, batch, key) that updates the donated parameters and state in place. The
// learning rate follows a cosine decay to 0 over the run by default. Each epoch prints a progress bar, then the epoch time,
// examples/s, mean train loss and test accuracy, and ends with a checkpoint (parameters, optimizer
// state, epoch, PRNG key; --resume continues from it bit for bit). At the end the parameters are saved
// as a safetensors file and the training curve (loss and accuracy per epoch) as an SVG plot.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include <graft/graft.h>

namespace g = graft;
using g::Array;
using g::Tree;

namespace {

struct Model {
  std::function<Tree(const Array& key)> init;
  /// Logits; a key means training (dropout draws from it), none means evaluation.
  std::function<Array(const Tree& params, const Array& x, const std::optional<Array>& key)> apply;
  g::Shape input;  ///< one example's shape
};

// Dropout while training (a key given), the identity when evaluating.
Array maybe_dropout(const Array& h, double rate, const std::optional<Array>& key) {
  return key ? g::nn::dropout(*key, h, rate) : h;
}

// The seeds' MLP: 784-512-512-10 with ReLU.
Model mlp() {
  g::nn::MLP net{{784, 512, 512, 10}};
  return {[net](const Array& k) { return net.init(k); },
          [net](const Tree& p, const Array& x, const std::optional<Array>&) { return net(p, x); }, {784}};
}

// Two conv + pool blocks and two dense layers (the peer benchmark's CNN), with dropout at `rate`
// after the first dense layer while training.
Model cnn(double rate) {
  g::nn::Conv2d c1{1, 32, {3, 3}}, c2{32, 64, {3, 3}};
  g::nn::Linear d1{1600, 128}, d2{128, 10};
  auto init = [=](const Array& k) {
    Array ks = g::random::split(k, 4);
    return Tree::dict({{"conv1", c1.init(ks[0])}, {"conv2", c2.init(ks[1])}, {"dense1", d1.init(ks[2])},
                       {"dense2", d2.init(ks[3])}});
  };
  auto apply = [=](const Tree& p, const Array& x, const std::optional<Array>& key) {
    Array h = g::nn::max_pool2d(g::relu(c1(p["conv1"], x)), {2, 2});  // 28 -> 26 -> 13
    h = g::nn::max_pool2d(g::relu(c2(p["conv2"], h)), {2, 2});         // 13 -> 11 -> 5
    h = g::reshape(h, {h.shape(0), -1});
    return d2(p["dense2"], maybe_dropout(g::relu(d1(p["dense1"], h)), rate, key));
  };
  return {init, apply, {1, 28, 28}};
}

// A byte-level transformer language model (vocabulary 256) over windows of `len` bytes, with dropout
// at `rate` in its blocks while training.
Model transformer(int64_t len, double rate) {
  g::nn::TransformerLM lm{.vocab = 256, .dim = 128, .heads = 4, .layers = 2, .max_len = len, .dropout = rate};
  return {[lm](const Array& k) { return lm.init(k); },
          [lm](const Tree& p, const Array& x, const std::optional<Array>& key) { return lm(p, x, key); }, {len}};
}

// Mixed precision: the model computes in `compute` (its parameters and inputs cast on the way in),
// the parameters stay f32 (the master weights the optimizer updates, so that small updates are not
// rounded away), and the logits come back as f32 for the loss.
Model in_dtype(Model m, g::DType compute) {
  auto apply = m.apply;
  m.apply = [apply, compute](const Tree& p, const Array& x, const std::optional<Array>& key) {
    Tree pc = g::tree_map([compute](const Array& a) { return g::is_floating(a.dtype()) ? a.astype(compute) : a; }, p);
    return apply(pc, g::is_floating(x.dtype()) ? x.astype(compute) : x, key).astype(g::f32);
  };
  return m;
}

g::optim::Optimizer make_optimizer(const std::string& name, const g::optim::Schedule& lr) {
  if (name == "adam") return g::optim::adam(lr);
  if (name == "adamw") return g::optim::adamw(lr);
  if (name == "sgd") return g::optim::sgd(lr);
  if (name == "momentum") return g::optim::sgd(lr, 0.9);
  if (name == "nesterov") return g::optim::sgd(lr, 0.9, true);
  throw g::ValueError("unknown optimizer '" + name + "' (adam, adamw, sgd, momentum, nesterov)");
}

void progress(int epoch, int64_t done, int64_t total, double loss) {
  const int width = 30;
  int filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
  std::printf("\repoch %d [%s%s] %3d%%  loss %.4f", epoch, std::string(static_cast<size_t>(filled), '#').c_str(),
              std::string(static_cast<size_t>(width - filled), '.').c_str(),
              static_cast<int>(100 * done / std::max<int64_t>(total, 1)), loss);
  std::fflush(stdout);
}

// A two-panel SVG line chart of train loss and test accuracy per epoch.
std::string svg_curves(const std::vector<double>& loss, const std::vector<double>& acc, const std::string& title) {
  std::ostringstream s;
  const int W = 360, H = 260, pad = 45;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << 2 * W << "\" height=\"" << H + 30
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << W << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">" << title << "</text>\n";
  auto panel = [&](const std::vector<double>& v, int x0, const char* name, const char* color) {
    double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    if (hi - lo < 1e-9) {
      lo -= 0.5;
      hi += 0.5;
    }
    double m = (hi - lo) * 0.1;
    lo -= m;
    hi += m;
    int top = 30, bottom = 30 + H - pad, left = x0 + pad, right = x0 + W - 15;
    s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << right - left << "\" height=\"" << bottom - top
      << "\" fill=\"none\" stroke=\"#888\"/>\n";
    s << "<text x=\"" << (left + right) / 2 << "\" y=\"" << bottom + 32 << "\" text-anchor=\"middle\">epoch</text>\n";
    s << "<text x=\"" << left << "\" y=\"" << top - 4 << "\">" << name << "</text>\n";
    for (int t = 0; t <= 4; ++t) {
      double val = lo + (hi - lo) * t / 4;
      double y = bottom - (bottom - top) * t / 4.0;
      s << "<text x=\"" << left - 4 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << std::fixed
        << std::setprecision(3) << val << "</text>\n";
    }
    std::ostringstream pts;
    for (size_t i = 0; i < v.size(); ++i) {
      double x = v.size() == 1 ? (left + right) / 2.0 : left + (right - left) * double(i) / double(v.size() - 1);
      double y = bottom - (bottom - top) * (v[i] - lo) / (hi - lo);
      pts << x << "," << y << " ";
      s << "<circle cx=\"" << x << "\" cy=\"" << y << "\" r=\"3\" fill=\"" << color << "\"/>\n";
      s << "<text x=\"" << x << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\">" << i + 1 << "</text>\n";
    }
    s << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
  };
  panel(loss, 0, "train loss", "#d62728");
  panel(acc, W, "test accuracy", "#1f77b4");
  s << "</svg>\n";
  return s.str();
}

// ---- checkpoints ----------------------------------------------------------------------------------
// Every epoch ends with <out>/checkpoint.safetensors: the parameters, the optimizer state, the epoch
// and the PRNG key, the settings and the history of the curves, written atomically (a run killed
// while saving keeps the previous checkpoint). --resume <dir> continues from it to the same bits as an
// uninterrupted run with the same settings.
constexpr const char* kCheckpointFormat = "graft-train-1";
// Images per call of the exported classifier.
constexpr int64_t kExportBatch = 100;

struct Settings {
  std::string model, optimizer, schedule, dtype = "f32";
  int epochs = 0;
  int64_t batch = 0, limit = 0, seq_len = 0;
  double lr = 0, dropout = 0;
  bool flip = false;
  uint64_t seed = 0;
  // the settings a checkpoint must share with the run that resumes it (all that decide the bits)
  std::map<std::string, std::string> fields() const {
    auto num = [](double v) {
      char b[40];
      std::snprintf(b, sizeof b, "%.17g", v);
      return std::string(b);
    };
    return {{"model", model}, {"optimizer", optimizer}, {"schedule", schedule}, {"epochs", std::to_string(epochs)},
            {"batch_size", std::to_string(batch)}, {"limit", std::to_string(limit)}, {"lr", num(lr)},
            {"dropout", num(dropout)}, {"flip", flip ? "1" : "0"}, {"seed", std::to_string(seed)}, {"dtype", dtype},
            {"seq_len", std::to_string(seq_len)}};
  }
  // the value a field had in checkpoints written before it existed
  static std::string before_it_existed(const std::string& k) { return k == "dtype" ? "f32" : k == "seq_len" ? "0" : ""; }
};

std::string join(const std::vector<double>& v) {
  std::string s;
  for (double x : v) {
    char b[40];
    std::snprintf(b, sizeof b, "%.17g", x);
    s += (s.empty() ? "" : ",") + std::string(b);
  }
  return s;
}
std::vector<double> split_numbers(const std::string& s) {
  std::vector<double> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(std::stod(t));
  return v;
}

struct Progress {
  int epoch = 0;  ///< epochs done
  std::vector<double> losses, accs;
};

void save_checkpoint(const std::string& path, const Settings& st, const Progress& pr, const Tree& params,
                     const Tree& opt_state, const Array& root) {
  g::io::Metadata meta = st.fields();
  auto words = root.to_vector<uint32_t>();
  meta["format"] = kCheckpointFormat;
  meta["epoch"] = std::to_string(pr.epoch);
  meta["key"] = std::to_string(words[0]) + "," + std::to_string(words[1]);
  meta["losses"] = join(pr.losses);
  meta["accuracies"] = join(pr.accs);
  g::io::save(path, Tree::dict({{"params", params}, {"opt_state", opt_state}}), meta);
}

// Loads a checkpoint into params/opt_state (whose structure it must have), checking that it was made
// with the same settings; returns the progress it records and the PRNG key.
Progress load_checkpoint(const std::string& path, const Settings& st, Tree& params, Tree& opt_state, Array& root) {
  g::io::Metadata meta;
  Tree both = g::io::load(path, Tree::dict({{"params", params}, {"opt_state", opt_state}}), &meta);
  auto field = [&](const std::string& k) {
    auto it = meta.find(k);
    if (it == meta.end()) throw g::IOError("'" + path + "' is not a training checkpoint (no '" + k + "')");
    return it->second;
  };
  if (field("format") != kCheckpointFormat)
    throw g::IOError("'" + path + "' has checkpoint format '" + field("format") + "', this program reads '" +
                     kCheckpointFormat + "'");
  for (auto& [k, v] : st.fields()) {
    std::string was = !meta.count(k) && !Settings::before_it_existed(k).empty() ? Settings::before_it_existed(k) : field(k);
    if (was != v)
      throw g::ValueError("--resume: the checkpoint was made with " + k + " = " + was + ", this run has " + v +
                          " (resume with the same settings)");
  }
  Progress pr;
  try {
    pr.epoch = std::stoi(field("epoch"));
    pr.losses = split_numbers(field("losses"));
    pr.accs = split_numbers(field("accuracies"));
    auto key = split_numbers(field("key"));
    if (key.size() != 2) throw std::invalid_argument("key");
    uint32_t w[2] = {static_cast<uint32_t>(key[0]), static_cast<uint32_t>(key[1])};
    root = Array::from_data(w, {2}, g::DType::u32);
  } catch (const std::logic_error&) {
    throw g::IOError("'" + path + "' has malformed progress fields");
  }
  if (pr.epoch < 0 || pr.epoch > st.epochs || pr.losses.size() != static_cast<size_t>(pr.epoch) ||
      pr.accs.size() != static_cast<size_t>(pr.epoch))
    throw g::IOError("'" + path + "' records an inconsistent epoch count");
  params = both["params"];
  opt_state = both["opt_state"];
  return pr;
}

// The output directory, made (or checked) before any training: a path that names a file, or one that
// cannot be created, is an error now rather than after the whole run.
void prepare_out_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw g::IOError("--out '" + dir + "' exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw g::IOError("cannot create the output directory '" + dir + "': " + ec.message());
}

// ---- what the job learns from ------------------------------------------------------------------------
// Images with their labels, or windows of text with the bytes that follow each of their positions.
struct Task {
  std::string title;                                    // the header's and the plot's name
  std::function<Array(const Array&)> prep;              // raw inputs (u8) -> the model's inputs
  std::function<std::pair<Array, Array>(int)> train;    // the epoch's training pairs (model inputs, targets)
  Array x_test, y_test, test_raw;                       // test_raw: raw inputs (what the export takes)
  int64_t examples = 0;                                 // training pairs in an epoch (the first's, for text)
  std::string header;                                   // "60000 training / 10000 test images"
  std::string input_name, target_spec;                  // the export's input; jit's polymorphic spec of y
};

Task image_task(const std::string& dir, int64_t limit, const g::Shape& input) {
  auto ds = g::data::load_fashion_mnist(dir);
  if (limit > 0 && limit < ds.train_images.shape(0)) {
    ds.train_images = ds.train_images[{g::slice(0, limit)}];
    ds.train_labels = ds.train_labels[{g::slice(0, limit)}];
  }
  // pixels scaled to [0, 1], then standardized with the training set's mean and deviation
  Array train01 = ds.train_images.astype(g::f32) / 255.0;
  Array mean = g::mean(train01), stdev = g::sqrt(g::mean(g::square(train01 - mean)));
  Task t;
  t.title = "Fashion-MNIST";
  t.prep = [mean, stdev, input](const Array& images) {
    g::Shape s{images.shape(0)};
    for (auto d : input) s.push_back(d);
    return g::reshape((images.astype(g::f32) / 255.0 - mean) / stdev, s);
  };
  Array x = t.prep(ds.train_images), y = ds.train_labels;
  t.train = [x, y](int) { return std::make_pair(x, y); };
  t.x_test = t.prep(ds.test_images);
  t.y_test = ds.test_labels;
  t.test_raw = ds.test_images;
  t.examples = x.shape(0);
  t.header = std::to_string(x.shape(0)) + " training / " + std::to_string(t.x_test.shape(0)) + " test images";
  t.input_name = "images";
  t.target_spec = "b";
  return t;
}

// Windows of `len` bytes; each epoch starts them at another offset (drawn from the run's key), so
// that the model sees every split of the text over the epochs.
Task text_task(const std::vector<std::string>& paths, int64_t limit, int64_t len, const Array& root) {
  g::data::TextCorpus c = g::data::load_text(paths);
  if (limit > 0 && limit < c.train.shape(0)) c.train = c.train[{g::slice(0, limit)}];
  Task t;
  t.title = "text";
  t.prep = [](const Array& tokens) { return tokens.astype(g::i32); };
  Array train = c.train;
  t.train = [train, len, root](int epoch) {
    Array k = g::random::fold_in(root, static_cast<uint32_t>(2000 + epoch));
    int64_t offset = epoch <= 1 ? 0 : g::random::bits(k, {}, g::DType::u32).item<int64_t>() % len;
    return g::data::next_token_windows(train, len, offset);
  };
  std::tie(t.x_test, t.y_test) = g::data::next_token_windows(c.test, len);
  t.test_raw = t.x_test.astype(g::DType::u8);
  t.examples = t.train(1).first.shape(0);
  t.header = std::to_string(c.train.shape(0)) + " training / " + std::to_string(c.test.shape(0)) + " test bytes of " +
             std::to_string(c.files.size()) + " files, windows of " + std::to_string(len);
  t.input_name = "tokens";
  t.target_spec = "b, ...";
  return t;
}

// `n` bytes the language model writes after `prompt`, drawing each from its distribution at
// temperature 0.8 (one jitted call per byte on the last `len` bytes).
std::string generate(const Model& model, const Tree& params, int64_t len, const std::string& prompt, int n, const Array& key) {
  auto next = g::jit([&model, len](const Tree& p, const Array& ctx) {
    return model.apply(p, ctx, std::nullopt)[{0, len - 1}] / 0.8;
  });
  std::vector<int32_t> ctx(static_cast<size_t>(len), ' ');
  for (size_t i = 0; i < prompt.size() && i < ctx.size(); ++i)
    ctx[ctx.size() - prompt.size() + i] = static_cast<unsigned char>(prompt[i]);
  std::string out = prompt;
  for (int i = 0; i < n; ++i) {
    Array logits = next(params, Array::from_data(ctx.data(), {1, len}, g::DType::i32));
    int32_t b = g::random::categorical(g::random::fold_in(key, static_cast<uint32_t>(i)), logits).item<int32_t>();
    ctx.erase(ctx.begin());
    ctx.push_back(b);
    out += (b == '\n' || (b >= 32 && b < 127)) ? static_cast<char>(b) : '?';
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a classifier on Fashion-MNIST, or a transformer language model on text, with graft"};
  Settings st;
  st.model = "mlp";
  st.optimizer = "adam";
  st.schedule = "cosine";
  st.epochs = 5;
  std::string data_dir = g::data::kFashionMnistDir, out_dir, resume;
  std::vector<std::string> text = {g::data::kCommonLicensesDir};
  app.add_option("--model", st.model, "mlp (784-512-512-10), cnn, or transformer (a byte-level language model on text)")
      ->check(CLI::IsMember({"mlp", "cnn", "transformer"}));
  app.add_option("--seq-len", st.seq_len, "transformer: bytes of context (default 128)")->check(CLI::PositiveNumber);
  app.add_option("--text", text, "transformer: text files or directories to learn (default /usr/share/common-licenses)");
  app.add_option("--dtype", st.dtype,
                 "compute dtype: f32, or bf16 (the model computes in bfloat16; f32 master weights and loss)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_option("--epochs", st.epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", st.batch, "examples per step (default 128 for mlp, 32 for cnn, 8 windows for transformer)")->check(CLI::PositiveNumber);
  app.add_option("--lr", st.lr, "learning rate (default 1e-3, 2e-3 for the transformer)");
  app.add_option("--optimizer", st.optimizer, "adam, adamw, sgd, momentum or nesterov")
      ->check(CLI::IsMember({"adam", "adamw", "sgd", "momentum", "nesterov"}));
  app.add_option("--schedule", st.schedule, "learning rate over the run: cosine (decays to 0 by the last step) or constant")
      ->check(CLI::IsMember({"cosine", "constant"}));
  app.add_option("--dropout", st.dropout, "dropout rate after the CNN's first dense layer or in the transformer's blocks, in [0, 0.95]");
  app.add_flag("--flip", st.flip, "augment: flip half of each batch's images left-right");
  app.add_option("--seed", st.seed, "random seed (initialization and shuffling)");
  app.add_option("--limit", st.limit, "train on the first N training images (bytes of text) only (quick runs)")->check(CLI::PositiveNumber);
  app.add_option("--data", data_dir, "directory with the Fashion-MNIST .gz files");
  app.add_option("--out", out_dir, "where to write checkpoints and the plot (default: runs/<model>, or the --resume directory)");
  app.add_option("--resume", resume, "continue the run whose checkpoint is in this directory (same settings)");
  std::string device = "cpu";
  app.add_option("--device", device, "where to train: cpu, or cuda / cuda:N (a GPU; the batches move there each step)");
  bool distributed = false;
  app.add_flag("--distributed", distributed,
               "data parallel over the processes of an mpirun job: each global batch split over the ranks, the "
               "gradient all-reduced inside the jitted step (on by itself under mpirun -np > 1)");
  std::string mesh_spec;
  app.add_option("--mesh", mesh_spec,
                 "sharded jit over a mesh of this process's devices (GRAFT_CPU_DEVICES=N) or of an mpirun job's "
                 "processes (one device each), e.g. data=2,model=2: each batch split over 'data', the layers split "
                 "over 'model' (Megatron), as sharding annotations only");
  bool fsdp = false;
  app.add_flag("--fsdp", fsdp, "with --mesh: the parameters and optimizer state split over 'data' too (FSDP / ZeRO-3)");
  bool auto_layout = false;
  app.add_flag("--auto", auto_layout,
               "with --mesh: the compiler chooses the parameters' and optimizer state's layouts (fewest bytes moved "
               "within GRAFT_DEVICE_MEMORY bytes per device, e.g. 512M) and prints them");
  CLI11_PARSE(app, argc, argv);
  if (out_dir.empty()) out_dir = resume.empty() ? "runs/" + st.model : resume;
  // the CNN generalizes better with more, smaller steps: 91.5% / 91.2% test accuracy after 5 epochs at
  // batch 32 (seeds 0 / 1) against 90.5% at batch 128 (BENCHMARKS.md)
  const bool lm = st.model == "transformer";
  // the language model learns from its few hundred windows per epoch best in small steps: 2.65
  // bits/byte after 5 epochs at batch 8 against 3.73 at batch 32 (lr 1e-3)
  if (st.batch == 0) st.batch = st.model == "mlp" ? 128 : lm ? 8 : 32;
  if (app.count("--lr") == 0) st.lr = lm ? 2e-3 : 1e-3;
  if (lm && st.seq_len == 0) st.seq_len = 128;
  try {
    if (distributed || g::distributed::launched_by_mpi()) g::distributed::initialize();
    const int rank = g::process_index(), nproc = g::process_count();
    // rank 0 reports; every rank writes its errors to stderr
    if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) throw g::IOError("cannot silence rank " + std::to_string(rank));
    // NaN passes CLI11's range checks (every comparison with it is false): finite values are asked here
    if (!std::isfinite(st.lr) || st.lr <= 0) throw g::ValueError("--lr must be a finite positive number, got " + std::to_string(st.lr));
    if (!std::isfinite(st.dropout) || st.dropout < 0 || st.dropout > 0.95)
      throw g::ValueError("--dropout must be in [0, 0.95], got " + std::to_string(st.dropout));
    if (st.model == "mlp" && st.dropout > 0) throw g::ValueError("--dropout applies to --model cnn and transformer");
    if (lm && st.flip) throw g::ValueError("--flip flips images: it does not apply to --model transformer");
    if (!lm && st.seq_len != 0) throw g::ValueError("--seq-len applies to --model transformer");
    // On a GPU every array the run makes lives there (the default device) and each step's batch moves
    // there from the host; checkpoints, the plot and the export read values back.
    g::Device dev = g::parse_device(device);
    std::optional<g::DefaultDevice> on_device;
    if (!dev.is_cpu()) {
      if (nproc > 1) throw g::ValueError("--device " + device + " with several processes needs NCCL, not built yet");
      try {  // an unavailable device is an error now, saying why
        (void)g::device_put(g::zeros({1}), dev);
      } catch (const g::ValueError& e) {
        throw g::ValueError("--device " + device + ": " + e.what());
      }
      on_device.emplace(dev);
    }
    prepare_out_dir(out_dir);
    Model model = st.model == "mlp" ? mlp() : st.model == "cnn" ? cnn(st.dropout) : transformer(st.seq_len, st.dropout);
    if (st.dtype != "f32") model = in_dtype(model, g::parse_dtype(st.dtype));
    Task task = lm ? text_task(text, st.limit, st.seq_len, g::random::key(st.seed))
                   : image_task(data_dir, st.limit, model.input);
    const Array& x_test = task.x_test;
    int64_t n = task.examples;
    if (st.batch % nproc != 0)
      throw g::ValueError("--batch-size " + std::to_string(st.batch) + " does not split over " + std::to_string(nproc) +
                          " processes");
    if (st.batch > n)
      throw g::ValueError("--batch-size " + std::to_string(st.batch) + " is larger than the training set (" +
                          std::to_string(n) + (lm ? " windows" : " images") + "): no full batch to train on");
    std::printf("%s: %s; model %s%s (%lld parameters), %s lr=%g (%s), batch %lld, seed %llu\n", task.title.c_str(),
                task.header.c_str(), st.model.c_str(), st.dtype == "f32" ? "" : (" in " + st.dtype).c_str(),
                (long long)g::nn::num_params(model.init(g::random::key(st.seed))), st.optimizer.c_str(), st.lr,
                st.schedule.c_str(), (long long)st.batch, (unsigned long long)st.seed);
    if (nproc > 1 && mesh_spec.empty())
      std::printf("data parallel over %d processes (MPI): %lld examples of each batch per process\n", nproc,
                  (long long)(st.batch / nproc));
    Array root = g::random::key(st.seed);
    Tree params = model.init(g::random::fold_in(root, 0u));
    // One process trains on every image: the last, partial batch runs in the full batches' compiled
    // program (jit's batch polymorphism). Data parallel, the batches must split over the ranks, so
    // the partial one is dropped.
    // --mesh: sharded jit over this process's devices, the layouts from nn::Layout
    std::optional<g::Mesh> mesh;
    g::nn::Layout layout;
    if (!mesh_spec.empty()) {
      if (!dev.is_cpu()) throw g::ValueError("--mesh runs on the CPU devices (GRAFT_CPU_DEVICES=N)");
      std::vector<std::string> names;
      g::Shape sizes;
      std::stringstream ss(mesh_spec);
      for (std::string item; std::getline(ss, item, ',');) {
        auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0) throw g::ValueError("--mesh " + mesh_spec + ": write axis=size,axis=size");
        names.push_back(item.substr(0, eq));
        try {
          sizes.push_back(std::stoll(item.substr(eq + 1)));
        } catch (const std::logic_error&) {
          throw g::ValueError("--mesh " + mesh_spec + ": '" + item.substr(eq + 1) + "' is not a size");
        }
        if (sizes.back() < 1) throw g::ValueError("--mesh " + mesh_spec + ": sizes are positive");
      }
      const std::string need = std::to_string(g::numel(sizes));
      if (g::numel(sizes) != static_cast<int64_t>(g::devices().size()))
        throw g::ValueError("--mesh " + mesh_spec + " needs " + need + " devices, " +
                            (nproc > 1 ? "the job has " + std::to_string(g::devices().size()) + " (run mpirun -np " + need + ")"
                                       : "this process has " + std::to_string(g::devices().size()) +
                                             " (run with GRAFT_CPU_DEVICES=" + need + ", or under mpirun -np " + need + ")"));
      // across processes, pjit takes and returns each process's block: one device per process
      if (nproc > 1 && g::local_devices().size() != 1)
        throw g::ValueError("--mesh under mpirun runs one device per process (leave GRAFT_CPU_DEVICES unset)");
      mesh.emplace(g::devices(), names, sizes);
      bool has_data = mesh->axis_index("data") >= 0, has_model = mesh->axis_index("model") >= 0;
      if (!has_data && !has_model) throw g::ValueError("--mesh " + mesh_spec + ": name an axis 'data' or 'model'");
      if (fsdp && !has_data) throw g::ValueError("--fsdp splits over the mesh axis 'data', which --mesh lacks");
      if (auto_layout && fsdp) throw g::ValueError("--auto chooses the layouts itself: leave out --fsdp");
      if (has_data && st.batch % mesh->axis_size("data") != 0)
        throw g::ValueError("--batch-size " + std::to_string(st.batch) + " does not split over the " +
                            std::to_string(mesh->axis_size("data")) + " devices of axis 'data'");
      layout = {.fsdp = fsdp ? "data" : "", .tensor = has_model ? "model" : ""};
      std::printf("sharded jit over %s%s: %s%s%s\n", mesh->str().c_str(),
                  nproc > 1 ? (" across " + std::to_string(nproc) + " processes (MPI)").c_str() : "",
                  has_data ? "batches split over 'data'" : "batches whole", has_model ? ", layers over 'model' (Megatron)" : "",
                  fsdp ? ", parameters and optimizer state over 'data' (FSDP)" : "");
    } else if (fsdp || auto_layout) {
      throw g::ValueError(std::string(fsdp ? "--fsdp" : "--auto") + " needs --mesh");
    }
    const bool partial = nproc == 1 && !mesh;
    int64_t steps_per_epoch = partial ? (n + st.batch - 1) / st.batch : n / st.batch;
    auto opt = make_optimizer(st.optimizer, st.schedule == "cosine" ? g::optim::cosine_decay(st.lr, st.epochs * steps_per_epoch)
                                                                    : g::optim::Schedule(st.lr));
    Tree opt_state = opt.init(params);
    std::string ckpt_path = out_dir + "/checkpoint.safetensors";
    Progress pr;
    if (!resume.empty()) {
      pr = load_checkpoint(resume + "/checkpoint.safetensors", st, params, opt_state, root);
      std::printf("resuming from %s/checkpoint.safetensors after epoch %d of %d\n", resume.c_str(), pr.epoch, st.epochs);
    }
    auto loss_fn = [&model](const Tree& p, const Array& x, const Array& y, const Array& key) {
      return g::nn::cross_entropy(model.apply(p, x, key), y);
    };
    // random horizontal flips of half the images (Fashion-MNIST's classes are left-right symmetric)
    auto augment = [flip = st.flip](const Array& x, const Array& key) {
      if (!flip) return x;
      Array images = g::reshape(x, {x.shape(0), 28, 28});
      Array pick = g::reshape(g::random::bernoulli(key, Array(0.5), g::Shape{x.shape(0)}), {x.shape(0), 1, 1});
      return g::reshape(g::where(pick, g::flip(images, 2), images), x.shape());
    };
    // One step on this process's share of the batch. Across processes the loss is the mean over the
    // ranks (pmean over the mesh axis "data"), so its gradient is the global batch's, the same on every
    // rank, and every rank applies the same update: the parameters stay identical without a broadcast.
    // data parallel by hand (shard_map over the processes); --mesh leaves the collectives to pjit
    const bool spmd = nproc > 1 && !mesh;
    auto local_step = [&](const Tree& p, const Tree& s, const Array& x, const Array& y, const Array& key) {
      Array xa = augment(x, g::random::fold_in(key, 0u));
      auto objective = [&](const Tree& q, const Array& xx, const Array& yy, const Array& k) {
        Array l = loss_fn(q, xx, yy, k);
        return spmd ? g::pmean(l, "data") : l;
      };
      auto [loss, grads] = g::value_and_grad(objective)(p, xa, y, g::random::fold_in(key, 1u));
      auto [updates, s2] = opt.update(grads, s, p);
      return std::make_tuple(g::optim::apply_updates(p, updates), s2, loss);
    };
    using StepOut = std::tuple<Tree, Tree, Array>;
    std::function<StepOut(const Tree&, const Tree&, const Array&, const Array&, const Array&)> body = local_step;
    if (spmd)
      body = g::shard_map(local_step, g::Mesh(g::devices(), {"data"}),
                          {g::P(), g::P(), g::P("data"), g::P("data"), g::P()}, {g::P()});
    // the old parameters and optimizer state are donated: the step updates them in place
    // one compile for full and partial batches: x and y have a batch dimension
    std::function<StepOut(const Tree&, const Tree&, const Array&, const Array&, const Array&)> step =
        g::jit(body, {.name = "train_step",
                      .donate_argnums = {0, 1},
                      .polymorphic = partial ? std::vector<std::string>{"", "", "b, ...", task.target_spec, ""}
                                             : std::vector<std::string>{}});
    std::vector<std::optional<g::NamedSharding>> param_sh, state_sh;
    std::optional<g::NamedSharding> batch_sh;
    if (mesh) {
      // the same step for one device, its layouts as annotations: the compiler inserts the collectives
      auto ps = g::nn::parameter_shardings(params, *mesh, layout), ss = g::nn::parameter_shardings(opt_state, *mesh, layout);
      g::NamedSharding batch{*mesh, mesh->axis_index("data") >= 0 ? g::P("data") : g::P()};
      std::vector<std::optional<g::NamedSharding>> outs = ps;
      outs.insert(outs.end(), ss.begin(), ss.end());
      outs.push_back(g::NamedSharding{*mesh, g::P()});
      if (auto_layout) {  // the compiler's choice, from one batch's types
        auto [xb, yb] = *g::data::batches(task.train(1).first, task.train(1).second, st.batch, std::nullopt, true).begin();
        g::AutoShardingResult plan =
            g::auto_sharding(local_step, {.mesh = *mesh, .auto_args = {true, true, false, false, false},
                                          .in_shardings = {std::nullopt, std::nullopt, batch, batch, std::nullopt},
                                          .carry = g::training_state_carry(params, opt_state)},
                             params, opt_state, xb, yb, root);
        std::printf("%s", plan.summary.c_str());
        ps = plan.in_leaf_shardings[0];
        ss = plan.in_leaf_shardings[1];
        outs = plan.out_shardings;
      }
      step = g::pjit(local_step, {.name = "train_step",
                                  .in_leaf_shardings = {ps, ss, {batch}, {batch}, {}},
                                  .out_shardings = outs,
                                  .donate_argnums = {0, 1}});
      param_sh = ps;
      state_sh = ss;
      batch_sh = batch;
    }
    // Across processes (--mesh under mpirun) each process hands pjit its own blocks and gets its blocks
    // back: the parameters and optimizer state live as blocks between steps, and are gathered whole
    // (a collective: every rank calls it) for the evaluation, the checkpoints and the saved model.
    const bool blocks = mesh && nproc > 1;
    auto relayout = [&](const Tree& t, const std::vector<std::optional<g::NamedSharding>>& sh, bool to_blocks) {
      g::TreeDef def;
      std::vector<Array> leaves = g::tree_flatten(t, &def);
      for (size_t i = 0; i < leaves.size() && i < sh.size(); ++i) {
        if (!sh[i]) continue;
        if (to_blocks) {
          leaves[i] = g::device_put(leaves[i], *sh[i]).addressable_data(0);
        } else {
          g::Shape global = leaves[i].shape();
          for (size_t d = 0; d < sh[i]->spec.dims.size(); ++d)
            if (sh[i]->spec.dims[d]) global[d] *= mesh->split_size(sh[i]->spec.dims[d]);
          leaves[i] = g::make_array_from_single_device_arrays(global, *sh[i], {leaves[i]}).gather();
        }
      }
      return g::tree_unflatten<Tree>(def, leaves);
    };
    if (blocks) {
      params = relayout(params, param_sh, true);
      opt_state = relayout(opt_state, state_sh, true);
    }
    const int64_t share = st.batch / nproc;  // this rank's rows of each global batch
    // right predictions and the summed cross-entropy of a test batch (sums: the masked rows of a
    // partial batch count nothing)
    auto evaluate = g::jit(
        [&model](const Tree& p, const Array& x, const Array& y) {
          Array logits = model.apply(p, x, std::nullopt);
          Array nll = -g::sum(g::log_softmax(logits, -1) * g::one_hot(y, logits.shape().back()));
          return std::make_pair(g::sum(g::argmax(logits, -1) == y), nll);
        },
        {.name = "eval", .polymorphic = {"", "b, ...", task.target_spec}});
    for (int epoch = pr.epoch + 1; epoch <= st.epochs; ++epoch) {
      auto [x_train, y_train] = task.train(epoch);
      auto batches = g::data::batches(x_train, y_train, st.batch, g::random::fold_in(root, static_cast<uint32_t>(epoch)),
                                      !partial);
      auto t0 = std::chrono::steady_clock::now();
      double total = 0;
      int64_t i = 0, seen = 0;
      Array epoch_key = g::random::fold_in(root, static_cast<uint32_t>(1000 + epoch));
      for (auto [xb, yb] : batches) {
        Array loss;
        Array key = g::random::fold_in(epoch_key, static_cast<uint32_t>(i));
        const int64_t rows = xb.shape(0);  // the global batch's
        if (blocks) {
          xb = g::device_put(xb, *batch_sh).addressable_data(0);
          yb = g::device_put(yb, *batch_sh).addressable_data(0);
        } else if (nproc > 1) {
          xb = xb[{g::slice(rank * share, (rank + 1) * share)}];
          yb = yb[{g::slice(rank * share, (rank + 1) * share)}];
        }
        std::tie(params, opt_state, loss) = step(params, opt_state, xb, yb, key);
        double l = loss.item<double>();
        // a diverged run stops here: the last checkpoint stays the last good state
        if (!std::isfinite(l))
          throw g::ValueError("the training loss became " + std::to_string(l) + " at epoch " + std::to_string(epoch) +
                              ", step " + std::to_string(i + 1) + ": training diverged (try a lower --lr)");
        total += l * double(rows);
        seen += rows;
        ++i;
        if (i % 20 == 0 || i == batches.size()) progress(epoch, i, batches.size(), total / double(seen));
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      Tree whole = blocks ? relayout(params, param_sh, false) : params;
      Tree whole_state = blocks ? relayout(opt_state, state_sh, false) : opt_state;
      int64_t right = 0;
      double nll = 0;
      // batches of 1024 images (64 windows of text): the last, partial one runs in the same program
      for (auto [xb, yb] : g::data::batches(x_test, task.y_test, lm ? 64 : 1024, std::nullopt, false)) {
        auto [r, l] = evaluate(whole, xb, yb);
        right += r.item<int64_t>();
        nll += l.item<double>();
      }
      double acc = double(right) / double(task.y_test.size());
      char bits[64] = "";
      if (lm) std::snprintf(bits, sizeof bits, ", test loss %.3f bits/byte", nll / double(task.y_test.size()) / std::log(2.0));
      pr.losses.push_back(total / double(seen));
      pr.accs.push_back(acc);
      pr.epoch = epoch;
      std::printf("\repoch %d: %.2f s, %.0f examples/s, train loss %.4f, test accuracy %.4f%s%20s\n", epoch, secs,
                  double(seen) / secs, pr.losses.back(), acc, bits, "");
      if (rank == 0) save_checkpoint(ckpt_path, st, pr, whole, whole_state, root);
      std::printf("checkpoint: epoch %d saved\n", epoch);
      std::fflush(stdout);
    }
    if (blocks) params = relayout(params, param_sh, false);
    std::string final_path = out_dir + "/model.safetensors", plot = out_dir + "/training.svg";
    if (rank != 0) return 0;
    g::io::save(final_path, params,
                {{"model", st.model}, {"epochs", std::to_string(st.epochs)},
                 {"test_accuracy", std::to_string(pr.accs.back())}});
    g::io::write_file_atomic(plot, svg_curves(pr.losses, pr.accs, task.title + " " + st.model + ", " + st.optimizer));
    std::printf("saved %s, %s and %s\n", final_path.c_str(), ckpt_path.c_str(), plot.c_str());
    // The trained classifier as a program of its own: raw uint8 images in, logits and labels out, the
    // weights and the input normalization inside (run it with build/graft-run, no C++ needed). The
    // sample file holds test images with this process's predictions for them, to check the export:
    //   build/graft-run runs/mlp/model.graft --input runs/mlp/sample.safetensors --expect runs/mlp/sample.safetensors
    auto classify = [&model, &task](const Tree& p, const Array& images) {
      Array logits = model.apply(p, task.prep(images), std::nullopt);
      return std::make_pair(logits, g::argmax(logits, -1));
    };
    int64_t m = std::min<int64_t>(kExportBatch, task.test_raw.shape(0));
    Array sample = task.test_raw[{g::slice(0, m)}];
    auto [logits, labels] = g::jit(classify, {.name = "classify"})(params, sample);
    std::string model_path = out_dir + "/model.graft", sample_path = out_dir + "/sample.safetensors";
    g::Exported exported = g::export_fn([&](const Array& images) { return classify(params, images); },
                                        {.name = st.model + (lm ? "_next_byte" : "_classifier"), .in_names = {task.input_name},
                                         .out_names = {"logits", "labels"}})(sample);
    exported.save(model_path);
    g::io::save_tensors(sample_path, {{task.input_name, sample}, {"logits", logits}, {"labels", labels}});
    std::printf("exported %s (%s) with %s\n", model_path.c_str(), exported.in_avals()[0].str().c_str(),
                sample_path.c_str());
    if (lm)
      std::printf("sample (temperature 0.8):\n%s\n",
                  generate(model, params, st.seq_len, "This License", 300, g::random::fold_in(root, 3000u)).c_str());
    return 0;
  } catch (const g::Error& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // a filesystem or library failure: a message and a status, never an abort
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
}
