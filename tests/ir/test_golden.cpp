// Golden jaxpr tests: make_jaxpr of a dozen functions and their derivatives, printed in JAX's text
// format. The expected texts were checked by hand against JAX's rules (the first two are JAX's own
// documented output for sin(cos(x)) and its grad, character for character).
#include "testing.h"

namespace graft {
namespace {

std::string str(const ClosedJaxpr& j) { return testing::golden(j); }

class Golden : public ::testing::Test {
 protected:
  Array s = array(3.0f);
  Array v = array({1.0f, 2.0f, 3.0f, 4.0f});
  Array m = ones({2, 3});
  Array W = ones({3, 2}), b = zeros({2});
  static Array f1(const Array& x) { return sin(cos(x)); }
  static Array f2(const Array& x, const Array& y) { return x * y; }
  static Array f3(const Array& x) { return sum(tanh(x) * 0.5 + x * x - 1.0); }
  std::function<Array(const Array&)> f4 = [this](const Array& x) { return relu(matmul(x, W) + b); };
  std::function<Array(const Array&)> f4s = [this](const Array& x) { return sum(relu(matmul(x, W) + b)); };
  static Array f5(const Array& x) { return softmax(x); }
  static Array f6(const Array& x) { return mean(square(x)); }
  static Array f7(const Array& x) { return where(x > 0.0, x, x * 0.1); }
  static Array f8(const Array& x) { return x[{slice(1, 3)}]; }
  static Array f8b(const Array& x) { return x.at({0}).set(5.0); }
  std::function<Array(const Array&)> f9 = jit([](const Array& x) { return sin(x) * 2.0; });
  static Array f10(const Array& x) { return sum(x * x); }
  static Array f11(const Array& x) { return argmax(x, 1).astype(f32); }
  static Array f12(const Array& x) { return logsumexp(x); }
  static Array f13(const Array& x) { return reshape(transpose(x), {6}); }
  static Array f13s(const Array& x) { return sum(reshape(transpose(x), {6}) * 2.0); }
  static Array f14(const Array& x) { return x / 2 + 1; }
};

TEST_F(Golden, sin_cos) {
  EXPECT_EQ(str(make_jaxpr(f1)(s)), R"({ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = sin b in (c,) })");
}

TEST_F(Golden, grad_sin_cos) {
  EXPECT_EQ(str(make_jaxpr(grad(f1))(s)), R"({ lambda ; a:f32[]. let
    b:f32[] = cos a
    c:f32[] = sin a
    _:f32[] = sin b
    d:f32[] = cos b
    e:f32[] = mul 1.0:f32[] d
    f:f32[] = neg e
    g:f32[] = mul f c
  in (g,) })");
}

TEST_F(Golden, mul) {
  EXPECT_EQ(str(make_jaxpr(f2)(s, s)), R"({ lambda ; a:f32[] b:f32[]. let c:f32[] = mul a b in (c,) })");
}

TEST_F(Golden, grad_mul_argnums) {
  EXPECT_EQ(str(make_jaxpr(grad(f2, {0, 1}))(s, s)), R"({ lambda ; a:f32[] b:f32[]. let
    _:f32[] = mul a b
    c:f32[] = mul 1.0:f32[] a
    d:f32[] = mul 1.0:f32[] b
  in (d, c) })");
}

TEST_F(Golden, chain_with_weak_scalars) {
  EXPECT_EQ(str(make_jaxpr(f3)(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = mul a a
    c:f32[4] = tanh a
    d:f32[4] = mul c 0.5:f32[]
    e:f32[4] = add d b
    f:f32[4] = sub e 1.0:f32[]
    g:f32[] = reduce_sum[axes=(0,)] f
  in (g,) })");
}

TEST_F(Golden, grad_chain) {
  EXPECT_EQ(str(make_jaxpr(grad(f3))(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = mul a a
    c:f32[4] = tanh a
    d:f32[4] = square c
    e:f32[4] = sub 1.0:f32[] d
    f:f32[4] = mul c 0.5:f32[]
    g:f32[4] = add f b
    h:f32[4] = sub g 1.0:f32[]
    _:f32[] = reduce_sum[axes=(0,)] h
    i:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] 1.0:f32[]
    j:f32[4] = mul i 0.5:f32[]
    k:f32[4] = mul j e
    l:f32[4] = mul i a
    m:f32[4] = add_any k l
    n:f32[4] = mul i a
    o:f32[4] = add_any m n
  in (o,) })");
}

TEST_F(Golden, dense_relu_closure) {
  EXPECT_EQ(str(make_jaxpr(f4)(m)), R"({ lambda a:f32[3,2] b:f32[2]; c:f32[2,3]. let
    d:f32[2,2] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] c a
    e:f32[2,2] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 2)] b
    f:f32[2,2] = add d e
    g:bool[2,2] = gt f 0.0:f32[]
    h:f32[2,2] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(2, 2)
    ] 0.0:f32[]
    i:f32[2,2] = select_n g h f
  in (i,) })");
}

TEST_F(Golden, grad_dense_relu) {
  EXPECT_EQ(str(make_jaxpr(grad(f4s))(m)), R"({ lambda a:f32[3,2] b:f32[2]; c:f32[2,3]. let
    d:f32[2,2] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] c a
    e:f32[2,2] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 2)] b
    f:f32[2,2] = add d e
    g:bool[2,2] = gt f 0.0:f32[]
    h:f32[2,2] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(2, 2)
    ] 0.0:f32[]
    i:f32[2,2] = select_n g h f
    _:f32[2,2] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(2, 2)
    ] 0.0:f32[]
    _:f32[] = reduce_sum[axes=(0, 1)] i
    j:f32[2,2] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(2, 2)
    ] 1.0:f32[]
    k:f32[2,2] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(2, 2)
    ] 0.0:f32[]
    l:f32[2,2] = select_n g k j
    m:f32[2,3] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      precision=None
      preferred_element_type=None
    ] l a
  in (m,) })");
}

TEST_F(Golden, softmax) {
  EXPECT_EQ(str(make_jaxpr(f5)(m)), R"({ lambda ; a:f32[2,3]. let
    b:f32[2] = reduce_max[axes=(1,)] a
    c:f32[2] = stop_gradient b
    d:f32[2,1] = reshape[new_sizes=(2, 1)] c
    e:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] d
    f:f32[2,3] = sub a e
    g:f32[2,3] = exp f
    h:f32[2] = reduce_sum[axes=(1,)] g
    i:f32[2,1] = reshape[new_sizes=(2, 1)] h
    j:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] i
    k:f32[2,3] = div g j
  in (k,) })");
}

TEST_F(Golden, mean_square) {
  EXPECT_EQ(str(make_jaxpr(f6)(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = square a
    c:f32[] = reduce_sum[axes=(0,)] b
    d:f32[] = div c 4.0:f32[]
  in (d,) })");
}

TEST_F(Golden, grad_mean_square) {
  EXPECT_EQ(str(make_jaxpr(grad(f6))(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = square a
    c:f32[4] = mul 2.0:f32[] a
    d:f32[] = reduce_sum[axes=(0,)] b
    _:f32[] = div d 4.0:f32[]
    e:f32[] = div 1.0:f32[] 4.0:f32[]
    f:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] e
    g:f32[4] = mul f c
  in (g,) })");
}

TEST_F(Golden, where) {
  EXPECT_EQ(str(make_jaxpr(f7)(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = mul a 0.1:f32[]
    c:bool[4] = gt a 0.0:f32[]
    d:f32[4] = select_n c b a
  in (d,) })");
}

TEST_F(Golden, slice) {
  EXPECT_EQ(str(make_jaxpr(f8)(v)), R"({ lambda ; a:f32[4]. let
    b:f32[2] = slice[limit_indices=(3,) start_indices=(1,) strides=None] a
  in (b,) })");
}

// JAX 0.11's spelling of the custom-derivative calls (its _custom_jvp_call_pp_rule and
// _custom_vjp_call_pp_rule): the function's name first, the rules by name, num_consts only when not 0.
// The rules are functions, so the parsed program holds their names only: the text round-trips exactly.
TEST_F(Golden, custom_jvp_and_custom_vjp_calls) {
  auto str = [](const ClosedJaxpr& j) {
    std::string text = j.str();
    EXPECT_EQ(parse_jaxpr(text, jaxpr_constants(j)).str(), text);
    return text;
  };
  auto softplus = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                             [](const std::vector<Array>& p, const std::vector<Array>& t) {
                               return std::make_pair(log1p(exp(p[0])), t[0] * sigmoid(p[0]));
                             });
  EXPECT_EQ(str(make_jaxpr([&](const Array& x) { return softplus(x); })(s)), R"({ lambda ; a:f32[]. let
    b:f32[] = custom_jvp_call[
      name=custom_jvp
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = exp c; e:f32[] = log1p d in (e,) }
      jvp=custom_jvp_jvp
      symbolic_zeros=False
    ] a
  in (b,) })");
  auto clip_grad = custom_vjp([](const Array& x) { return x * 1.0; },
                              [](const std::vector<Array>& p) { return std::make_pair(p[0], std::vector<Array>{}); },
                              [](const std::vector<Array>&, const Array& ct) { return std::vector<Array>{ct}; });
  EXPECT_EQ(str(make_jaxpr([&](const Array& x) { return clip_grad(x * s); })(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = mul a 3.0:f32[]
    c:f32[4] = custom_vjp_call[
      name=custom_vjp
      bwd=custom_vjp_bwd
      call_jaxpr={ lambda ; d:f32[4]. let e:f32[4] = mul d 1.0:f32[] in (e,) }
      fwd=custom_vjp_fwd
      symbolic_zeros=False
    ] b
  in (c,) })");
}

TEST_F(Golden, at_set) {
  EXPECT_EQ(str(make_jaxpr(f8b)(v)), R"({ lambda ; a:f32[4]. let
    b:f32[1] = reshape[new_sizes=(1,)] 5.0:f32[]
    c:f32[4] = dynamic_update_slice a b 0:i32[]
  in (c,) })");
}

TEST_F(Golden, nested_jit) {
  EXPECT_EQ(str(make_jaxpr([&](const Array& x) { return f9(x) + 1.0; })(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[4]. let
          c:f32[4] = sin a
          b:f32[4] = mul c 2.0:f32[]
        in (b,) }
    ] a
    d:f32[4] = add b 1.0:f32[]
  in (d,) })");
}

TEST_F(Golden, grad_of_jit) {
  EXPECT_EQ(str(make_jaxpr(grad([&](const Array& x) { return sum(f9(x)); }))(v)), R"({ lambda ; a:f32[4]. let
    b:f32[4] c:f32[4] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[4]. let
          d:f32[4] = sin a
          c:f32[4] = cos a
          b:f32[4] = mul d 2.0:f32[]
        in (b, c) }
    ] a
    _:f32[] = reduce_sum[axes=(0,)] b
    e:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] 1.0:f32[]
    f:f32[4] = mul e 2.0:f32[]
    g:f32[4] = mul f c
  in (g,) })");
}

TEST_F(Golden, vmap) {
  EXPECT_EQ(str(make_jaxpr(vmap(f10))(m)), R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = mul a a
    c:f32[2] = reduce_sum[axes=(1,)] b
  in (c,) })");
}

TEST_F(Golden, vmap_grad) {
  EXPECT_EQ(str(make_jaxpr(vmap(grad(f10)))(m)), R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = mul a a
    _:f32[2] = reduce_sum[axes=(1,)] b
    c:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 1.0:f32[]
    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] c
    e:f32[2,3] = mul d a
    f:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] c
    g:f32[2,3] = mul f a
    h:f32[2,3] = add_any e g
  in (h,) })");
}

TEST_F(Golden, argmax_convert) {
  EXPECT_EQ(str(make_jaxpr(f11)(m)), R"({ lambda ; a:f32[2,3]. let
    b:i32[2] = argmax[axes=(1,) index_dtype=int32] a
    c:f32[2] = convert_element_type[new_dtype=float32 weak_type=False] b
  in (c,) })");
}

TEST_F(Golden, logsumexp) {
  EXPECT_EQ(str(make_jaxpr(f12)(v)), R"({ lambda ; a:f32[4]. let
    b:f32[] = reduce_max[axes=(0,)] a
    c:f32[] = stop_gradient b
    d:bool[] = is_finite c
    e:f32[] = select_n d 0.0:f32[] c
    f:f32[1] = reshape[new_sizes=(1,)] e
    g:f32[4] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4,)] f
    h:f32[4] = sub a g
    i:f32[4] = exp h
    j:f32[] = reduce_sum[axes=(0,)] i
    k:f32[] = log j
    l:f32[] = add k e
  in (l,) })");
}

TEST_F(Golden, transpose_reshape) {
  EXPECT_EQ(str(make_jaxpr(f13)(m)), R"({ lambda ; a:f32[2,3]. let
    b:f32[3,2] = transpose[permutation=(1, 0)] a
    c:f32[6] = reshape[new_sizes=(6,)] b
  in (c,) })");
}

TEST_F(Golden, grad_transpose_reshape) {
  EXPECT_EQ(str(make_jaxpr(grad(f13s))(m)), R"({ lambda ; a:f32[2,3]. let
    b:f32[3,2] = transpose[permutation=(1, 0)] a
    c:f32[6] = reshape[new_sizes=(6,)] b
    d:f32[6] = mul c 2.0:f32[]
    _:f32[] = reduce_sum[axes=(0,)] d
    e:f32[6] = broadcast_in_dim[broadcast_dimensions=() shape=(6,)] 1.0:f32[]
    f:f32[6] = mul e 2.0:f32[]
    g:f32[3,2] = reshape[new_sizes=(3, 2)] f
    h:f32[2,3] = transpose[permutation=(1, 0)] g
  in (h,) })");
}

TEST_F(Golden, int_true_divide) {
  EXPECT_EQ(str(make_jaxpr(f14)(array({1, 2, 3}))), R"({ lambda ; a:i32[3]. let
    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a
    c:f32[3] = div b 2.0:f32[]
    d:f32[3] = add c 1.0:f32[]
  in (d,) })");
}

}  // namespace
}  // namespace graft
