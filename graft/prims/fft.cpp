// The discrete Fourier transform over an operand's trailing dimensions (JAX's lax.fft): one primitive
// with fft_type FFT (0), IFFT (1), RFFT (2) or IRFFT (3), as JAX numbers them, and fft_lengths, the
// sizes of the transformed dimensions. IFFT and IRFFT are normalized (1/N), as XLA's are; jnp.fft's
// `norm` rescales. The CPU kernel is FFTW's (graft/runtime/cpu/fft.h); other devices run it through
// the host.
//
// Every type is linear, so the JVP is the transform of the tangent. The transposes (JAX's convention:
// unconjugated cotangents) follow from the DFT matrix being symmetric:
//   FFT, IFFT   themselves;
//   RFFT        x -> FFT(complex(x))[..., :n/2+1]: pad the cotangent back to n with zeros, FFT it, and
//               keep the real part (the transpose of a real -> complex embedding);
//   IRFFT       y_j = (1/N) sum_k m_k Re(X_k w^{jk}), m_k = 1 for the self-conjugate terms (k = 0 and, for
//               even n, k = n/2) and 2 for the others, whose mirror images the output also sums: the
//               cotangent is conj(m/N * RFFT(ct)).
#include <numeric>

#include "graft/prims/rules.h"
#include "graft/runtime/cpu/fft.h"

namespace graft::prims {

namespace {

enum FftType : int64_t { kFft = 0, kIfft = 1, kRfft = 2, kIrfft = 3 };

const char* type_name(int64_t t) {
  switch (t) {
    case kFft: return "FFT";
    case kIfft: return "IFFT";
    case kRfft: return "RFFT";
    case kIrfft: return "IRFFT";
  }
  return "?";
}

Avals fft_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const Aval& x = *in[0];
  int64_t type = params.get_int("fft_type");
  const IntList& lens = params.get_ints("fft_lengths");
  if (type < kFft || type > kIrfft) shape_error(p, in, "fft_type must be 0 (FFT) to 3 (IRFFT), got " + std::to_string(type));
  int64_t k = static_cast<int64_t>(lens.size());
  if (k == 0 || k > x.ndim())
    shape_error(p, in, std::string(type_name(type)) + ": fft_lengths needs 1 to ndim entries, got " + std::to_string(k));
  for (int64_t n : lens)
    if (n < 1) shape_error(p, in, std::string(type_name(type)) + ": fft_lengths must be positive");
  int64_t lead = x.ndim() - k;
  auto minor_is = [&](const IntList& want) {
    for (int64_t i = 0; i < k; ++i)
      if (x.shape[lead + i] != want[i]) return false;
    return true;
  };
  auto lens_str = [&] {
    std::string s = "(";
    for (size_t i = 0; i < lens.size(); ++i) s += (i ? ", " : "") + std::to_string(lens[i]);
    return s + (lens.size() == 1 ? ",)" : ")");
  };
  Aval out = x;
  if (type == kRfft) {
    if (x.dtype != DType::f32 && x.dtype != DType::f64) type_error(p, in, "RFFT takes an f32 or f64 operand");
    if (!minor_is(lens)) shape_error(p, in, "RFFT: the trailing dimensions must equal fft_lengths " + lens_str());
    out.shape.back() = lens.back() / 2 + 1;
    out.dtype = complex_dtype(x.dtype);
  } else if (type == kIrfft) {
    if (!is_complex(x.dtype)) type_error(p, in, "IRFFT takes a c64 or c128 operand");
    IntList half = lens;
    half.back() = lens.back() / 2 + 1;
    if (!minor_is(half))
      shape_error(p, in, "IRFFT: the trailing dimensions must be fft_lengths " + lens_str() +
                             " with the last one n/2 + 1 = " + std::to_string(half.back()));
    out.shape.back() = lens.back();
    out.dtype = real_dtype(x.dtype);
  } else {
    if (!is_complex(x.dtype)) type_error(p, in, std::string(type_name(type)) + " takes a c64 or c128 operand");
    if (!minor_is(lens))
      shape_error(p, in, std::string(type_name(type)) + ": the trailing dimensions must equal fft_lengths " + lens_str());
  }
  return {out};
}

// Multiplies n reals (the parts of complex values too) by s in place.
template <class R>
void scale(R* p, int64_t n, R s) {
  elementwise_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] *= s;
  });
}

Arrays fft_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Arrays res = alloc_outputs(out);
  int64_t type = params.get_int("fft_type");
  const IntList& lens = params.get_ints("fft_lengths");
  const Aval& x = in[0].aval();
  int64_t k = static_cast<int64_t>(lens.size()), howmany = 1, total = 1;
  for (int64_t i = 0; i < x.ndim() - k; ++i) howmany *= x.shape[i];
  for (int64_t n : lens) total *= n;
  DType real = is_complex(x.dtype) ? real_dtype(x.dtype) : x.dtype;
  static constexpr cpu::fft::Kind kinds[] = {cpu::fft::Kind::forward, cpu::fft::Kind::backward, cpu::fft::Kind::r2c,
                                             cpu::fft::Kind::c2r};
  void* dst = res[0].concrete()->data();
  cpu::fft::transform(kinds[type], real, lens, howmany, in[0].raw_data(), dst);
  if (type == kIfft || type == kIrfft) {
    int64_t reals = out[0].size() * (type == kIfft ? 2 : 1);
    if (real == DType::f64) {
      scale(static_cast<double*>(dst), reals, 1.0 / static_cast<double>(total));
    } else {
      scale(static_cast<float*>(dst), reals, static_cast<float>(1.0 / static_cast<double>(total)));
    }
  }
  return res;
}

Array fft_of(const Array& x, int64_t type, const IntList& lens) {
  return bind1(fft_p, {x}, {{"fft_type", type}, {"fft_lengths", lens}});
}

Arrays fft_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  if (is_zero(cts[0])) return {Array()};
  const Array& ct = cts[0];
  int64_t type = params.get_int("fft_type");
  const IntList& lens = params.get_ints("fft_lengths");
  int64_t n = lens.back(), last = ct.ndim() - 1;
  if (type == kFft || type == kIfft) return {fft_of(ct, type, lens)};
  if (type == kRfft) {
    std::vector<IntList> cfg(static_cast<size_t>(ct.ndim()), IntList{0, 0, 0});
    cfg.back()[1] = n - ct.shape()[last];
    Array full = lax::pad(ct, lax::full({}, 0, ct.dtype()), cfg);
    return {lax::real(fft_of(full, kFft, lens))};
  }
  // IRFFT
  Array x = fft_of(ct, kRfft, lens);
  int64_t m = x.shape()[last];
  DType rd = ct.dtype();
  // m_k / N along the last dimension: 1 at k = 0 and (even n) k = n/2, 2 between
  Array k = lax::iota(rd, x.shape(), last);
  Array self_conjugate = lax::eq(k, lax::full({}, 0, rd));
  if (n % 2 == 0) self_conjugate = lax::bitwise_or(self_conjugate, lax::eq(k, lax::full({}, static_cast<double>(m - 1), rd)));
  double inv = 1.0 / static_cast<double>(std::accumulate(lens.begin(), lens.end(), int64_t(1), std::multiplies<>()));
  Array w = lax::select(self_conjugate, lax::full(x.shape(), inv, rd), lax::full(x.shape(), 2 * inv, rd));
  return {lax::conj(lax::mul(x, lax::complex(w, lax::full(x.shape(), 0, rd))))};
}

// The transformed dimensions are the trailing ones: the batch dimension goes in front.
BatchResult fft_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                      const BatchInfo& axis, const Params& params) {
  Array x = batch_to_front(vals[0], dims[0], axis.size);
  return {{bind1(p, {x}, params)}, {0}};
}

}  // namespace

const Primitive fft_p{"fft", 0, &fft_shape, &fft_impl, &linear_jvp, &fft_transpose, &fft_batch};

}  // namespace graft::prims

namespace graft::lax {
Array fft(const Array& x, FftType type, const Shape& fft_lengths) {
  return bind1(prims::fft_p, {x}, {{"fft_type", static_cast<int64_t>(type)}, {"fft_lengths", IntList(fft_lengths.begin(), fft_lengths.end())}});
}
}  // namespace graft::lax
