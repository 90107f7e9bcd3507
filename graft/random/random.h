// Random numbers with explicit keys, bit-compatible with jax.random (Threefry-2x32).
//
//   Array k = random::key(0);                 // u32[2]
//   auto ks = random::split(k, 3);            // u32[3,2]: three independent keys
//   Array x = random::normal(ks[0], {128, 784});
//   Array w = random::uniform(random::fold_in(k, 7), {10}, f32, -1.0, 1.0);
//
// A key is a u32[2] array (JAX's legacy PRNGKey layout; key_data returns it as is). Keys are
// values: the same key always gives the same numbers, so split a key instead of reusing it.
// Two bit-generation modes exist, as in JAX: the default "partitionable" one (JAX >= 0.5:
// split(k, n)[i] == fold_in(k, i)) and the original one, selected with set_threefry_partitionable.
// Everything here is made of primitives, so it works under jit and vmap (a batch of keys).
#pragma once

#include <cstdint>
#include <optional>

#include "graft/core/array.h"

namespace graft::random {

/// Selects JAX's bit-generation mode (default true, as jax_threefry_partitionable in JAX >= 0.5).
void set_threefry_partitionable(bool on);
bool threefry_partitionable();

/// A key from a seed: [seed >> 32, seed & 0xFFFFFFFF] as u32[2].
Array key(uint64_t seed);
/// The raw u32 words of a key or of an array of keys (u32[..., 2], e.g. what split returns; keys
/// already are those arrays: for parity with jax.random).
Array key_data(const Array& key);
/// n new keys: u32[n, 2].
Array split(const Array& key, int64_t n = 2);
/// A new key derived from key and data (the same in both modes).
Array fold_in(const Array& key, uint32_t data);
Array fold_in(const Array& key, const Array& data);

/// Uniform random bits of `shape`; dtype u32 (default), u64, u16 or u8.
Array bits(const Array& key, const Shape& shape, DType d = DType::u32);
/// Uniform in [minval, maxval).
Array uniform(const Array& key, const Shape& shape, DType d = DType::f32, double minval = 0.0, double maxval = 1.0);
/// Standard normal.
Array normal(const Array& key, const Shape& shape, DType d = DType::f32);
/// Booleans that are true with probability p (p broadcasts against shape).
Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape = std::nullopt);
/// Samples indices from the unnormalized log-probabilities `logits` along `axis`.
Array categorical(const Array& key, const Array& logits, int64_t axis = -1, std::optional<Shape> shape = std::nullopt);
/// Gumbel(0, 1) samples.
Array gumbel(const Array& key, const Shape& shape, DType d = DType::f32);
/// A random permutation of arange(n), or of x along axis 0 (JAX's sort-based shuffle).
Array permutation(const Array& key, int64_t n);
Array permutation(const Array& key, const Array& x);
/// Normal values truncated to [lower, upper] (by inverse CDF).
Array truncated_normal(const Array& key, double lower, double upper, const Shape& shape, DType d = DType::f32);

}  // namespace graft::random
