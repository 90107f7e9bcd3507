// NumPy indexing (x[...]), take / take_along_axis and functional updates (x.at(...)). Expected values
// were computed with NumPy and pasted in as literals.
#include <string>
#include <vector>

#include "testing.h"

namespace graft::testing {
namespace {

// Asserts dtype d, shape `shape` and exactly the values v.
::testing::AssertionResult is(const Array& a, DType d, const Shape& shape, const std::vector<double>& v) {
  if (!a.valid()) return ::testing::AssertionFailure() << "null array";
  if (a.dtype() != d) return ::testing::AssertionFailure() << "dtype " << a.dtype() << ", expected " << d;
  return close(a, concrete(v, shape, f64), 0, 0);
}

Array vec10() { return arange(10) * 10; }                  // [0, 10, ..., 90]
Array mat45() { return arange(20).reshape({4, 5}); }       // arange(20).reshape(4, 5)
Array cube234() { return arange(24).reshape({2, 3, 4}); }  // arange(24).reshape(2, 3, 4)
Array mat34() { return arange(12, f32).reshape({3, 4}); }  // arange(12.).reshape(3, 4)
Array mask(const std::vector<bool>& m, const Shape& s) { return array(m, s); }

// ---- basic indexing: integers, slices, newaxis, ellipsis --------------------------------------------------

TEST(Indexing, Integers) {
  Array v = vec10(), m = mat45(), x = cube234();
  EXPECT_TRUE(is(v[2], i32, {}, {20}));
  EXPECT_TRUE(is(v[-1], i32, {}, {90}));
  EXPECT_TRUE(is(m[{1, 2}], i32, {}, {7}));
  EXPECT_TRUE(is(m[-1], i32, {5}, {15, 16, 17, 18, 19}));
  EXPECT_TRUE(is(x[{1, -1}], i32, {4}, {20, 21, 22, 23}));
  // a rank-0 integer array indexes like an integer
  EXPECT_TRUE(is(v[array(3)], i32, {}, {30}));
  EXPECT_TRUE(is(m[{array(int64_t{-2}), 4}], i32, {}, {14}));
}

TEST(Indexing, SlicesWithSteps) {
  Array v = vec10();
  EXPECT_TRUE(is(v[slice(1, 7, 2)], i32, {3}, {10, 30, 50}));
  EXPECT_TRUE(is(v[slice(none, none, -1)], i32, {10}, {90, 80, 70, 60, 50, 40, 30, 20, 10, 0}));
  EXPECT_TRUE(is(v[slice(7, 2, -2)], i32, {3}, {70, 50, 30}));
  EXPECT_TRUE(is(v[slice(-3, none)], i32, {3}, {70, 80, 90}));
  EXPECT_TRUE(is(v[slice(5, 2)], i32, {0}, {}));
}

TEST(Indexing, SliceBoundsOutOfRangeAreClamped) {
  Array v = vec10();
  EXPECT_TRUE(is(v[slice(-100, 100)], i32, {10}, {0, 10, 20, 30, 40, 50, 60, 70, 80, 90}));
  EXPECT_TRUE(is(v[slice(8, 100, 3)], i32, {1}, {80}));
  EXPECT_TRUE(is(v[slice(none, -12, -1)], i32, {10}, {90, 80, 70, 60, 50, 40, 30, 20, 10, 0}));
  EXPECT_TRUE(is(v[slice(100, -100, -3)], i32, {4}, {90, 60, 30, 0}));
  EXPECT_TRUE(is(v[slice(20, 30)], i32, {0}, {}));
}

TEST(Indexing, SlicesOfSeveralAxes) {
  Array m = mat45();
  EXPECT_TRUE(is(m[{slice(), 0}], i32, {4}, {0, 5, 10, 15}));
  EXPECT_TRUE(is(m[{slice(1, 3), slice(none, none, -2)}], i32, {2, 3}, {9, 7, 5, 14, 12, 10}));
  EXPECT_TRUE(is(m[{slice(none, none, 3), -1}], i32, {2}, {4, 19}));
}

TEST(Indexing, NewaxisAndEllipsis) {
  Array m = mat45(), x = cube234();
  EXPECT_EQ(m[newaxis].shape(), (Shape{1, 4, 5}));
  EXPECT_TRUE(is(m[{slice(), newaxis, 1}], i32, {4, 1}, {1, 6, 11, 16}));
  EXPECT_TRUE(is(x[{ellipsis, 1}], i32, {2, 3}, {1, 5, 9, 13, 17, 21}));
  EXPECT_TRUE(is(x[{0, ellipsis}], i32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ((x[{ellipsis, newaxis}].shape()), (Shape{2, 3, 4, 1}));
  EXPECT_EQ((x[{newaxis, ellipsis, newaxis}].shape()), (Shape{1, 2, 3, 4, 1}));
  EXPECT_TRUE(is(x[{1, ellipsis, slice(none, none, 2)}], i32, {3, 2}, {12, 14, 16, 18, 20, 22}));
  EXPECT_TRUE(is(x[{0, 1, 2, ellipsis}], i32, {}, {6}));
}

// ---- advanced indexing ------------------------------------------------------------------------------------

TEST(Indexing, IntegerArrays) {
  Array v = vec10(), m = mat45();
  EXPECT_TRUE(is(v[array({1, -1, 3})], i32, {3}, {10, 90, 30}));
  EXPECT_TRUE(is(v[array({{0, 1}, {2, -2}})], i32, {2, 2}, {0, 10, 20, 80}));
  EXPECT_TRUE(is(m[array({-1, 0})], i32, {2, 5}, {15, 16, 17, 18, 19, 0, 1, 2, 3, 4}));
  // other integer index dtypes
  EXPECT_TRUE(is(v[array(std::vector<int64_t>{9, 0})], i32, {2}, {90, 0}));
  EXPECT_TRUE(is(v[array(std::vector<uint8_t>{4, 4})], i32, {2}, {40, 40}));
  // combined with basic indexing
  EXPECT_TRUE(is(m[{array({-1, 0}), slice(none, none, 2)}], i32, {2, 3}, {15, 17, 19, 0, 2, 4}));
  EXPECT_TRUE(
      is(m[{slice(1, none), array({0, 2})}][slice(none, none, -1)], i32, {3, 2}, {15, 17, 10, 12, 5, 7}));
}

TEST(Indexing, SeveralIntegerArraysBroadcastTogether) {
  Array m = mat45(), x = cube234();
  EXPECT_TRUE(is(m[{array({0, 2}), array({1, 4})}], i32, {2}, {1, 14}));
  EXPECT_TRUE(is(m[{array({{0}, {3}}), array({1, 2, 4})}], i32, {2, 3}, {1, 2, 4, 16, 17, 19}));
  EXPECT_TRUE(is(x[{array({1}), array({0, 2})}], i32, {2, 4}, {12, 13, 14, 15, 20, 21, 22, 23}));
}

TEST(Indexing, AdjacentAdvancedIndicesStayInPlace) {
  Array x = cube234();
  EXPECT_TRUE(is(x[{slice(), array({0, 2}), array({1, 3})}], i32, {2, 2}, {1, 11, 13, 23}));
  EXPECT_TRUE(is(x[{slice(), 1, array({0, 3, 2})}], i32, {2, 3}, {4, 7, 6, 16, 19, 18}));
  EXPECT_TRUE(
      is(x[{slice(), array({{0}, {2}}), array({1, 3})}], i32, {2, 2, 2}, {1, 3, 9, 11, 13, 15, 21, 23}));
  EXPECT_TRUE(is(x[{newaxis, ellipsis, array({0, -1})}], i32, {1, 2, 3, 2},
                 {0, 3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 23}));
}

TEST(Indexing, SeparatedAdvancedIndicesGoFirst) {
  Array x = cube234();
  // NumPy: x[0, :, [1, 3]] has shape (2, 3): the broadcast index dims come first
  EXPECT_TRUE(is(x[{0, slice(), array({1, 3})}], i32, {2, 3}, {1, 5, 9, 3, 7, 11}));
  EXPECT_TRUE(is(x[{1, slice(), array({1, 3})}], i32, {2, 3}, {13, 17, 21, 15, 19, 23}));
  EXPECT_TRUE(is(x[{array({1, 0}), slice(), array({1, 3})}], i32, {2, 3}, {13, 17, 21, 3, 7, 11}));
  EXPECT_TRUE(is(x[{array({0, 1}), slice(1, none), array({{0}, {3}})}], i32, {2, 2, 2},
                 {4, 8, 16, 20, 7, 11, 19, 23}));
  EXPECT_TRUE(is(x[{array({1, 0}), newaxis, 1}], i32, {2, 1, 4}, {16, 17, 18, 19, 4, 5, 6, 7}));
  // a boolean mask is an advanced index too
  EXPECT_TRUE(is(x[{mask({true, false}, {2}), slice(), array({1, 3})}], i32, {2, 3}, {1, 5, 9, 3, 7, 11}));
}

TEST(Indexing, BooleanMasks) {
  Array v = vec10(), m = mat45(), x = cube234();
  Array mv = mask({true, false, true, true, false, false, false, false, true, false}, {10});
  EXPECT_TRUE(is(v[mv], i32, {4}, {0, 20, 30, 80}));
  EXPECT_TRUE(is(m[m > 12], i32, {7}, {13, 14, 15, 16, 17, 18, 19}));
  EXPECT_TRUE(is(m[remainder(m, 3) == 0], i32, {7}, {0, 3, 6, 9, 12, 15, 18}));
  EXPECT_TRUE(is(x[{slice(), mask({true, false, true}, {3})}], i32, {2, 2, 4},
                 {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
  EXPECT_TRUE(is(x[{1, mask({true, false, true}, {3})}], i32, {2, 4}, {12, 13, 14, 15, 20, 21, 22, 23}));
  // a 2-D mask over the leading axes
  EXPECT_TRUE(is(x[x[{ellipsis, 0}] > 5], i32, {4, 4},
                 {8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_TRUE(is(v[v > 100], i32, {0}, {}));
}

TEST(Indexing, UnderJit) {
  auto gather = jit([](const Array& a) { return a[{0, slice(), array({1, 3})}]; });
  EXPECT_TRUE(is(gather(cube234()), i32, {2, 3}, {1, 5, 9, 3, 7, 11}));
  auto scatter = jit([](const Array& a) { return a.at(array({1, 1, 1, -1})).add(1.5); });
  EXPECT_TRUE(is(scatter(arange(5, f32)), f32, {5}, {0, 5.5, 2, 3, 5.5}));
  auto dynamic = jit([](const Array& a, const Array& i) { return a[{slice(), i}]; });
  EXPECT_TRUE(is(dynamic(mat45(), array(-2)), i32, {4}, {3, 8, 13, 18}));
}

TEST(Indexing, TracedBooleanMaskIsAConcretizationError) {
  auto f = jit([](const Array& a) { return sum(a[a > 0.0]); });
  EXPECT_THROW(f(array({1.0f, -1.0f})), ConcretizationError);
}

TEST(Indexing, OutOfBoundsAndMalformedIndicesThrow) {
  Array v = vec10(), m = mat45();
  EXPECT_THROW(v[10], ValueError);
  EXPECT_THROW(v[-11], ValueError);
  EXPECT_THROW((m[{0, 5}]), ValueError);
  EXPECT_THROW(m[4], ValueError);
  EXPECT_THROW(v[array({1, 10})], ValueError);
  EXPECT_THROW(v[array({-11})], ValueError);
  EXPECT_THROW((m[{0, 1, 2}]), ValueError);
  EXPECT_THROW((m[{ellipsis, 0, ellipsis}]), ValueError);
  EXPECT_THROW(v[slice(0, 5, 0)], ValueError);
  EXPECT_THROW(v[array({1.0f})], TypeError);
  try {
    v[12];
    ADD_FAILURE() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
  }
}

// ---- take / take_along_axis -------------------------------------------------------------------------------

TEST(Indexing, Take) {
  Array m = mat45();
  EXPECT_TRUE(is(take(m, array({7, 0, 19})), i32, {3}, {7, 0, 19}));
  EXPECT_TRUE(is(take(m, array({4, 0}), 1), i32, {4, 2}, {4, 0, 9, 5, 14, 10, 19, 15}));
  EXPECT_TRUE(is(take(m, array({4, 0}), -1), i32, {4, 2}, {4, 0, 9, 5, 14, 10, 19, 15}));
  EXPECT_TRUE(is(take(m, array({{1, 1}, {3, 0}}), 0), i32, {2, 2, 5},
                 {5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19, 0, 1, 2, 3, 4}));
  EXPECT_TRUE(is(take(m, array({-1})), i32, {1}, {19}));
}

TEST(Indexing, TakeAlongAxis) {
  Array t = array({{3, 1, 2}, {0, 5, 4}});
  EXPECT_TRUE(is(take_along_axis(t, argsort(t, 1), 1), i32, {2, 3}, {1, 2, 3, 0, 4, 5}));
  EXPECT_TRUE(is(take_along_axis(t, array({{1, 0, 1}}), 0), i32, {1, 3}, {0, 1, 4}));
  EXPECT_TRUE(is(take_along_axis(t, array({{-1}, {0}}), -1), i32, {2, 1}, {2, 0}));
  EXPECT_THROW(take_along_axis(t, array({0, 1}), 1), ShapeError);
}

// ---- functional updates -----------------------------------------------------------------------------------

TEST(IndexUpdate, SetOnStaticRegions) {
  Array m = mat34();
  EXPECT_TRUE(is(m.at(1).set(-1.0), f32, {3, 4}, {0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at({1}).set(array({10.0f, 20.0f, 30.0f, 40.0f})), f32, {3, 4},
                 {0, 1, 2, 3, 10, 20, 30, 40, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at({slice(0, 2), slice(1, 3)}).set(array({{-1.0f}, {-2.0f}})), f32, {3, 4},
                 {0, -1, -1, 3, 4, -2, -2, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at({-1, -1}).set(5), f32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 5}));
  // strided and reversed slices
  EXPECT_TRUE(
      is(m.at({slice(), slice(none, none, 2)}).set(0.0), f32, {3, 4}, {0, 1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11}));
  EXPECT_TRUE(is(m.at({0, slice(none, none, -1)}).set(array({1.0f, 2.0f, 3.0f, 4.0f})), f32, {3, 4},
                 {4, 3, 2, 1, 4, 5, 6, 7, 8, 9, 10, 11}));
  // the value is converted to the array's dtype
  EXPECT_TRUE(is(arange(3).at(0).set(7.9), i32, {3}, {7, 1, 2}));
}

TEST(IndexUpdate, AddMulMinMaxOnStaticRegions) {
  Array m = mat34();
  EXPECT_TRUE(is(m.at({slice(), -1}).add(100.0), f32, {3, 4}, {0, 1, 2, 103, 4, 5, 6, 107, 8, 9, 10, 111}));
  EXPECT_TRUE(is(m.at({2, 0}).mul(3.0), f32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 24, 9, 10, 11}));
  EXPECT_TRUE(is(m.at(0).min(array({1.0f, -1.0f, 5.0f, 0.0f})), f32, {3, 4},
                 {0, -1, 2, 0, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at({slice(1, none), 1}).max(7.0), f32, {3, 4}, {0, 1, 2, 3, 4, 7, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at({slice(none, none, 2), slice(none, none, 3)}).add(0.5), f32, {3, 4},
                 {0.5, 1, 2, 3.5, 4, 5, 6, 7, 8.5, 9, 10, 11.5}));
}

TEST(IndexUpdate, IntegerArrayIndices) {
  Array m = mat34();
  EXPECT_TRUE(is(m.at(array({2, 0})).set(array({{1.0f}, {2.0f}})), f32, {3, 4},
                 {2, 2, 2, 2, 4, 5, 6, 7, 1, 1, 1, 1}));
  EXPECT_TRUE(is(m.at({array({0, 2}), array({3, 1})}).set(array({-5.0f, -6.0f})), f32, {3, 4},
                 {0, 1, 2, -5, 4, 5, 6, 7, 8, -6, 10, 11}));
  EXPECT_TRUE(is(m.at({array({0, -1}), array({0, -1})}).mul(-1.0), f32, {3, 4},
                 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -11}));
  EXPECT_TRUE(is(m.at({array({1, 2}), array({2, 0})}).min(array({3.0f, 20.0f})), f32, {3, 4},
                 {0, 1, 2, 3, 4, 5, 3, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at({array({1, 0}), array({2, 3})}).max(array({30.0f, 1.0f})), f32, {3, 4},
                 {0, 1, 2, 3, 4, 5, 30, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(m.at(m > 9.0).set(0.0), f32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0}));
}

TEST(IndexUpdate, DuplicateIndicesAccumulateForAdd) {
  Array m = mat34();
  EXPECT_TRUE(is(m.at({array({0, 0, 2, 0}), array({1, 1, 3, 1})}).add(array({1.0f, 2.0f, 3.0f, 4.0f})), f32,
                 {3, 4}, {0, 8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14}));
  EXPECT_TRUE(is(arange(5, f32).at(array({1, 1, 1, -1})).add(1.5), f32, {5}, {0, 5.5, 2, 3, 5.5}));
  EXPECT_TRUE(is(zeros({3}, i32).at(array({2, 2, 0})).add(1), i32, {3}, {1, 0, 2}));
}

TEST(IndexUpdate, GetIsIndexing) {
  Array x = cube234();
  EXPECT_TRUE(is(x.at({0, slice(), array({1, 3})}).get(), i32, {2, 3}, {1, 5, 9, 3, 7, 11}));
  EXPECT_TRUE(is(x.at(1).get(), i32, {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}));
}

TEST(IndexUpdate, TheOriginalArrayIsUnchanged) {
  Array m = mat34();
  Array a = m.at(1).set(-1.0);
  Array b = m.at(array({0, 0})).add(5.0);
  Array c = m.at({slice(), slice(none, none, 2)}).mul(0.0);
  EXPECT_TRUE(is(m, f32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(a[0], f32, {4}, {0, 1, 2, 3}));
  EXPECT_TRUE(is(b[0], f32, {4}, {10, 11, 12, 13}));
  EXPECT_TRUE(is(c[1], f32, {4}, {0, 5, 0, 7}));
  // updating a reshaped view (which may share m's buffer) leaves m alone too
  Array flat = m.reshape({12});
  EXPECT_TRUE(is(flat.at(0).set(100.0)[0], f32, {}, {100}));
  EXPECT_TRUE(is(m.reshape({12}).at(array({0, 11})).add(1.0)[11], f32, {}, {12}));
  EXPECT_TRUE(is(m, f32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(is(flat[0], f32, {}, {0}));
}

TEST(IndexUpdate, OutOfBoundsStaticIndexThrows) {
  Array m = mat34();
  EXPECT_THROW(m.at(3).set(0.0), ValueError);
  EXPECT_THROW(m.at({0, -5}).add(1.0), ValueError);
  EXPECT_THROW(m.at(array({0, 3})).set(0.0), ValueError);
  EXPECT_THROW(m.at(0).set(array({1.0f, 2.0f})), ShapeError);
}

}  // namespace
}  // namespace graft::testing
