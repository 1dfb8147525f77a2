// sm80 family: tensor-core GEMM with mma.sync m16n8k16, ldmatrix, a cp.async multi-stage pipeline, swizzled
// shared memory and group-M rasterization. Runs on every NVIDIA GPU from Ampere on; every planned value is a
// template argument, so the generated source instantiates exactly one kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/elem.cuh"
#include "common/mma_sync.cuh"
#include "common/swizzle.cuh"
#include "sm80/params.cuh"
#include "sm80/split_k.cuh"
#include "sm80/tile_layout.cuh"

namespace tf::sm80 {

// Element types by tag (common/elem.cuh).
template <int kTag>
using Elem = tf::Elem<kTag>;

// Every planned parameter of one kernel.
// kSplitK > 1: blockIdx.z runs slice z of K, and the last slice of a tile to arrive sums them (sm80/split_k.cuh).
// kStreamK: a persistent grid of blocks (gridDim.x of them) walks the tiles, the last Params::sk_tiles of them shared
// by runs of k-blocks (common/work_schedule.cuh), their pieces summed the same way.
template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages, int kGroupM, int kVecBytes,
          bool kARowMajor, bool kBRowMajor, int kInTag, int kOutTag, int kEpilogueVec, bool kFragPipe = false,
          int kSplitK = 1, bool kStreamK = false>
struct Config {
  static constexpr int BM = kBlockM, BN = kBlockN, BK = kBlockK;
  static constexpr int WARPS_M = kWarpsM, WARPS_N = kWarpsN;
  static constexpr int THREADS = 32 * kWarpsM * kWarpsN;
  static constexpr int STAGES = kStages, GROUP_M = kGroupM, VEC = kVecBytes;
  static constexpr bool A_ROW = kARowMajor, B_ROW = kBRowMajor;
  static constexpr int IN = kInTag, OUT = kOutTag, EPI_VEC = kEpilogueVec;
  static constexpr bool FRAG_PIPE = kFragPipe;
  static constexpr int SPLIT_K = kSplitK;
  static constexpr bool STREAM_K = kStreamK;
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
  static_assert(SPLIT_K >= 1 && SPLIT_K <= 64, "SPLIT_K: 1 (none) to 64 slices of K");
  static_assert(SPLIT_K == 1 || !STREAM_K, "one way of sharing K");
  static_assert(!FRAG_PIPE || (BK / 16) % 2 == 0, "double-buffered fragments need an even number of k-steps");
  static_assert((A_TILE_BYTES / VEC) % THREADS == 0 && (B_TILE_BYTES / VEC) % THREADS == 0,
                "every thread copies the same number of chunks");
  static_assert(A_TILE_BYTES % 128 == 0 && B_TILE_BYTES % 128 == 0, "tiles keep the 128-byte swizzle alignment");
};

// ---- global -> shared tiles ------------------------------------------------------------------------------

// One operand's global -> shared copies: the per-thread state of tile_layout.cuh's CopyState, issued as cp.async
// (2-byte chunks as a load and a shared store).
template <int ROWS, int COLS, int VEC, int THREADS, bool K_ROWS>
struct TileCopy : CopyState<ROWS, COLS, VEC, THREADS, K_ROWS> {
  using CopyState<ROWS, COLS, VEC, THREADS, K_ROWS>::CHUNKS;

  // Chunk i into the stage `stage_off` bytes from stage 0. `safe` is a valid address inside the matrix: the
  // source operand of a chunk that reads nothing (its bytes are all zero-filled).
  __device__ __forceinline__ void copy(int i, unsigned stage_off, long long ld, const void* safe) const {
    const auto c = this->chunk(i, stage_off, ld);
    if constexpr (VEC >= 4) {
      cp_async_zfill<VEC>(c.dst, c.elements > 0 ? static_cast<const void*>(c.src) : safe, c.elements * 2);
    } else {
      // No 2-byte cp.async: a plain load staged through a register.
      const unsigned short v = c.elements > 0 ? *c.src : static_cast<unsigned short>(0);
      asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(c.dst), "h"(v));
    }
  }

  // Chunk i of a tile that lies wholly inside the matrix: no bounds, no zero-fill, so the copy costs its address
  // (a compile-time row and column offset from the thread's first chunk) and the cp.async. The chunk's element
  // count is not used, and the compiler drops its computation.
  __device__ __forceinline__ void copy_full(int i, unsigned stage_off, long long ld) const {
    static_assert(VEC >= 4, "whole-chunk copies are cp.async (4, 8 or 16 bytes)");
    const auto c = this->chunk(i, stage_off, ld);
    cp_async<VEC>(c.dst, c.src);
  }

  // The whole tile. 2-byte copies go through registers: unrolling all of them would keep every address and
  // value live at once (spills on small blocks), so only a few are in flight.
  __device__ __forceinline__ void copy_all(unsigned stage_off, long long ld, const void* safe) const {
#pragma unroll(VEC >= 4 ? CHUNKS : 4)
    for (int i = 0; i < CHUNKS; ++i) copy(i, stage_off, ld, safe);
  }
};

// ---- the kernel's steps ----------------------------------------------------------------------------------

// Steps of the kernel body, each forced inline: the generated code is what the body compiled to with them written
// in place. The k-step copies, the fragment loads and the pipelined k-tile stay lambdas of the body: taken out as
// functions (forced inline or not, or made by a function that returns the lambda) they were simplified in another
// order and the kernels came out with other machine code.

// The two operands' copies of a config: tiles keep the global orientation, [BM][BK] or [BK][BM] for A, [BK][BN] or
// [BN][BK] for B.
template <class Cfg>
using CopyA = TileCopy<Cfg::A_ROW ? Cfg::BM : Cfg::BK, Cfg::A_ROW ? Cfg::BK : Cfg::BM, Cfg::VEC, Cfg::THREADS,
                       !Cfg::A_ROW>;
template <class Cfg>
using CopyB = TileCopy<Cfg::B_ROW ? Cfg::BK : Cfg::BN, Cfg::B_ROW ? Cfg::BN : Cfg::BK, Cfg::VEC, Cfg::THREADS,
                       Cfg::B_ROW>;

// The copies' first chunks: A's tile from row m0 (column m0 when A is stored column-major), B's from column n0
// (row n0), each with the matrix's extent that bounds its copies.
template <class Cfg>
__device__ __forceinline__ void init_copies(CopyA<Cfg>& copy_a, CopyB<Cfg>& copy_b, const Params& p,
                                            const unsigned short* A, const unsigned short* B, int m0, int n0,
                                            unsigned a_tile, unsigned b_tile, int tid) {
  if constexpr (Cfg::A_ROW) {
    copy_a.init(A, p.lda, m0, 0, p.m, p.k, a_tile, tid);
  } else {
    copy_a.init(A, p.lda, 0, m0, p.k, p.m, a_tile, tid);
  }
  if constexpr (Cfg::B_ROW) {
    copy_b.init(B, p.ldb, 0, n0, p.k, p.n, b_tile, tid);
  } else {
    copy_b.init(B, p.ldb, n0, 0, p.n, p.k, b_tile, tid);
  }
}

// Every accumulator set to zero.
template <class Cfg>
__device__ __forceinline__ void zero_accumulators(float (&acc)[Cfg::MI][Cfg::NI][4]) {
#pragma unroll
  for (int i = 0; i < Cfg::MI; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
}

// The mma of one k-step's fragments into the warp's accumulators.
template <class Cfg>
__device__ __forceinline__ void mma_all(float (&acc)[Cfg::MI][Cfg::NI][4], const unsigned (&af)[Cfg::MI][4],
                                        const unsigned (&bf)[Cfg::NI][2]) {
#pragma unroll
  for (int i = 0; i < Cfg::MI; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::NI; ++j) mma_16816<Cfg::IN>(acc[i][j], af[i], bf[j][0], bf[j][1]);
}

// The stage after the one `off` bytes from stage 0, in the ring of STAGES.
template <class Cfg>
__device__ __forceinline__ unsigned next_stage(unsigned off) {
  constexpr unsigned STAGE = Cfg::STAGE_BYTES, RING = Cfg::STAGES * Cfg::STAGE_BYTES;
  return off + STAGE == RING ? 0u : off + STAGE;
}

// Group-M rasterization: GROUP_M row-blocks of C are walked column by column, so that the blocks resident
// at one time share their A rows and B columns in L2. The first row and column of tile `pid` in that order.
template <class Cfg>
__device__ __forceinline__ void block_origin(const Params& p, int pid, int& m0, int& n0) {
  const int grid_m = (p.m + Cfg::BM - 1) / Cfg::BM, grid_n = (p.n + Cfg::BN - 1) / Cfg::BN;
  const int width = Cfg::GROUP_M * grid_n;
  const int group = pid / width;
  const int first_m = group * Cfg::GROUP_M;
  const int group_size = min(grid_m - first_m, Cfg::GROUP_M);
  const int pid_m = first_m + (pid % width) % group_size;
  const int pid_n = (pid % width) / group_size;
  m0 = pid_m * Cfg::BM;
  n0 = pid_n * Cfg::BN;
}

// One thread's two elements of C, in rows `row` (skipped when outside C) at columns col and col + 1: a pair store
// with EPI_VEC 2 where both columns lie inside C, otherwise one element at a time.
template <class Cfg>
__device__ __forceinline__ void store_pair(const Params& p, typename Elem<Cfg::OUT>::T* C, int row, int col, float v0,
                                           float v1, float alpha, float beta) {
  using Out = Elem<Cfg::OUT>;
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
}

// Epilogue: thread (g = lane/4, t = lane%4) holds rows g and g+8, columns 2t and 2t+1 of each 16x8 tile.
template <class Cfg>
__device__ __forceinline__ void store_tile(const Params& p, typename Elem<Cfg::OUT>::T* C,
                                           const float (&acc)[Cfg::MI][Cfg::NI][4], int lane, int wm, int wn, int m0,
                                           int n0) {
  const int g = lane >> 2, t = lane & 3;
  const float alpha = p.alpha, beta = p.beta;
#pragma unroll
  for (int i = 0; i < Cfg::MI; ++i) {
#pragma unroll
    for (int j = 0; j < Cfg::NI; ++j) {
      const int row = m0 + wm * Cfg::WM + i * 16 + g;
      const int col = n0 + wn * Cfg::WN + j * 8 + 2 * t;
      store_pair<Cfg>(p, C, row, col, acc[i][j][0], acc[i][j][1], alpha, beta);
      store_pair<Cfg>(p, C, row + 8, col, acc[i][j][2], acc[i][j][3], alpha, beta);
    }
  }
}

// ldmatrix addresses: the lane's first address in stage 0 (lane and warp offsets, swizzled once); per fragment and
// k-step the body adds one XOR and an immediate offset (swizzle_xor / swizzle_add, see tile_layout.cuh).
template <class Cfg>
__device__ __forceinline__ void fragment_bases(unsigned a_tile, unsigned b_tile, int lane, int wm, int wn,
                                               unsigned& a_frag, unsigned& b_frag) {
  constexpr int A_COLS = Cfg::A_ROW ? Cfg::BK : Cfg::BM, B_COLS = Cfg::B_ROW ? Cfg::BN : Cfg::BK;
  const RowCol al = a_frag_lane(Cfg::A_ROW, lane, wm * Cfg::WM);
  const RowCol bl = b_frag_lane(Cfg::B_ROW, lane, wn * Cfg::WN);
  a_frag = a_tile + swizzle_128b<A_COLS * 2>(static_cast<unsigned>((al.row * A_COLS + al.col) * 2));
  b_frag = b_tile + swizzle_128b<B_COLS * 2>(static_cast<unsigned>((bl.row * B_COLS + bl.col) * 2));
}

// The copies of the first STAGES - 1 k-tiles, one commit group each (empty groups keep the wait counts uniform).
template <class Cfg>
__device__ __forceinline__ void fill_pipeline(CopyA<Cfg>& copy_a, CopyB<Cfg>& copy_b, const Params& p, int k_tiles) {
  constexpr unsigned STAGE = Cfg::STAGE_BYTES;
#pragma unroll
  for (int s = 0; s < Cfg::STAGES - 1; ++s) {
    if (s < k_tiles) {
      copy_a.copy_all(s * STAGE, p.lda, p.a);
      copy_b.copy_all(s * STAGE, p.ldb, p.b);
      copy_a.advance(p.lda);
      copy_b.advance(p.ldb);
    }
    cp_async_commit();
  }
}

// The main loop of the plain pipeline: per k-tile, wait for it, then each k-step's fragments, its mma and a group
// of the copies of tile kt + STAGES - 1. The body's lambdas come in as arguments (they must stay the body's
// lambdas: see "the kernel's steps"); `rd` and `wr` are the byte offsets of the stage read (tile kt) and written.
template <class Cfg, class LoadFragments, class CopyGroup, class Advance>
__device__ __forceinline__ void main_loop(float (&acc)[Cfg::MI][Cfg::NI][4], const LoadFragments& load_fragments,
                                          const CopyGroup& copy_group, const Advance& advance, int k_tiles) {
  constexpr int STAGES = Cfg::STAGES, MI = Cfg::MI, NI = Cfg::NI, KSTEPS = Cfg::BK / 16;
  unsigned rd = 0, wr = (STAGES - 1) * Cfg::STAGE_BYTES;
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt is visible to all, and stage `wr` (tile kt-1's) is no longer read by anyone
    const bool fetch = kt + STAGES - 1 < k_tiles;
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) {
      unsigned af[MI][4];
      unsigned bf[NI][2];
      load_fragments(af, bf, rd, s * 16);
      mma_all<Cfg>(acc, af, bf);
      if (fetch) copy_group(s, wr, false);
    }
    if (fetch) advance();
    cp_async_commit();
    rd = next_stage<Cfg>(rd);
    wr = next_stage<Cfg>(wr);
  }
}

// The main loop with FRAG_PIPE: fragments double-buffered across k-steps and across the barrier, the next step's
// ldmatrix (the next tile's first, after the barrier) issued before this step's mma, so that shared-memory latency
// and the barrier overlap tensor-core work. Parities are compile-time because KSTEPS is even.
template <class Cfg, class LoadFragments, class CopyGroup, class Advance>
__device__ __forceinline__ void main_loop_frag_pipe(float (&acc)[Cfg::MI][Cfg::NI][4],
                                                    const LoadFragments& load_fragments, const CopyGroup& copy_group,
                                                    const Advance& advance, const Params& p, int k_tiles, int m0,
                                                    int n0) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES, MI = Cfg::MI, NI = Cfg::NI;
  constexpr int KSTEPS = BK / 16;
  unsigned rd = 0, wr = (STAGES - 1) * Cfg::STAGE_BYTES;
  unsigned af[2][MI][4];
  unsigned bf[2][NI][2];
  if (k_tiles > 0) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    load_fragments(af[0], bf[0], rd, 0);
  }
  // One k-tile: its mma, and the copies of tile kt + STAGES - 1 into stage `wr` (tile kt-1's: every thread
  // passed the barrier after its last fragment load from it). `whole` (a literal at each call): that tile lies
  // inside the matrix, so its copies are whole and the next tile exists; otherwise both are checked.
  auto tile = [&](int kt, bool whole) {
    const bool fetch = whole || kt + STAGES - 1 < k_tiles;
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) {
      if (s < KSTEPS - 1) {
        load_fragments(af[(s + 1) & 1], bf[(s + 1) & 1], rd, (s + 1) * 16);
        mma_all<Cfg>(acc, af[s & 1], bf[s & 1]);
        if (fetch) copy_group(s, wr, whole);
      } else {
        if (fetch) {
          copy_group(s, wr, whole);
          advance();
        }
        cp_async_commit();
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // tile kt+1 is visible to all
        rd = next_stage<Cfg>(rd);
        wr = next_stage<Cfg>(wr);
        if (whole || kt + 1 < k_tiles) load_fragments(af[0], bf[0], rd, 0);
        mma_all<Cfg>(acc, af[s & 1], bf[s & 1]);
      }
    }
  };
  // While the tile fetched lies wholly inside the matrix (the block inside M and N, the tile inside K), the
  // loop body has no bounds checks and no branches, so ptxas can interleave the copies with the mma.
  int kt = 0;
  if constexpr (Cfg::VEC >= 4) {
    const bool inside = m0 + BM <= p.m && n0 + BN <= p.n;
    const int whole_end = inside ? p.k / BK - (STAGES - 1) : 0;
    for (; kt < whole_end; ++kt) tile(kt, true);
  }
  for (; kt < k_tiles; ++kt) tile(kt, false);
}

// ---- the kernel body ---------------------------------------------------------------------------------------

// Tile `pid` of the raster over the k-range of `p` (the whole K, or a slice's); `fixup(acc, tid, flag)` says whether
// this block writes the tile (after summing the slices of a shared one; `flag` a free word of shared memory).
template <class Cfg, class Fixup>
__device__ __forceinline__ void gemm_slice(const Params& p, int pid, const Fixup& fixup) {
  extern __shared__ __align__(1024) unsigned char smem[];
  using Out = Elem<Cfg::OUT>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;
  constexpr int MI = Cfg::MI, NI = Cfg::NI;
  constexpr int KSTEPS = BK / 16;

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp % Cfg::WARPS_M, wn = warp / Cfg::WARPS_M;

  int m0, n0;
  block_origin<Cfg>(p, pid, m0, n0);

  const long long batch = blockIdx.y;
  const auto* A = static_cast<const unsigned short*>(p.a) + batch * p.stride_a;
  const auto* B = static_cast<const unsigned short*>(p.b) + batch * p.stride_b;
  auto* C = static_cast<typename Out::T*>(p.c) + batch * p.stride_c;

  // Shared memory: STAGES stages of [A tile][B tile]. Tiles keep the global orientation: [BM][BK] or [BK][BM]
  // for A, [BK][BN] or [BN][BK] for B; ldmatrix (.trans where needed) turns either into the mma fragments.
  const unsigned a_tile = smem_u32(smem), b_tile = a_tile + Cfg::A_TILE_BYTES;

  constexpr int A_COLS = Cfg::A_ROW ? BK : BM, B_COLS = Cfg::B_ROW ? BN : BK;
  CopyA<Cfg> copy_a;
  CopyB<Cfg> copy_b;
  init_copies<Cfg>(copy_a, copy_b, p, A, B, m0, n0, a_tile, b_tile, tid);
  auto advance = [&]() {
    copy_a.advance(p.lda);
    copy_b.advance(p.ldb);
  };
  // The copies of one k-tile are spread over its k-steps (group s of KSTEPS, A's chunks first), so that they
  // issue between the mma of the current tile instead of in one burst; 2-byte copies all go in group 0. With
  // `whole` (a literal at every call, folded once the lambda is inlined) the tile lies inside the matrix and its
  // copies skip the bounds and the zero-fill.
  constexpr int NA = decltype(copy_a)::CHUNKS, NC = NA + decltype(copy_b)::CHUNKS;
  auto copy_group = [&](int s, unsigned stage_off, bool whole) {
    if constexpr (Cfg::VEC >= 4) {
#pragma unroll
      for (int g = 0; g < NC; ++g) {
        if (g >= s * NC / KSTEPS && g < (s + 1) * NC / KSTEPS) {
          if (whole) {
            if (g < NA) {
              copy_a.copy_full(g, stage_off, p.lda);
            } else {
              copy_b.copy_full(g - NA, stage_off, p.ldb);
            }
          } else if (g < NA) {
            copy_a.copy(g, stage_off, p.lda, p.a);
          } else {
            copy_b.copy(g - NA, stage_off, p.ldb, p.b);
          }
        }
      }
    } else if (s == 0) {
      copy_a.copy_all(stage_off, p.lda, p.a);
      copy_b.copy_all(stage_off, p.ldb, p.b);
    }
  };

  float acc[MI][NI][4];
  zero_accumulators<Cfg>(acc);

  const int k_tiles = (p.k + BK - 1) / BK;
  fill_pipeline<Cfg>(copy_a, copy_b, p, k_tiles);

  unsigned a_frag, b_frag;
  fragment_bases<Cfg>(a_tile, b_tile, lane, wm, wn, a_frag, b_frag);

  // Fragments of one 16-deep k-step (k offset kk) from the stage `stage_off` bytes from stage 0.
  auto load_fragments = [&](unsigned (&af)[MI][4], unsigned (&bf)[NI][2], unsigned stage_off, int kk) {
    const unsigned sa = a_frag + stage_off, sb = b_frag + stage_off;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const RowCol st = a_frag_step(Cfg::A_ROW, i, kk);
      const unsigned off = static_cast<unsigned>((st.row * A_COLS + st.col) * 2);
      ldmatrix_x4<!Cfg::A_ROW>(af[i], (sa ^ swizzle_xor<A_COLS * 2>(off)) + swizzle_add<A_COLS * 2>(off));
    }
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
      const RowCol st = b_frag_step(Cfg::B_ROW, j, kk);
      const unsigned off = static_cast<unsigned>((st.row * B_COLS + st.col) * 2);
      unsigned t[4];
      ldmatrix_x4<Cfg::B_ROW>(t, (sb ^ swizzle_xor<B_COLS * 2>(off)) + swizzle_add<B_COLS * 2>(off));
      bf[j][0] = t[0];
      bf[j][1] = t[1];
      bf[j + 1][0] = t[2];
      bf[j + 1][1] = t[3];
    }
  };
  if constexpr (Cfg::FRAG_PIPE) {
    main_loop_frag_pipe<Cfg>(acc, load_fragments, copy_group, advance, p, k_tiles, m0, n0);
  } else {
    main_loop<Cfg>(acc, load_fragments, copy_group, advance, k_tiles);
  }
  cp_async_wait<0>();
  // A shared tile's slices summed first, written by the last slice of the tile only (a_tile's first word: the flag).
  if (fixup(acc, tid, a_tile)) store_tile<Cfg>(p, C, acc, lane, wm, wn, m0, n0);
}

// The kernel body: the whole K, or with SPLIT_K the block's slice of it (A, B and K of the slice, the rest as given),
// or with STREAM_K the block's sequence of tiles and k-ranges.
template <class Cfg>
__device__ __forceinline__ void gemm(const Params& p) {
  using Acc = float[Cfg::MI][Cfg::NI][4];
  const int pid = static_cast<int>(blockIdx.x);
  if constexpr (Cfg::SPLIT_K > 1) {
    gemm_slice<Cfg>(slice_params<Cfg>(p, static_cast<int>(blockIdx.z)), pid,
                    [&p](Acc& acc, int tid, unsigned flag) { return split_k_fixup<Cfg>(p, acc, tid, flag); });
  } else if constexpr (Cfg::STREAM_K) {
    const int tiles = ((p.m + Cfg::BM - 1) / Cfg::BM) * ((p.n + Cfg::BN - 1) / Cfg::BN);
    const int kblocks = (p.k + Cfg::BK - 1) / Cfg::BK;
    tf::Schedule<1, true> sched(tiles, kblocks, pid, static_cast<int>(gridDim.x), p.sk_tiles);
    tf::Work w;
    for (bool first = true; sched.step(w); first = false) {
      // The previous piece's last fragment reads and its flag are done before this one's copies overwrite them.
      if (!first) __syncthreads();
      gemm_slice<Cfg>(k_range_params<Cfg>(p, w.kb0, w.kb1), w.tile, [&](Acc& acc, int tid, unsigned flag) {
        return stream_k_fixup<Cfg>(p, acc, sched, w, tid, flag);
      });
    }
  } else {
    gemm_slice<Cfg>(p, pid, [](Acc&, int, unsigned) { return true; });
  }
}

}  // namespace tf::sm80
