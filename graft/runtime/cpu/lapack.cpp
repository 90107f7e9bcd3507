#include "graft/runtime/cpu/lapack.h"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "graft/core/error.h"
#include "graft/runtime/cpu/gemm.h"

#ifdef GRAFT_HAVE_BLAS
#include <cblas.h>

// LAPACK's Fortran entry points (OpenBLAS exports them; Debian ships no LAPACK C header with it).
// Character arguments carry their lengths as trailing hidden arguments (gfortran's convention). Fortran's
// COMPLEX and COMPLEX*16 are laid out as std::complex<float> and std::complex<double>.
using lapack_c = std::complex<float>;
using lapack_z = std::complex<double>;
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void cpotrf_(const char* uplo, const int* n, lapack_c* a, const int* lda, int* info, size_t);
void zpotrf_(const char* uplo, const int* n, lapack_z* a, const int* lda, int* info, size_t);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void cgetrf_(const int* m, const int* n, lapack_c* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, lapack_z* a, const int* lda, int* ipiv, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void cheevd_(const char* jobz, const char* uplo, const int* n, lapack_c* a, const int* lda, float* w, lapack_c* work,
             const int* lwork, float* rwork, const int* lrwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void zheevd_(const char* jobz, const char* uplo, const int* n, lapack_z* a, const int* lda, double* w, lapack_z* work,
             const int* lwork, double* rwork, const int* lrwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void cgeqrf_(const int* m, const int* n, lapack_c* a, const int* lda, lapack_c* tau, lapack_c* work, const int* lwork,
             int* info);
void zgeqrf_(const int* m, const int* n, lapack_z* a, const int* lda, lapack_z* tau, lapack_z* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void cungqr_(const int* m, const int* n, const int* k, lapack_c* a, const int* lda, const lapack_c* tau, lapack_c* work,
             const int* lwork, int* info);
void zungqr_(const int* m, const int* n, const int* k, lapack_z* a, const int* lda, const lapack_z* tau, lapack_z* work,
             const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info, size_t);
void cgesdd_(const char* jobz, const int* m, const int* n, lapack_c* a, const int* lda, float* s, lapack_c* u,
             const int* ldu, lapack_c* vt, const int* ldvt, lapack_c* work, const int* lwork, float* rwork, int* iwork,
             int* info, size_t);
void zgesdd_(const char* jobz, const int* m, const int* n, lapack_z* a, const int* lda, double* s, lapack_z* u,
             const int* ldu, lapack_z* vt, const int* ldvt, lapack_z* work, const int* lwork, double* rwork,
             int* iwork, int* info, size_t);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi, float* vl,
            const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info, size_t, size_t);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
            double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info, size_t,
            size_t);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, lapack_c* a, const int* lda, lapack_c* w, lapack_c* vl,
            const int* ldvl, lapack_c* vr, const int* ldvr, lapack_c* work, const int* lwork, float* rwork, int* info,
            size_t, size_t);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, lapack_z* a, const int* lda, lapack_z* w, lapack_z* vl,
            const int* ldvl, lapack_z* vr, const int* ldvr, lapack_z* work, const int* lwork, double* rwork, int* info,
            size_t, size_t);
}
#endif

namespace graft::cpu::lapack {

bool available() {
#ifdef GRAFT_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

#ifdef GRAFT_HAVE_BLAS
namespace {

int to_int(int64_t v) {
  if (v > 0x7fffffff) fail<ValueError>("linalg: a matrix dimension of ", v, " exceeds LAPACK's 32-bit integers");
  return static_cast<int>(v);
}

// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols, through 8 x 8 tiles held in registers: a plain
// double loop walks one side with a stride of a row, and with rows of a power-of-two length every element
// of a column lands on the same cache sets (the two copies around a 512 x 512 f64 LU took as long as the
// factorization; OpenBLAS's omatcopy is no faster). A tile reads and writes whole cache lines.
template <class T>
void transpose(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd) {
  constexpr int64_t kTile = 8;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      if (i0 + kTile <= rows && j0 + kTile <= cols) {
        T t[kTile][kTile];
        for (int64_t i = 0; i < kTile; ++i)
          for (int64_t j = 0; j < kTile; ++j) t[j][i] = src[(i0 + i) * lds + j0 + j];
        for (int64_t j = 0; j < kTile; ++j)
          for (int64_t i = 0; i < kTile; ++i) dst[(j0 + j) * ldd + i0 + i] = t[j][i];
        continue;
      }
      for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) dst[j * ldd + i] = src[i * lds + j];
    }
}
// Row-major rows x cols <-> column-major (the same matrix).
template <class T>
void to_col_major(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  transpose(src, rows, cols, cols, dst, ld);
}
template <class T>
void from_col_major(const T* src, int64_t rows, int64_t cols, int64_t ld, T* dst) {
  transpose(src, cols, rows, ld, dst, cols);
}

// ---- the four precisions' entry points under one name each ---------------------------------------------
template <class T>
struct RealOf {
  using type = T;
};
template <class R>
struct RealOf<std::complex<R>> {
  using type = R;
};
template <class T>
using real_of = typename RealOf<T>::type;
template <class T>
constexpr bool kComplex = !std::is_same_v<T, real_of<T>>;

void potrf(const int* n, float* a, const int* lda, int* info) { spotrf_("U", n, a, lda, info, 1); }
void potrf(const int* n, double* a, const int* lda, int* info) { dpotrf_("U", n, a, lda, info, 1); }
void potrf(const int* n, lapack_c* a, const int* lda, int* info) { cpotrf_("U", n, a, lda, info, 1); }
void potrf(const int* n, lapack_z* a, const int* lda, int* info) { zpotrf_("U", n, a, lda, info, 1); }
void getrf(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info) { sgetrf_(m, n, a, lda, ipiv, info); }
void getrf(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info) { dgetrf_(m, n, a, lda, ipiv, info); }
void getrf(const int* m, const int* n, lapack_c* a, const int* lda, int* ipiv, int* info) { cgetrf_(m, n, a, lda, ipiv, info); }
void getrf(const int* m, const int* n, lapack_z* a, const int* lda, int* ipiv, int* info) { zgetrf_(m, n, a, lda, ipiv, info); }
void geqrf(const int* m, const int* n, float* a, const int* lda, float* tau, float* w, const int* lw, int* info) {
  sgeqrf_(m, n, a, lda, tau, w, lw, info);
}
void geqrf(const int* m, const int* n, double* a, const int* lda, double* tau, double* w, const int* lw, int* info) {
  dgeqrf_(m, n, a, lda, tau, w, lw, info);
}
void geqrf(const int* m, const int* n, lapack_c* a, const int* lda, lapack_c* tau, lapack_c* w, const int* lw, int* info) {
  cgeqrf_(m, n, a, lda, tau, w, lw, info);
}
void geqrf(const int* m, const int* n, lapack_z* a, const int* lda, lapack_z* tau, lapack_z* w, const int* lw, int* info) {
  zgeqrf_(m, n, a, lda, tau, w, lw, info);
}
// orgqr for real matrices, ungqr for complex ones: Q from geqrf's reflectors
void orgqr(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* w, const int* lw,
           int* info) {
  sorgqr_(m, n, k, a, lda, tau, w, lw, info);
}
void orgqr(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* w,
           const int* lw, int* info) {
  dorgqr_(m, n, k, a, lda, tau, w, lw, info);
}
void orgqr(const int* m, const int* n, const int* k, lapack_c* a, const int* lda, const lapack_c* tau, lapack_c* w,
           const int* lw, int* info) {
  cungqr_(m, n, k, a, lda, tau, w, lw, info);
}
void orgqr(const int* m, const int* n, const int* k, lapack_z* a, const int* lda, const lapack_z* tau, lapack_z* w,
           const int* lw, int* info) {
  zungqr_(m, n, k, a, lda, tau, w, lw, info);
}

// Every buffer LAPACK reads or writes is a scratch vector of ours with kSlack elements of tail room (then
// copied into the outputs): OpenBLAS's optimized level-2 kernels read a few elements past the end of a
// matrix (zgemv_n on Haswell, inside zlarf), which under AddressSanitizer crossed into an unmapped page
// when the matrix was an output array's or an exact-size copy.
constexpr size_t kSlack = 64;
template <class T>
std::vector<T> scratch(int64_t n) {
  return std::vector<T>(static_cast<size_t>(std::max<int64_t>(n, 1)) + kSlack, T(0));
}

// A workspace query's answer (the first element of work, a real count even in complex routines).
template <class T>
int work_size(T w) {
  return std::max(1, static_cast<int>(std::real(w)));
}

// A row-major buffer is its matrix's transpose in column-major order, so for a symmetric matrix read from
// its lower triangle LAPACK's upper-triangle routines apply to the buffer as it is: potrf("U") leaves U
// with A = U^T U in column-major order, which read row-major is the lower factor L = U^T. The same holds
// for a Hermitian matrix: the buffer is A^T = conj(A) = U^H U, so A = U^T conj(U) = L L^H.
template <class T>
int cholesky_t(T* a, int64_t n) {
  int nn = to_int(n), lda = std::max(1, nn), info = 0;
  std::vector<T> c = scratch<T>(n * n);
  std::copy(a, a + n * n, c.begin());
  potrf(&nn, c.data(), &lda, &info);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) a[i * n + j] = j > i ? T(0) : c[static_cast<size_t>(i * n + j)];
  return info;
}

template <class T>
int lu_t(T* a, int64_t m, int64_t n, int32_t* ipiv) {
  std::vector<T> c = scratch<T>(m * n);
  to_col_major(a, m, n, c.data(), m);
  int mm = to_int(m), nn = to_int(n), lda = std::max(1, mm), info = 0;
  std::vector<int> piv(static_cast<size_t>(std::min(m, n)) + kSlack);
  getrf(&mm, &nn, c.data(), &lda, piv.data(), &info);
  from_col_major(c.data(), m, n, m, a);
  for (int64_t i = 0; i < std::min(m, n); ++i) ipiv[i] = piv[static_cast<size_t>(i)] - 1;
  return info;
}

// syevd("U") / heevd("U") on the row-major buffer read the lower triangle (see cholesky_t); the
// eigenvectors come back as column-major columns, transposed once into rows. A Hermitian buffer holds
// conj(A), whose eigenvectors are the conjugates of A's: conjugated back.
template <class T>
int eigh_t(T* a, int64_t n, real_of<T>* w) {
  using R = real_of<T>;
  int nn = to_int(n), lda = std::max(1, nn), info = 0, lwork = -1, liwork = -1, lrwork = -1, iw = 0;
  T wq = 0;
  R rq = 0;
  std::vector<T> c = scratch<T>(n * n);
  std::copy(a, a + n * n, c.begin());
  std::vector<R> wv = scratch<R>(n);
  auto call = [&](T* work, R* rwork, int* iwork) {
    if constexpr (std::is_same_v<T, float>) {
      ssyevd_("V", "U", &nn, c.data(), &lda, wv.data(), work, &lwork, iwork, &liwork, &info, 1, 1);
    } else if constexpr (std::is_same_v<T, double>) {
      dsyevd_("V", "U", &nn, c.data(), &lda, wv.data(), work, &lwork, iwork, &liwork, &info, 1, 1);
    } else if constexpr (std::is_same_v<T, lapack_c>) {
      cheevd_("V", "U", &nn, c.data(), &lda, wv.data(), work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1);
    } else {
      zheevd_("V", "U", &nn, c.data(), &lda, wv.data(), work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1);
    }
  };
  call(&wq, &rq, &iw);  // workspace query
  lwork = work_size(wq);
  lrwork = work_size(rq);
  liwork = std::max(1, iw);
  std::vector<T> work = scratch<T>(lwork);
  std::vector<R> rwork = scratch<R>(lrwork);
  std::vector<int> iwork = scratch<int>(liwork);
  call(work.data(), rwork.data(), iwork.data());
  std::copy(wv.begin(), wv.begin() + n, w);
  from_col_major(c.data(), n, n, n, a);
  if constexpr (kComplex<T>)
    for (int64_t i = 0; i < n * n; ++i) a[i] = std::conj(a[i]);
  return info;
}

template <class T>
int qr_t(const T* a, int64_t m, int64_t n, bool full, T* q, T* r) {
  int64_t k = std::min(m, n), qcols = full ? m : k, cols = std::max(n, qcols);
  std::vector<T> c = scratch<T>(m * cols);
  to_col_major(a, m, n, c.data(), m);
  int mm = to_int(m), nn = to_int(n), kk = to_int(k), qc = to_int(qcols), lda = std::max(1, mm), info = 0;
  std::vector<T> tau = scratch<T>(k);
  T wq = 0;
  int lwork = -1;
  geqrf(&mm, &nn, c.data(), &lda, tau.data(), &wq, &lwork, &info);
  lwork = std::max(work_size(wq), qc) * 2;
  std::vector<T> work = scratch<T>(lwork);
  if (m > 0 && n > 0) geqrf(&mm, &nn, c.data(), &lda, tau.data(), work.data(), &lwork, &info);
  // R: the upper triangle of the factored matrix's first rows
  int64_t rrows = full ? m : k;
  for (int64_t i = 0; i < rrows; ++i)
    for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? c[static_cast<size_t>(j * m + i)] : T(0);
  // Q from the reflectors (the columns past n, if any, start as zeros: orgqr makes them orthonormal)
  if (m > 0 && qcols > 0) orgqr(&mm, &qc, &kk, c.data(), &lda, tau.data(), work.data(), &lwork, &info);
  from_col_major(c.data(), m, qcols, m, q);
  return info;
}

// The row-major buffer of A (m x n) is A^T in column-major order, and A^T = conj(V) S U^T: gesdd on it
// (n x m) leaves conj(V)'s columns and U^T's rows in column-major order, which read row-major are exactly
// the rows of vt = V^H and of u. No transposes at all.
template <class T>
int svd_t(const T* a, int64_t m, int64_t n, bool full, bool compute_uv, real_of<T>* s, T* u, T* vt) {
  using R = real_of<T>;
  int64_t k = std::min(m, n);
  int64_t ucols = full ? m : k, vrows = full ? n : k;
  if (k == 0) {
    // nothing to factor: identity singular vectors where full ones are asked for
    if (compute_uv) {
      for (int64_t i = 0; i < m * ucols; ++i) u[i] = (i / ucols == i % ucols) ? T(1) : T(0);
      for (int64_t i = 0; i < vrows * n; ++i) vt[i] = (i / n == i % n) ? T(1) : T(0);
    }
    return 0;
  }
  std::vector<T> c = scratch<T>(m * n);
  std::copy(a, a + m * n, c.begin());
  T dummy[1] = {T(0)};
  const char* job = compute_uv ? (full ? "A" : "S") : "N";
  // in the transposed problem the "U" factor (n x vrows) is our vt, the "VT" factor (ucols x m) our u
  int mm = to_int(n), nn = to_int(m), lda = std::max(1, mm), ldu = std::max(1, mm),
      ldvt = std::max<int>(1, to_int(ucols)), info = 0, lwork = -1;
  // the transposed problem's factors in scratch: "U" is n x vrows (our vt), "VT" ucols x m (our u)
  std::vector<T> us = scratch<T>(compute_uv ? n * vrows : 1), vs = scratch<T>(compute_uv ? ucols * m : 1);
  std::vector<R> ss = scratch<R>(k);
  T* uu = compute_uv ? us.data() : dummy;
  T* vv = compute_uv ? vs.data() : dummy;
  std::vector<int> iwork = scratch<int>(8 * k);
  // complex gesdd's real workspace: LAPACK's bound for every job, the largest of them
  int64_t mx = std::max(m, n);
  std::vector<R> rwork = scratch<R>(kComplex<T> ? std::max({7 * k, 5 * k * k + 5 * k, 2 * mx * k + 2 * k * k + k}) : 1);
  T wq = 0;
  auto call = [&](T* work) {
    if constexpr (std::is_same_v<T, float>) {
      sgesdd_(job, &mm, &nn, c.data(), &lda, ss.data(), uu, &ldu, vv, &ldvt, work, &lwork, iwork.data(), &info, 1);
    } else if constexpr (std::is_same_v<T, double>) {
      dgesdd_(job, &mm, &nn, c.data(), &lda, ss.data(), uu, &ldu, vv, &ldvt, work, &lwork, iwork.data(), &info, 1);
    } else if constexpr (std::is_same_v<T, lapack_c>) {
      cgesdd_(job, &mm, &nn, c.data(), &lda, ss.data(), uu, &ldu, vv, &ldvt, work, &lwork, rwork.data(), iwork.data(),
              &info, 1);
    } else {
      zgesdd_(job, &mm, &nn, c.data(), &lda, ss.data(), uu, &ldu, vv, &ldvt, work, &lwork, rwork.data(), iwork.data(),
              &info, 1);
    }
  };
  call(&wq);
  lwork = work_size(wq);
  std::vector<T> work = scratch<T>(lwork);
  call(work.data());
  std::copy(ss.begin(), ss.begin() + k, s);
  if (compute_uv) {
    std::copy(us.begin(), us.begin() + n * vrows, vt);
    std::copy(vs.begin(), vs.begin() + ucols * m, u);
  }
  return info;
}

// geev on a column-major copy. Real routines return conjugate pairs as (re, im) columns k, k + 1 with
// wi[k] > 0: unpacked into two complex vectors. Vectors are unit 2-norm with the largest component real
// (LAPACK's normalization, NumPy's and JAX's too). Outputs are complex, row-major, vectors as columns.
template <class T>
int eig_t(const T* a, int64_t n, bool left, bool right, std::complex<real_of<T>>* w, std::complex<real_of<T>>* vl,
          std::complex<real_of<T>>* vr) {
  using R = real_of<T>;
  using C = std::complex<R>;
  if (n == 0) return 0;
  std::vector<T> c = scratch<T>(n * n);
  to_col_major(a, n, n, c.data(), n);
  int nn = to_int(n), lda = nn, info = 0, lwork = -1;
  int ldvl = left ? nn : 1, ldvr = right ? nn : 1;
  std::vector<T> l = scratch<T>(left ? n * n : 1), r = scratch<T>(right ? n * n : 1);
  std::vector<R> wr = scratch<R>(n), wi = scratch<R>(n), rwork = scratch<R>(2 * n);
  std::vector<C> wc = scratch<C>(n);
  const char* jl = left ? "V" : "N";
  const char* jr = right ? "V" : "N";
  T wq = 0;
  auto call = [&](T* work) {
    if constexpr (std::is_same_v<T, float>) {
      sgeev_(jl, jr, &nn, c.data(), &lda, wr.data(), wi.data(), l.data(), &ldvl, r.data(), &ldvr, work, &lwork, &info,
             1, 1);
    } else if constexpr (std::is_same_v<T, double>) {
      dgeev_(jl, jr, &nn, c.data(), &lda, wr.data(), wi.data(), l.data(), &ldvl, r.data(), &ldvr, work, &lwork, &info,
             1, 1);
    } else if constexpr (std::is_same_v<T, lapack_c>) {
      cgeev_(jl, jr, &nn, c.data(), &lda, wc.data(), l.data(), &ldvl, r.data(), &ldvr, work, &lwork, rwork.data(),
             &info, 1, 1);
    } else {
      zgeev_(jl, jr, &nn, c.data(), &lda, wc.data(), l.data(), &ldvl, r.data(), &ldvr, work, &lwork, rwork.data(),
             &info, 1, 1);
    }
  };
  call(&wq);
  lwork = work_size(wq);
  std::vector<T> work = scratch<T>(lwork);
  call(work.data());
  if (info != 0) return info;  // the caller fills the outputs with NaN
  if constexpr (!kComplex<T>)
    for (int64_t k = 0; k < n; ++k) wc[static_cast<size_t>(k)] = C(wr[static_cast<size_t>(k)], wi[static_cast<size_t>(k)]);
  std::copy(wc.begin(), wc.begin() + n, w);
  auto unpack = [&](const std::vector<T>& v, C* out) {
    // column k of v (column-major) into column k of out (row-major); a real routine's conjugate pair
    // (wi[k] > 0) fills columns k and k + 1 from v's columns k (real parts) and k + 1 (imaginary parts)
    for (int64_t k = 0; k < n; ++k) {
      bool pair = false;
      if constexpr (!kComplex<T>) pair = wi[static_cast<size_t>(k)] > 0 && k + 1 < n;
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (kComplex<T>) {
          out[i * n + k] = v[static_cast<size_t>(k * n + i)];
        } else if (pair) {
          R re = v[static_cast<size_t>(k * n + i)], im = v[static_cast<size_t>((k + 1) * n + i)];
          out[i * n + k] = C(re, im);
          out[i * n + k + 1] = C(re, -im);
        } else {
          out[i * n + k] = C(v[static_cast<size_t>(k * n + i)], 0);
        }
      }
      if (pair) ++k;
    }
  };
  if (left) unpack(l, vl);
  if (right) unpack(r, vr);
  return info;
}

}  // namespace

// Dispatches on the four dtypes LAPACK factors: f32, f64, c64, c128 (the pointers cast to the element
// type's; R: its real counterpart).
#define GRAFT_LAPACK_DISPATCH(dt, what, call)                                                      \
  use_single_threaded_blas();                                                                      \
  switch (dt) {                                                                                    \
    case DType::f32: {                                                                             \
      using T = float;                                                                             \
      return call;                                                                                 \
    }                                                                                              \
    case DType::f64: {                                                                             \
      using T = double;                                                                            \
      return call;                                                                                 \
    }                                                                                              \
    case DType::c64: {                                                                             \
      using T = lapack_c;                                                                          \
      return call;                                                                                 \
    }                                                                                              \
    case DType::c128: {                                                                            \
      using T = lapack_z;                                                                          \
      return call;                                                                                 \
    }                                                                                              \
    default:                                                                                       \
      fail<TypeError>("linalg: ", what, " takes f32, f64, c64 or c128 operands, got ", short_name(dt)); \
  }
#define GRAFT_R real_of<T>
#define GRAFT_C std::complex<real_of<T>>

int cholesky(DType dt, void* a, int64_t n) { GRAFT_LAPACK_DISPATCH(dt, "cholesky", cholesky_t(static_cast<T*>(a), n)) }
int lu(DType dt, void* a, int64_t m, int64_t n, int32_t* ipiv) {
  GRAFT_LAPACK_DISPATCH(dt, "lu", lu_t(static_cast<T*>(a), m, n, ipiv))
}
void triangular_solve(DType dt, bool left, bool lower, bool trans, bool conj, bool unit_diagonal, int64_t m, int64_t n,
                      const void* a, void* b) {
  if (m == 0 || n == 0) return;
  use_single_threaded_blas();
  auto side = left ? CblasLeft : CblasRight;
  auto uplo = lower ? CblasLower : CblasUpper;
  auto tr = trans ? CblasTrans : CblasNoTrans;
  if (conj && is_complex(dt)) tr = trans ? CblasConjTrans : CblasConjNoTrans;
  auto diag = unit_diagonal ? CblasUnit : CblasNonUnit;
  int lda = to_int(left ? m : n), mm = to_int(m), nn = to_int(n);
  const lapack_c one_c(1);
  const lapack_z one_z(1);
  switch (dt) {
    case DType::f32:
      cblas_strsm(CblasRowMajor, side, uplo, tr, diag, mm, nn, 1.0f, static_cast<const float*>(a), lda,
                  static_cast<float*>(b), nn);
      return;
    case DType::f64:
      cblas_dtrsm(CblasRowMajor, side, uplo, tr, diag, mm, nn, 1.0, static_cast<const double*>(a), lda,
                  static_cast<double*>(b), nn);
      return;
    case DType::c64:
      cblas_ctrsm(CblasRowMajor, side, uplo, tr, diag, mm, nn, &one_c, a, lda, b, nn);
      return;
    case DType::c128:
      cblas_ztrsm(CblasRowMajor, side, uplo, tr, diag, mm, nn, &one_z, a, lda, b, nn);
      return;
    default:
      fail<TypeError>("linalg: triangular_solve takes f32, f64, c64 or c128 operands, got ", short_name(dt));
  }
}
int eigh(DType dt, void* a, int64_t n, void* w) {
  GRAFT_LAPACK_DISPATCH(dt, "eigh", eigh_t(static_cast<T*>(a), n, static_cast<GRAFT_R*>(w)))
}
int qr(DType dt, const void* a, int64_t m, int64_t n, bool full, void* q, void* r) {
  GRAFT_LAPACK_DISPATCH(dt, "qr", qr_t(static_cast<const T*>(a), m, n, full, static_cast<T*>(q), static_cast<T*>(r)))
}
int svd(DType dt, const void* a, int64_t m, int64_t n, bool full, bool compute_uv, void* s, void* u, void* vt) {
  GRAFT_LAPACK_DISPATCH(dt, "svd",
                        svd_t(static_cast<const T*>(a), m, n, full, compute_uv, static_cast<GRAFT_R*>(s),
                              static_cast<T*>(u), static_cast<T*>(vt)))
}
int eig(DType dt, const void* a, int64_t n, bool left, bool right, void* w, void* vl, void* vr) {
  GRAFT_LAPACK_DISPATCH(dt, "eig",
                        eig_t(static_cast<const T*>(a), n, left, right, static_cast<GRAFT_C*>(w),
                              static_cast<GRAFT_C*>(vl), static_cast<GRAFT_C*>(vr)))
}
#undef GRAFT_R
#undef GRAFT_C
#undef GRAFT_LAPACK_DISPATCH

#else  // no LAPACK

namespace {
[[noreturn]] void missing(const char* what) {
  fail<NotImplementedError>("linalg: ", what, " needs LAPACK, and graft was built without it (GRAFT_WITH_BLAS=OFF "
                            "or OpenBLAS not found)");
}
}  // namespace
int cholesky(DType, void*, int64_t) { missing("cholesky"); }
int lu(DType, void*, int64_t, int64_t, int32_t*) { missing("lu"); }
void triangular_solve(DType, bool, bool, bool, bool, bool, int64_t, int64_t, const void*, void*) {
  missing("triangular_solve");
}
int eigh(DType, void*, int64_t, void*) { missing("eigh"); }
int qr(DType, const void*, int64_t, int64_t, bool, void*, void*) { missing("qr"); }
int svd(DType, const void*, int64_t, int64_t, bool, bool, void*, void*, void*) { missing("svd"); }
int eig(DType, const void*, int64_t, bool, bool, void*, void*, void*) { missing("eig"); }

#endif

}  // namespace graft::cpu::lapack
