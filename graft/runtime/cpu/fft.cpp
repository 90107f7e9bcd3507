#include "graft/runtime/cpu/fft.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "graft/core/env.h"
#include "graft/core/error.h"
#include "graft/runtime/cpu/parallel.h"

#ifdef GRAFT_HAVE_FFTW
#include <fftw3.h>
#endif

namespace graft::cpu::fft {

bool available() {
#ifdef GRAFT_HAVE_FFTW
  return true;
#else
  return false;
#endif
}

#ifdef GRAFT_HAVE_FFTW

namespace {

// FFTW's double and float interfaces behind one name each.
struct F64 {
  using real = double;
  using cplx = fftw_complex;
  using plan = fftw_plan;
  static plan c2c(int rank, const int* n, int howmany, void* in, void* out, int dist, int sign, unsigned flags) {
    return fftw_plan_many_dft(rank, n, howmany, static_cast<cplx*>(in), nullptr, 1, dist, static_cast<cplx*>(out),
                              nullptr, 1, dist, sign, flags);
  }
  static plan r2c(int rank, const int* n, int howmany, void* in, void* out, int idist, int odist, unsigned flags) {
    return fftw_plan_many_dft_r2c(rank, n, howmany, static_cast<real*>(in), nullptr, 1, idist, static_cast<cplx*>(out),
                                  nullptr, 1, odist, flags);
  }
  static plan c2r(int rank, const int* n, int howmany, void* in, void* out, int idist, int odist, unsigned flags) {
    return fftw_plan_many_dft_c2r(rank, n, howmany, static_cast<cplx*>(in), nullptr, 1, idist, static_cast<real*>(out),
                                  nullptr, 1, odist, flags);
  }
  static int alignment(const void* p) { return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))); }
  static void destroy(plan p) { fftw_destroy_plan(p); }
  static void run_c2c(plan p, void* in, void* out) {
    fftw_execute_dft(p, static_cast<cplx*>(in), static_cast<cplx*>(out));
  }
  static void run_r2c(plan p, void* in, void* out) {
    fftw_execute_dft_r2c(p, static_cast<real*>(in), static_cast<cplx*>(out));
  }
  static void run_c2r(plan p, void* in, void* out) {
    fftw_execute_dft_c2r(p, static_cast<cplx*>(in), static_cast<real*>(out));
  }
};
struct F32 {
  using real = float;
  using cplx = fftwf_complex;
  using plan = fftwf_plan;
  static plan c2c(int rank, const int* n, int howmany, void* in, void* out, int dist, int sign, unsigned flags) {
    return fftwf_plan_many_dft(rank, n, howmany, static_cast<cplx*>(in), nullptr, 1, dist, static_cast<cplx*>(out),
                              nullptr, 1, dist, sign, flags);
  }
  static plan r2c(int rank, const int* n, int howmany, void* in, void* out, int idist, int odist, unsigned flags) {
    return fftwf_plan_many_dft_r2c(rank, n, howmany, static_cast<real*>(in), nullptr, 1, idist, static_cast<cplx*>(out),
                                  nullptr, 1, odist, flags);
  }
  static plan c2r(int rank, const int* n, int howmany, void* in, void* out, int idist, int odist, unsigned flags) {
    return fftwf_plan_many_dft_c2r(rank, n, howmany, static_cast<cplx*>(in), nullptr, 1, idist, static_cast<real*>(out),
                                  nullptr, 1, odist, flags);
  }
  static int alignment(const void* p) { return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))); }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
  static void run_c2c(plan p, void* in, void* out) {
    fftwf_execute_dft(p, static_cast<cplx*>(in), static_cast<cplx*>(out));
  }
  static void run_r2c(plan p, void* in, void* out) {
    fftwf_execute_dft_r2c(p, static_cast<real*>(in), static_cast<cplx*>(out));
  }
  static void run_c2r(plan p, void* in, void* out) {
    fftwf_execute_dft_c2r(p, static_cast<cplx*>(in), static_cast<real*>(out));
  }
};

template <class T>
void execute(Kind kind, typename T::plan p, void* in, void* out) {
  switch (kind) {
    case Kind::forward:
    case Kind::backward: T::run_c2c(p, in, out); break;
    case Kind::r2c: T::run_r2c(p, in, out); break;
    case Kind::c2r: T::run_c2r(p, in, out); break;
  }
}

// Plans are made once per (kind, precision, lengths, batch, the arrays' alignments) and kept: FFTW's
// planner is not thread-safe (every call to it holds this mutex), while executing a plan on new arrays
// is, provided they have the plan's alignment (FFTW's SIMD codelets need it). FFTW_ESTIMATE plans without running trial transforms: FFTW_MEASURE
// (GRAFT_FFTW_MEASURE=1) gains up to 1.5x on large transforms but takes seconds per new shape (3.7 s
// for 2^20 points).
using Key = std::tuple<int, int, std::vector<int64_t>, int64_t, int, int>;
std::mutex planner_mu;
std::map<Key, void*>& plans() {
  static auto* m = new std::map<Key, void*>();  // never destroyed: plans may be running at exit
  return *m;
}
// Per (kind, precision, lengths): whether FFTW_ESTIMATE's non-SIMD plan was the faster (see get_plan).
using ChoiceKey = std::tuple<int, int, std::vector<int64_t>>;
std::map<ChoiceKey, bool>& simd_choices() {
  static auto* m = new std::map<ChoiceKey, bool>();
  return *m;
}

// `in` and `out` are the arrays of the first execution: FFTW_ESTIMATE neither reads nor writes them, but a
// plan remembers whether it was made in place (in == out, with r2c's padded rows) or not and the arrays'
// alignments, and every later execution on new arrays must match; graft's are always out of place.
template <class T>
typename T::plan get_plan(Kind kind, const std::vector<int64_t>& lengths, int64_t count, void* in, void* out) {
  std::lock_guard<std::mutex> lock(planner_mu);
  Key key{static_cast<int>(kind), static_cast<int>(sizeof(typename T::real)), lengths, count, T::alignment(in),
          T::alignment(out)};
  auto it = plans().find(key);
  if (it != plans().end()) return static_cast<typename T::plan>(it->second);
  std::vector<int> n(lengths.begin(), lengths.end());
  int rank = static_cast<int>(n.size()), many = static_cast<int>(count);
  // consecutive arrays: `logical` elements apart, `half` on the complex side of r2c and c2r
  int64_t logical = 1;
  for (int64_t v : lengths) logical *= v;
  int full = static_cast<int>(logical), half = static_cast<int>(logical / lengths.back() * (lengths.back() / 2 + 1));
  static const bool measure = env::flag("GRAFT_FFTW_MEASURE");
  // planning (MEASURE) and the trial runs below write their arrays: scratch ones of the same alignments
  int64_t bytes = 2 * static_cast<int64_t>(full) * count * static_cast<int64_t>(sizeof(typename T::real)) + 64;
  std::vector<char> scratch_in(static_cast<size_t>(bytes), 0), scratch_out(static_cast<size_t>(bytes), 0);
  auto same_alignment = [](std::vector<char>& buf, const void* like) {
    char* q = buf.data();
    while (T::alignment(q) != T::alignment(like)) ++q;
    return static_cast<void*>(q);
  };
  in = same_alignment(scratch_in, in);
  out = same_alignment(scratch_out, out);
  auto make = [&](unsigned flags) {
    typename T::plan q = nullptr;
    switch (kind) {
      case Kind::forward: q = T::c2c(rank, n.data(), many, in, out, full, FFTW_FORWARD, flags); break;
      case Kind::backward: q = T::c2c(rank, n.data(), many, in, out, full, FFTW_BACKWARD, flags); break;
      case Kind::r2c: q = T::r2c(rank, n.data(), many, in, out, full, half, flags); break;
      // c2r overwrites its input whatever the flags say for rank > 1: run() gives it a copy
      case Kind::c2r: q = T::c2r(rank, n.data(), many, in, out, half, full, flags | FFTW_DESTROY_INPUT); break;
    }
    if (!q) fail<Error>("fft: FFTW could not plan ", count, " transforms of ", lengths.size(), " dimensions");
    return q;
  };
  if (measure) {
    typename T::plan p = make(FFTW_MEASURE);
    plans()[key] = static_cast<void*>(p);
    return p;
  }
  // FFTW_ESTIMATE's guess is sometimes far off: for some 2-D complex transforms its SIMD plan runs 3-6x
  // slower than the one it makes without SIMD (a 1024^2 c64 transform: 66 against 11 ms), while for
  // batches of 1-D transforms the SIMD plan is 2-3x faster. The first large transform of given lengths
  // times both (each warmed up once, then timed once, on the scratch arrays) and the choice holds for
  // every later plan of those lengths, whatever the batch or the alignment, so that one process computes
  // a transform with one algorithm. GRAFT_FFTW_SIMD=on / off fixes the choice.
  static const std::string simd = env::choice("GRAFT_FFTW_SIMD", {"auto", "on", "off"}, "auto");
  ChoiceKey ck{static_cast<int>(kind), static_cast<int>(sizeof(typename T::real)), lengths};
  auto chosen = simd_choices().find(ck);
  bool unaligned = simd == "off";
  if (simd == "auto" && chosen != simd_choices().end()) {
    unaligned = chosen->second;
  } else if (simd == "auto" && logical * count >= (int64_t(1) << 14)) {
    typename T::plan a = make(FFTW_ESTIMATE), b = make(FFTW_ESTIMATE | FFTW_UNALIGNED);
    auto time_of = [&](typename T::plan q) {
      execute<T>(kind, q, in, out);  // warm: the arrays and twiddles in cache
      auto t0 = std::chrono::steady_clock::now();
      execute<T>(kind, q, in, out);
      return std::chrono::steady_clock::now() - t0;
    };
    auto ta = time_of(a), tb = time_of(b);
    unaligned = tb < ta;
    simd_choices()[ck] = unaligned;
    T::destroy(unaligned ? a : b);
    typename T::plan p = unaligned ? b : a;
    plans()[key] = static_cast<void*>(p);
    return p;
  }
  typename T::plan p = make(unaligned ? FFTW_ESTIMATE | FFTW_UNALIGNED : FFTW_ESTIMATE);
  plans()[key] = static_cast<void*>(p);
  return p;
}

template <class T>
void run(Kind kind, const std::vector<int64_t>& lengths, int64_t howmany, const void* in, void* out) {
  int64_t logical = 1;
  for (int64_t n : lengths) logical *= n;
  int64_t half = logical / lengths.back() * (lengths.back() / 2 + 1);
  // elements (reals or complex pairs) per array on each side
  int64_t in_elems = kind == Kind::c2r ? half : logical, out_elems = kind == Kind::r2c ? half : logical;
  size_t in_item = (kind == Kind::r2c ? 1 : 2) * sizeof(typename T::real);
  size_t out_item = (kind == Kind::c2r ? 1 : 2) * sizeof(typename T::real);
  // Blocks of arrays per plan: FFTW vectorizes across the arrays of one plan, so short transforms go
  // several at a time; the blocks spread over the cores.
  int64_t block = std::min<int64_t>(std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, logical)), howmany);
  int64_t blocks = (howmany + block - 1) / block;
  int64_t tail = howmany - (blocks - 1) * block;
  auto src_of = [&](int64_t b) { return static_cast<const char*>(in) + static_cast<size_t>(b * block * in_elems) * in_item; };
  auto dst_of = [&](int64_t b) { return static_cast<char*>(out) + static_cast<size_t>(b * block * out_elems) * out_item; };
  // the plans, made here (planning may raise; the workers below only execute): c2r's input is a copy in a
  // 64-byte-aligned scratch buffer
  alignas(64) static char aligned_probe[64];
  std::vector<typename T::plan> plan_of(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const void* src = kind == Kind::c2r ? aligned_probe : src_of(b);
    plan_of[static_cast<size_t>(b)] =
        get_plan<T>(kind, lengths, b + 1 == blocks ? tail : block, const_cast<void*>(src), dst_of(b));
  }
  std::exception_ptr error;
  std::mutex error_mu;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    try {
      std::vector<char> scratch;
      for (int64_t b = b0; b < b1; ++b) {
        int64_t count = b + 1 == blocks ? tail : block;
        // FFTW's execute takes non-const input: the c2c and r2c plans do not write it (out-of-place,
        // without FFTW_DESTROY_INPUT), c2r does, so it gets a copy
        void* src = const_cast<char*>(src_of(b));
        if (kind == Kind::c2r) {
          scratch.resize(static_cast<size_t>(count * in_elems) * in_item + 64);
          void* copy = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
          std::memcpy(copy, src, static_cast<size_t>(count * in_elems) * in_item);
          src = copy;
        }
        execute<T>(kind, plan_of[static_cast<size_t>(b)], src, dst_of(b));
      }
    } catch (...) {  // (an exception must not leave an OpenMP region)
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace

void transform(Kind kind, DType real, const std::vector<int64_t>& lengths, int64_t howmany, const void* in, void* out) {
  if (lengths.empty()) fail<ValueError>("fft: no dimensions to transform");
  for (int64_t n : lengths)
    if (n <= 0 || n > INT_MAX) fail<ValueError>("fft: a transform length of ", n, " (FFTW takes 1 to 2^31 - 1)");
  int64_t total = 1;
  for (int64_t n : lengths) total *= n;
  if (total > INT_MAX)
    fail<NotImplementedError>("fft: transforms of more than 2^31 - 1 points (got ", total, ") are not supported");
  if (howmany <= 0) return;
  if (real == DType::f64) {
    run<F64>(kind, lengths, howmany, in, out);
  } else if (real == DType::f32) {
    run<F32>(kind, lengths, howmany, in, out);
  } else {
    fail<TypeError>("fft: transforms f32 or f64 (and their complex types), got ", short_name(real));
  }
}

#else

void transform(Kind, DType, const std::vector<int64_t>&, int64_t, const void*, void*) {
  fail<NotImplementedError>("fft: graft was built without FFTW (install libfftw3-dev and configure with "
                            "-DGRAFT_WITH_FFTW=ON)");
}

#endif

}  // namespace graft::cpu::fft
