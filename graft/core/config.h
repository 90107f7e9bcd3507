// Process-wide switches, as JAX's `jax.config`: each starts from its environment variable and can be
// changed while the program runs.
//
//   graft::config::set_debug_nans(true);   // or GRAFT_DEBUG_NANS=1
//   f(x);   // throws FloatingPointError naming the first primitive whose output holds a NaN
#pragma once

namespace graft::config {

/// GRAFT_DEBUG_NANS=1: every primitive run eagerly has its floating-point outputs checked for NaN,
/// and a jitted program whose outputs hold one is run again op by op to name the primitive that made
/// it (FloatingPointError, with the primitive, its operand types and where it ran). JAX's
/// jax_debug_nans. Costs a pass over every output, and jitted programs run without donation.
bool debug_nans();
void set_debug_nans(bool on);

/// GRAFT_DEBUG_INFS=1: the same for infinities (apart from NaNs: -inf is a legitimate mask value in
/// many programs).
bool debug_infs();
void set_debug_infs(bool on);

/// GRAFT_ENABLE_X64=1 (or JAX_ENABLE_X64=1): JAX's jax_enable_x64. The default dtypes become 64-bit:
/// an integer operand promoted to floating point (`sin(i32)`, `i32 / i32`, `mean(i32)`) is f64, an
/// integer range or fill without a dtype is i64, and a weak result with no weak operand of its kind
/// takes the 64-bit default (see default_float_dtype()). Values that carry their types keep them: the
/// switch never narrows or widens an f32 array. Jit keys its caches on it. Off by default, as in JAX.
bool enable_x64();
void set_enable_x64(bool on);

/// JAX's jax_threefry_partitionable (default true, as in JAX >= 0.5): how random bits and splits are
/// drawn from threefry. On, element i of a draw hashes its own index and split(k, n)[i] ==
/// fold_in(k, i); off, JAX's original scheme (one counter sequence split in halves). The two give
/// different values for the same key. Jit keys its caches on it. graft::random::set_threefry_partitionable
/// is the same switch.
bool threefry_partitionable();
void set_threefry_partitionable(bool on);

/// Whether either check is on.
inline bool debug_numerics() { return debug_nans() || debug_infs(); }

}  // namespace graft::config
