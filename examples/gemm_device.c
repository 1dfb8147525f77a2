/* Example: an FP16 GEMM on the GPU through the C API, as a cuBLAS caller writes it: device pointers from cudaMalloc,
 * a stream of its own, every matrix column-major. Checked against a plain loop; exits 77 (skipped) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <tileforge/tileforge.h>

/* float -> IEEE half, for the small exact values used here. */
static uint16_t to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, mant = u & 0x7fffffu;
  if (exp == 0) return (uint16_t)sign;
  return (uint16_t)(sign | ((exp - 112u) << 10) | (mant >> 13));
}

#define CHECK_CUDA(call)                                                     \
  do {                                                                       \
    cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));            \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(void) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  enum { M = 96, N = 80, K = 64 };
  static uint16_t a[M * K], b[K * N];
  static float af[M * K], bf[K * N], c[M * N];
  for (int i = 0; i < M * K; ++i) { af[i] = (float)(i % 7) - 3.0f; a[i] = to_f16(af[i]); }
  for (int i = 0; i < K * N; ++i) { bf[i] = (float)(i % 5) * 0.5f - 1.0f; b[i] = to_f16(bf[i]); }

  void *da, *db, *dc;
  cudaStream_t stream;
  CHECK_CUDA(cudaMalloc(&da, sizeof a));
  CHECK_CUDA(cudaMalloc(&db, sizeof b));
  CHECK_CUDA(cudaMalloc(&dc, sizeof c));
  CHECK_CUDA(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaStreamCreate(&stream));

  tfHandle_t handle;
  if (tfCreate(&handle) != TF_STATUS_SUCCESS) return 1;
  /* The device is "auto": A is device memory, so the GEMM runs on that GPU, enqueued on the handle's stream. */
  tfSetStream(handle, stream);
  const float alpha = 1.0f, beta = 0.0f;
  tfStatus_t s = tfGemmEx(handle, TF_COL_MAJOR, TF_COL_MAJOR, TF_COL_MAJOR, M, N, K, &alpha, da, TF_R_16F, M, db,
                          TF_R_16F, K, &beta, dc, TF_R_32F, M, TF_COMPUTE_32F);
  if (s != TF_STATUS_SUCCESS) {
    fprintf(stderr, "tfGemmEx: %s: %s\n", tfGetStatusString(s), tfGetLastErrorMessage(handle));
    return 1;
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost));
  tfDestroy(handle);
  cudaStreamDestroy(stream);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);

  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double want = 0;
      for (int k = 0; k < K; ++k) want += (double)af[k * M + i] * (double)bf[j * K + k];
      if (fabs(c[j * M + i] - want) > 1e-3 * (1 + fabs(want))) {
        fprintf(stderr, "C[%d][%d] = %g, expected %g\n", i, j, c[j * M + i], want);
        return 1;
      }
    }
  }
  printf("tileforge %s: device-pointer %dx%dx%d f16 GEMM on a stream, column-major, ok\n", tfGetVersion(), M, N, K);
  return 0;
}
