#include "graft/nn/nn.h"

#include <cmath>

#include "graft/ops/linalg.h"
#include "graft/ops/ops.h"
#include "graft/random/random.h"
#include "graft/transforms/api.h"

namespace graft::nn {

// ---- initializers ------------------------------------------------------------------------------------
namespace {
// JAX's _compute_fans: the receptive field is every dim but the in and out axes.
std::pair<double, double> fans(const Shape& s, int64_t in_axis, int64_t out_axis) {
  if (s.empty()) return {1, 1};
  if (s.size() == 1) return {double(s[0]), double(s[0])};
  int64_t nd = static_cast<int64_t>(s.size());
  int64_t ia = normalize_axis(in_axis, nd, "initializer"), oa = normalize_axis(out_axis, nd, "initializer");
  double rf = double(numel(s)) / double(s[ia] * s[oa]);
  return {double(s[ia]) * rf, double(s[oa]) * rf};
}
}  // namespace

Initializer variance_scaling(double scale, std::string mode, std::string distribution, int64_t in_axis,
                             int64_t out_axis) {
  if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg")
    fail<ValueError>("variance_scaling: mode must be fan_in, fan_out or fan_avg, got '", mode, "'");
  if (distribution != "truncated_normal" && distribution != "normal" && distribution != "uniform")
    fail<ValueError>("variance_scaling: distribution must be truncated_normal, normal or uniform, got '", distribution,
                     "'");
  return [=](const Array& key, const Shape& shape, DType d) {
    auto [fi, fo] = fans(shape, in_axis, out_axis);
    double denom = mode == "fan_in" ? fi : (mode == "fan_out" ? fo : (fi + fo) / 2);
    double var = scale / std::max(1.0, denom);
    if (distribution == "truncated_normal") {
      // stddev of a standard normal truncated to [-2, 2]
      double std_ = std::sqrt(var) / 0.87962566103423978;
      return random::truncated_normal(key, -2, 2, shape, d) * std_;
    }
    if (distribution == "normal") return random::normal(key, shape, d) * std::sqrt(var);
    double lim = std::sqrt(3 * var);
    return random::uniform(key, shape, d, -lim, lim);
  };
}
Initializer glorot_uniform(int64_t i, int64_t o) { return variance_scaling(1, "fan_avg", "uniform", i, o); }
Initializer glorot_normal(int64_t i, int64_t o) { return variance_scaling(1, "fan_avg", "truncated_normal", i, o); }
Initializer he_uniform(int64_t i, int64_t o) { return variance_scaling(2, "fan_in", "uniform", i, o); }
Initializer he_normal(int64_t i, int64_t o) { return variance_scaling(2, "fan_in", "truncated_normal", i, o); }
Initializer lecun_uniform(int64_t i, int64_t o) { return variance_scaling(1, "fan_in", "uniform", i, o); }
Initializer lecun_normal(int64_t i, int64_t o) { return variance_scaling(1, "fan_in", "truncated_normal", i, o); }
Initializer normal_init(double stddev) {
  return [stddev](const Array& key, const Shape& s, DType d) { return random::normal(key, s, d) * stddev; };
}
Initializer uniform_init(double scale) {
  return [scale](const Array& key, const Shape& s, DType d) { return random::uniform(key, s, d, -scale, scale); };
}
Initializer constant_init(double value) {
  return [value](const Array&, const Shape& s, DType d) { return full(s, value, d); };
}

namespace initializers {
Initializer zeros() { return constant_init(0.0); }
Initializer ones() { return constant_init(1.0); }
Initializer constant(double value) { return constant_init(value); }
Initializer normal(double stddev) { return normal_init(stddev); }
Initializer uniform(double scale) {
  return [scale](const Array& key, const Shape& s, DType d) { return random::uniform(key, s, d, 0.0, scale); };
}
Initializer truncated_normal(double stddev, double lower, double upper) {
  return [=](const Array& key, const Shape& s, DType d) { return random::truncated_normal(key, lower, upper, s, d) * stddev; };
}
Initializer orthogonal(double scale, int64_t column_axis) {
  return [=](const Array& key, const Shape& shape, DType d) {
    int64_t nd = static_cast<int64_t>(shape.size());
    if (nd < 2) fail<ValueError>("orthogonal: needs an array of two or more dimensions, got shape ", shape_str(shape));
    if (column_axis < -nd || column_axis >= nd)
      fail<ValueError>("orthogonal: column_axis ", column_axis, " is out of range for shape ", shape_str(shape));
    int64_t ca = column_axis < 0 ? column_axis + nd : column_axis;
    int64_t cols = shape[static_cast<size_t>(ca)], rows = 1;
    Shape rest;
    for (int64_t i = 0; i < nd; ++i)
      if (i != ca) {
        rows *= shape[static_cast<size_t>(i)];
        rest.push_back(shape[static_cast<size_t>(i)]);
      }
    // QR of a tall normal matrix; signs from R's diagonal make the draw uniform over orthogonal matrices
    DType cd = d == DType::bf16 || d == DType::f16 ? DType::f32 : d;
    Array a = random::normal(key, {std::max(rows, cols), std::min(rows, cols)}, cd);
    auto [q, r] = linalg::qr(a);
    Array sg = sign(diagonal(r));
    q = q * where(equal(sg, Array(0.0).astype(cd)), ones_like(sg), sg);
    if (rows < cols) q = transpose(q, {1, 0});
    rest.push_back(cols);
    return (moveaxis(reshape(q, rest), -1, ca) * scale).astype(d);
  };
}
Initializer delta_orthogonal(double scale, int64_t column_axis) {
  return [=](const Array& key, const Shape& shape, DType d) {
    size_t nd = shape.size();
    if (nd < 3 || nd > 5 || shape[nd - 2] > shape[nd - 1])
      fail<ValueError>("delta_orthogonal: needs a kernel [*spatial, in, out] with 1 to 3 spatial dimensions and in <= out, "
                       "got shape ", shape_str(shape));
    Array center = orthogonal(scale, column_axis)(key, {shape[nd - 2], shape[nd - 1]}, d);
    // the matrix at index (k - 1) // 2 of every spatial dimension (JAX's), zeros around it
    Shape one(nd - 2, 1);
    one.push_back(shape[nd - 2]);
    one.push_back(shape[nd - 1]);
    std::vector<std::pair<int64_t, int64_t>> widths;
    for (size_t i = 0; i + 2 < nd; ++i) widths.push_back({(shape[i] - 1) / 2, shape[i] - (shape[i] - 1) / 2 - 1});  // JAX's (k - 1) // 2
    widths.push_back({0, 0});
    widths.push_back({0, 0});
    return pad(reshape(center, one), widths, 0.0);
  };
}
Initializer xavier_uniform(int64_t i, int64_t o) { return glorot_uniform(i, o); }
Initializer xavier_normal(int64_t i, int64_t o) { return glorot_normal(i, o); }
Initializer kaiming_uniform(int64_t i, int64_t o) { return he_uniform(i, o); }
Initializer kaiming_normal(int64_t i, int64_t o) { return he_normal(i, o); }
}  // namespace initializers

// ---- layers ----------------------------------------------------------------------------------------------
Tree Linear::init(const Array& key, DType d) const {
  if (in <= 0 || out <= 0) fail<ValueError>("Linear: in and out must be positive, got ", in, " and ", out);
  Tree p = Tree::dict({{"w", w_init(key, {in, out}, d)}});
  if (bias) p["b"] = zeros({out}, d);
  return p;
}

Array Linear::operator()(const Tree& params, const Array& x) const {
  const Array& w = params["w"].array();
  if (x.ndim() == 0 || x.shape().back() != w.shape()[0])
    fail<ShapeError>("Linear: input ", x.aval().str(), " does not end in ", w.shape()[0], " features");
  Array y = matmul(x, w);
  return bias ? y + params["b"].array() : y;
}

Tree MLP::init(const Array& key, DType d) const {
  if (sizes.size() < 2) fail<ValueError>("MLP: needs at least an input and an output size");
  Array ks = random::split(key, static_cast<int64_t>(sizes.size() - 1));
  std::vector<Tree> layers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i)
    layers.push_back(Linear{sizes[i], sizes[i + 1], true, w_init}.init(ks[static_cast<int64_t>(i)], d));
  return Tree(layers);
}

Array MLP::operator()(const Tree& params, const Array& x) const {
  Array h = x;
  size_t n = params.size();
  for (size_t i = 0; i < n; ++i) {
    h = matmul(h, params[i]["w"].array()) + params[i]["b"].array();
    if (i + 1 < n) h = activation ? activation(h) : relu(h);
  }
  return h;
}

std::vector<std::pair<int64_t, int64_t>> Padding::resolve(const Shape& in, const Shape& win,
                                                         const Shape& strides) const {
  std::vector<std::pair<int64_t, int64_t>> p;
  if (mode == "EXPLICIT") {
    if (explicit_pads.size() != in.size())
      fail<ValueError>("padding: need one (lo, hi) pair per spatial dimension, got ", explicit_pads.size());
    return explicit_pads;
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (mode == "VALID") {
      p.emplace_back(0, 0);
    } else if (mode == "SAME") {
      int64_t out = (in[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>((out - 1) * strides[i] + win[i] - in[i], 0);
      p.emplace_back(total / 2, total - total / 2);
    } else {
      fail<ValueError>("padding must be \"VALID\", \"SAME\" or explicit pairs, got \"", mode, "\"");
    }
  }
  return p;
}

Tree Conv2d::init(const Array& key, DType d) const {
  if (in_channels <= 0 || out_channels <= 0 || groups <= 0 || in_channels % groups || out_channels % groups)
    fail<ValueError>("Conv2d: channels must be positive and divisible by groups");
  Tree p = Tree::dict({{"w", w_init(key, {out_channels, in_channels / groups, kernel[0], kernel[1]}, d)}});
  if (bias) p["b"] = zeros({out_channels}, d);
  return p;
}

Array Conv2d::operator()(const Tree& params, const Array& x) const {
  if (x.ndim() != 4 || x.shape()[1] != in_channels)
    fail<ShapeError>("Conv2d: expects [N, ", in_channels, ", H, W] inputs, got ", x.aval().str());
  const Array& w = params["w"].array();
  Shape spatial{x.shape()[2], x.shape()[3]}, k{kernel[0], kernel[1]}, s{stride[0], stride[1]};
  Shape dk{(kernel[0] - 1) * dilation[0] + 1, (kernel[1] - 1) * dilation[1] + 1};
  Array y = lax::conv_general_dilated(x, w.astype(x.dtype()), s, padding.resolve(spatial, dk, s), {1, 1},
                                      {dilation[0], dilation[1]}, lax::ConvDims::nchw(2), groups);
  if (!bias) return y;
  return y + reshape(params["b"].array(), {1, out_channels, 1, 1});
}

namespace {
Array pool(const Array& x, std::array<int64_t, 2> window, std::optional<std::array<int64_t, 2>> stride,
           const Padding& padding, bool is_max, const char* name) {
  if (x.ndim() < 2) fail<ShapeError>(name, ": expects at least two (spatial) dimensions, got ", x.aval().str());
  auto st = stride.value_or(window);
  int64_t nd = x.ndim();
  Shape win(static_cast<size_t>(nd), 1), strides(static_cast<size_t>(nd), 1);
  win[nd - 2] = window[0];
  win[nd - 1] = window[1];
  strides[nd - 2] = st[0];
  strides[nd - 1] = st[1];
  Shape sp{x.shape()[nd - 2], x.shape()[nd - 1]};
  auto p2 = padding.resolve(sp, {window[0], window[1]}, {st[0], st[1]});
  std::vector<std::pair<int64_t, int64_t>> pads(static_cast<size_t>(nd - 2), {0, 0});
  pads.insert(pads.end(), p2.begin(), p2.end());
  if (is_max) return lax::reduce_window_max(x, win, strides, pads);
  // average over the elements inside the input (padding does not count), as count_include_pad=False
  Array s = lax::reduce_window_sum(x, win, strides, pads);
  Array count = lax::reduce_window_sum(ones_like(x), win, strides, pads);
  return s / count;
}
}  // namespace

Array max_pool2d(const Array& x, std::array<int64_t, 2> window, std::optional<std::array<int64_t, 2>> stride,
                 const Padding& padding) {
  return pool(x, window, stride, padding, true, "max_pool2d");
}
Array avg_pool2d(const Array& x, std::array<int64_t, 2> window, std::optional<std::array<int64_t, 2>> stride,
                 const Padding& padding) {
  return pool(x, window, stride, padding, false, "avg_pool2d");
}

Array dropout(const Array& key, const Array& x, double rate, bool train) {
  if (rate < 0 || rate >= 1) fail<ValueError>("dropout: rate must be in [0, 1), got ", rate);
  if (!train || rate == 0) return x;
  Array keep = random::bernoulli(key, Array(1.0 - rate), x.shape());
  return where(keep, x / (1.0 - rate), zeros_like(x));
}

Tree LayerNorm::init(DType d) const {
  return Tree::dict({{"scale", ones({features}, d)}, {"bias", zeros({features}, d)}});
}

Array LayerNorm::operator()(const Tree& params, const Array& x) const {
  if (x.ndim() == 0 || x.shape().back() != features)
    fail<ShapeError>("LayerNorm: input ", x.aval().str(), " does not end in ", features, " features");
  // The derivative rule is the normalization's own (in terms of the normalized x and 1/std): reverse
  // mode then keeps those two as residuals, where the formula's chain rule kept every intermediate of
  // the mean and the variance (a transformer's layer norm wrote seven arrays of its input's size).
  double e = eps;
  auto normalized = [e](const Array& z) {
    Array m = mean(z, -1, true);
    Array r = rsqrt(var(z, -1, true) + e);
    return std::make_pair((z - m) * r, r);
  };
  auto f = custom_jvp(
      [normalized](const Array& z, const Array& g, const Array& b) { return normalized(z).first * g + b; },
      [normalized](const std::vector<Array>& p, const std::vector<Array>& t) {
        auto [xh, r] = normalized(p[0]);
        Array dxh = (t[0] - mean(t[0], -1, true) - xh * mean(t[0] * xh, -1, true)) * r;
        return std::make_pair(xh * p[1] + p[2], dxh * p[1] + xh * t[1] + t[2]);
      },
      "layer_norm");
  return f(x, params["scale"].array(), params["bias"].array());
}

Tree BatchNorm::init(DType d) const {
  return Tree::dict({{"scale", ones({features}, d)}, {"bias", zeros({features}, d)}});
}
Tree BatchNorm::init_state(DType d) const {
  return Tree::dict({{"mean", zeros({features}, d)}, {"var", ones({features}, d)}});
}

std::pair<Array, Tree> BatchNorm::operator()(const Tree& params, const Tree& state, const Array& x, bool train) const {
  int64_t a = normalize_axis(axis, x.ndim(), "BatchNorm");
  if (x.shape()[a] != features)
    fail<ShapeError>("BatchNorm: axis ", a, " of ", x.aval().str(), " should have ", features, " features");
  Axes reduce;
  Shape bshape(static_cast<size_t>(x.ndim()), 1);
  bshape[a] = features;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != a) reduce.push_back(i);
  auto feature = [&](const Array& v) { return reshape(v, bshape); };
  Array m, v;
  Tree new_state = state;
  if (train) {
    m = mean(x, reduce);
    v = var(x, reduce);
    new_state["mean"] = state["mean"].array() * momentum + stop_gradient(m) * (1 - momentum);
    new_state["var"] = state["var"].array() * momentum + stop_gradient(v) * (1 - momentum);
  } else {
    m = state["mean"].array();
    v = state["var"].array();
  }
  Array y = (x - feature(m)) * feature(rsqrt(v + eps) * params["scale"].array()) + feature(params["bias"].array());
  return {y, new_state};
}

Tree Embedding::init(const Array& key, DType d) const {
  if (num <= 0 || dim <= 0) fail<ValueError>("Embedding: num and dim must be positive");
  return Tree::dict({{"table", init_fn(key, {num, dim}, d)}});
}

Array Embedding::operator()(const Tree& params, const Array& ids) const {
  if (!is_integer(ids.dtype())) fail<TypeError>("Embedding: ids must be integers, got ", ids.aval().str());
  return take(params["table"].array(), ids, 0);
}

// ---- losses ------------------------------------------------------------------------------------------------
Array cross_entropy(const Array& logits, const Array& labels) {
  if (!is_integer(labels.dtype()))
    fail<TypeError>("cross_entropy: labels must be integers (use softmax_cross_entropy for probabilities), got ",
                    labels.aval().str());
  if (logits.ndim() != labels.ndim() + 1)
    fail<ShapeError>("cross_entropy: logits ", logits.aval().str(), " must have one more axis than labels ",
                     labels.aval().str());
  Array logp = log_softmax(logits, -1);
  return -mean(sum(logp * one_hot(labels, logits.shape().back(), logp.dtype()), -1));
}

Array softmax_cross_entropy(const Array& logits, const Array& targets) {
  return -mean(sum(log_softmax(logits, -1) * targets, -1));
}

Array binary_cross_entropy_with_logits(const Array& logits, const Array& targets) {
  // max(x, 0) - x * t + log(1 + exp(-|x|))
  return mean(maximum(logits, 0.0) - logits * targets + log1p(exp(-abs(logits))));
}

Array mse(const Array& pred, const Array& target) { return mean(square(pred - target)); }

Array accuracy(const Array& logits, const Array& labels) {
  return mean((argmax(logits, -1) == labels).astype(DType::f32));
}

int64_t num_params(const Tree& params) {
  int64_t n = 0;
  for (auto& x : params.leaves()) n += x.size();
  return n;
}

}  // namespace graft::nn
