#include "worker/trainer/cpu_math_backend.h"

#include <cstddef>

#include "common/status_macros.h"

namespace taups::trainer {
namespace {

// C row i = beta * C row i (beta == 0 writes zeros, ignoring NaNs in C).
void ScaleRows(int m, int n, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    float* row = c + static_cast<size_t>(i) * ldc;
    if (beta == 0.0f) {
      for (int j = 0; j < n; ++j) row[j] = 0.0f;
    } else if (beta != 1.0f) {
      for (int j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// c[0..n) += s * b[0..n)
inline void Axpy(int n, float s, const float* __restrict b,
                 float* __restrict c) {
  for (int j = 0; j < n; ++j) c[j] += s * b[j];
}

// Eight independent partial sums: without -ffast-math the compiler may not
// reorder a single running sum, but it does vectorise this form.
inline float Dot(int n, const float* __restrict x, const float* __restrict y) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int p = 0;
  for (; p + 8 <= n; p += 8) {
    for (int l = 0; l < 8; ++l) part[l] += x[p + l] * y[p + l];
  }
  float sum = 0.0f;
  for (; p < n; ++p) sum += x[p] * y[p];
  for (int l = 0; l < 8; ++l) sum += part[l];
  return sum;
}

}  // namespace

absl::Status CpuMathBackend::Sgemm(Transpose trans_a, Transpose trans_b, int m,
                                   int n, int k, float alpha, const float* a,
                                   int lda, const float* b, int ldb,
                                   float beta, float* c, int ldc) {
  RETURN_IF_ERROR(ValidateSgemmArgs(trans_a, trans_b, m, n, k, a, lda, b, ldb,
                                    c, ldc));
  if (m == 0 || n == 0) return absl::OkStatus();
  ScaleRows(m, n, beta, c, ldc);
  if (k == 0 || alpha == 0.0f) return absl::OkStatus();

  const bool ta = trans_a == Transpose::kYes;
  const bool tb = trans_b == Transpose::kYes;
  if (ta && tb) {
    // Materialise A^T (m x k) so the A B^T loop below applies.
    scratch_.resize(static_cast<size_t>(m) * k);
    for (int p = 0; p < k; ++p) {
      const float* a_row = a + static_cast<size_t>(p) * lda;
      for (int i = 0; i < m; ++i) scratch_[static_cast<size_t>(i) * k + p] = a_row[i];
    }
    a = scratch_.data();
    lda = k;
  }
  const bool a_rows_are_k = ta && !tb;  // A stored k x m

  if (!tb) {
    // C[i,:] += alpha * A(i,p) * B[p,:], innermost over contiguous j.
    if (!a_rows_are_k) {
      for (int i = 0; i < m; ++i) {
        const float* a_row = a + static_cast<size_t>(i) * lda;
        float* c_row = c + static_cast<size_t>(i) * ldc;
        for (int p = 0; p < k; ++p) {
          const float s = alpha * a_row[p];
          if (s != 0.0f) Axpy(n, s, b + static_cast<size_t>(p) * ldb, c_row);
        }
      }
    } else {
      for (int p = 0; p < k; ++p) {
        const float* a_row = a + static_cast<size_t>(p) * lda;
        const float* b_row = b + static_cast<size_t>(p) * ldb;
        for (int i = 0; i < m; ++i) {
          const float s = alpha * a_row[i];
          if (s != 0.0f) Axpy(n, s, b_row, c + static_cast<size_t>(i) * ldc);
        }
      }
    }
    return absl::OkStatus();
  }
  // B^T: C[i,j] += alpha * <A row i, B row j>, both contiguous.
  for (int i = 0; i < m; ++i) {
    const float* a_row = a + static_cast<size_t>(i) * lda;
    float* c_row = c + static_cast<size_t>(i) * ldc;
    for (int j = 0; j < n; ++j) {
      c_row[j] += alpha * Dot(k, a_row, b + static_cast<size_t>(j) * ldb);
    }
  }
  return absl::OkStatus();
}

}  // namespace taups::trainer
