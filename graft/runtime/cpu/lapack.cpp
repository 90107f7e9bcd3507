#include "graft/runtime/cpu/lapack.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graft/core/error.h"
#include "graft/runtime/cpu/gemm.h"

#ifdef GRAFT_HAVE_BLAS
#include <cblas.h>

// LAPACK's Fortran entry points (OpenBLAS exports them; Debian ships no LAPACK C header with it).
// Character arguments carry their lengths as trailing hidden arguments (gfortran's convention).
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info, size_t);
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

// A row-major buffer is its matrix's transpose in column-major order, so for a symmetric matrix read from
// its lower triangle LAPACK's upper-triangle routines apply to the buffer as it is: potrf("U") leaves U
// with A = U^T U in column-major order, which read row-major is the lower factor L = U^T.
template <class T>
int cholesky_t(T* a, int64_t n) {
  int nn = to_int(n), lda = std::max(1, nn), info = 0;
  if constexpr (std::is_same_v<T, float>) {
    spotrf_("U", &nn, a, &lda, &info, 1);
  } else {
    dpotrf_("U", &nn, a, &lda, &info, 1);
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) a[i * n + j] = T(0);
  return info;
}

template <class T>
int lu_t(T* a, int64_t m, int64_t n, int32_t* ipiv) {
  std::vector<T> c(static_cast<size_t>(m * n));
  to_col_major(a, m, n, c.data(), m);
  int mm = to_int(m), nn = to_int(n), lda = std::max(1, mm), info = 0;
  std::vector<int> piv(static_cast<size_t>(std::min(m, n)));
  if constexpr (std::is_same_v<T, float>) {
    sgetrf_(&mm, &nn, c.data(), &lda, piv.data(), &info);
  } else {
    dgetrf_(&mm, &nn, c.data(), &lda, piv.data(), &info);
  }
  from_col_major(c.data(), m, n, m, a);
  for (size_t i = 0; i < piv.size(); ++i) ipiv[i] = piv[i] - 1;
  return info;
}

// syevd("U") on the row-major buffer reads the lower triangle (see cholesky_t); the eigenvectors come back
// as column-major columns, transposed once into rows.
template <class T>
int eigh_t(T* a, int64_t n, T* w) {
  int nn = to_int(n), lda = std::max(1, nn), info = 0, lwork = -1, liwork = -1, iw = 0;
  T wq = 0;
  auto call = [&](T* work, int* iwork) {
    if constexpr (std::is_same_v<T, float>) {
      ssyevd_("V", "U", &nn, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    } else {
      dsyevd_("V", "U", &nn, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    }
  };
  call(&wq, &iw);  // workspace query
  lwork = std::max(1, static_cast<int>(wq));
  liwork = std::max(1, iw);
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  call(work.data(), iwork.data());
  std::vector<T> c(a, a + n * n);
  from_col_major(c.data(), n, n, n, a);
  return info;
}

template <class T>
int qr_t(const T* a, int64_t m, int64_t n, bool full, T* q, T* r) {
  int64_t k = std::min(m, n), qcols = full ? m : k, cols = std::max(n, qcols);
  std::vector<T> c(static_cast<size_t>(std::max<int64_t>(1, m * cols)), T(0));
  to_col_major(a, m, n, c.data(), m);
  int mm = to_int(m), nn = to_int(n), kk = to_int(k), qc = to_int(qcols), lda = std::max(1, mm), info = 0;
  std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(1, k)));
  T wq = 0;
  int lwork = -1;
  if constexpr (std::is_same_v<T, float>) {
    sgeqrf_(&mm, &nn, c.data(), &lda, tau.data(), &wq, &lwork, &info);
  } else {
    dgeqrf_(&mm, &nn, c.data(), &lda, tau.data(), &wq, &lwork, &info);
  }
  lwork = std::max({1, static_cast<int>(wq), qc});
  std::vector<T> work(static_cast<size_t>(lwork) * 2);
  lwork = static_cast<int>(work.size());
  if (m > 0 && n > 0) {
    if constexpr (std::is_same_v<T, float>) {
      sgeqrf_(&mm, &nn, c.data(), &lda, tau.data(), work.data(), &lwork, &info);
    } else {
      dgeqrf_(&mm, &nn, c.data(), &lda, tau.data(), work.data(), &lwork, &info);
    }
  }
  // R: the upper triangle of the factored matrix's first rows
  int64_t rrows = full ? m : k;
  for (int64_t i = 0; i < rrows; ++i)
    for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? c[static_cast<size_t>(j * m + i)] : T(0);
  // Q from the reflectors (the columns past n, if any, start as zeros: orgqr makes them orthonormal)
  if (m > 0 && qcols > 0) {
    if constexpr (std::is_same_v<T, float>) {
      sorgqr_(&mm, &qc, &kk, c.data(), &lda, tau.data(), work.data(), &lwork, &info);
    } else {
      dorgqr_(&mm, &qc, &kk, c.data(), &lda, tau.data(), work.data(), &lwork, &info);
    }
  }
  from_col_major(c.data(), m, qcols, m, q);
  return info;
}

// The row-major buffer of A (m x n) is A^T in column-major order, and A^T = V S U^T: gesdd on it (n x m)
// leaves V's columns and U^T's rows in column-major order, which read row-major are exactly the rows of
// vt and of u. No transposes at all.
template <class T>
int svd_t(const T* a, int64_t m, int64_t n, bool full, bool compute_uv, T* s, T* u, T* vt) {
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
  std::vector<T> c(a, a + m * n);
  T dummy[1] = {T(0)};
  const char* job = compute_uv ? (full ? "A" : "S") : "N";
  // in the transposed problem the "U" factor (n x vrows) is our vt, the "VT" factor (ucols x m) our u
  int mm = to_int(n), nn = to_int(m), lda = std::max(1, mm), ldu = std::max(1, mm),
      ldvt = std::max<int>(1, to_int(ucols)), info = 0, lwork = -1;
  T* uu = compute_uv ? vt : dummy;
  T* vv = compute_uv ? u : dummy;
  std::vector<int> iwork(static_cast<size_t>(std::max<int64_t>(1, 8 * k)));
  T wq = 0;
  auto call = [&](T* work) {
    if constexpr (std::is_same_v<T, float>) {
      sgesdd_(job, &mm, &nn, c.data(), &lda, s, uu, &ldu, vv, &ldvt, work, &lwork, iwork.data(), &info, 1);
    } else {
      dgesdd_(job, &mm, &nn, c.data(), &lda, s, uu, &ldu, vv, &ldvt, work, &lwork, iwork.data(), &info, 1);
    }
  };
  call(&wq);
  lwork = std::max(1, static_cast<int>(wq));
  std::vector<T> work(static_cast<size_t>(lwork));
  call(work.data());
  return info;
}

}  // namespace

#define GRAFT_LAPACK_DISPATCH(dt, what, call_f32, call_f64)                                        \
  use_single_threaded_blas();                                                                      \
  switch (dt) {                                                                                    \
    case DType::f32:                                                                               \
      return call_f32;                                                                             \
    case DType::f64:                                                                               \
      return call_f64;                                                                             \
    default:                                                                                       \
      fail<TypeError>("linalg: ", what, " takes f32 or f64 operands, got ", short_name(dt));      \
  }

int cholesky(DType dt, void* a, int64_t n) {
  GRAFT_LAPACK_DISPATCH(dt, "cholesky", cholesky_t(static_cast<float*>(a), n), cholesky_t(static_cast<double*>(a), n))
}
int lu(DType dt, void* a, int64_t m, int64_t n, int32_t* ipiv) {
  GRAFT_LAPACK_DISPATCH(dt, "lu", lu_t(static_cast<float*>(a), m, n, ipiv), lu_t(static_cast<double*>(a), m, n, ipiv))
}
void triangular_solve(DType dt, bool left, bool lower, bool trans, bool unit_diagonal, int64_t m, int64_t n,
                      const void* a, void* b) {
  if (m == 0 || n == 0) return;
  use_single_threaded_blas();
  auto side = left ? CblasLeft : CblasRight;
  auto uplo = lower ? CblasLower : CblasUpper;
  auto tr = trans ? CblasTrans : CblasNoTrans;
  auto diag = unit_diagonal ? CblasUnit : CblasNonUnit;
  int lda = to_int(left ? m : n), mm = to_int(m), nn = to_int(n);
  switch (dt) {
    case DType::f32:
      cblas_strsm(CblasRowMajor, side, uplo, tr, diag, mm, nn, 1.0f, static_cast<const float*>(a), lda,
                  static_cast<float*>(b), nn);
      return;
    case DType::f64:
      cblas_dtrsm(CblasRowMajor, side, uplo, tr, diag, mm, nn, 1.0, static_cast<const double*>(a), lda,
                  static_cast<double*>(b), nn);
      return;
    default:
      fail<TypeError>("linalg: triangular_solve takes f32 or f64 operands, got ", short_name(dt));
  }
}
int eigh(DType dt, void* a, int64_t n, void* w) {
  GRAFT_LAPACK_DISPATCH(dt, "eigh", eigh_t(static_cast<float*>(a), n, static_cast<float*>(w)),
                        eigh_t(static_cast<double*>(a), n, static_cast<double*>(w)))
}
int qr(DType dt, const void* a, int64_t m, int64_t n, bool full, void* q, void* r) {
  GRAFT_LAPACK_DISPATCH(
      dt, "qr", qr_t(static_cast<const float*>(a), m, n, full, static_cast<float*>(q), static_cast<float*>(r)),
      qr_t(static_cast<const double*>(a), m, n, full, static_cast<double*>(q), static_cast<double*>(r)))
}
int svd(DType dt, const void* a, int64_t m, int64_t n, bool full, bool compute_uv, void* s, void* u, void* vt) {
  GRAFT_LAPACK_DISPATCH(dt, "svd",
                        svd_t(static_cast<const float*>(a), m, n, full, compute_uv, static_cast<float*>(s),
                              static_cast<float*>(u), static_cast<float*>(vt)),
                        svd_t(static_cast<const double*>(a), m, n, full, compute_uv, static_cast<double*>(s),
                              static_cast<double*>(u), static_cast<double*>(vt)))
}
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
void triangular_solve(DType, bool, bool, bool, bool, int64_t, int64_t, const void*, void*) {
  missing("triangular_solve");
}
int eigh(DType, void*, int64_t, void*) { missing("eigh"); }
int qr(DType, const void*, int64_t, int64_t, bool, void*, void*) { missing("qr"); }
int svd(DType, const void*, int64_t, int64_t, bool, bool, void*, void*, void*) { missing("svd"); }

#endif

}  // namespace graft::cpu::lapack
