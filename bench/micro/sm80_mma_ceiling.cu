// Ceilings of the sm80 family's inner loop on the GPU it runs on: mma.sync m16n8k16 alone, with its ldmatrix
// reads from swizzled shared memory (a 64x64 warp tile, as the family's large tiles use), and with a block barrier
// every BLOCK_K / 16 k-steps. No global memory in the loop: the gap between these and the full kernel is what
// the cp.async copies, their address arithmetic and the pipeline waits cost.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o mma_ceiling bench/micro/sm80_mma_ceiling.cu
//   ./mma_ceiling            (prints one line per variant: TFLOP/s at 1 and 2 blocks of 8 warps per SM)
#include <cuda_fp16.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kMI = 4, kNI = 8;  // 64x64 warp tile: 4 A fragments of 16 rows, 8 B fragments of 8 columns

__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// 16-byte chunk XOR inside 128-byte lines, by line index (rows of 64 bytes: BLOCK_K = 32 halves).
__device__ __forceinline__ unsigned swz(unsigned byte) { return byte ^ (((byte >> 7) & 7u) << 4); }

// kMode 0: mma only (fragments fixed in registers). 1: ldmatrix + mma, fragments double-buffered across k-steps.
// 2: as 1, plus __syncthreads every kKSteps k-steps (the stage barrier of a pipelined kernel).
template <int kMode, int kKSteps>
__global__ void __launch_bounds__(256) ceiling(int iters, float* sink) {
  // Two k-tiles of a 128x256 block, k-major rows of 32 halves: A [2][128][32], B [2][256][32].
  __shared__ __align__(1024) __half smem[2 * (128 + 256) * 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (int i = tid; i < 2 * (128 + 256) * 32; i += blockDim.x) smem[i] = __float2half(0.001f * (i % 97));
  __syncthreads();
  const int wm = warp % 2, wn = warp / 2;
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  constexpr unsigned kTileA = 128 * 64, kTileB = 256 * 64, kStage = kTileA + kTileB;
  // Lane addresses (byte offsets inside a stage before swizzling): A rows wm*64 + lane%16, k half (lane/16)*8;
  // B rows (n) wn*64 + lane%8 + (lane/16)*8, k half ((lane/8)%2)*8.
  const unsigned a_row = wm * 64 + (lane & 15), a_col = (lane >> 4) * 16;
  const unsigned b_row = wn * 64 + (lane & 7) + ((lane >> 4) << 3), b_col = ((lane >> 3) & 1) * 16;

  float acc[kMI][kNI][4] = {};
  unsigned af[2][kMI][4], bf[2][kNI][2];
  auto load = [&](int buf, unsigned stage, int kk) {
#pragma unroll
    for (int i = 0; i < kMI; ++i)
      ldsm_x4(af[buf][i], base + stage + swz((a_row + i * 16) * 64 + a_col + kk * 32));
#pragma unroll
    for (int j = 0; j < kNI; j += 2) {
      unsigned t[4];
      ldsm_x4(t, base + stage + kTileA + swz((b_row + j * 8) * 64 + b_col + kk * 32));
      bf[buf][j][0] = t[0];
      bf[buf][j][1] = t[1];
      bf[buf][j + 1][0] = t[2];
      bf[buf][j + 1][1] = t[3];
    }
  };
  auto mma_all = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j) mma(acc[i][j], af[buf][i], bf[buf][j][0], bf[buf][j][1]);
  };

  load(0, 0, 0);
  if constexpr (kMode == 0) {
    for (int it = 0; it < iters; ++it) mma_all(0);
  } else {
    // kKSteps k-steps per "tile"; k offsets 0 and 1 alternate within 32-wide rows, stages alternate per tile.
    unsigned stage = 0;
    for (int it = 0; it < iters; it += kKSteps) {
#pragma unroll
      for (int s = 0; s < kKSteps; ++s) {
        const bool last = s == kKSteps - 1;
        const unsigned next_stage = last ? (stage ^ kStage) : stage;
        if (last && kMode == 2) __syncthreads();
        load((s + 1) & 1, next_stage, (s + 1) & 1);
        mma_all(s & 1);
      }
      stage ^= kStage;
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kMI; ++i)
#pragma unroll
    for (int j = 0; j < kNI; ++j) sum += acc[i][j][0] + acc[i][j][1] + acc[i][j][2] + acc[i][j][3];
  if (sum == 12345.678f) sink[blockIdx.x * blockDim.x + tid] = sum;  // keeps the loop alive
}

template <int kMode, int kKSteps>
void run(const char* label, int sms, float* sink) {
  const int iters = 4096;  // k-steps per warp
  for (int per_sm : {1, 2}) {
    const int blocks = sms * per_sm * 4;  // several waves: per-wave launch effects average out
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    ceiling<kMode, kKSteps><<<blocks, 256>>>(iters, sink);  // warm-up
    float best = 1e30f;
    for (int rep = 0; rep < 10; ++rep) {
      cudaEventRecord(t0);
      ceiling<kMode, kKSteps><<<blocks, 256>>>(iters, sink);
      cudaEventRecord(t1);
      cudaEventSynchronize(t1);
      float ms = 0;
      cudaEventElapsedTime(&ms, t0, t1);
      if (ms < best) best = ms;
    }
    const double flops = 2.0 * 16 * 8 * 16 * kMI * kNI * double(iters) * 8 * blocks;
    std::printf("%-44s blocks/SM %d (launched %d): %.1f TFLOP/s\n", label, per_sm, blocks, flops / (best * 1e-3) / 1e12);
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
  }
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  float* sink = nullptr;
  cudaMalloc(&sink, sizeof(float) * prop.multiProcessorCount * 8 * 256);
  run<0, 2>("mma.sync only (32 independent per k-step)", prop.multiProcessorCount, sink);
  run<1, 2>("ldmatrix + mma, 64x64 warp tile", prop.multiProcessorCount, sink);
  run<2, 2>("ldmatrix + mma + barrier every 2 k-steps", prop.multiProcessorCount, sink);
  run<2, 4>("ldmatrix + mma + barrier every 4 k-steps", prop.multiProcessorCount, sink);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
