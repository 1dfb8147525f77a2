// What a "cold L2" costs a bandwidth-bound GEMM: cuBLAS and a plain 16-byte streaming read timed after three ways
// of evicting the operands from L2 (a write scrub that leaves L2 full of dirty lines, a write scrub followed by a
// read of another buffer that leaves it clean, a read scrub alone), so that the skinny shapes' bandwidth is judged
// against the traffic they really cause. Standalone: nvcc -O3 -arch=sm_90a l2_state_probe.cu -lcublas.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_cuda.cuh"

// Reads every 16 bytes once; one word per block is written so that the compiler keeps the loads.
__global__ void read_all(const uint4* buf, long long vecs, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < vecs; i += (long long)gridDim.x * blockDim.x) {
    uint4 v = __ldcs(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

int main() {
  const long long scrub_bytes = 240ll << 20;  // twice the L2 of an H200 (60 MB) with room: 4x
  unsigned *s1, *s2, *sink;
  CHECK(cudaMalloc(&s1, scrub_bytes));
  CHECK(cudaMalloc(&s2, scrub_bytes));
  CHECK(cudaMalloc(&sink, 1 << 20));
  CHECK(cudaMemset(s2, 1, scrub_bytes));
  cublasHandle_t h;
  cublasCreate(&h);
  struct Shape {
    int m, n, k;
  };
  const Shape shapes[] = {{1, 4096, 4096}, {16, 4096, 4096}, {64, 14336, 4096}, {256, 256, 16384}, {4096, 4096, 4096}};
  const long long max_elems = 14336ll * 4096;
  __half *a, *b, *c;
  CHECK(cudaMalloc(&a, 4096ll * 16384 * 2));
  CHECK(cudaMalloc(&b, max_elems * 2));
  CHECK(cudaMalloc(&c, 4096ll * 14336 * 2));
  CHECK(cudaMemset(a, 0x3c, 4096ll * 16384 * 2));
  CHECK(cudaMemset(b, 0x3c, max_elems * 2));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const char* modes[] = {"dirty (write scrub)", "clean (write scrub, then read another buffer)", "read scrub only",
                         "warm (no scrub)"};
  auto evict = [&](int mode) {
    if (mode == 0 || mode == 1) write_scrub<<<1024, 256>>>(s1, scrub_bytes / 4, 7);
    if (mode == 1 || mode == 2) read_all<<<1024, 256>>>(reinterpret_cast<const uint4*>(s2), scrub_bytes / 16, sink);
  };
  std::printf("| op | bytes read (MB) | L2 before | median us | GB/s of bytes read |\n|---|---|---|---|---|\n");
  for (int op = 0; op < 1 + int(sizeof shapes / sizeof shapes[0]); ++op) {
    for (int mode = 0; mode < 4; ++mode) {
      std::vector<float> t;
      double bytes = 0;
      char name[64];
      for (int rep = 0; rep < 60; ++rep) {
        evict(mode);
        cudaEventRecord(e0);
        if (op == 0) {
          const long long vecs = 4096ll * 4096 * 2 / 16;  // 32 MiB, the B of 16x4096x4096
          read_all<<<132 * 8, 256>>>(reinterpret_cast<const uint4*>(b), vecs, sink);
          bytes = vecs * 16.0;
          std::snprintf(name, sizeof name, "read 32 MiB, 16-byte loads");
        } else {
          const Shape s = shapes[op - 1];
          const float alpha = 1, beta = 0;
          // Row-major C = A B as column-major C^T = B^T A^T.
          cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b, CUDA_R_16F, s.n, a, CUDA_R_16F, s.k,
                       &beta, c, CUDA_R_16F, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
          bytes = 2.0 * (double(s.m) * s.k + double(s.k) * s.n + double(s.m) * s.n);
          std::snprintf(name, sizeof name, "cuBLAS %dx%dx%d f16 RR", s.m, s.n, s.k);
        }
        cudaEventRecord(e1);
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep >= 10) t.push_back(ms * 1000);
      }
      std::sort(t.begin(), t.end());
      const float med = t[t.size() / 2];
      std::printf("| %s | %.1f | %s | %.2f | %.0f |\n", name, bytes / 1e6, modes[mode], med, bytes / (med * 1e3));
    }
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
