// The building blocks of graft::random's samplers (random.cpp), shared with distributions.cpp.
#pragma once

#include "graft/core/array.h"

namespace graft::random::detail {

/// One key (u32[2]), or with `batched` any array of keys (u32[..., 2], as random::split returns);
/// a TypeError naming `op` otherwise.
void check_key(const Array& key, const char* op, bool batched = false);
/// The unsigned dtype of 8, 16, 32 or 64 bits.
DType uint_of_bits(int bits);
/// JAX's random_bits: `shape` values of bit_width (8, 16, 32, 64) random bits.
Array random_bits(const Array& key, int bit_width, const Shape& shape);
/// The explicit mantissa bits of a floating dtype (a TypeError naming random.uniform for others).
int mantissa_bits(DType d);
/// JAX's _uniform: values in [minval, maxval) from the mantissa bits (minval, maxval of dtype d).
Array uniform_between(const Array& key, const Shape& shape, DType d, const Array& minval, const Array& maxval);

/// The smallest normal number of a floating dtype (finfo(d).tiny).
double tiny_of(DType d);

/// Whether `from` broadcasts to exactly `to` (NumPy's rules): a sampler's parameters against its shape.
bool broadcasts_to(const Shape& from, const Shape& to);

}  // namespace graft::random::detail
