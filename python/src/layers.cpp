// nn's C++ layers from Python (LayerNorm, BatchNorm, Embedding, MultiHeadAttention, TransformerBlock,
// TransformerLM): the same structs, their parameters as nested dicts and lists of arrays (the C++
// side's graft::Tree), so that they go through graft.jit, grad and the optimizers as any pytree.
#include "common.h"

#include <graft/nn/nn.h>

namespace graft::python {

using namespace pybind11::literals;

namespace {
Tree to_tree(py::handle h) {
  if (h.is_none()) return Tree();
  if (py::isinstance<py::dict>(h)) {
    std::map<std::string, Tree> d;
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(h)) d[py::str(k)] = to_tree(v);
    return Tree(d);
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    std::vector<Tree> l;
    for (auto v : h) l.push_back(to_tree(v));
    return Tree(l);
  }
  return Tree(to_array(h));
}

py::object from_tree(const Tree& t) {
  if (t.is_none()) return py::none();
  if (t.is_leaf()) return py::cast(t.array());
  if (t.is_list()) {
    py::list l;
    for (auto& x : t.items()) l.append(from_tree(x));
    return l;
  }
  py::dict d;
  for (auto& [k, v] : t.dict()) d[py::str(k)] = from_tree(v);
  return d;
}

nn::AttentionImpl attention_of(const std::string& s) {
  if (s == "fused") return nn::AttentionImpl::fused;
  if (s == "composite" || s == "xla") return nn::AttentionImpl::composite;
  throw py::value_error("attention must be 'fused' or 'composite', got '" + s + "'");
}

std::optional<Array> maybe_array(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_array(h);
}
}  // namespace

void bind_layers(py::module_& m) {
  py::class_<nn::LayerNorm>(m, "LayerNorm", "Layer normalization over the last axis; params {'scale', 'bias'}.")
      .def(py::init([](int64_t features, double eps) { return nn::LayerNorm{features, eps}; }), "features"_a,
           "eps"_a = 1e-5)
      .def("init", [](const nn::LayerNorm& l, py::handle dtype) { return from_tree(l.init(to_dtype(dtype))); },
           "dtype"_a = "float32")
      .def("__call__", [](const nn::LayerNorm& l, py::handle p, py::handle x) { return l(to_tree(p), to_array(x)); });
  py::class_<nn::BatchNorm>(m, "BatchNorm",
                            "Batch normalization over every axis but `axis`; params {'scale', 'bias'}, state "
                            "{'mean', 'var'}; __call__(params, state, x, train) -> (y, new state).")
      .def(py::init([](int64_t features, int64_t axis, double momentum, double eps) {
             return nn::BatchNorm{features, axis, momentum, eps};
           }),
           "features"_a, "axis"_a = 1, "momentum"_a = 0.9, "eps"_a = 1e-5)
      .def("init", [](const nn::BatchNorm& b, py::handle dtype) { return from_tree(b.init(to_dtype(dtype))); },
           "dtype"_a = "float32")
      .def("init_state", [](const nn::BatchNorm& b, py::handle dtype) { return from_tree(b.init_state(to_dtype(dtype))); },
           "dtype"_a = "float32")
      .def("__call__", [](const nn::BatchNorm& b, py::handle p, py::handle s, py::handle x, bool train) {
        auto [y, ns] = b(to_tree(p), to_tree(s), to_array(x), train);
        return py::make_tuple(y, from_tree(ns));
      }, "params"_a, "state"_a, "x"_a, "train"_a = true);
  py::class_<nn::Embedding>(m, "Embedding", "A lookup table [num, dim]; params {'table'}.")
      .def(py::init([](int64_t num, int64_t dim) { return nn::Embedding{num, dim}; }), "num"_a, "dim"_a)
      .def("init", [](const nn::Embedding& e, py::handle key, py::handle dtype) {
        return from_tree(e.init(to_array(key), to_dtype(dtype)));
      }, "key"_a, "dtype"_a = "float32")
      .def("__call__", [](const nn::Embedding& e, py::handle p, py::handle ids) { return e(to_tree(p), to_array(ids)); });
  py::class_<nn::MultiHeadAttention>(m, "MultiHeadAttention",
                                     "Multi-head self-attention [B, T, dim] -> [B, T, dim]; params {'query', 'key', "
                                     "'value', 'out'}, each a Linear's {'w', 'b'}.")
      .def(py::init([](int64_t dim, int64_t heads, bool causal, const std::string& attention) {
             return nn::MultiHeadAttention{dim, heads, causal, attention_of(attention)};
           }),
           "dim"_a, "heads"_a = 1, "causal"_a = false, "attention"_a = "fused")
      .def("init", [](const nn::MultiHeadAttention& a, py::handle key, py::handle dtype) {
        return from_tree(a.init(to_array(key), to_dtype(dtype)));
      }, "key"_a, "dtype"_a = "float32")
      .def("__call__", [](const nn::MultiHeadAttention& a, py::handle p, py::handle x) { return a(to_tree(p), to_array(x)); });
  py::class_<nn::TransformerBlock>(m, "TransformerBlock",
                                   "A pre-norm transformer block: x + attention(ln1(x)), then + mlp(ln2(x)).")
      .def(py::init([](int64_t dim, int64_t heads, int64_t mlp_ratio, bool causal, double dropout,
                       const std::string& attention) {
             return nn::TransformerBlock{dim, heads, mlp_ratio, causal, dropout, attention_of(attention)};
           }),
           "dim"_a, "heads"_a = 1, "mlp_ratio"_a = 4, "causal"_a = true, "dropout"_a = 0.0, "attention"_a = "fused")
      .def("init", [](const nn::TransformerBlock& b, py::handle key, py::handle dtype) {
        return from_tree(b.init(to_array(key), to_dtype(dtype)));
      }, "key"_a, "dtype"_a = "float32")
      .def("__call__", [](const nn::TransformerBlock& b, py::handle p, py::handle x, py::handle dropout_key) {
        return b(to_tree(p), to_array(x), maybe_array(dropout_key));
      }, "params"_a, "x"_a, "dropout_key"_a = py::none());
  py::class_<nn::TransformerLM>(m, "TransformerLM",
                                "A decoder-only language model: ids [B, T] -> logits [B, T, vocab].")
      .def(py::init([](int64_t vocab, int64_t dim, int64_t heads, int64_t layers, int64_t max_len, double dropout,
                       const std::string& attention) {
             return nn::TransformerLM{vocab, dim, heads, layers, max_len, dropout, attention_of(attention)};
           }),
           "vocab"_a = 256, "dim"_a = 128, "heads"_a = 4, "layers"_a = 2, "max_len"_a = 128, "dropout"_a = 0.0,
           "attention"_a = "fused")
      .def("init", [](const nn::TransformerLM& l, py::handle key, py::handle dtype) {
        return from_tree(l.init(to_array(key), to_dtype(dtype)));
      }, "key"_a, "dtype"_a = "float32")
      .def("__call__", [](const nn::TransformerLM& l, py::handle p, py::handle ids, py::handle dropout_key) {
        return l(to_tree(p), to_array(ids), maybe_array(dropout_key));
      }, "params"_a, "ids"_a, "dropout_key"_a = py::none());
}

}  // namespace graft::python
