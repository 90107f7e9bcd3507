// Attention and the transformer language model (declared in nn.h), written with the NumPy layer's
// operations only: they are differentiated, batched and compiled like every other composite (the
// softmax over keys becomes one fused row reduction under jit).
#include <cmath>
#include <limits>

#include "graft/nn/nn.h"
#include "graft/ops/ops.h"
#include "graft/random/random.h"

namespace graft::nn {

Array dot_product_attention(const Array& q, const Array& k, const Array& v, bool causal, const std::optional<Array>& mask,
                            AttentionImpl impl) {
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4)
    fail<ShapeError>("dot_product_attention: q, k and v must be [batch, length, heads, head_dim], got ", q.aval().str(),
                     ", ", k.aval().str(), " and ", v.aval().str());
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[2] != qs[2] || vs[2] != qs[2] || ks[3] != qs[3] || vs[1] != ks[1])
    fail<ShapeError>("dot_product_attention: q ", q.aval().str(), ", k ", k.aval().str(), " and v ", v.aval().str(),
                     " do not agree (q [B, T, H, D], k [B, S, H, D], v [B, S, H, Dv])");
  if (!is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail<TypeError>("dot_product_attention: q, k and v must share one floating dtype, got ", q.aval().str(), ", ",
                    k.aval().str(), " and ", v.aval().str());
  if (causal && qs[1] != ks[1])
    fail<ShapeError>("dot_product_attention: causal attention needs as many queries as keys, got ", qs[1], " and ", ks[1]);
  if (mask && mask->dtype() != DType::bool_)
    fail<TypeError>("dot_product_attention: the mask must be boolean, got ", mask->aval().str());
  if (impl == AttentionImpl::fused) return fused_attention(q, k, v, causal, mask);
  Array logits = einsum("bthd,bshd->bhts", {q, k}) * (1.0 / std::sqrt(static_cast<double>(qs[3])));
  std::optional<Array> allowed = mask;
  if (causal) {
    Array t = iota(DType::i32, {qs[1], ks[1]}, 0), s = iota(DType::i32, {qs[1], ks[1]}, 1);
    Array lower = t >= s;
    allowed = allowed ? logical_and(*allowed, lower) : lower;
  }
  if (!allowed) return einsum("bhts,bshd->bthd", {softmax(logits, -1), v});
  // masked pairs get the lowest finite logit (no NaN from -inf - -inf), then zero weight
  double lowest = q.dtype() == DType::f64 ? std::numeric_limits<double>::lowest() : -3.0e38;
  if (q.dtype() == DType::f16) lowest = -65504.0;
  Array w = softmax(where(*allowed, logits, full_like(logits, lowest)), -1);
  // a row where the mask allows nothing: zeros rather than a uniform average (a causal row always
  // has its own position)
  if (mask) w = where(any(broadcast_to(*allowed, logits.shape()), -1, true), w, zeros_like(w));
  return einsum("bhts,bshd->bthd", {w, v});
}

Tree MultiHeadAttention::init(const Array& key, DType d) const {
  if (dim <= 0 || heads <= 0 || dim % heads != 0)
    fail<ValueError>("MultiHeadAttention: dim (", dim, ") must be a positive multiple of heads (", heads, ")");
  Array ks = random::split(key, 4);
  Linear proj{dim, dim};
  return Tree::dict({{"query", proj.init(ks[0], d)}, {"key", proj.init(ks[1], d)}, {"value", proj.init(ks[2], d)},
                     {"out", proj.init(ks[3], d)}});
}

Array MultiHeadAttention::operator()(const Tree& params, const Array& x) const {
  if (x.ndim() != 3 || x.shape()[2] != dim)
    fail<ShapeError>("MultiHeadAttention: input ", x.aval().str(), " is not [batch, length, ", dim, "]");
  Linear proj{dim, dim};
  int64_t b = x.shape()[0], t = x.shape()[1];
  auto heads_of = [&](const char* name) { return reshape(proj(params[name], x), {b, t, heads, dim / heads}); };
  Array o = dot_product_attention(heads_of("query"), heads_of("key"), heads_of("value"), causal, std::nullopt, attention);
  return proj(params["out"], reshape(o, {b, t, dim}));
}

Tree TransformerBlock::init(const Array& key, DType d) const {
  Array ks = random::split(key, 3);
  return Tree::dict({{"ln1", LayerNorm{dim}.init(d)},
                     {"attn", MultiHeadAttention{dim, heads, causal}.init(ks[0], d)},
                     {"ln2", LayerNorm{dim}.init(d)},
                     {"fc1", Linear{dim, mlp_ratio * dim}.init(ks[1], d)},
                     {"fc2", Linear{mlp_ratio * dim, dim}.init(ks[2], d)}});
}

Array TransformerBlock::operator()(const Tree& params, const Array& x, const std::optional<Array>& dropout_key) const {
  auto drop = [&](const Array& h, uint32_t i) {
    return dropout_key && dropout > 0 ? nn::dropout(random::fold_in(*dropout_key, i), h, dropout) : h;
  };
  Array h = x + drop(MultiHeadAttention{dim, heads, causal, attention}(params["attn"], LayerNorm{dim}(params["ln1"], x)), 0);
  Array m = Linear{dim, mlp_ratio * dim}(params["fc1"], LayerNorm{dim}(params["ln2"], h));
  return h + drop(Linear{mlp_ratio * dim, dim}(params["fc2"], gelu(m)), 1);
}

Tree TransformerLM::init(const Array& key, DType d) const {
  if (vocab <= 0 || max_len <= 0 || layers < 0)
    fail<ValueError>("TransformerLM: vocab and max_len must be positive and layers not negative");
  Array ks = random::split(key, layers + 3);
  std::vector<Tree> blocks;
  for (int64_t i = 0; i < layers; ++i)
    blocks.push_back(TransformerBlock{dim, heads, 4, true, dropout}.init(ks[i + 3], d));
  return Tree::dict({{"tokens", Embedding{vocab, dim, normal_init(0.02)}.init(ks[0], d)},
                     {"positions", Embedding{max_len, dim, normal_init(0.02)}.init(ks[1], d)},
                     {"blocks", Tree(blocks)},
                     {"ln", LayerNorm{dim}.init(d)},
                     {"head", Linear{dim, vocab}.init(ks[2], d)}});
}

Array TransformerLM::operator()(const Tree& params, const Array& ids, const std::optional<Array>& dropout_key) const {
  if (ids.ndim() != 2 || !is_integer(ids.dtype()))
    fail<ShapeError>("TransformerLM: ids must be integers [batch, length], got ", ids.aval().str());
  int64_t t = ids.shape()[1];
  if (t > max_len) fail<ShapeError>("TransformerLM: ", t, " positions, more than max_len = ", max_len);
  Array pos = params["positions"]["table"].array()[{slice(0, t)}];
  Array h = Embedding{vocab, dim}(params["tokens"], ids) + pos;
  const Tree& blocks = params["blocks"];
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::optional<Array> k;
    if (dropout_key) k = random::fold_in(*dropout_key, static_cast<uint32_t>(i));
    h = TransformerBlock{dim, heads, 4, true, dropout, attention}(blocks[i], h, k);
  }
  return Linear{dim, vocab}(params["head"], LayerNorm{dim}(params["ln"], h));
}

}  // namespace graft::nn
