// ONNX export. The protobuf wire format is small enough to write by hand: varints, and fields that
// are a tag followed by a varint, four bytes, or a length and bytes. Field numbers are onnx.proto's
// (ONNX 1.12, IR version 8, opset 17).
#include "graft/io/onnx.h"

#include <cstring>
#include <functional>
#include <unordered_map>

#include "graft/io/safetensors.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/transforms/jit.h"

namespace graft::io {

namespace {

// ---- protobuf ----------------------------------------------------------------------------------------
class Proto {
 public:
  std::string bytes;

  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes.push_back(static_cast<char>(v));
  }
  void tag(int field, int wire) { varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire)); }
  void int_field(int field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));
  }
  void float_field(int field, float v) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    bytes.append(b, 4);
  }
  void bytes_field(int field, std::string_view s) {
    tag(field, 2);
    varint(s.size());
    bytes.append(s);
  }
  void message(int field, const Proto& m) { bytes_field(field, m.bytes); }
};

int onnx_type(DType d) {
  switch (d) {
    case DType::f32: return 1;
    case DType::u8: return 2;
    case DType::i8: return 3;
    case DType::u16: return 4;
    case DType::i16: return 5;
    case DType::i32: return 6;
    case DType::i64: return 7;
    case DType::bool_: return 9;
    case DType::f16: return 10;
    case DType::f64: return 11;
    case DType::u32: return 12;
    case DType::u64: return 13;
    case DType::bf16: return 16;
    case DType::c64: return 14;
    case DType::c128: return 15;
  }
  return 0;
}

Proto tensor(const std::string& name, const Array& a) {
  Array c = a.concretize("onnx");
  Proto t;
  for (int64_t d : c.shape()) t.int_field(1, d);
  t.int_field(2, onnx_type(c.dtype()));
  t.bytes_field(8, name);
  t.bytes_field(9, std::string_view(static_cast<const char*>(c.raw_data()), c.nbytes()));
  return t;
}

Proto value_info(const std::string& name, const Aval& a) {
  Proto shape;
  for (int64_t d : a.shape) {
    Proto dim;
    dim.int_field(1, d);
    shape.message(1, dim);
  }
  Proto tt;
  tt.int_field(1, onnx_type(a.dtype));
  tt.message(2, shape);
  Proto type;
  type.message(1, tt);
  Proto v;
  v.bytes_field(1, name);
  v.message(2, type);
  return v;
}

struct Attr {
  Proto p;
  static Attr ints(const char* name, const IntList& v) {
    Attr a;
    a.p.bytes_field(1, name);
    for (int64_t x : v) a.p.int_field(8, x);
    a.p.int_field(20, 7);  // INTS
    return a;
  }
  static Attr integer(const char* name, int64_t v) {
    Attr a;
    a.p.bytes_field(1, name);
    a.p.int_field(3, v);
    a.p.int_field(20, 2);  // INT
    return a;
  }
  static Attr str(const char* name, const std::string& v) {
    Attr a;
    a.p.bytes_field(1, name);
    a.p.bytes_field(4, v);
    a.p.int_field(20, 3);  // STRING
    return a;
  }
};

// ---- the graph ---------------------------------------------------------------------------------------
class Writer {
 public:
  explicit Writer(const Exported& e) : e_(e) {}

  std::string model() {
    const ClosedJaxpr& cj = e_.jaxpr();
    const Jaxpr& j = *cj.jaxpr;
    std::unordered_map<const Var*, std::string> names;
    for (size_t i = 0; i < j.constvars.size(); ++i) names[j.constvars[i].get()] = initializer(cj.consts[i]);
    for (size_t i = 0; i < j.invars.size(); ++i) {
      names[j.invars[i].get()] = e_.in_names()[i];
      graph_.message(11, value_info(e_.in_names()[i], j.invars[i]->aval));
    }
    std::vector<std::string> outs = body(j, names);
    for (size_t i = 0; i < outs.size(); ++i) {
      node("Identity", {outs[i]}, {e_.out_names()[i]});
      graph_.message(12, value_info(e_.out_names()[i], j.outvars[i].aval()));
    }
    graph_.bytes_field(2, e_.name());
    Proto opset;
    opset.bytes_field(1, "");
    opset.int_field(2, 17);
    Proto m;
    m.int_field(1, 8);  // IR version
    m.bytes_field(2, "graft");
    m.bytes_field(3, "0.1");
    m.message(8, opset);
    m.message(7, graph_);
    return m.bytes;
  }

 private:
  std::string fresh() { return "t" + std::to_string(counter_++); }

  std::string initializer(const Array& value) {
    std::string name = fresh();
    graph_.message(5, tensor(name, value));
    return name;
  }
  std::string ints_const(const IntList& v) {
    return initializer(Array::from_data(v.data(), {static_cast<int64_t>(v.size())}, DType::i64));
  }

  void node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
            const std::vector<Attr>& attrs = {}) {
    Proto n;
    for (auto& s : in) n.bytes_field(1, s);
    for (auto& s : out) n.bytes_field(2, s);
    n.bytes_field(3, "n" + std::to_string(nodes_++));
    n.bytes_field(4, op);
    for (auto& a : attrs) n.message(5, a.p);
    graph_.message(1, n);
  }
  std::string node1(const std::string& op, const std::vector<std::string>& in, const std::vector<Attr>& attrs = {}) {
    std::string out = fresh();
    node(op, in, {out}, attrs);
    return out;
  }

  [[noreturn]] void unsupported(const Eqn& e, const std::string& why) const {
    fail<NotImplementedError>("ONNX export of '", e_.name(), "': ", e.prim->name, " ", why);
  }

  std::vector<std::string> body(const Jaxpr& j, std::unordered_map<const Var*, std::string>& names) {
    auto name_of = [&](const Atom& a) { return a.is_literal() ? initializer(a.literal) : names.at(a.var.get()); };
    for (const Eqn& e : j.eqns) {
      std::vector<std::string> in;
      std::vector<Aval> in_avals;
      for (auto& a : e.inputs) {
        in.push_back(name_of(a));
        in_avals.push_back(a.aval());
      }
      std::vector<std::string> out;
      if (e.prim == &jit_p) {  // inlined
        const ClosedJaxpr& sub = e.params.get_jaxpr("jaxpr");
        std::unordered_map<const Var*, std::string> inner;
        for (size_t i = 0; i < sub.jaxpr->constvars.size(); ++i)
          inner[sub.jaxpr->constvars[i].get()] = initializer(sub.consts[i]);
        for (size_t i = 0; i < sub.jaxpr->invars.size(); ++i) inner[sub.jaxpr->invars[i].get()] = in[i];
        out = body(*sub.jaxpr, inner);
      } else {
        out = {lower(e, in, in_avals)};
        if (e.outputs.size() != 1) unsupported(e, "with several results");
      }
      for (size_t k = 0; k < e.outputs.size(); ++k) names[e.outputs[k].get()] = out[k];
    }
    std::vector<std::string> outs;
    for (auto& a : j.outvars) outs.push_back(name_of(a));
    return outs;
  }

  std::string lower(const Eqn& e, const std::vector<std::string>& in, const std::vector<Aval>& in_avals) {
    using namespace prims;
    const Primitive* p = e.prim;
    const Aval& out = e.outputs[0]->aval;
    // ONNX's operators take no complex tensors (the type exists for storage only)
    bool cplx = is_complex(out.dtype);
    for (auto& a : in_avals) cplx = cplx || is_complex(a.dtype);
    if (cplx) unsupported(e, "of complex values (ONNX's operators have no complex forms)");
    static const std::unordered_map<const Primitive*, const char*> simple = {
        {&add_p, "Add"},     {&sub_p, "Sub"},         {&mul_p, "Mul"},       {&div_p, "Div"},
        {&max_p, "Max"},     {&min_p, "Min"},         {&pow_p, "Pow"},       {&neg_p, "Neg"},
        {&exp_p, "Exp"},     {&log_p, "Log"},         {&tanh_p, "Tanh"},     {&logistic_p, "Sigmoid"},
        {&sqrt_p, "Sqrt"},   {&abs_p, "Abs"},         {&sin_p, "Sin"},       {&cos_p, "Cos"},
        {&floor_p, "Floor"}, {&ceil_p, "Ceil"},       {&sign_p, "Sign"},     {&erf_p, "Erf"},
        {&eq_p, "Equal"},    {&lt_p, "Less"},         {&le_p, "LessOrEqual"}, {&gt_p, "Greater"},
        {&ge_p, "GreaterOrEqual"}, {&and__p, "And"},  {&or__p, "Or"},         {&not__p, "Not"},
        {&stop_gradient_p, "Identity"}, {&copy_p, "Identity"}};
    if (auto it = simple.find(p); it != simple.end()) {
      if ((p == &and__p || p == &or__p || p == &not__p) && in_avals[0].dtype != DType::bool_)
        unsupported(e, "of integers (ONNX's And/Or/Not take booleans)");
      return node1(it->second, in);
    }
    if (p == &ne_p) return node1("Not", {node1("Equal", in)});
    if (p == &rsqrt_p) return node1("Reciprocal", {node1("Sqrt", in)});
    if (p == &square_p) return node1("Mul", {in[0], in[0]});
    if (p == &integer_pow_p)
      return node1("Pow", {in[0], initializer(Array::scalar(static_cast<double>(e.params.get_int("y")), out.dtype))});
    if (p == &convert_element_type_p) return node1("Cast", in, {Attr::integer("to", onnx_type(out.dtype))});
    if (p == &select_n_p) {
      if (in.size() != 3 || in_avals[0].dtype != DType::bool_) unsupported(e, "with an integer index (only boolean)");
      return node1("Where", {in[0], in[2], in[1]});
    }
    if (p == &reshape_p) return node1("Reshape", {in[0], ints_const(IntList(out.shape.begin(), out.shape.end()))});
    if (p == &squeeze_p) return node1("Reshape", {in[0], ints_const(IntList(out.shape.begin(), out.shape.end()))});
    if (p == &transpose_p) return node1("Transpose", in, {Attr::ints("perm", e.params.get_ints("permutation"))});
    if (p == &broadcast_in_dim_p) {
      // the operand's dimensions placed where broadcast_dimensions says, 1 elsewhere, then expanded
      const IntList& bd = e.params.get_ints("broadcast_dimensions");
      IntList mid(out.shape.size(), 1);
      for (size_t i = 0; i < bd.size(); ++i) mid[static_cast<size_t>(bd[i])] = in_avals[0].shape[i];
      std::string r = node1("Reshape", {in[0], ints_const(mid)});
      return node1("Expand", {r, ints_const(IntList(out.shape.begin(), out.shape.end()))});
    }
    if (p == &reduce_sum_p)
      return node1("ReduceSum", {in[0], ints_const(e.params.get_ints("axes"))}, {Attr::integer("keepdims", 0)});
    if (p == &reduce_max_p || p == &reduce_min_p)
      return node1(p == &reduce_max_p ? "ReduceMax" : "ReduceMin", in,
                   {Attr::ints("axes", e.params.get_ints("axes")), Attr::integer("keepdims", 0)});
    if (p == &argmax_p || p == &argmin_p) {
      const IntList& axes = e.params.get_ints("axes");
      if (axes.size() != 1) unsupported(e, "over several axes");
      std::string r = node1(p == &argmax_p ? "ArgMax" : "ArgMin", in,
                            {Attr::integer("axis", axes[0]), Attr::integer("keepdims", 0),
                             Attr::integer("select_last_index", 0)});
      return out.dtype == DType::i64 ? r : node1("Cast", {r}, {Attr::integer("to", onnx_type(out.dtype))});
    }
    if (p == &concatenate_p) return node1("Concat", in, {Attr::integer("axis", e.params.get_int("dimension"))});
    if (p == &dot_general_p) return dot(e, in, in_avals);
    if (p == &conv_general_dilated_p) return conv(e, in);
    if (p == &reduce_window_max_p) return max_pool(e, in, in_avals);
    unsupported(e, "has no ONNX mapping here");
  }

  std::string dot(const Eqn& e, const std::vector<std::string>& in, const std::vector<Aval>& a) {
    const auto& d = e.params.get_object<lax::DotDims>("dimension_numbers");
    if (a[0].shape.size() == 2 && a[1].shape.size() == 2 && d.lhs_contract == IntList{1} &&
        d.rhs_contract == IntList{0} && d.lhs_batch.empty())
      return node1("MatMul", in);
    // the general case as an einsum: batch dimensions first, then lhs's free ones, then rhs's
    std::string l(a[0].shape.size(), '?'), r(a[1].shape.size(), '?'), o;
    char next = 'a';
    for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
      l[static_cast<size_t>(d.lhs_batch[i])] = r[static_cast<size_t>(d.rhs_batch[i])] = next;
      o += next++;
    }
    for (size_t i = 0; i < d.lhs_contract.size(); ++i)
      l[static_cast<size_t>(d.lhs_contract[i])] = r[static_cast<size_t>(d.rhs_contract[i])] = next++;
    for (char& c : l)
      if (c == '?') o += (c = next++);
    for (char& c : r)
      if (c == '?') o += (c = next++);
    if (next > 'z') unsupported(e, "with more than 26 dimensions");
    return node1("Einsum", in, {Attr::str("equation", l + "," + r + "->" + o)});
  }

  static IntList pads_of(const lax::IntTuples& t, size_t skip) {
    IntList begin, end;
    for (size_t i = skip; i < t.items.size(); ++i) {
      begin.push_back(t.items[i].at(0));
      end.push_back(t.items[i].at(1));
    }
    begin.insert(begin.end(), end.begin(), end.end());
    return begin;
  }

  std::string conv(const Eqn& e, const std::vector<std::string>& in) {
    const auto& d = e.params.get_object<lax::ConvDims>("dimension_numbers");
    IntList id;
    for (size_t i = 0; i < d.lhs_spec.size(); ++i) id.push_back(static_cast<int64_t>(i));
    if (d.lhs_spec != id || d.rhs_spec != id || d.out_spec != id) unsupported(e, "in a layout other than NCHW / OIHW");
    for (int64_t x : e.params.get_ints("lhs_dilation"))
      if (x != 1) unsupported(e, "with an input dilation (a transposed convolution)");
    if (e.params.get_int("batch_group_count") != 1) unsupported(e, "with batch groups");
    return node1("Conv", in,
                 {Attr::ints("strides", e.params.get_ints("window_strides")),
                  Attr::ints("dilations", e.params.get_ints("rhs_dilation")),
                  Attr::ints("pads", pads_of(e.params.get_object<lax::IntTuples>("padding"), 0)),
                  Attr::integer("group", e.params.get_int("feature_group_count"))});
  }

  std::string max_pool(const Eqn& e, const std::vector<std::string>& in, const std::vector<Aval>& a) {
    const IntList& win = e.params.get_ints("window_dimensions");
    const IntList& strides = e.params.get_ints("window_strides");
    const auto& pad = e.params.get_object<lax::IntTuples>("padding");
    bool plain = a[0].shape.size() >= 3 && win[0] == 1 && win[1] == 1 && strides[0] == 1 && strides[1] == 1 &&
                 pad.items[0] == IntList{0, 0} && pad.items[1] == IntList{0, 0};
    for (int64_t x : e.params.get_ints("base_dilation")) plain = plain && x == 1;
    if (!plain) unsupported(e, "other than pooling over the spatial dimensions of NCHW");
    IntList dil(e.params.get_ints("window_dilation").begin() + 2, e.params.get_ints("window_dilation").end());
    return node1("MaxPool", in,
                 {Attr::ints("kernel_shape", IntList(win.begin() + 2, win.end())),
                  Attr::ints("strides", IntList(strides.begin() + 2, strides.end())), Attr::ints("dilations", dil),
                  Attr::ints("pads", pads_of(pad, 2))});
  }

  const Exported& e_;
  Proto graph_;
  int counter_ = 0, nodes_ = 0;
};

}  // namespace

std::string onnx_model_bytes(const Exported& program) { return Writer(program).model(); }

void save_onnx(const std::string& path, const Exported& program) {
  write_file_atomic(path, onnx_model_bytes(program));
}

}  // namespace graft::io
