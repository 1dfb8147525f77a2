// sm80 family: tensor-core GEMM with mma.sync m16n8k16, ldmatrix, a cp.async multi-stage pipeline, swizzled
// shared memory and group-M rasterization. Runs on every NVIDIA GPU from Ampere on; every planned value is a
// template argument, so the generated source instantiates exactly one kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/swizzle.cuh"

namespace tf::sm80 {

// Run-time arguments: only pointers, sizes, strides and scalars travel at launch.
struct Params {
  const void* a;
  const void* b;
  void* c;
  int m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;  // elements between batch entries (blockIdx.y)
  float alpha, beta;
};

// Element types by tag: 0 = f32, 1 = f16, 2 = bf16 (the host's DType order).
template <int kTag>
struct Elem;
template <>
struct Elem<0> {
  using T = float;
  static __device__ __forceinline__ T from_float(float v) { return v; }
  static __device__ __forceinline__ float to_float(T v) { return v; }
};
template <>
struct Elem<1> {
  using T = __half;
  static __device__ __forceinline__ T from_float(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float to_float(T v) { return __half2float(v); }
};
template <>
struct Elem<2> {
  using T = __nv_bfloat16;
  static __device__ __forceinline__ T from_float(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float to_float(T v) { return __bfloat162float(v); }
};

// Every planned parameter of one kernel.
template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages, int kGroupM, int kVecBytes,
          bool kARowMajor, bool kBRowMajor, int kInTag, int kOutTag, int kEpilogueVec, bool kFragPipe = false>
struct Config {
  static constexpr int BM = kBlockM, BN = kBlockN, BK = kBlockK;
  static constexpr int WARPS_M = kWarpsM, WARPS_N = kWarpsN;
  static constexpr int THREADS = 32 * kWarpsM * kWarpsN;
  static constexpr int STAGES = kStages, GROUP_M = kGroupM, VEC = kVecBytes;
  static constexpr bool A_ROW = kARowMajor, B_ROW = kBRowMajor;
  static constexpr int IN = kInTag, OUT = kOutTag, EPI_VEC = kEpilogueVec;
  static constexpr bool FRAG_PIPE = kFragPipe;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
  static constexpr int MI = WM / 16, NI = WN / 8;             // mma tiles per warp
  static constexpr int A_TILE_BYTES = BM * BK * 2, B_TILE_BYTES = BK * BN * 2;
  static constexpr int STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;

  static_assert(IN == 1 || IN == 2, "inputs are f16 or bf16");
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be whole 16x16 fragments");
  static_assert(BK % 16 == 0, "BLOCK_K must be a multiple of the mma K (16)");
  static_assert(VEC == 2 || VEC == 4 || VEC == 8 || VEC == 16, "vector width in bytes");
  static_assert(STAGES >= 2, "a pipeline needs at least two stages");
  static_assert(!FRAG_PIPE || (BK / 16) % 2 == 0, "double-buffered fragments need an even number of k-steps");
  static_assert((A_TILE_BYTES / VEC) % THREADS == 0 && (B_TILE_BYTES / VEC) % THREADS == 0,
                "every thread copies the same number of chunks");
  static_assert(A_TILE_BYTES % 128 == 0 && B_TILE_BYTES % 128 == 0, "tiles keep the 128-byte swizzle alignment");
};

// ---- PTX wrappers ------------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies `src_bytes` (0..kBytes) from global memory and zero-fills the rest of the kBytes chunk.
template <int kBytes>
__device__ __forceinline__ void cp_async_zfill(unsigned dst, const void* src, int src_bytes) {
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  } else if constexpr (kBytes == 8) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  } else {
    static_assert(kBytes == 4, "cp.async copies 4, 8 or 16 bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  }
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  if constexpr (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  }
}

template <int kInTag>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (kInTag == 1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// ---- global -> shared tiles ------------------------------------------------------------------------------

// Copies a ROWS x COLS tile of 16-bit elements (COLS contiguous in global and shared memory) whose top-left
// element is (row0, col0) of a rows x cols matrix with leading dimension ld. Chunks of VEC bytes; elements
// outside the matrix are zero-filled, and nothing outside it is read.
template <int ROWS, int COLS, int VEC, int THREADS>
__device__ __forceinline__ void load_tile(unsigned smem_tile, const unsigned short* g, long long ld, int row0,
                                          int col0, int rows, int cols, int tid) {
  constexpr int EPC = VEC / 2;  // elements per chunk
  constexpr int CHUNKS_PER_ROW = COLS / EPC;
  constexpr int CHUNKS = ROWS * CHUNKS_PER_ROW;
  // 2-byte copies go through registers: unrolling all of them would keep every address and value live at once
  // (spills on small blocks), so only a few are in flight.
#pragma unroll(VEC >= 4 ? CHUNKS / THREADS : 4)
  for (int i = 0; i < CHUNKS / THREADS; ++i) {
    const int id = tid + i * THREADS;
    const int r = id / CHUNKS_PER_ROW;
    const int c = (id % CHUNKS_PER_ROW) * EPC;
    const int gr = row0 + r, gc = col0 + c;
    int valid = cols - gc;
    valid = valid < 0 ? 0 : (valid > EPC ? EPC : valid);
    if (gr >= rows) valid = 0;
    const unsigned short* src = valid > 0 ? g + gr * ld + gc : g;
    const unsigned dst = smem_tile + swizzle_128b<COLS * 2>(static_cast<unsigned>((r * COLS + c) * 2));
    if constexpr (VEC >= 4) {
      cp_async_zfill<VEC>(dst, src, valid * 2);
    } else {
      // No 2-byte cp.async: a plain load staged through a register.
      const unsigned short v = valid > 0 ? *src : static_cast<unsigned short>(0);
      asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(dst), "h"(v));
    }
  }
}

// ---- the kernel body ---------------------------------------------------------------------------------------

template <class Cfg>
__device__ __forceinline__ void gemm(const Params& p) {
  extern __shared__ __align__(1024) unsigned char smem[];
  using In = Elem<Cfg::IN>;
  using Out = Elem<Cfg::OUT>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, THREADS = Cfg::THREADS;
  constexpr int MI = Cfg::MI, NI = Cfg::NI;

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp % Cfg::WARPS_M, wn = warp / Cfg::WARPS_M;

  // Group-M rasterization: GROUP_M row-blocks of C are walked column by column, so that the blocks resident
  // at one time share their A rows and B columns in L2.
  const int grid_m = (p.m + BM - 1) / BM, grid_n = (p.n + BN - 1) / BN;
  const int pid = blockIdx.x;
  const int width = Cfg::GROUP_M * grid_n;
  const int group = pid / width;
  const int first_m = group * Cfg::GROUP_M;
  const int group_size = min(grid_m - first_m, Cfg::GROUP_M);
  const int pid_m = first_m + (pid % width) % group_size;
  const int pid_n = (pid % width) / group_size;
  const int m0 = pid_m * BM, n0 = pid_n * BN;

  const long long batch = blockIdx.y;
  const auto* A = static_cast<const unsigned short*>(p.a) + batch * p.stride_a;
  const auto* B = static_cast<const unsigned short*>(p.b) + batch * p.stride_b;
  auto* C = static_cast<typename Out::T*>(p.c) + batch * p.stride_c;

  const unsigned smem_base = smem_u32(smem);
  auto a_tile = [&](int stage) { return smem_base + stage * Cfg::STAGE_BYTES; };
  auto b_tile = [&](int stage) { return smem_base + stage * Cfg::STAGE_BYTES + Cfg::A_TILE_BYTES; };

  // Tiles keep the global orientation: [BM][BK] or [BK][BM] for A, [BK][BN] or [BN][BK] for B; ldmatrix
  // (.trans where needed) turns either into the mma fragments.
  auto load_stage = [&](int stage, int kt) {
    const int k0 = kt * BK;
    if constexpr (Cfg::A_ROW) {
      load_tile<BM, BK, Cfg::VEC, THREADS>(a_tile(stage), A, p.lda, m0, k0, p.m, p.k, tid);
    } else {
      load_tile<BK, BM, Cfg::VEC, THREADS>(a_tile(stage), A, p.lda, k0, m0, p.k, p.m, tid);
    }
    if constexpr (Cfg::B_ROW) {
      load_tile<BK, BN, Cfg::VEC, THREADS>(b_tile(stage), B, p.ldb, k0, n0, p.k, p.n, tid);
    } else {
      load_tile<BN, BK, Cfg::VEC, THREADS>(b_tile(stage), B, p.ldb, n0, k0, p.n, p.k, tid);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  const int k_tiles = (p.k + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < Cfg::STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();  // empty groups keep the wait counts uniform
  }

  // Per-lane fragment coordinates inside a 16x16 (A) or 16-wide (B) block; see the layout notes below.
  const int a_row_off = Cfg::A_ROW ? (lane & 15) : ((lane & 7) + ((lane >> 4) << 3));
  const int a_col_off = Cfg::A_ROW ? ((lane >> 4) << 3) : (((lane >> 3) & 1) << 3);
  const int b_row_off = Cfg::B_ROW ? ((lane & 7) + (((lane >> 3) & 1) << 3)) : ((lane & 7) + ((lane >> 4) << 3));
  const int b_col_off = Cfg::B_ROW ? ((lane >> 4) << 3) : (((lane >> 3) & 1) << 3);

  // Fragments of one 16-deep k-step from one stage: A as [BM][BK] (lanes 0-15 give rows 0-15 at k, lanes
  // 16-31 the same rows at k+8: ldmatrix) or [BK][BM] (lanes give k rows at m and m+8: ldmatrix.trans); B as
  // [BN][BK] (ldmatrix) or [BK][BN] (ldmatrix.trans), two 8-column fragments per ldmatrix.x4.
  auto load_fragments = [&](unsigned (&af)[MI][4], unsigned (&bf)[NI][2], int stage, int kk) {
    const unsigned sa = a_tile(stage), sb = b_tile(stage);
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const int mrow = wm * Cfg::WM + i * 16;
      const int r = Cfg::A_ROW ? mrow + a_row_off : kk + a_row_off;
      const int c = Cfg::A_ROW ? kk + a_col_off : mrow + a_col_off;
      constexpr int cols = Cfg::A_ROW ? BK : BM;
      ldmatrix_x4<!Cfg::A_ROW>(af[i], sa + swizzle_128b<cols * 2>(static_cast<unsigned>((r * cols + c) * 2)));
    }
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
      const int ncol = wn * Cfg::WN + j * 8;
      const int r = Cfg::B_ROW ? kk + b_row_off : ncol + b_row_off;
      const int c = Cfg::B_ROW ? ncol + b_col_off : kk + b_col_off;
      constexpr int cols = Cfg::B_ROW ? BN : BK;
      unsigned t[4];
      ldmatrix_x4<Cfg::B_ROW>(t, sb + swizzle_128b<cols * 2>(static_cast<unsigned>((r * cols + c) * 2)));
      bf[j][0] = t[0];
      bf[j][1] = t[1];
      bf[j + 1][0] = t[2];
      bf[j + 1][1] = t[3];
    }
  };
  auto mma_all = [&](const unsigned (&af)[MI][4], const unsigned (&bf)[NI][2]) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) mma_16816<Cfg::IN>(acc[i][j], af[i], bf[j][0], bf[j][1]);
  };
  constexpr int KSTEPS = BK / 16;

  if constexpr (Cfg::FRAG_PIPE) {
    // Fragments double-buffered across k-steps and across the barrier: the next step's ldmatrix (the next
    // tile's first, after the barrier) is issued before this step's mma, so shared-memory latency and the
    // barrier overlap tensor-core work. Parities are compile-time because KSTEPS is even.
    unsigned af[2][MI][4];
    unsigned bf[2][NI][2];
    if (k_tiles > 0) {
      cp_async_wait<Cfg::STAGES - 2>();
      __syncthreads();
      load_fragments(af[0], bf[0], 0, 0);
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int stage = kt % Cfg::STAGES;
#pragma unroll
      for (int s = 0; s < KSTEPS; ++s) {
        if (s == 0) {
          // Stage kt-1 is free: every thread passed the barrier after its last fragment load from it.
          const int next = kt + Cfg::STAGES - 1;
          if (next < k_tiles) load_stage(next % Cfg::STAGES, next);
          cp_async_commit();
        }
        if (s == KSTEPS - 1) {
          cp_async_wait<Cfg::STAGES - 2>();
          __syncthreads();  // tile kt+1 is visible to all
          if (kt + 1 < k_tiles) load_fragments(af[(s + 1) & 1], bf[(s + 1) & 1], (kt + 1) % Cfg::STAGES, 0);
        } else {
          load_fragments(af[(s + 1) & 1], bf[(s + 1) & 1], stage, (s + 1) * 16);
        }
        mma_all(af[s & 1], bf[s & 1]);
      }
    }
  } else {
    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<Cfg::STAGES - 2>();
      __syncthreads();  // stage kt is visible to all, and stage kt-1 is no longer read by anyone
      const int next = kt + Cfg::STAGES - 1;
      if (next < k_tiles) load_stage(next % Cfg::STAGES, next);
      cp_async_commit();
      const int stage = kt % Cfg::STAGES;
#pragma unroll
      for (int s = 0; s < KSTEPS; ++s) {
        unsigned af[MI][4];
        unsigned bf[NI][2];
        load_fragments(af, bf, stage, s * 16);
        mma_all(af, bf);
      }
    }
  }
  cp_async_wait<0>();

  // Epilogue: thread (g = lane/4, t = lane%4) holds rows g and g+8, columns 2t and 2t+1 of each 16x8 tile.
  const int g = lane >> 2, t = lane & 3;
  const float alpha = p.alpha, beta = p.beta;
  auto store = [&](int row, int col, float v0, float v1) {
    if (row >= p.m) return;
    typename Out::T* dst = C + row * p.ldc + col;
    if (Cfg::EPI_VEC == 2 && col + 1 < p.n) {
      float o0 = alpha * v0, o1 = alpha * v1;
      if (beta != 0.0f) {
        o0 += beta * Out::to_float(dst[0]);
        o1 += beta * Out::to_float(dst[1]);
      }
      if constexpr (Cfg::OUT == 0) {
        *reinterpret_cast<float2*>(dst) = make_float2(o0, o1);
      } else if constexpr (Cfg::OUT == 1) {
        *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(o0, o1);
      } else {
        *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(o0, o1);
      }
      return;
    }
    if (col < p.n) dst[0] = Out::from_float(alpha * v0 + (beta != 0.0f ? beta * Out::to_float(dst[0]) : 0.0f));
    if (col + 1 < p.n) dst[1] = Out::from_float(alpha * v1 + (beta != 0.0f ? beta * Out::to_float(dst[1]) : 0.0f));
  };
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int row = m0 + wm * Cfg::WM + i * 16 + g;
      const int col = n0 + wn * Cfg::WN + j * 8 + 2 * t;
      store(row, col, acc[i][j][0], acc[i][j][1]);
      store(row + 8, col, acc[i][j][2], acc[i][j][3]);
    }
  }
}

}  // namespace tf::sm80
