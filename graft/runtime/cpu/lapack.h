// Dense factorizations on the CPU through LAPACK (OpenBLAS's, found with BLAS at build time): one
// row-major matrix per call, f32, f64, c64 or c128. The linear-algebra primitives (graft/prims/linalg.cpp) loop
// over batches and call these.
//
// Every routine takes and returns row-major matrices; the column-major copies LAPACK needs are made
// here. A routine that fails on its input (a matrix that is not positive definite, an eigensolver that
// does not converge) returns LAPACK's info > 0 and leaves its outputs for the caller to fill with NaN,
// as JAX does.
#pragma once

#include <cstdint>

#include "graft/core/dtype.h"

namespace graft::cpu::lapack {

/// Whether graft was built with LAPACK. Without it every routine below throws NotImplementedError.
bool available();

/// The Cholesky factor L (A = L L^H) of the Hermitian (symmetric) positive definite matrix whose lower
/// triangle is a's, in place: the strict upper triangle is zeroed. Returns LAPACK's info (> 0: not positive definite).
int cholesky(DType dt, void* a, int64_t n);

/// LU factorization with partial pivoting, P A = L U, of the m x n matrix a in place (L's unit diagonal
/// implied); ipiv (min(m, n) entries) gets the 0-based row swapped with row i at step i.
/// Returns info (> 0: U has an exact zero on its diagonal; the factorization is still complete).
int lu(DType dt, void* a, int64_t m, int64_t n, int32_t* ipiv);

/// Solves op(A) X = B (left) or X op(A) = B (right) in place of b (m x n), A triangular
/// (m x m on the left, n x n on the right); op transposes with `trans` and conjugates with `conj` (complex
/// only). Only A's `lower` (or upper) triangle is read, and its diagonal only without `unit_diagonal`.
void triangular_solve(DType dt, bool left, bool lower, bool trans, bool conj, bool unit_diagonal, int64_t m, int64_t n,
                      const void* a, void* b);

/// Eigenvalues (ascending, into w: real, f32 for c64) and eigenvectors (the columns of a, in place) of the
/// symmetric or Hermitian matrix whose lower triangle is a's. Returns info (> 0: no convergence).
int eigh(DType dt, void* a, int64_t n, void* w);

/// QR factorization of the m x n matrix a (k = min(m, n)): q is m x k and r k x n (reduced), or q m x m
/// and r m x n (`full`). Returns info.
int qr(DType dt, const void* a, int64_t m, int64_t n, bool full, void* q, void* r);

/// Singular values (descending, k = min(m, n) of them, into s: real) of the m x n matrix a and, with
/// `compute_uv`, the singular vectors: u m x k and vt k x n (reduced), or u m x m and vt n x n (`full`).
/// Returns info (> 0: no convergence).
int svd(DType dt, const void* a, int64_t m, int64_t n, bool full, bool compute_uv, void* s, void* u, void* vt);

/// Eigenvalues (w, n of them) and, with `left` / `right`, the left (u^H A = w u^H) and right (A v = w v)
/// eigenvectors (the columns of vl / vr, n x n) of the general square matrix a. The outputs are complex
/// (c64 for f32 and c64 input, c128 for f64 and c128), in LAPACK's order, each vector of unit 2-norm with
/// its largest component real. Returns info (> 0: no convergence).
int eig(DType dt, const void* a, int64_t n, bool left, bool right, void* w, void* vl, void* vr);

}  // namespace graft::cpu::lapack
