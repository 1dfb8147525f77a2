/* Example: a BF16-input, FP32-output GEMM through the C API, checked against a plain loop. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tileforge/tileforge.h>

/* float -> bf16 by truncation; exact for the small values used here. */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

int main(void) {
  enum { M = 20, N = 12, K = 16 };
  uint16_t a[M * K], b[K * N];
  float af[M * K], bf[K * N], c[M * N], ccol[M * N];
  for (int i = 0; i < M * K; ++i) { af[i] = (float)(i % 9) - 4.0f; a[i] = to_bf16(af[i]); }
  for (int i = 0; i < K * N; ++i) { bf[i] = (float)(i % 4) * 0.25f; b[i] = to_bf16(bf[i]); }

  tfHandle_t handle;
  if (tfCreate(&handle) != TF_STATUS_SUCCESS) return 1;
  const float alpha = 1.0f, beta = 0.0f;
  /* A column-major (lda = M), B row-major (ldb = N), C row-major (ldc = N). */
  tfStatus_t s = tfGemmEx(handle, TF_COL_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, M, N, K, &alpha, a, TF_R_16BF, M, b,
                          TF_R_16BF, N, &beta, c, TF_R_32F, N, TF_COMPUTE_32F);
  /* The same product into a column-major C (ldc = M), as a BLAS or cuBLAS caller keeps it. */
  if (s == TF_STATUS_SUCCESS) {
    s = tfGemmEx(handle, TF_COL_MAJOR, TF_ROW_MAJOR, TF_COL_MAJOR, M, N, K, &alpha, a, TF_R_16BF, M, b, TF_R_16BF, N,
                 &beta, ccol, TF_R_32F, M, TF_COMPUTE_32F);
  }
  if (s != TF_STATUS_SUCCESS) {
    fprintf(stderr, "tfGemmEx: %s: %s\n", tfGetStatusString(s), tfGetLastErrorMessage(handle));
    tfDestroy(handle);
    return 1;
  }
  /* A bad argument comes back as a status with a message naming it. */
  s = tfGemmEx(handle, TF_COL_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, M, N, K, &alpha, a, TF_R_16BF, 1, b, TF_R_16BF, N,
               &beta, c, TF_R_32F, N, TF_COMPUTE_32F);
  if (s != TF_STATUS_INVALID_ARGUMENT || !strstr(tfGetLastErrorMessage(handle), "lda")) return 1;
  tfDestroy(handle);

  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double want = 0;
      for (int k = 0; k < K; ++k) want += (double)af[k * M + i] * (double)bf[k * N + j];
      if (fabs(c[i * N + j] - want) > 1e-3 * (1 + fabs(want)) || fabs(ccol[j * M + i] - want) > 1e-3 * (1 + fabs(want))) {
        fprintf(stderr, "C[%d][%d] = %g (row-major) and %g (column-major), expected %g\n", i, j, c[i * N + j],
                ccol[j * M + i], want);
        return 1;
      }
    }
  }
  printf("tileforge %s: C API %dx%dx%d bf16 GEMM ok\n", tfGetVersion(), M, N, K);
  return 0;
}
