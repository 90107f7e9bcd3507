// jax.nn's activations beyond graft/ops' (relu, gelu, silu, softplus, elu, ...), as composites of ops, so
// they differentiate, batch and compile like their parts; formulas as JAX defines them.
#include <cmath>

#include "graft/nn/nn.h"
#include "graft/ops/ops.h"
#include "graft/prims/lax.h"

namespace graft::nn {

namespace {
Array scalar_like(double v, const Array& x) { return full({}, v, x.dtype()); }
}  // namespace

Array identity(const Array& x) { return x; }
Array swish(const Array& x) { return silu(x); }

Array celu(const Array& x, double alpha) {
  Array a = scalar_like(alpha, x);
  return maximum(x, zeros_like(x)) + minimum(zeros_like(x), a * expm1(x / a));
}

Array selu(const Array& x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  return scalar_like(kScale, x) * elu(x, kAlpha);
}

Array mish(const Array& x) { return x * tanh(softplus(x)); }
Array hard_sigmoid(const Array& x) { return relu6(x + scalar_like(3.0, x)) / scalar_like(6.0, x); }
Array hard_silu(const Array& x) { return x * hard_sigmoid(x); }
Array hard_swish(const Array& x) { return hard_silu(x); }
Array hard_tanh(const Array& x) { return clip(x, scalar_like(-1.0, x), scalar_like(1.0, x)); }
Array soft_sign(const Array& x) { return x / (abs(x) + scalar_like(1.0, x)); }

Array squareplus(const Array& x, double b) {
  return (x + sqrt(square(x) + scalar_like(b, x))) / scalar_like(2.0, x);
}

Array sparse_plus(const Array& x) {
  Array one = scalar_like(1.0, x);
  Array mid = square(x + one) / scalar_like(4.0, x);
  return where(x <= -one, zeros_like(x), where(x >= one, x, mid));
}

Array sparse_sigmoid(const Array& x) {
  Array one = scalar_like(1.0, x);
  return where(x <= -one, zeros_like(x), where(x >= one, ones_like(x), (x + one) / scalar_like(2.0, x)));
}

Array glu(const Array& x, int64_t axis) {
  int64_t a = axis < 0 ? axis + x.ndim() : axis;
  if (a < 0 || a >= x.ndim())
    fail<ValueError>("glu: axis ", axis, " is out of range for ", x.aval().str());
  int64_t n = x.shape()[static_cast<size_t>(a)];
  if (n % 2 != 0) fail<ValueError>("glu: axis ", axis, " of ", x.aval().str(), " has an odd size (", n, ")");
  Array first = lax::slice_in_dim(x, 0, n / 2, 1, a), second = lax::slice_in_dim(x, n / 2, n, 1, a);
  return first * sigmoid(second);
}

Array log1mexp(const Array& x) {
  // below log 2, 1 - exp(-x) loses digits: -expm1(-x) keeps them; above, log1p keeps the tiny result
  return where(x < scalar_like(std::log(2.0), x), log(-expm1(-x)), log1p(-exp(-x)));
}

Array logmeanexp(const Array& x, AxisArg axis, bool keepdims) {
  Array lse = logsumexp(x, axis, keepdims);
  // the reduced count: the reduction keeps one result per slice either way
  int64_t n = x.size() / std::max<int64_t>(lse.size(), 1);
  return lse - scalar_like(std::log(static_cast<double>(n)), x);
}

Array standardize(const Array& x, AxisArg axis, double epsilon) {
  Array m = mean(x, axis, true);
  Array v = var(x, axis, true);
  return (x - m) * rsqrt(v + scalar_like(epsilon, x));
}

}  // namespace graft::nn
