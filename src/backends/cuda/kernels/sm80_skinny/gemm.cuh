// sm80_skinny family: GEMMs with few rows (M up to 64: decode steps, small batches), which read B once and are
// bound by memory bandwidth, not by the tensor cores. Each CTA owns a strip of 64 columns of C and a range of K (a
// SPLIT_K slice); its warps take turns over that range's 16-row steps, each warp streaming its own steps of A and B
// through its own ring of shared memory with 16-byte cp.async (no CTA barrier in the main loop, so a warp that waits
// on memory never stalls another), and multiplies them with mma.sync m16n8k16 (f32 accumulators). The warps' sums
// are added in warp order through shared memory, and with SPLIT_K > 1 the slices' sums in slice order by the CTA
// that finishes last: C is the same bits from run to run. Runs on every NVIDIA GPU from Ampere on.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/elem.cuh"
#include "common/mma_sync.cuh"

namespace tf::skinny {

// Run-time arguments (mirrored by the host's SkinnyParams, field for field).
struct Params {
  const void* a;  // M x K, row-major, lda a multiple of 8
  const void* b;  // K x N row-major (ldb a multiple of 8) or N x K row-major (B column-major)
  void* c;        // M x N, row-major
  int m, n, k;
  long long lda, ldb, ldc;
  float alpha, beta;
  int k_per_split;  // K rows of one slice: a multiple of 16
  int* counters;    // SPLIT_K > 1: one per strip of 64 columns, zero between launches
  float* partials;  // SPLIT_K > 1: [strip][slice][M][64]
};

template <int kMTiles, int kWarps, int kStages, int kSplit, bool kBRowMajor, int kInTag, int kOutTag>
struct Config {
  static constexpr int MT = kMTiles, WARPS = kWarps, STAGES = kStages, SPLIT = kSplit;
  static constexpr bool B_ROW = kBRowMajor;
  static constexpr int IN = kInTag, OUT = kOutTag;
  static constexpr int THREADS = 32 * WARPS;
  static constexpr int BN = 64;    // columns of a strip: one 128-byte line of a row of B
  static constexpr int KS = 16;    // K rows of one step: one mma k
  static constexpr int ROWS = 16 * MT;
  static constexpr int A_STAGE = ROWS * KS * 2;  // bytes
  static constexpr int B_STAGE = KS * BN * 2;
  static constexpr int STAGE = A_STAGE + B_STAGE;
  static constexpr int PIPE_BYTES = WARPS * STAGES * STAGE;
  static constexpr int RED_STRIDE = BN + 8;  // floats per row of the reduction tile: conflict-free float2 stores
  static constexpr int RED_BYTES = WARPS * ROWS * RED_STRIDE * 4;
  static constexpr int SMEM_BYTES = PIPE_BYTES > RED_BYTES ? PIPE_BYTES : RED_BYTES;

  static_assert(MT >= 1 && MT <= 4, "up to 64 rows");
  static_assert(STAGES >= 2, "a pipeline needs two stages");
  static_assert(IN == 1 || IN == 2, "inputs are f16 or bf16");
};

// Byte offsets inside one stage. Rows of 32 bytes (A, and B column-major: 16 k of one row) keep their two 16-byte
// halves swapped on every other group of four rows, and rows of 128 bytes (B row-major: 64 n of one k) rotate their
// eight chunks by the row, so that ldmatrix's eight row reads hit eight different bank groups.
__device__ __forceinline__ int off32(int row, int half) { return row * 32 + ((half ^ ((row >> 2) & 1)) << 4); }
__device__ __forceinline__ int off128(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

template <class Cfg>
__device__ __forceinline__ void load_step(const Params& p, unsigned stage, int k0, int k_end, int n0, int lane) {
  const char* a = static_cast<const char*>(p.a);
  const char* b = static_cast<const char*>(p.b);
  // A: ROWS x 16 k, two 16-byte chunks per row; rows past M and columns past the slice read as zero.
#pragma unroll
  for (int c = lane; c < Cfg::ROWS * 2; c += 32) {
    const int row = c >> 1, half = c & 1, kk = k0 + half * 8;
    int bytes = row < p.m ? (k_end - kk) * 2 : 0;
    bytes = bytes < 0 ? 0 : bytes > 16 ? 16 : bytes;
    const void* src = bytes > 0 ? a + (row * p.lda + kk) * 2 : p.a;
    cp_async_zfill<16>(stage + off32(row, half), src, bytes);
  }
  const unsigned bs = stage + Cfg::A_STAGE;
  if constexpr (Cfg::B_ROW) {
    // B row-major: 16 k rows x 64 n, eight chunks per row; N is a multiple of 8, so a chunk is whole or absent.
#pragma unroll
    for (int c = lane; c < Cfg::KS * 8; c += 32) {
      const int row = c >> 3, chunk = c & 7, kk = k0 + row, nn = n0 + chunk * 8;
      const bool in = kk < k_end && nn < p.n;
      cp_async_zfill<16>(bs + off128(row, chunk), in ? b + (kk * p.ldb + nn) * 2 : p.b, in ? 16 : 0);
    }
  } else {
    // B column-major: 64 n rows x 16 k, two chunks per row.
#pragma unroll
    for (int c = lane; c < Cfg::BN * 2; c += 32) {
      const int row = c >> 1, half = c & 1, nn = n0 + row, kk = k0 + half * 8;
      int bytes = nn < p.n ? (k_end - kk) * 2 : 0;
      bytes = bytes < 0 ? 0 : bytes > 16 ? 16 : bytes;
      cp_async_zfill<16>(bs + off32(row, half), bytes > 0 ? b + (nn * p.ldb + kk) * 2 : p.b, bytes);
    }
  }
}

template <class Cfg>
__device__ __forceinline__ void mma_step(unsigned stage, int lane, float (&acc)[Cfg::MT][8][4]) {
  const int q = lane >> 3, r = lane & 7;
  unsigned af[Cfg::MT][4];
#pragma unroll
  for (int mt = 0; mt < Cfg::MT; ++mt) ldmatrix_x4<false>(af[mt], stage + off32(mt * 16 + (q & 1) * 8 + r, q >> 1));
  const unsigned bs = stage + Cfg::A_STAGE;
#pragma unroll
  for (int j = 0; j < 8; j += 2) {
    unsigned bf[4];
    if constexpr (Cfg::B_ROW) {
      ldmatrix_x4<true>(bf, bs + off128((q & 1) * 8 + r, j + (q >> 1)));
    } else {
      ldmatrix_x4<false>(bf, bs + off32((j + (q >> 1)) * 8 + r, q & 1));
    }
#pragma unroll
    for (int mt = 0; mt < Cfg::MT; ++mt) {
      mma_16816<Cfg::IN>(acc[mt][j], af[mt], bf[0], bf[1]);
      mma_16816<Cfg::IN>(acc[mt][j + 1], af[mt], bf[2], bf[3]);
    }
  }
}

template <class Cfg>
__device__ __forceinline__ void store_c(const Params& p, int row, int col, float v) {
  using Out = typename tf::Elem<Cfg::OUT>::T;
  Out* c = static_cast<Out*>(p.c) + row * p.ldc + col;
  float out = p.alpha * v;
  if (p.beta != 0.0f) out += p.beta * tf::Elem<Cfg::OUT>::to_float(*c);
  *c = tf::Elem<Cfg::OUT>::from_float(out);
}

template <class Cfg>
__device__ void gemm(const Params& p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int strip = blockIdx.x, slice = blockIdx.y;
  const int n0 = strip * Cfg::BN;
  const int k_begin = slice * p.k_per_split;
  const int k_end = min(p.k, k_begin + p.k_per_split);
  const int steps = k_end > k_begin ? (k_end - k_begin + Cfg::KS - 1) / Cfg::KS : 0;
  // This warp's steps: warp, warp + WARPS, ...: the CTA's warps read neighbouring rows at any moment.
  const int mine = steps > warp ? (steps - warp + Cfg::WARPS - 1) / Cfg::WARPS : 0;
  const unsigned ring = smem_u32(smem) + warp * Cfg::STAGES * Cfg::STAGE;

  float acc[Cfg::MT][8][4];
#pragma unroll
  for (int mt = 0; mt < Cfg::MT; ++mt)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][j][e] = 0.0f;

  auto step_k = [&](int i) { return k_begin + (warp + i * Cfg::WARPS) * Cfg::KS; };
#pragma unroll
  for (int s = 0; s < Cfg::STAGES - 1; ++s) {
    if (s < mine) load_step<Cfg>(p, ring + s * Cfg::STAGE, step_k(s), k_end, n0, lane);
    cp_async_commit();
  }
  for (int i = 0; i < mine; ++i) {
    cp_async_wait<Cfg::STAGES - 2>();
    __syncwarp();  // the other lanes' copies of step i are visible, and step i - 1's slot is read by all
    const int next = i + Cfg::STAGES - 1;
    if (next < mine) load_step<Cfg>(p, ring + (next % Cfg::STAGES) * Cfg::STAGE, step_k(next), k_end, n0, lane);
    cp_async_commit();
    mma_step<Cfg>(ring + (i % Cfg::STAGES) * Cfg::STAGE, lane, acc);
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the rings: the reduction tile reuses them

  // The warps' sums, added in warp order.
  float* red = reinterpret_cast<float*>(smem);
  {
    const int g = lane >> 2, t = lane & 3;
    float* mine_red = red + warp * Cfg::ROWS * Cfg::RED_STRIDE;
#pragma unroll
    for (int mt = 0; mt < Cfg::MT; ++mt)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int row = mt * 16 + g, col = j * 8 + 2 * t;
        *reinterpret_cast<float2*>(mine_red + row * Cfg::RED_STRIDE + col) = make_float2(acc[mt][j][0], acc[mt][j][1]);
        *reinterpret_cast<float2*>(mine_red + (row + 8) * Cfg::RED_STRIDE + col) =
            make_float2(acc[mt][j][2], acc[mt][j][3]);
      }
  }
  __syncthreads();
  const int rows = min(p.m, Cfg::ROWS);
  const int elems = rows * Cfg::BN;
  if constexpr (Cfg::SPLIT == 1) {
    for (int e = threadIdx.x; e < elems; e += Cfg::THREADS) {
      const int row = e / Cfg::BN, col = e % Cfg::BN;
      float v = 0.0f;
#pragma unroll
      for (int w = 0; w < Cfg::WARPS; ++w) v += red[(w * Cfg::ROWS + row) * Cfg::RED_STRIDE + col];
      if (n0 + col < p.n) store_c<Cfg>(p, row, n0 + col, v);
    }
  } else {
    float* part = p.partials + (static_cast<long long>(strip) * Cfg::SPLIT) * p.m * Cfg::BN;
    for (int e = threadIdx.x; e < elems; e += Cfg::THREADS) {
      const int row = e / Cfg::BN, col = e % Cfg::BN;
      float v = 0.0f;
#pragma unroll
      for (int w = 0; w < Cfg::WARPS; ++w) v += red[(w * Cfg::ROWS + row) * Cfg::RED_STRIDE + col];
      __stcg(part + static_cast<long long>(slice) * p.m * Cfg::BN + e, v);
    }
    // The last slice of the strip to finish adds all of them, in slice order.
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (threadIdx.x == 0) last = atomicAdd(p.counters + strip, 1) == Cfg::SPLIT - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int e = threadIdx.x; e < elems; e += Cfg::THREADS) {
      const int row = e / Cfg::BN, col = e % Cfg::BN;
      float v = 0.0f;
#pragma unroll
      for (int s = 0; s < Cfg::SPLIT; ++s) v += __ldcg(part + static_cast<long long>(s) * p.m * Cfg::BN + e);
      if (n0 + col < p.n) store_c<Cfg>(p, row, n0 + col, v);
    }
    if (threadIdx.x == 0) p.counters[strip] = 0;  // ready for the next launch on this workspace
  }
}

}  // namespace tf::skinny
