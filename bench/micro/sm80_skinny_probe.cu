// The sm80_skinny kernel (src/backends/cuda/kernels/sm80_skinny/gemm.cuh) swept over warps, stages and SPLIT_K on the
// decode shapes, beside cuBLAS in the same process, under the benchmark contract's cold L2 (a write scrub of
// twice the L2 before every rep): the data the family's cost model and heuristic were fitted to. Standalone:
//   nvcc -O3 -std=c++17 -arch=sm_90a -I src/backends/cuda/kernels bench/micro/sm80_skinny_probe.cu -lcublas
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sm80_skinny/gemm.cuh"
#include "probe_cuda.cuh"

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS) skinny_kernel(const tf::skinny::Params p) {
  tf::skinny::gemm<Cfg>(p);
}

__global__ void fill(__half* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = __float2half((float(x & 0xffff) / 65535.0f - 0.5f));
  }
}

struct Ctx {
  unsigned* scrub;
  long long scrub_words;
  cudaEvent_t e0, e1;
  int* counters;
  float* partials;
};

template <class F>
float time_us(Ctx& c, F&& f) {
  std::vector<float> t;
  for (int rep = 0; rep < 40; ++rep) {
    write_scrub<<<1024, 256>>>(c.scrub, c.scrub_words, rep);
    cudaEventRecord(c.e0);
    f();
    cudaEventRecord(c.e1);
    CHECK(cudaEventSynchronize(c.e1));
    float ms;
    cudaEventElapsedTime(&ms, c.e0, c.e1);
    if (rep >= 5) t.push_back(ms * 1000);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Shape {
  int m, n, k;
  bool b_row;
};

double max_rel(const __half* ours, const __half* ref, long long n) {
  std::vector<__half> a(n), b(n);
  cudaMemcpy(a.data(), ours, n * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(b.data(), ref, n * 2, cudaMemcpyDeviceToHost);
  double num = 0, den = 0;
  for (long long i = 0; i < n; ++i) {
    const double x = __half2float(a[i]), y = __half2float(b[i]);
    num += (x - y) * (x - y);
    den += y * y;
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

template <int MT, int W, int S, int SPLIT, bool BROW>
void run(Ctx& ctx, const Shape& s, const __half* a, const __half* b, __half* c, const __half* ref, float cublas_us) {
  using Cfg = tf::skinny::Config<MT, W, S, SPLIT, BROW, 1, 1>;
  auto kern = skinny_kernel<Cfg>;
  if (Cfg::SMEM_BYTES > 227 * 1024) return;  // more shared memory than an SM has
  CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
  tf::skinny::Params p{};
  p.a = a;
  p.b = b;
  p.c = c;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.lda = s.k;
  p.ldb = BROW ? s.n : s.k;
  p.ldc = s.n;
  p.alpha = 1;
  p.beta = 0;
  p.k_per_split = ((s.k + SPLIT - 1) / SPLIT + 15) / 16 * 16;
  p.counters = ctx.counters;
  p.partials = ctx.partials;
  const dim3 grid((s.n + 63) / 64, SPLIT);
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, Cfg::THREADS, Cfg::SMEM_BYTES);
  CHECK(cudaMemset(c, 0, size_t(s.m) * s.n * 2));
  kern<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(p);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const double err = max_rel(c, ref, (long long)s.m * s.n);
  const float us = time_us(ctx, [&] { kern<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(p); });
  const double bytes = 2.0 * (double(s.m) * s.k + double(s.k) * s.n + double(s.m) * s.n);
  std::printf("%dx%dx%d,%s,%d,%d,%d,%d,%d,%u,%.2f,%.2f,%.3f,%.0f,%.1e\n", s.m, s.n, s.k, BROW ? "RR" : "RC", MT, W, S,
              SPLIT, per_sm, grid.x * grid.y, us, cublas_us, cublas_us / us, bytes / (us * 1e3), err);
}

template <int MT, bool BROW>
void sweep(Ctx& ctx, const Shape& s, const __half* a, const __half* b, __half* c, const __half* ref, float cu) {
  run<MT, 4, 8, 4, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 8, 4, 1, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 8, 4, 2, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 8, 4, 4, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 8, 6, 2, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 8, 8, 1, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 8, 8, 2, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 16, 4, 1, BROW>(ctx, s, a, b, c, ref, cu);
  run<MT, 16, 4, 2, BROW>(ctx, s, a, b, c, ref, cu);
  if constexpr (MT <= 2) {
    run<MT, 16, 6, 1, BROW>(ctx, s, a, b, c, ref, cu);
    run<MT, 16, 6, 2, BROW>(ctx, s, a, b, c, ref, cu);
  }
}

int main() {
  Ctx ctx{};
  const long long scrub_bytes = 120ll << 20;  // twice the H200's L2, as tileforge's timer scrubs
  ctx.scrub_words = scrub_bytes / 4;
  CHECK(cudaMalloc(&ctx.scrub, scrub_bytes));
  CHECK(cudaMalloc(&ctx.counters, 1 << 20));
  CHECK(cudaMemset(ctx.counters, 0, 1 << 20));
  CHECK(cudaMalloc(&ctx.partials, 64ll << 20));
  cudaEventCreate(&ctx.e0);
  cudaEventCreate(&ctx.e1);
  cublasHandle_t h;
  cublasCreate(&h);
  const Shape shapes[] = {{1, 4096, 4096, false},   {16, 4096, 4096, false}, {16, 4096, 4096, true},
                          {8, 11008, 4096, false},  {1, 14336, 4096, true},  {16, 14336, 4096, true},
                          {32, 4096, 11008, true},  {1, 4096, 14336, false}, {16, 1024, 4096, true},
                          {64, 14336, 4096, true}};
  __half *a, *b, *c, *ref;
  CHECK(cudaMalloc(&a, 64ll * 16384 * 2));
  CHECK(cudaMalloc(&b, 14336ll * 11008 * 2));
  CHECK(cudaMalloc(&c, 64ll * 14336 * 2));
  CHECK(cudaMalloc(&ref, 64ll * 14336 * 2));
  fill<<<1024, 256>>>(a, 64ll * 16384, 1);
  fill<<<1024, 256>>>(b, 14336ll * 11008, 2);
  std::printf("shape,layout,MT,WARPS,STAGES,SPLIT,ctas_per_sm,ctas,us,cublas_us,ratio,GBps,rel_err\n");
  for (const Shape& s : shapes) {
    const float alpha = 1, beta = 0;
    // Row-major C = A B as column-major C^T = B^T A^T; B column-major is B^T row-major: op T on it.
    auto cu = [&] {
      cublasGemmEx(h, s.b_row ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b, CUDA_R_16F,
                   s.b_row ? s.n : s.k, a, CUDA_R_16F, s.k, &beta, ref, CUDA_R_16F, s.n, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    };
    cu();
    CHECK(cudaDeviceSynchronize());
    const float cublas_us = time_us(ctx, cu);
    const int mt = (s.m + 15) / 16;
    if (s.b_row) {
      if (mt == 1) sweep<1, true>(ctx, s, a, b, c, ref, cublas_us);
      else if (mt == 2) sweep<2, true>(ctx, s, a, b, c, ref, cublas_us);
      else sweep<4, true>(ctx, s, a, b, c, ref, cublas_us);
    } else {
      if (mt == 1) sweep<1, false>(ctx, s, a, b, c, ref, cublas_us);
      else if (mt == 2) sweep<2, false>(ctx, s, a, b, c, ref, cublas_us);
      else sweep<4, false>(ctx, s, a, b, c, ref, cublas_us);
    }
    std::fflush(stdout);
  }
  return 0;
}
