// graft/ops/numpy_dtypes.h and numpy_sets.h against NumPy's values (printed by NumPy 1.24): the dtype
// vocabulary (can_cast against NumPy's whole casting table, finfo / iinfo), nonzero and friends with and
// without size (under jit), unique_all, the set operations, lexsort, choose, put / place / fill_diagonal /
// put_along_axis, histograms, top_k and bitwise_count, with their errors.
#include "graft/ops/numpy_dtypes.h"
#include "graft/ops/numpy_sets.h"
#include "ops/numpy_testing.h"

namespace graft::testing {
namespace {

TEST(NumpyDtypes, ScalarTypesAndKinds) {
  static_assert(dtype<float32>() == f32 && dtype<int8>() == i8 && dtype<uint64>() == u64 && dtype<float_>() == f64);
  static_assert(dtype<graft::float16>() == f16 && dtype<graft::bfloat16>() == bf16 && dtype<int_>() == i64);
  EXPECT_EQ(dtype("float32"), f32);
  EXPECT_EQ(dtype("bf16"), bf16);
  EXPECT_TRUE(issubdtype<floating>(bf16) && issubdtype<inexact>(c64) && !issubdtype<floating>(c64));
  EXPECT_TRUE(issubdtype<signedinteger>(i8) && !issubdtype<signedinteger>(u8) && issubdtype<integer>(u8));
  EXPECT_TRUE(issubdtype<number>(i32) && !issubdtype<number>(bool_) && issubdtype<generic>(bool_));
  EXPECT_TRUE(issubdtype<float32>(f32) && !issubdtype<float32>(f64) && !issubdtype<flexible>(f32));
  EXPECT_TRUE(isdtype(i16, "signed integer") && isdtype(u16, "integral") && !isdtype(f16, "integral"));
  EXPECT_TRUE(isdtype(c128, "complex floating") && isdtype(f32, "numeric") && isdtype(f32, "float32"));
  expect_throws<ValueError>([] { return isdtype(f32, "floaty"); }, "unknown kind 'floaty'");
  EXPECT_TRUE(isscalar(ones({})) && !isscalar(ones({1})) && iterable(ones({2})));
}

TEST(NumpyDtypes, CanCastIsNumpysTable) {
  // numpy.can_cast(row, column, casting) over bool, i8..i64, u8..u64, f16, f32, f64, c64, c128
  const std::vector<DType> ts = {bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64, c64, c128};
  const std::vector<std::string> safe = {"11111111111111", "01111000011111", "00111000001111", "00011000000101",
                                         "00001000000101", "00111111111111", "00011011101111", "00001001100101",
                                         "00000000100101", "00000000011111", "00000000001111", "00000000000101",
                                         "00000000000011", "00000000000001"};
  const std::vector<std::string> same_kind = {"11111111111111", "01111000011111", "01111000011111", "01111000011111",
                                              "01111000011111", "01111111111111", "01111111111111", "01111111111111",
                                              "01111111111111", "00000000011111", "00000000011111", "00000000011111",
                                              "00000000000011", "00000000000011"};
  for (size_t i = 0; i < ts.size(); ++i)
    for (size_t j = 0; j < ts.size(); ++j) {
      EXPECT_EQ(can_cast(ts[i], ts[j]), safe[i][j] == '1') << ts[i] << " -> " << ts[j];
      EXPECT_EQ(can_cast(ts[i], ts[j], "same_kind"), same_kind[i][j] == '1') << ts[i] << " -> " << ts[j];
      EXPECT_EQ(can_cast(ts[i], ts[j], "no"), i == j);
      EXPECT_TRUE(can_cast(ts[i], ts[j], "unsafe"));
    }
  // bfloat16 (ml_dtypes): up to f32 / f64 / complex, not to or from f16
  EXPECT_TRUE(can_cast(bf16, f32) && can_cast(bool_, bf16) && !can_cast(bf16, f16) && !can_cast(f16, bf16));
  expect_throws<ValueError>([] { return can_cast(f32, f64, "kindly"); }, "casting must be");
  EXPECT_EQ(result_type(std::vector<DType>{i8, u8}), i16);
  EXPECT_EQ(result_type(std::vector<DType>{f16, bf16}), f32);
  EXPECT_EQ(result_type(std::vector<Array>{ones({2}, f16), Array::scalar(2.0, f32, true)}), f16);
}

TEST(NumpyDtypes, LimitsAreNumpys) {
  finfo h(f16), s(c64), d(f64), b(bf16);
  EXPECT_EQ(h.bits, 16);
  EXPECT_EQ(h.nmant, 10);
  EXPECT_EQ(h.maxexp, 16);
  EXPECT_EQ(h.minexp, -14);
  EXPECT_EQ(h.precision, 3);
  EXPECT_DOUBLE_EQ(h.max, 65504.0);
  EXPECT_DOUBLE_EQ(h.tiny, 6.103515625e-05);
  EXPECT_DOUBLE_EQ(h.smallest_subnormal, 5.960464477539063e-08);
  EXPECT_EQ(s.dtype, f32);
  EXPECT_DOUBLE_EQ(s.eps, 1.1920928955078125e-07);
  EXPECT_DOUBLE_EQ(s.max, 3.4028234663852886e+38);
  EXPECT_DOUBLE_EQ(s.resolution, 1e-6);
  EXPECT_DOUBLE_EQ(d.eps, 2.220446049250313e-16);
  EXPECT_DOUBLE_EQ(d.epsneg, 1.1102230246251565e-16);
  EXPECT_DOUBLE_EQ(d.max, 1.7976931348623157e+308);
  EXPECT_DOUBLE_EQ(d.tiny, 2.2250738585072014e-308);
  EXPECT_EQ(d.precision, 15);
  EXPECT_DOUBLE_EQ(b.eps, 0.0078125);
  EXPECT_DOUBLE_EQ(b.max, 3.3895313892515355e+38);
  EXPECT_EQ(b.precision, 2);
  EXPECT_EQ(iinfo(i8).min, -128);
  EXPECT_EQ(iinfo(i8).max, 127u);
  EXPECT_EQ(iinfo(u64).max, ~uint64_t(0));
  EXPECT_EQ(iinfo(i64).min, INT64_MIN);
  expect_throws<ValueError>([] { return iinfo(bool_); }, "not an integer");
  expect_throws<ValueError>([] { return finfo(i32); }, "not an inexact");
  expect_throws<ValueError>([] { return iinfo(f32); }, "not an integer");
}

TEST(NumpySets, WhereTheValuesAre) {
  Array m = arr({0, 1, 0, 2, 0, 3}, {2, 3});
  std::vector<Array> ij = nonzero(m);
  ASSERT_EQ(ij.size(), 2u);
  EXPECT_TRUE(is(ij[0], default_int_dtype(), {3}, {0, 1, 1}));
  EXPECT_TRUE(is(ij[1], default_int_dtype(), {3}, {1, 0, 2}));
  EXPECT_TRUE(is(argwhere(m), default_int_dtype(), {3, 2}, {0, 1, 1, 0, 1, 2}));
  EXPECT_TRUE(is(flatnonzero(m), default_int_dtype(), {3}, {1, 3, 5}));
  // with size: cut or padded, and the same under jit
  EXPECT_TRUE(is(flatnonzero(m, 5, -1), default_int_dtype(), {5}, {1, 3, 5, -1, -1}));
  EXPECT_TRUE(is(jit([](const Array& x) { return flatnonzero(x, 2); })(m), default_int_dtype(), {2}, {1, 3}));
  EXPECT_TRUE(is(jit([](const Array& x) { return argwhere(x, 4); })(m), default_int_dtype(), {4, 2},
                 {0, 1, 1, 0, 1, 2, 0, 0}));
  expect_throws<ConcretizationError>([&] { return jit([](const Array& x) { return flatnonzero(x); })(m); }, "size=");
  EXPECT_TRUE(is(extract(m > arr({1}, {}), m * 10.0), f64, {2}, {20, 30}));
  EXPECT_TRUE(is(compress(arr({0, 1, 1}, {3}), m, 1), f64, {2, 2}, {1, 0, 0, 3}));
  EXPECT_TRUE(is(choose(arr({2, 3, 1, 0}, {4}, i32),
                        {arr({0, 1, 2, 3}, {4}), arr({10, 11, 12, 13}, {4}), arr({20, 21, 22, 23}, {4}),
                         arr({30, 31, 32, 33}, {4})}),
                 f64, {4}, {20, 31, 12, 3}));
  EXPECT_TRUE(is(choose(arr({5, -1}, {2}, i32), {arr({0, 1}, {2}), arr({10, 11}, {2})}, "clip"), f64, {2}, {10, 1}));
  expect_throws<ValueError>([] { return choose(arr({2}, {1}, i32), {arr({1}, {1})}); }, "out of range");
  EXPECT_TRUE(is(lexsort({arr({1, 5, 1, 4, 3}, {5}), arr({4, 4, 1, 3, 1}, {5})}), default_int_dtype(), {5},
                 {2, 4, 3, 0, 1}));
  Array x = arr({3, 1, 4, 1, 5, 9, 2, 6}, {8});
  Array p = partition(x, 3);
  EXPECT_TRUE(is(p, f64, {8}, {1, 1, 2, 3, 4, 5, 6, 9}));
  auto [vals, idx] = top_k(x, 3);
  EXPECT_TRUE(is(vals, f64, {3}, {9, 6, 5}));
  EXPECT_TRUE(is(idx, i32, {3}, {5, 7, 4}));
  EXPECT_TRUE(is(top_k(arr({2, 7, 7, 1}, {4}, u8), 2).second, i32, {2}, {1, 2}));  // ties: lower index first
  // integers at their extremes (negating INT_MIN wraps) and large u64
  EXPECT_TRUE(is(top_k(arr({-2147483648.0, 0, 5}, {3}, i32), 2).first, i32, {2}, {5, 0}));
  EXPECT_EQ(top_k(Array::scalar(0, u64).reshape({1}) + arr({9223372036854775808.0, 1}, {2}, u64), 1).second.item<int32_t>(), 0);
  // empty inputs with a size give the fill value
  EXPECT_TRUE(is(extract(zeros({0}, bool_), zeros({0}, f64), 2, -1), f64, {2}, {-1, -1}));
  EXPECT_TRUE(is(intersect1d(zeros({0}, f64), arr({1}, {1}), 2, 3), f64, {2}, {3, 3}));
  expect_throws<ValueError>([] { return flatnonzero(ones({3}), -1); }, "size must be non-negative");
  expect_throws<ValueError>([] { return compress(arr({0, 1, 1}, {3}), ones({2})); }, "condition selects");
  expect_throws<TypeError>([] { return lexsort({}); }, "at least one key");
}

TEST(NumpySets, UniqueAndSets) {
  Array x = arr({3, 1, 2, 3, 1, 5, 0, 2, 2}, {9}, i32);
  UniqueResult r = unique_all(x);
  EXPECT_TRUE(is(r.values, i32, {5}, {0, 1, 2, 3, 5}));
  EXPECT_TRUE(is(r.indices, default_int_dtype(), {5}, {6, 1, 2, 0, 5}));
  EXPECT_TRUE(is(r.inverse_indices, default_int_dtype(), {9}, {3, 1, 2, 3, 1, 4, 0, 2, 2}));
  EXPECT_TRUE(is(r.counts, default_int_dtype(), {5}, {1, 2, 3, 2, 1}));
  // with size, under jit: the smallest ones first, padded with fill_value (default: the smallest value)
  auto f = [](const Array& v) { return unique_counts(v, 7, -9); };
  auto [v7, c7] = jit([&](const Array& v) { auto [a, b] = f(v); return std::make_tuple(a, b); })(x);
  EXPECT_TRUE(is(v7, i32, {7}, {0, 1, 2, 3, 5, -9, -9}));
  EXPECT_TRUE(is(c7, default_int_dtype(), {7}, {1, 2, 3, 2, 1, 0, 0}));
  EXPECT_TRUE(is(unique(x, 3), i32, {3}, {0, 1, 2}));
  EXPECT_TRUE(is(unique(x, 6), i32, {6}, {0, 1, 2, 3, 5, 0}));
  double nan = std::nan("");
  EXPECT_TRUE(is(unique(arr({nan, 1, nan, 1}, {4})), f64, {2}, {1, nan}));  // NaNs count once (JAX's equal_nan)
  EXPECT_TRUE(is(isin(arr({1, 2, 3, 4}, {2, 2}), arr({4, 2}, {2})), bool_, {2, 2}, {0, 1, 0, 1}));
  EXPECT_TRUE(is(isin(arr({1, 2}, {2}), arr({2}, {1}), true), bool_, {2}, {1, 0}));
  // sorted lookups, mixed dtypes, large inputs (pairwise comparison would need 10^10 booleans)
  EXPECT_TRUE(is(isin(arr({1, 2, 3}, {3}, i32), arr({2.5, 3, -1}, {3})), bool_, {3}, {0, 0, 1}));
  Array big = arange(100000.0, f64);
  EXPECT_EQ(sum(astype(isin(big, big * 2.0), i32)).item<int32_t>(), 50000);
  EXPECT_TRUE(is(intersect1d(arr({1, 3, 4, 3}, {4}), arr({3, 1, 2, 1}, {4})), f64, {2}, {1, 3}));
  EXPECT_TRUE(is(union1d(arr({-1, 0, 1}, {3}), arr({-2, 0, 2}, {3})), f64, {5}, {-2, -1, 0, 1, 2}));
  EXPECT_TRUE(is(setdiff1d(arr({1, 2, 3, 2, 4, 1}, {6}), arr({3, 4, 5, 6}, {4})), f64, {2}, {1, 2}));
  EXPECT_TRUE(is(setxor1d(arr({1, 2, 3, 2, 4}, {5}), arr({2, 3, 5, 7, 5}, {5})), f64, {4}, {1, 4, 5, 7}));
  // traced, with sizes
  auto sets = [](const Array& a, const Array& b) {
    return std::make_tuple(intersect1d(a, b, 3, 0), setdiff1d(a, b, 3, 0), setxor1d(a, b, 5, 0), union1d(a, b, 6, 0));
  };
  auto [in3, df3, xr5, un6] = jit(sets)(arr({1, 2, 3, 2, 4}, {5}), arr({2, 3, 5, 7, 5}, {5}));
  EXPECT_TRUE(is(in3, f64, {3}, {2, 3, 0}));
  EXPECT_TRUE(is(df3, f64, {3}, {1, 4, 0}));
  EXPECT_TRUE(is(xr5, f64, {5}, {1, 4, 5, 7, 0}));
  EXPECT_TRUE(is(un6, f64, {6}, {1, 2, 3, 4, 5, 7}));
}

TEST(NumpySets, UpdatesAndComparisons) {
  EXPECT_TRUE(is(put(arange(6.0, f64), arr({0, 2, 7}, {3}, i32), arr({-44, -55}, {2}), "clip"), f64, {6},
                 {-44, 1, -55, 3, 4, -44}));
  Array a = arange(6.0, f64).reshape({2, 3});
  EXPECT_TRUE(is(place(a, a > arr({2}, {}), arr({44, 55}, {2})), f64, {2, 3}, {0, 1, 2, 44, 55, 44}));
  EXPECT_TRUE(is(fill_diagonal(zeros({3, 3}, f64), arr({5}, {})), f64, {3, 3}, {5, 0, 0, 0, 5, 0, 0, 0, 5}));
  EXPECT_TRUE(is(fill_diagonal(zeros({5, 3}, f64), arr({1, 2}, {2}), true), f64, {5, 3},
                 {1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0}));
  Array m = arr({10, 30, 20, 60, 40, 50}, {2, 3});
  EXPECT_TRUE(is(put_along_axis(m, argmax(m, 1, true), arr({99}, {}), 1), f64, {2, 3}, {10, 99, 20, 99, 40, 50}));
  // "fill" drops out-of-range indices, eagerly and under jit (a gather's clamping would write the last entry)
  auto put_fill = [](const Array& v) { return put(v, arr({1, 9, -7, -1}, {4}, i32), arr({7, 8, 9, 6}, {4})); };
  EXPECT_TRUE(is(put_fill(zeros({5}, f64)), f64, {5}, {0, 7, 0, 0, 6}));
  EXPECT_TRUE(is(jit(put_fill)(zeros({5}, f64)), f64, {5}, {0, 7, 0, 0, 6}));
  EXPECT_TRUE(is(put(zeros({2}, f64), arr({0}, {1}, i32), zeros({0}, f64)), f64, {2}, {0, 0}));  // empty v: nothing
  expect_throws<TypeError>([] { return put(zeros({2}, f64), arr({0.5}, {1}), arr({1}, {1})); }, "integers");
  // size-1 index dimensions broadcast over arr's other axes; out-of-range ones are dropped
  EXPECT_TRUE(is(put_along_axis(zeros({3, 4}, f64), arr({0}, {1, 1}, i32), arr({5}, {}), 1), f64, {3, 4},
                 {5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0}));
  EXPECT_TRUE(is(put_along_axis(zeros({2, 2}, f64), arr({3, -1}, {2, 1}, i32), arr({5}, {}), 1), f64, {2, 2},
                 {0, 0, 0, 5}));
  EXPECT_TRUE(array_equiv(arr({1, 2}, {2}), arr({1, 2, 1, 2}, {2, 2})).item<bool>());
  EXPECT_FALSE(array_equiv(arr({1, 2}, {2}), arr({1, 2, 3}, {3})).item<bool>());
  EXPECT_EQ(broadcast_shapes({Shape{3, 1}, Shape{4}, Shape{1, 1, 1}}), (Shape{1, 3, 4}));
  expect_throws<ShapeError>([] { return broadcast_shapes({Shape{3}, Shape{4}}); }, "broadcast");
  EXPECT_TRUE(is(copy(a), f64, {2, 3}, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(is(bitwise_count(arr({0, 1, -1, 127, -128, 255}, {6}, i16)), u8, {6}, {0, 1, 1, 7, 1, 8}));
  EXPECT_TRUE(is(bitwise_count(arr({255, 1}, {2}, u64)), u8, {2}, {8, 1}));
}

TEST(NumpySets, Histograms) {
  auto [h, e] = histogram(arr({1, 2, 1, 4, 3.5, 0.5}, {6}), 3);
  EXPECT_TRUE(is(h, f64, {3}, {3, 1, 2}));
  EXPECT_TRUE(is(e, f64, {4}, {0.5, 1.6666666666666667, 2.8333333333333335, 4}, 1e-15));
  auto [hd, ed] = histogram(arr({1, 2, 1, 4, 3.5}, {5}), arr({0, 1, 2, 3, 5}, {5}), std::nullopt, true);
  EXPECT_TRUE(is(hd, f64, {4}, {0, 0.4, 0.2, 0.2}, 1e-15));
  auto [hw, ew] = histogram(arr({1, 2, 1}, {3}), 4, std::pair{0.0, 4.0}, arr({0.5, 2, 1}, {3}));
  EXPECT_TRUE(is(hw, f64, {4}, {0, 1.5, 2, 0}));
  EXPECT_TRUE(is(ew, f64, {5}, {0, 1, 2, 3, 4}));
  // a constant input widens by 0.5 on each side; under jit the edges are traced
  EXPECT_TRUE(is(histogram_bin_edges(arr({2, 2}, {2}), 2), f64, {3}, {1.5, 2, 2.5}));
  auto [hj, ej] = jit([](const Array& v) { auto [p, q] = histogram(v, 2); return std::make_tuple(p, q); })(
      arr({0, 1, 1, 3}, {4}));
  EXPECT_TRUE(is(hj, f64, {2}, {3, 1}));
  EXPECT_TRUE(is(ej, f64, {3}, {0, 1.5, 3}));
  expect_throws<ValueError>([] { return histogram(ones({3}), 0); }, "bins must be positive");
  // integer data against float edges: compared after promotion (-2 is outside [-3, -2.5]; 2 is in [0, 2.2))
  EXPECT_TRUE(is(histogram(arr({-2}, {1}, i32), arr({-3, -2.5}, {2})).first, default_float_dtype(), {1}, {0}));
  EXPECT_TRUE(is(histogram(arr({2}, {1}, i32), arr({0, 2.2, 2.5}, {3})).first, default_float_dtype(), {2}, {1, 0}));
  expect_throws<ValueError>([] { return histogram(arr({1, INFINITY}, {2}), 2); }, "not finite");
  expect_throws<ShapeError>([] { return histogram(ones({2, 2}), 2, std::nullopt, ones({4})); }, "a's shape");
}

}  // namespace
}  // namespace graft::testing
