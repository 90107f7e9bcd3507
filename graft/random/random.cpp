// jax.random's algorithms (jax/_src/prng.py and random.py) on the threefry2x32 primitive.
#include "graft/random/random.h"

#include <atomic>
#include <cmath>
#include <limits>

#include "graft/core/config.h"
#include "graft/ops/lax_more.h"
#include "graft/ops/ops.h"
#include "graft/random/internal.h"

namespace graft::random {

namespace detail {
double tiny_of(DType d) {
  switch (d) {
    case DType::f64: return std::numeric_limits<double>::min();
    case DType::f16: return std::ldexp(1.0, -14);
    default: return std::numeric_limits<float>::min();  // f32 and bf16 share the exponent range
  }
}

namespace {

Array u32v(uint64_t v) { return Array::scalar(static_cast<double>(v & 0xFFFFFFFFu), DType::u32); }

}  // namespace

void check_key(const Array& key, const char* op, bool batched) {
  if (!key.valid()) fail<ValueError>("random.", op, ": the key is a null array");
  bool keys = key.dtype() == DType::u32 && key.ndim() >= 1 && key.shape().back() == 2;
  if (keys && (batched || key.ndim() == 1)) return;
  if (keys)
    fail<TypeError>("random.", op, ": takes one key (u32[2]), got a batch of keys ", key.aval().str(),
                    ": index one (keys[0]) or map over them with vmap");
  fail<TypeError>("random.", op, ": a key is a u32[2] array (from random::key or random::split)",
                  batched ? " or an array of keys u32[..., 2]" : "", ", got ", key.aval().str());
}

namespace {
Array word(const Array& key, int64_t i) { return lax::reshape(lax::slice_in_dim(key, i, i + 1, 1, 0), {}); }

// JAX's original threefry_2x32(key, count): hash the two halves of the flattened counts pairwise.
Array hash_counts(const Array& key, const Array& count) {
  Array flat = lax::reshape(count, {count.size()});
  int64_t n = flat.size();
  bool odd = n % 2 == 1;
  if (odd) {
    Array parts[] = {flat, lax::full({1}, 0, DType::u32)};
    flat = lax::concatenate(parts, 0);
  }
  int64_t h = flat.size() / 2;
  Arrays y = lax::threefry2x32(word(key, 0), word(key, 1), lax::slice_in_dim(flat, 0, h, 1, 0),
                               lax::slice_in_dim(flat, h, 2 * h, 1, 0));
  Arrays both{y[0], y[1]};
  Array out = lax::concatenate(both, 0);
  if (odd) out = lax::slice_in_dim(out, 0, n, 1, 0);
  return lax::reshape(out, count.shape());
}

// The flat index of every element of `shape` as (hi, lo) u32 words.
std::pair<Array, Array> iota_2x32(const Shape& shape) {
  int64_t n = numel(shape);
  if (n <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
    Array lo = lax::reshape(lax::iota(DType::u32, {n}, 0), shape);
    return {lax::full(shape, 0, DType::u32), lo};
  }
  Array i = lax::reshape(lax::iota(DType::u64, {n}, 0), shape);
  Array hi = lax::convert_element_type(lax::shift_right_logical(i, Array::scalar(32, DType::u64)), DType::u32);
  Array lo = lax::convert_element_type(lax::bitwise_and(i, Array::scalar(4294967295.0, DType::u64)), DType::u32);
  return {hi, lo};
}

}  // namespace

DType uint_of_bits(int bits) {
  switch (bits) {
    case 8: return DType::u8;
    case 16: return DType::u16;
    case 32: return DType::u32;
    default: return DType::u64;
  }
}

Array random_bits(const Array& key, int bit_width, const Shape& shape) {
  DType d = uint_of_bits(bit_width);
  if (config::threefry_partitionable()) {
    auto [hi, lo] = iota_2x32(shape);
    Arrays y = lax::threefry2x32(word(key, 0), word(key, 1), hi, lo);
    if (bit_width == 64) {
      Array a = lax::convert_element_type(y[0], DType::u64), b = lax::convert_element_type(y[1], DType::u64);
      return lax::bitwise_or(lax::shift_left(a, Array::scalar(32, DType::u64)), b);
    }
    Array x = lax::bitwise_xor(y[0], y[1]);
    return bit_width == 32 ? x : lax::convert_element_type(x, d);
  }
  int64_t size = numel(shape);
  int64_t max_count = (static_cast<int64_t>(bit_width) * size + 31) / 32;
  Array b = hash_counts(key, lax::iota(DType::u32, {max_count}, 0));
  if (bit_width == 64) {
    int64_t h = max_count / 2;
    Array a = lax::convert_element_type(lax::slice_in_dim(b, 0, h, 1, 0), DType::u64);
    Array c = lax::convert_element_type(lax::slice_in_dim(b, h, 2 * h, 1, 0), DType::u64);
    return lax::reshape(lax::bitwise_or(lax::shift_left(a, Array::scalar(32, DType::u64)), c), shape);
  }
  if (bit_width == 32) return lax::reshape(b, shape);
  // 8/16 bits: the little-endian view of the words, truncated to size
  int64_t per = 32 / bit_width;
  Array words = lax::broadcast_in_dim(b, {max_count, per}, {0});
  Array shifts = lax::mul(lax::iota(DType::u32, {max_count, per}, 1), u32v(static_cast<uint64_t>(bit_width)));
  Array parts = lax::bitwise_and(lax::shift_right_logical(words, shifts), u32v((1ull << bit_width) - 1));
  Array flat = lax::convert_element_type(lax::reshape(parts, {max_count * per}), d);
  return lax::reshape(lax::slice_in_dim(flat, 0, size, 1, 0), shape);
}

int mantissa_bits(DType d) {
  switch (d) {
    case DType::f16: return 10;
    case DType::bf16: return 7;
    case DType::f32: return 23;
    case DType::f64: return 52;
    default: fail<TypeError>("random.uniform: dtype must be floating, got ", d);
  }
}

Array uniform_between(const Array& key, const Shape& shape, DType d, const Array& minval, const Array& maxval) {
  int nbits = static_cast<int>(itemsize(d) * 8), nmant = mantissa_bits(d);
  int rng_bits = nmant < 8 ? 8 : nbits;
  DType ud = uint_of_bits(nbits);
  Array b = random_bits(key, rng_bits, shape);
  if (rng_bits != nbits) b = lax::convert_element_type(b, ud);
  // randomize the mantissa of a number in [1, 2), then shift to [0, 1)
  Array one_bits = lax::bitcast_convert_type(Array::scalar(1.0, d), ud);
  Array fb = lax::bitwise_or(lax::shift_right_logical(b, Array::scalar(rng_bits - nmant, ud)), one_bits);
  Array floats = lax::sub(lax::bitcast_convert_type(fb, d), Array::scalar(1.0, d));
  Array span = lax::sub(maxval, minval);
  return lax::max(minval, lax::add(lax::mul(floats, span), minval));
}

}  // namespace detail

namespace {
using namespace detail;
Array as_scalar(double v, DType d) { return Array::scalar(v, d); }
}  // namespace

void set_threefry_partitionable(bool on) { config::set_threefry_partitionable(on); }
bool threefry_partitionable() { return config::threefry_partitionable(); }

Array key(uint64_t seed) {
  uint32_t w[2] = {static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed & 0xFFFFFFFFu)};
  return Array::from_data(w, {2}, DType::u32);
}

Array key_data(const Array& k) {
  check_key(k, "key_data", /*batched=*/true);
  return k;
}

Array split(const Array& k, int64_t n) {
  check_key(k, "split");
  if (n < 0) fail<ValueError>("random.split: n must be non-negative, got ", n);
  if (config::threefry_partitionable()) {
    auto [hi, lo] = iota_2x32({n});
    Arrays y = lax::threefry2x32(word(k, 0), word(k, 1), hi, lo);
    Arrays cols{lax::expand_dims(y[0], {1}), lax::expand_dims(y[1], {1})};
    return lax::concatenate(cols, 1);
  }
  return lax::reshape(hash_counts(k, lax::iota(DType::u32, {2 * n}, 0)), {n, 2});
}

Array fold_in(const Array& k, uint32_t data) { return fold_in(k, Array::scalar(data, DType::u32)); }

Array fold_in(const Array& k, const Array& data) {
  check_key(k, "fold_in");
  if (data.ndim() != 0 || !is_integer(data.dtype()))
    fail<TypeError>("random.fold_in: data must be an integer scalar, got ", data.aval().str());
  Array d = lax::convert_element_type(data, DType::u32);
  Arrays seed{lax::full({1}, 0, DType::u32), lax::reshape(d, {1})};
  return hash_counts(k, lax::concatenate(seed, 0));
}

Array bits(const Array& k, const Shape& shape, DType d) {
  check_key(k, "bits");
  int w;
  switch (d) {
    case DType::u8: w = 8; break;
    case DType::u16: w = 16; break;
    case DType::u32: w = 32; break;
    case DType::u64: w = 64; break;
    default: fail<TypeError>("random.bits: dtype must be u8, u16, u32 or u64, got ", d);
  }
  return random_bits(k, w, shape);
}

Array uniform(const Array& k, const Shape& shape, DType d, double minval, double maxval) {
  check_key(k, "uniform");
  return uniform_between(k, shape, d, as_scalar(minval, d), as_scalar(maxval, d));
}

Array uniform(const Array& k, const Shape& shape, DType d, const Array& minval, const Array& maxval) {
  check_key(k, "uniform");
  for (const Array* b : {&minval, &maxval})
    if (!broadcasts_to(b->shape(), shape))
      fail<ShapeError>("random.uniform: minval and maxval must broadcast to the shape ", shape_str(shape), ", got ",
                       b->aval().str());
  return uniform_between(k, shape, d, broadcast_to(minval.astype(d), shape), broadcast_to(maxval.astype(d), shape));
}

Array normal(const Array& k, const Shape& shape, DType d) {
  check_key(k, "normal");
  // uniform in (-1, 1), then the inverse error function (JAX's _normal_real); nextafter(-1, 0) in d
  double lo = -1.0 + std::ldexp(1.0, -(mantissa_bits(d) + 1));
  Array u = uniform_between(k, shape, d, as_scalar(lo, d), as_scalar(1.0, d));
  return lax::mul(as_scalar(std::sqrt(2.0), d), lax::erf_inv(u));
}

Array bernoulli(const Array& k, const Array& p, std::optional<Shape> shape, SampleMode mode) {
  check_key(k, "bernoulli");
  DType d = is_floating(p.dtype()) && !p.weak_type() ? p.dtype() : default_float_dtype();
  Shape s = shape.value_or(p.shape());
  Array pd = p.astype(d);
  if (mode == SampleMode::low) return less(uniform(k, s, d), pd);
  // "high": u1 + u2 2^-nmant as one uniform of twice the bits, compared as u2 2^-nmant < p - u1
  Shape two = s;
  two.insert(two.begin(), 2);
  Array u = uniform(k, two, d);
  Array u1 = lax::index_in_dim(u, 0, 0, false), u2 = lax::index_in_dim(u, 1, 0, false);
  u2 = u2 * as_scalar(std::ldexp(1.0, -mantissa_bits(d)), d);
  return less(u2, pd - u1);
}

namespace {
// JAX's _safe_int_to_float: u32[2, ...] as a 64-bit fixed-point number in (0, 1), rounded to f32 by
// its leading 24 bits (the exponent from the count of leading zeros).
Array fixed_point_to_f32(const Array& hi, const Array& lo) {
  auto u = [](double v) { return Array::scalar(v, DType::u32); };
  Array hiclz = lax::clz(hi), loclz = lax::clz(lo);
  Array hi_zero = hiclz == u(32);
  Array mantissa = lax::bitwise_or(lax::shift_left(hi, hiclz),
                                   where(hi_zero, lax::shift_left(lo, loclz), lax::shift_right_logical(lo, u(32) - hiclz)));
  mantissa = lax::shift_right_logical(mantissa, u(32 - 23 - 1));
  mantissa = lax::bitwise_and(mantissa, u((1 << 23) - 1));
  Array lead = where(hi_zero, u(32) + loclz, hiclz);
  Array exp = lax::shift_left(u(126) - lead, u(23));  // -minexp = 126
  exp = lax::bitwise_and(exp, u((1u << 30) - (1u << 22)));
  return lax::bitcast_convert_type(lax::bitwise_or(exp, mantissa), DType::f32);
}
}  // namespace

Array gumbel(const Array& k, const Shape& shape, DType d, SampleMode mode) {
  check_key(k, "gumbel");
  const int nmant = mantissa_bits(d);
  if (mode == SampleMode::highest && d == DType::f32) {
    // 64 random bits; below 1/2 the value is x itself (log1p keeps its precision), above it 1 - x
    Shape two = shape;
    two.insert(two.begin(), 2);
    Array b = random_bits(k, 32, two);
    Array neg = lax::bitwise_not(b);
    Array b0 = lax::index_in_dim(b, 0, 0, false), b1 = lax::index_in_dim(b, 1, 0, false);
    Array n0 = lax::index_in_dim(neg, 0, 0, false), n1 = lax::index_in_dim(neg, 1, 0, false);
    // 1 - bits in 64-bit fixed point: ~bits + 1 with the carry out of the low word
    Array carry = (n1 == Array::scalar(4294967295.0, DType::u32)).astype(DType::u32);
    n0 = lax::add(n0, carry);
    n1 = lax::add(n1, Array::scalar(1, DType::u32));
    Array flip = lax::lt(b0, Array::scalar(2147483648.0, DType::u32));
    Array x = fixed_point_to_f32(where(flip, b0, n0), where(flip, b1, n1));
    return where(flip, negative(log(negative(log1p(negative(x))))), negative(log(negative(log(x)))));
  }
  if (mode != SampleMode::low) {
    Shape two = shape;
    two.insert(two.begin(), 2);
    Array u = uniform(k, two, d);
    Array high = lax::index_in_dim(u, 0, 0, false), low = lax::index_in_dim(u, 1, 0, false);
    double floor_ = std::max(std::ldexp(1.0, -(2 * nmant + 1)), tiny_of(d));
    Array x = where(high >= 0.5, high, high + low * as_scalar(std::ldexp(1.0, -nmant), d) + as_scalar(floor_, d));
    return negative(log(negative(log1p(negative(x)))));
  }
  Array u = uniform(k, shape, d, tiny_of(d), 1.0);
  return negative(log(negative(log(u))));
}

Array categorical(const Array& k, const Array& logits, int64_t axis, std::optional<Shape> shape, bool replace,
                  SampleMode mode) {
  check_key(k, "categorical");
  int64_t a = normalize_axis(axis, logits.ndim(), "random.categorical");
  Shape batch = logits.shape();
  batch.erase(batch.begin() + a);
  Shape s = shape.value_or(batch);
  if (s.size() < batch.size()) fail<ShapeError>("random.categorical: shape must end with the logits' batch shape");
  Shape prefix(s.begin(), s.end() - static_cast<std::ptrdiff_t>(batch.size()));
  Shape tail(s.end() - static_cast<std::ptrdiff_t>(batch.size()), s.end());
  // with replacement the batch shape broadcasts to shape's tail (JAX's _check_shape); without, it is the tail
  if (replace ? !broadcasts_to(batch, tail) : batch != tail)
    fail<ShapeError>("random.categorical: shape ", shape_str(s), " must end with the logits' batch shape ", shape_str(batch));
  if (!replace) {
    DType d = is_floating(logits.dtype()) ? logits.dtype() : default_float_dtype();
    Array lg = logits.astype(d) + gumbel(k, logits.shape(), d, mode);
    int64_t kk = numel(prefix);
    if (kk > logits.shape()[a])
      fail<ValueError>("random.categorical: the number of samples without replacement (", kk,
                       ") cannot exceed the number of categories (", logits.shape()[a], ")");
    // the kk largest perturbed logits of every batch entry: [batch..., kk], then kk to the front
    Array idx = lax::top_k(moveaxis(lg, a, -1), kk).second;
    return moveaxis(idx, -1, 0).reshape(s);  // top_k's int32 indices, as JAX's
  }
  Shape ls(s.end() - static_cast<std::ptrdiff_t>(batch.size()), s.end());
  ls.insert(ls.begin() + a, logits.shape()[a]);
  Shape full_shape = prefix;
  for (auto x : ls) full_shape.push_back(x);
  DType d = is_floating(logits.dtype()) ? logits.dtype() : default_float_dtype();
  Array g = gumbel(k, full_shape, d, mode);
  Array lg = logits.astype(d);
  for (size_t i = 0; i < prefix.size(); ++i) lg = expand_dims(lg, 0);
  return argmax(g + lg, a + static_cast<int64_t>(prefix.size()));
}

Array permutation(const Array& k, int64_t n) {
  check_key(k, "permutation");
  return permutation(k, arange(static_cast<double>(n), default_int_dtype()));
}

Array permutation(const Array& k, const Array& x) {
  check_key(k, "permutation");
  if (x.ndim() == 0) fail<ValueError>("random.permutation: x must be at least one-dimensional");
  int64_t n = x.shape()[0];
  // JAX's _shuffle: enough rounds of sorting by random 32-bit keys that collisions are negligible
  int rounds = static_cast<int>(std::ceil(3.0 * std::log(std::max<double>(1.0, double(n))) /
                                          std::log(double(std::numeric_limits<uint32_t>::max()))));
  Array ind = lax::iota(DType::i32, {n}, 0);
  Array kk = k;
  for (int r = 0; r < rounds; ++r) {
    Array ks = random::split(kk, 2);
    kk = ks[0];
    Array sort_keys = random_bits(ks[1], 32, {n});
    Array ops[] = {sort_keys, ind};
    ind = lax::sort(ops, 0, true, 1)[1];
  }
  return take(x, ind, 0);
}

Array truncated_normal(const Array& k, double lower, double upper, const Shape& shape, DType d) {
  return truncated_normal(k, as_scalar(lower, d), as_scalar(upper, d), shape, d);
}

Array truncated_normal(const Array& k, const Array& lower, const Array& upper, std::optional<Shape> shape0, DType d) {
  check_key(k, "truncated_normal");
  mantissa_bits(d);
  Shape ps = broadcast_shapes(lower.shape(), upper.shape(), "random.truncated_normal");
  Shape shape = shape0.value_or(ps);
  if (!broadcasts_to(ps, shape))
    fail<ValueError>("random.truncated_normal: the bounds' shape ", shape_str(ps), " must broadcast to the shape ",
                     shape_str(shape));
  Array sqrt2 = as_scalar(std::sqrt(2.0), d);
  Array lo = lower.astype(d), hi = upper.astype(d);
  Array a = lax::erf(lax::div(lo, sqrt2)), b = lax::erf(lax::div(hi, sqrt2));
  Array u = uniform_between(k, shape, d, broadcast_to(a, shape), broadcast_to(b, shape));
  Array out = lax::mul(sqrt2, lax::erf_inv(u));
  // keep rounding from pushing values onto or past the bounds
  Array inf = as_scalar(INFINITY, d);
  return clip(out, lax::nextafter(lo, inf), lax::nextafter(hi, lax::neg(inf)));
}

}  // namespace graft::random
