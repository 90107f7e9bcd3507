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
#include <string>

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
/// The same with array bounds (broadcasting against shape), converted to d.
Array uniform(const Array& key, const Shape& shape, DType d, const Array& minval, const Array& maxval);
/// Standard normal.
Array normal(const Array& key, const Shape& shape, DType d = DType::f32);
/// How many random bits a sample takes (JAX's `mode`): "low" one uniform of the dtype; "high" two,
/// for probabilities or tails below the dtype's resolution (bernoulli with p < 1e-7 in f32, gumbel's
/// upper tail); "highest" (gumbel in f32 only) 64 bits as a fixed-point number.
enum class SampleMode { low, high, highest };

/// Booleans that are true with probability p (p broadcasts against shape). The uniform draws are in
/// p's dtype (a weakly typed p: the default float dtype, f64 under x64, as JAX's).
Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape = std::nullopt,
                SampleMode mode = SampleMode::low);
/// Samples indices from the unnormalized log-probabilities `logits` along `axis`: with replacement by
/// the Gumbel max trick, without (replace = false: shape's leading dimensions draw distinct classes per
/// batch entry) by the Gumbel top-k trick.
Array categorical(const Array& key, const Array& logits, int64_t axis = -1, std::optional<Shape> shape = std::nullopt,
                  bool replace = true, SampleMode mode = SampleMode::low);
/// Gumbel(0, 1) samples.
Array gumbel(const Array& key, const Shape& shape, DType d = DType::f32, SampleMode mode = SampleMode::low);
/// A random permutation of arange(n), or of x along axis 0 (JAX's sort-based shuffle).
Array permutation(const Array& key, int64_t n);
Array permutation(const Array& key, const Array& x);
/// Normal values truncated to [lower, upper] (by inverse CDF).
Array truncated_normal(const Array& key, double lower, double upper, const Shape& shape, DType d = DType::f32);
/// The same with array bounds; the shape defaults to theirs broadcast together.
Array truncated_normal(const Array& key, const Array& lower, const Array& upper, std::optional<Shape> shape = std::nullopt,
                       DType d = DType::f32);

// ---- more of jax.random's samplers (distributions.cpp), by JAX's algorithms -----------------------------
/// Integers uniform in [minval, maxval) of an integer dtype (minval and maxval broadcast to shape; a span
/// that does not fit the dtype, e.g. 0..256 as u8, covers the whole range; maxval <= minval gives minval).
Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval, DType d = DType::i32);
/// Samples of `shape` from a (an integer scalar n: from 0..n-1) along `axis`, with or without replacement,
/// uniformly or with probabilities p (1-D, one per entry).
Array choice(const Array& key, const Array& a, const Shape& shape = {}, bool replace = true,
             std::optional<Array> p = std::nullopt, int64_t axis = 0, SampleMode mode = SampleMode::low);
/// x permuted along axis; with `independent` every vector along axis is permuted on its own.
Array permutation(const Array& key, const Array& x, int64_t axis, bool independent = false);
/// Exponential(1), Laplace(0, 1), logistic(0, 1) and Cauchy(0, 1) samples.
Array exponential(const Array& key, const Shape& shape, DType d = DType::f32);
Array laplace(const Array& key, const Shape& shape, DType d = DType::f32);
Array logistic(const Array& key, const Shape& shape, DType d = DType::f32);
Array cauchy(const Array& key, const Shape& shape, DType d = DType::f32);
/// Pareto with shape b (density b / x^(b + 1) on x >= 1); shape defaults to b's.
Array pareto(const Array& key, const Array& b, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// -1 or 1 with probability 1/2 each.
Array rademacher(const Array& key, const Shape& shape, DType d = DType::i32);
/// The one-sided Maxwell distribution (the norm of three standard normals).
Array maxwell(const Array& key, const Shape& shape, DType d = DType::f32);
/// Maxwell's with a random sign, scaled and shifted; JAX's shape: `shape` (else the parameters' broadcast
/// shape) followed by the parameters' shape.
Array double_sided_maxwell(const Array& key, const Array& loc, const Array& scale, const Shape& shape = {},
                           DType d = DType::f32);
/// Weibull (density proportional to x^(c-1) exp(-(x/scale)^c)), by the inverse CDF.
Array weibull_min(const Array& key, const Array& scale, const Array& concentration, const Shape& shape = {},
                  DType d = DType::f32);
/// Rayleigh with the given scale; shape defaults to scale's.
Array rayleigh(const Array& key, const Array& scale, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// Wald (inverse Gaussian with unit shape) with the given mean; shape defaults to mean's.
Array wald(const Array& key, const Array& mean, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// Normal vectors with mean [..., n] and covariance [..., n, n], the factor of cov by method "cholesky"
/// (default), "eigh" or "svd" (the last two for singular covariances); result shape: `shape` (else the
/// parameters' batch shape) + (n,).
Array multivariate_normal(const Array& key, const Array& mean, const Array& cov, std::optional<Shape> shape = std::nullopt,
                          std::optional<DType> dtype = std::nullopt, const std::string& method = "cholesky");
// ---- the gamma family (gamma.cpp) ------------------------------------------------------------------------
// Differentiable in their parameters by JAX's implicit reparameterization: a sample's derivative in the
// shape parameter a is dx/da = lax::random_gamma_grad(a, x), the change of x that keeps its CDF value fixed.
/// Gamma(a, 1) (Marsaglia and Tsang's method with one key per element, as JAX); shape defaults to a's.
Array gamma(const Array& key, const Array& a, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// log of Gamma(a, 1) samples, accurate where a << 1 makes the samples underflow.
Array loggamma(const Array& key, const Array& a, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// Beta(a, b), from two log-gamma samples.
Array beta(const Array& key, const Array& a, const Array& b, std::optional<Shape> shape = std::nullopt,
           DType d = DType::f32);
/// Dirichlet(alpha) over alpha's last axis; the batch shape defaults to alpha's leading ones.
Array dirichlet(const Array& key, const Array& alpha, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// Chi-square with df degrees of freedom; Student's t; Snedecor's F.
Array chisquare(const Array& key, const Array& df, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
Array t(const Array& key, const Array& df, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
Array f(const Array& key, const Array& dfnum, const Array& dfden, std::optional<Shape> shape = std::nullopt,
        DType d = DType::f32);
/// Density proportional to exp(-|x|^p).
Array generalized_normal(const Array& key, double p, const Shape& shape = {}, DType d = DType::f32);
/// Points uniform in the unit Lp ball of dimension dim: shape + (dim,).
Array ball(const Array& key, int64_t dim, double p = 2, const Shape& shape = {}, DType d = DType::f32);

// ---- counts (discrete.cpp) -------------------------------------------------------------------------------
/// Poisson(lam) counts of an integer dtype (Knuth's method below lam = 10, Hormann's transformed rejection
/// above; computed in f32, as JAX); shape defaults to lam's.
Array poisson(const Array& key, const Array& lam, std::optional<Shape> shape = std::nullopt, DType d = DType::i32);
/// Binomial(n, p) counts as floats (JAX's dtype): sums of geometric draws where n min(p, 1-p) <= 10, BTRS
/// rejection otherwise; NaN for invalid n or p, inf for infinite n.
Array binomial(const Array& key, const Array& n, const Array& p, std::optional<Shape> shape = std::nullopt,
               DType d = DType::f32);
/// Multinomial counts of n trials over p's last axis (one binomial per outcome on what the earlier ones left);
/// shape (default p's) ends with the number of outcomes.
Array multinomial(const Array& key, const Array& n, const Array& p, std::optional<Shape> shape = std::nullopt,
                  DType d = DType::f32);
/// The number of Bernoulli(p) trials up to the first success (1, 2, ...).
Array geometric(const Array& key, const Array& p, std::optional<Shape> shape = std::nullopt, DType d = DType::i32);
/// The triangular distribution on [left, right] with its peak at mode.
Array triangular(const Array& key, const Array& left, const Array& mode, const Array& right,
                 std::optional<Shape> shape = std::nullopt, DType d = DType::f32);
/// exp(sigma * N(0, 1)).
Array lognormal(const Array& key, const Array& sigma, std::optional<Shape> shape = std::nullopt, DType d = DType::f32);

/// Matrices [..., n, m] (m = n by default) uniform (Haar) over the orthogonal group (n = m) or the
/// Stiefel manifold: orthonormal columns when n > m, rows when n < m.
Array orthogonal(const Array& key, int64_t n, const Shape& shape = {}, DType d = DType::f32,
                 std::optional<int64_t> m = std::nullopt);

}  // namespace graft::random
