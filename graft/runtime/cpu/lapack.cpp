#include "graft/runtime/cpu/lapack.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graft/core/error.h"

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

// Row-major rows x cols <-> column-major (the same matrix): dst[j * rows + i] = src[i * cols + j].
template <class T>
void to_col_major(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * ld + i] = src[i * cols + j];
}
template <class T>
void from_col_major(const T* src, int64_t rows, int64_t cols, int64_t ld, T* dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[j * ld + i];
}

int to_int(int64_t v) {
  if (v > 0x7fffffff) fail<ValueError>("linalg: a matrix dimension of ", v, " exceeds LAPACK's 32-bit integers");
  return static_cast<int>(v);
}

template <class T>
int cholesky_t(T* a, int64_t n) {
  std::vector<T> c(static_cast<size_t>(n * n));
  to_col_major(a, n, n, c.data(), n);
  int nn = to_int(n), info = 0;
  if constexpr (std::is_same_v<T, float>) {
    spotrf_("L", &nn, c.data(), &nn, &info, 1);
  } else {
    dpotrf_("L", &nn, c.data(), &nn, &info, 1);
  }
  from_col_major(c.data(), n, n, n, a);
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

template <class T>
int eigh_t(T* a, int64_t n, T* w) {
  std::vector<T> c(static_cast<size_t>(n * n));
  to_col_major(a, n, n, c.data(), n);
  int nn = to_int(n), lda = std::max(1, nn), info = 0, lwork = -1, liwork = -1, iw = 0;
  T wq = 0;
  auto call = [&](T* work, int* iwork) {
    if constexpr (std::is_same_v<T, float>) {
      ssyevd_("V", "L", &nn, c.data(), &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    } else {
      dsyevd_("V", "L", &nn, c.data(), &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    }
  };
  call(&wq, &iw);  // workspace query
  lwork = std::max(1, static_cast<int>(wq));
  liwork = std::max(1, iw);
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  call(work.data(), iwork.data());
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

template <class T>
int svd_t(const T* a, int64_t m, int64_t n, bool full, bool compute_uv, T* s, T* u, T* vt) {
  int64_t k = std::min(m, n);
  std::vector<T> c(static_cast<size_t>(std::max<int64_t>(1, m * n)));
  to_col_major(a, m, n, c.data(), std::max<int64_t>(1, m));
  int64_t ucols = full ? m : k, vrows = full ? n : k;
  std::vector<T> uc(static_cast<size_t>(std::max<int64_t>(1, compute_uv ? m * ucols : 1)));
  std::vector<T> vc(static_cast<size_t>(std::max<int64_t>(1, compute_uv ? vrows * n : 1)));
  const char* job = compute_uv ? (full ? "A" : "S") : "N";
  int mm = to_int(m), nn = to_int(n), lda = std::max(1, mm), ldu = std::max(1, mm),
      ldvt = std::max<int>(1, to_int(vrows)), info = 0, lwork = -1;
  std::vector<int> iwork(static_cast<size_t>(std::max<int64_t>(1, 8 * k)));
  T wq = 0;
  auto call = [&](T* work) {
    if constexpr (std::is_same_v<T, float>) {
      sgesdd_(job, &mm, &nn, c.data(), &lda, s, uc.data(), &ldu, vc.data(), &ldvt, work, &lwork, iwork.data(), &info, 1);
    } else {
      dgesdd_(job, &mm, &nn, c.data(), &lda, s, uc.data(), &ldu, vc.data(), &ldvt, work, &lwork, iwork.data(), &info, 1);
    }
  };
  if (k == 0) {
    // nothing to factor: identity singular vectors where full ones are asked for
    if (compute_uv) {
      for (int64_t i = 0; i < m * ucols; ++i) u[i] = (i / ucols == i % ucols) ? T(1) : T(0);
      for (int64_t i = 0; i < vrows * n; ++i) vt[i] = (i / n == i % n) ? T(1) : T(0);
    }
    return 0;
  }
  call(&wq);
  lwork = std::max(1, static_cast<int>(wq));
  std::vector<T> work(static_cast<size_t>(lwork));
  call(work.data());
  if (compute_uv) {
    from_col_major(uc.data(), m, ucols, m, u);
    from_col_major(vc.data(), vrows, n, vrows, vt);
  }
  return info;
}

}  // namespace

#define GRAFT_LAPACK_DISPATCH(dt, what, call_f32, call_f64)                                        \
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
