// sm90 family: Hopper (sm_90a) GEMM. One producer warpgroup streams A and B tiles with the tensor memory
// accelerator (cp.async.bulk.tensor, 128-byte swizzle) into a ring of STAGES shared-memory stages that complete
// on mbarriers; one or two consumer warpgroups multiply them with wgmma.mma_async m64nNk16 into f32 register
// accumulators and write C. The grid is persistent (one CTA per SM walking the output tiles in a planned order),
// optionally in clusters of two CTAs that share one operand through TMA multicast. Every planned value is a
// template argument of Config; the run-time Params carry the tensor maps (by value, as __grid_constant__), the C
// pointer, sizes and scalars.
//
// Instantiation (what a generated source or a test does; NVRTC: --gpu-architecture=sm_90a):
//   #include "sm90/gemm.cuh"
//   using Cfg = tf::sm90::Config<128, 256, 64, 3, 2, 1, 1, 1, 8, 1, 1, true, true, 1, 40, 232, 1, true>;
//   extern "C" __global__ void __launch_bounds__(Cfg::THREADS, 1) entry(const __grid_constant__ tf::sm90::Params p) {
//     tf::sm90::gemm<Cfg>(p);
//   }
// launched with Cfg::THREADS threads, Cfg::SMEM_BYTES of dynamic shared memory (raise the attribute first),
// cluster dimensions (Cfg::CS, 1, 1) when Cfg::CS > 1, and a grid that is a multiple of Cfg::CS: one cluster per
// tile (ceil(M / (BM*CM)) * ceil(N / (BN*CN)) clusters) or fewer, which then loop over the tiles (persistent).
//
// Host-side contract (the tensor maps, see tma_* in sm90/ptx.cuh): 16-bit A and B, 2-D maps with the element count of the
// contiguous dimension first, 128-byte swizzle, zero fill for out-of-bounds elements; global strides multiples of
// 16 bytes (leading dimensions multiples of 8 elements) and 16-byte aligned bases. C: any ldc and an element-aligned
// base for the direct epilogue (pairs of elements per store where ldc is even and the base aligned to a pair); for
// the TMA-store epilogue also a map of C. k >= 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/elem.cuh"
#include "common/raster.cuh"
#include "sm90/ptx.cuh"
#include "sm90/schedule.cuh"

// Diagnostic only (TILEFORGE_SM90_FIXUP_PROBE, read by the generated source): 1, 2 or 3 leave out parts of the
// split-K / stream-K fix-up so that their cost can be timed; C is then wrong. 0 (the default) is the kernel.
#ifndef TF_SM90_FIXUP_PROBE
#define TF_SM90_FIXUP_PROBE 0
#endif

namespace tf::sm90 {

// Run-time arguments. Pass the whole struct as `const __grid_constant__ Params`, so that the tensor maps stay in
// the parameter space, where the TMA unit reads them.
struct Params {
  TmaDesc a;  // A: M x K; row-major: dims {K, M}, box {64, A_BOX_OUTER}; column-major: dims {M, K}, box {64, 64}
  TmaDesc b;  // B: K x N; row-major: dims {N, K}, box {64, 64}; column-major: dims {K, N}, box {64, B_BOX_OUTER}
  TmaDesc c;  // C: M x N row-major, dims {N, M}, box {64, C_BOX_OUTER}; read only by the TMA-store epilogue
  void* c_ptr;
  int m, n, k;
  long long ldc;
  float alpha, beta;
  // Split-K and stream-K (Config::SPLIT_K > 1 or Config::STREAM_K): the caller's workspace, never shared between
  // launches that may run at once. `counters`: one int per CTA tile (cluster tiles x CTAs per cluster), and with
  // `shared_sum` a second run of as many after them (departures), zero before the first launch; each launch leaves
  // them zero. `partials`: f32 tiles of BM x BN, one per slot (split-K: tiles x SPLIT_K x CTAs per cluster;
  // stream-K: 2 x clusters x CTAs per cluster). `sk_tiles`: stream-K only, the last sk_tiles cluster tiles (in the
  // walk's order) are shared out by MAC iterations; the others are whole tiles.
  int* counters;
  float* partials;
  int sk_tiles;
  // Split-K only, and only when every work unit has a cluster of its own and the launch is cooperative (all CTAs
  // resident at once): every slice waits for all of its tile's slices and then sums and writes its own 1/SPLIT_K of
  // the tile, instead of the last slice to arrive summing the whole tile while the others idle. 0: the last sums.
  int shared_sum;
  // The staging epilogues (EPILOGUE 1 or 2) where C cannot be stored by TMA (ldc not a multiple of 8 elements, or
  // its base off 16 bytes, as in 4095x4097): the staged tile is written out by the warpgroup's threads, each warp
  // instruction storing a run of 32 consecutive elements of one row, instead of by a TMA store. 0: the TMA store.
  int c_staged_stores;
};

// Element types by tag (common/elem.cuh).
template <int kTag>
using Elem = tf::Elem<kTag>;

enum : int { kOrderRowMajor = kRasterRowMajor, kOrderGrouped = kRasterGrouped, kOrderHilbert = kRasterHilbert };
enum : int { kEpilogueDirect = 0, kEpilogueTmaStore = 1, kEpilogueTmaStoreDeferred = 2 };

// The accumulator register type (NVRTC compiles without the standard library, so no std::conditional).
template <bool kF16>
struct AccType {
  using T = float;
};
template <>
struct AccType<true> {
  using T = unsigned;
};

// Every planned parameter of one kernel.
//   kBlockM x kBlockN: the CTA's output tile; kBlockK: 64 (one 128-byte swizzle row of 16-bit elements).
//   kStages: shared-memory ring depth. kConsumers: consumer warpgroups (1 or 2), which split BLOCK_M.
//   kClusterM x kClusterN: CTAs per cluster (1x1, 2x1 or 1x2); CTAs of a cluster along M share the B tile, along N
//     the A tile, each loading its part and multicasting it to both.
//   kOrder / kGroupM: tile order of the persistent walk (row-major, GROUP_M tile rows walked column by column, or a
//     generalized Hilbert curve over the whole grid of tiles).
//   kInTag / kOutTag: element types (1 f16, 2 bf16 in; 0 f32, 1 f16, 2 bf16 out).
//   kARow / kBRow: A is M x K row-major (else column-major), B is K x N row-major (else column-major).
//   kEpilogue: direct vectorized global stores; or staging through shared memory and a TMA store (beta == 0 only;
//     beta != 0 falls back to direct stores at run time), either right after the tile's main loop, or deferred: the
//     tile is converted to 16-bit in registers and written out while the first wgmma groups of the next tile run.
//   kEpiSplit: the TMA-store epilogues stage BLOCK_N / kEpiSplit columns at a time (2 halves the staging tile, so
//     that four stages of 128x256 fit beside it).
//   kStMatrix: the TMA-store epilogues write the staging tile with stmatrix (four 8x8 blocks per instruction)
//     instead of 32-bit shared stores.
//   kProducerRegs / kConsumerRegs: setmaxnreg targets (0 = leave the registers as launched).
//   kSplitK: each output tile's K is cut into SPLIT_K slices run by different CTAs (work units = tiles x SPLIT_K).
//   kStreamK: the last Params::sk_tiles tiles are shared out by MAC iterations (k-blocks), an equal run of them per
//     cluster, after the whole tiles of the data-parallel part. In both, a CTA that ends a tile's slice writes its
//     f32 partial tile to the workspace; the last of the tile's CTAs to arrive sums every slice's partial in slice
//     order (so the result does not depend on which CTA came last: bit-identical from run to run) and runs the
//     epilogue.
//   kAccF16: f16 accumulators (wgmma .f16.f16.f16; f16 inputs only), the opt-in precision policy; split-K and
//     stream-K partials are still stored and summed in f32.
template <int kBlockM, int kBlockN, int kBlockK, int kStages, int kConsumers, int kClusterM, int kClusterN, int kOrder,
          int kGroupM, int kInTag, int kOutTag, bool kARow, bool kBRow, int kEpilogue, int kProducerRegs,
          int kConsumerRegs, int kEpiSplit = 1, bool kStMatrix = false, int kSplitK = 1, bool kStreamK = false,
          bool kAccF16 = false>
struct Config {
  static constexpr int BM = kBlockM, BN = kBlockN, BK = kBlockK, STAGES = kStages, CONSUMERS = kConsumers;
  static constexpr int CM = kClusterM, CN = kClusterN, CS = kClusterM * kClusterN;
  static constexpr int ORDER = kOrder, GROUP_M = kGroupM;
  static constexpr int IN = kInTag, OUT = kOutTag;
  static constexpr bool A_ROW = kARow, B_ROW = kBRow;
  static constexpr int EPI = kEpilogue, PRODUCER_REGS = kProducerRegs, CONSUMER_REGS = kConsumerRegs;
  static constexpr int EPI_SPLIT = kEpiSplit;
  static constexpr bool STMATRIX = kStMatrix;
  static constexpr int SPLIT_K = kSplitK;
  static constexpr bool STREAM_K = kStreamK;
  static constexpr bool FIXUP = SPLIT_K > 1 || STREAM_K;  // tiles may be shared by CTAs and summed in a workspace
  // f16 accumulators (the opt-in precision policy): each 32-bit register holds the f16 pair of two neighbouring
  // columns, so a thread holds half the registers of the f32 accumulators, in the same fragment order.
  static constexpr bool ACC_F16 = kAccF16;
  using Acc = typename AccType<kAccF16>::T;
  static constexpr int ACC_REGS = kAccF16 ? kBlockN / 4 : kBlockN / 2;

  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  static constexpr int WG_M = BM / CONSUMERS;  // rows of C per consumer warpgroup
  static constexpr int M_ITERS = WG_M / 64;    // wgmma m64 row blocks per consumer warpgroup
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int C_BYTES = EPI != kEpilogueDirect ? BM * BN * 2 / EPI_SPLIT : 0;
  static constexpr int BAR_OFFSET = STAGES * STAGE_BYTES + C_BYTES;  // from the 1024-aligned base
  // + 16 bytes for the fix-up's flag, + slack to align the base
  static constexpr int SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 16 + 1024;

  // Operand sharing inside a cluster: A is split over the CN CTAs of a cluster row, B over the CM of a column.
  static constexpr int A_SPLIT = CN, B_SPLIT = CM;
  // Tensor-map boxes (the host encodes the maps with these). K-major operands: one box of 64 x rows per CTA;
  // M/N-major operands: boxes of 64 (M or N) x 64 (K), one per 64 columns of the tile.
  static constexpr int A_BOX_INNER = 64, A_BOX_OUTER = A_ROW ? BM / A_SPLIT : 64;
  static constexpr int B_BOX_INNER = 64, B_BOX_OUTER = B_ROW ? 64 : BN / B_SPLIT;
  static constexpr int C_BOX_INNER = 64, C_BOX_OUTER = WG_M;

  static_assert(IN == 1 || IN == 2, "inputs are f16 or bf16");
  static_assert(OUT == 0 || OUT == 1 || OUT == 2, "output is f32, f16 or bf16");
  static_assert(BK == 64, "BLOCK_K is one 128-byte swizzle row of 16-bit elements");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
  static_assert(WG_M % 64 == 0 && M_ITERS >= 1, "each consumer warpgroup owns whole m64 row blocks");
  static_assert(BN % 64 == 0 && BN <= 256, "BLOCK_N: a multiple of 64, at most 256 (one wgmma)");
  static_assert(M_ITERS * BN / 2 <= 128, "at most 128 f32 accumulators per thread");
  static_assert(!kAccF16 || kInTag == 1, "f16 accumulators take f16 inputs only");
  static_assert(STAGES >= 2, "a ring needs two stages");
  static_assert(CS == 1 || CS == 2, "clusters of one or two CTAs");
  static_assert(!A_ROW || (BM / A_SPLIT) <= 256, "TMA box rows <= 256");
  static_assert(A_ROW || (BM / 64) % A_SPLIT == 0, "A boxes split evenly over the cluster");
  static_assert(B_ROW || (BN / B_SPLIT) <= 256, "TMA box rows <= 256");
  static_assert(!B_ROW || (BN / 64) % B_SPLIT == 0, "B boxes split evenly over the cluster");
  static_assert(EPI == kEpilogueDirect || OUT != 0, "the TMA-store epilogue writes 16-bit C");
  static_assert(EPI_SPLIT == 1 || EPI_SPLIT == 2, "whole or half staging tiles");
  static_assert((BN / EPI_SPLIT) % 64 == 0, "staged column groups are whole 64-column boxes");
  static_assert(SPLIT_K >= 1 && SPLIT_K <= 64, "SPLIT_K: 1 (none) to 64 slices of K");
  static_assert(!(STREAM_K && SPLIT_K > 1), "stream-K or split-K, not both");
  static_assert(SMEM_BYTES <= 232448, "at most 227 KB of shared memory per CTA");
  static_assert(PRODUCER_REGS == 0 || (PRODUCER_REGS >= 24 && PRODUCER_REGS % 8 == 0), "setmaxnreg: 24..256, x8");
  static_assert(CONSUMER_REGS == 0 || (CONSUMER_REGS <= 256 && CONSUMER_REGS % 8 == 0), "setmaxnreg: 24..256, x8");
  static_assert(PRODUCER_REGS == 0 || 128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
                "the warpgroups' registers fit the register file");
};

// ---- tile order ------------------------------------------------------------------------------------------------

// Coordinates (row, column) of the cluster tile `s` in a grid of tiles_m x tiles_n cluster tiles, in the planned
// order (common/raster.cuh).
template <class Cfg>
__device__ __forceinline__ void tile_of(int s, int tiles_m, int tiles_n, int& tm, int& tn) {
  raster_cell(Cfg::ORDER, s, tiles_m, tiles_n, Cfg::GROUP_M, tm, tn);
}

// ---- the kernel body -------------------------------------------------------------------------------------------

template <class Cfg>
__device__ __forceinline__ void gemm(const Params& p) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, STAGES = Cfg::STAGES, CS = Cfg::CS;
  constexpr int WG_M = Cfg::WG_M, M_ITERS = Cfg::M_ITERS;
  constexpr unsigned STAGE_BYTES = Cfg::STAGE_BYTES, A_BYTES = Cfg::A_BYTES;
  using Out = Elem<Cfg::OUT>;

  extern __shared__ unsigned char smem_raw[];
  // Layout from a 1024-byte aligned base (128-byte swizzle atoms are 8 rows x 128 bytes): STAGES x [A tile][B tile],
  // the C staging tile (TMA-store epilogue), then the full[STAGES] and empty[STAGES] barriers.
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const unsigned c_tile = base + STAGES * STAGE_BYTES;
  const unsigned full0 = base + Cfg::BAR_OFFSET, empty0 = full0 + 8 * STAGES;
  const unsigned fixup_flag = empty0 + 8 * STAGES;  // the fix-up's "this CTA sums the tile" for its consumers

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);                        // the producer's arrive.expect_tx
      mbar_init(empty0 + 8 * s, Cfg::CONSUMERS * 4 * CS);  // every consumer warp of every CTA of the cluster
    }
    fence_barrier_init();
    fence_proxy_async();
  }
  if constexpr (CS > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }
  // Launched programmatically after the operand copy (COPY_AB), the kernel has got this far during the copy's tail;
  // nothing global is read before the copy has finished and its writes are visible. Otherwise this returns at once.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");

  const int tiles_m = (p.m + BM * Cfg::CM - 1) / (BM * Cfg::CM);
  const int tiles_n = (p.n + BN * Cfg::CN - 1) / (BN * Cfg::CN);
  const int num_tiles = tiles_m * tiles_n;
  const int cluster_id = blockIdx.x / CS, num_clusters = gridDim.x / CS;
  const int rank = CS > 1 ? static_cast<int>(cluster_rank()) : 0;
  const int rank_m = rank % Cfg::CM, rank_n = rank / Cfg::CM;
  const int kblocks = (p.k + Cfg::BK - 1) / Cfg::BK;

  if (wg == 0) {
    // ---- producer warpgroup: one thread issues every copy ----
    if constexpr (Cfg::PRODUCER_REGS > 0) regs_dec<Cfg::PRODUCER_REGS>();
    if (tid == 0) {
      prefetch_map(&p.a);
      prefetch_map(&p.b);
      unsigned short mask_a = 0, mask_b = 0;  // CTAs sharing this CTA's A tile (same rank_m), B tile (same rank_n)
#pragma unroll
      for (int j = 0; j < Cfg::CN; ++j) mask_a |= static_cast<unsigned short>(1u << (rank_m + Cfg::CM * j));
#pragma unroll
      for (int i = 0; i < Cfg::CM; ++i) mask_b |= static_cast<unsigned short>(1u << (i + Cfg::CM * rank_n));
      int stage = 0;
      unsigned phase = 0;
      Schedule<Cfg::SPLIT_K, Cfg::STREAM_K> sched(num_tiles, kblocks, cluster_id, num_clusters, p.sk_tiles);
      Work w;
      while (sched.step(w)) {
        int tm, tn;
        tile_of<Cfg>(w.tile, tiles_m, tiles_n, tm, tn);
        const int m0 = (tm * Cfg::CM + rank_m) * BM, n0 = (tn * Cfg::CN + rank_n) * BN;
        for (int kb = w.kb0; kb < w.kb1; ++kb) {
          const unsigned full = full0 + 8 * stage;
          mbar_wait(empty0 + 8 * stage, phase ^ 1);
          mbar_expect_tx(full, STAGE_BYTES);
          const int k0 = kb * Cfg::BK;
          const unsigned sa = base + stage * STAGE_BYTES, sb = sa + A_BYTES;
          // A: K-major (row-major A) rows [rank_n*R, +R) of the tile, or M-major 64 x 64 boxes.
          if constexpr (Cfg::A_ROW) {
            constexpr int R = BM / Cfg::A_SPLIT;
            if constexpr (Cfg::A_SPLIT > 1) {
              tma_load_multicast(&p.a, sa + rank_n * R * 128, full, k0, m0 + rank_n * R, mask_a);
            } else {
              tma_load(&p.a, sa, full, k0, m0);
            }
          } else {
            constexpr int PIECES = BM / 64 / Cfg::A_SPLIT;
#pragma unroll
            for (int i = 0; i < PIECES; ++i) {
              const int piece = rank_n * PIECES + i;
              if constexpr (Cfg::A_SPLIT > 1) {
                tma_load_multicast(&p.a, sa + piece * 8192, full, m0 + piece * 64, k0, mask_a);
              } else {
                tma_load(&p.a, sa + piece * 8192, full, m0 + piece * 64, k0);
              }
            }
          }
          // B: N-major (row-major B) 64 x 64 boxes, or K-major rows [rank_m*R, +R).
          if constexpr (Cfg::B_ROW) {
            constexpr int PIECES = BN / 64 / Cfg::B_SPLIT;
#pragma unroll
            for (int i = 0; i < PIECES; ++i) {
              const int piece = rank_m * PIECES + i;
              if constexpr (Cfg::B_SPLIT > 1) {
                tma_load_multicast(&p.b, sb + piece * 8192, full, n0 + piece * 64, k0, mask_b);
              } else {
                tma_load(&p.b, sb + piece * 8192, full, n0 + piece * 64, k0);
              }
            }
          } else {
            constexpr int R = BN / Cfg::B_SPLIT;
            if constexpr (Cfg::B_SPLIT > 1) {
              tma_load_multicast(&p.b, sb + rank_m * R * 128, full, k0, n0 + rank_m * R, mask_b);
            } else {
              tma_load(&p.b, sb, full, k0, n0);
            }
          }
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    // ---- consumer warpgroups ----
    if constexpr (Cfg::CONSUMER_REGS > 0) regs_inc<Cfg::CONSUMER_REGS>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;

    // Descriptors of stage 0 (k-step 0) and the per-k-step advance. K-major: rows of 128 bytes, 8-row groups
    // 1024 bytes apart (SBO), a k-step is 32 bytes inside the swizzled row. M/N-major: 64-element columns of 128
    // bytes per K row; 8-K-row groups 1024 bytes apart (SBO), 64-column boxes 8192 bytes apart (LBO), a k-step is
    // 16 K rows = 2048 bytes.
    constexpr unsigned A_KSTEP = Cfg::A_ROW ? 32 : 2048, B_KSTEP = Cfg::B_ROW ? 2048 : 32;
    constexpr int TRANS_A = Cfg::A_ROW ? 0 : 1, TRANS_B = Cfg::B_ROW ? 1 : 0;
    const unsigned long long desc_a0 = Cfg::A_ROW ? make_desc(base, 16, 1024) : make_desc(base, 8192, 1024);
    const unsigned long long desc_b0 =
        Cfg::B_ROW ? make_desc(base + A_BYTES, 8192, 1024) : make_desc(base + A_BYTES, 16, 1024);
    auto a_rows_off = [&](int mi) -> unsigned {  // byte offset of this warpgroup's m64 block mi in the A tile
      const int row = cw * WG_M + mi * 64;
      return Cfg::A_ROW ? static_cast<unsigned>(row * 128) : static_cast<unsigned>((row / 64) * 8192);
    };

    // Hands a stage back: one arrival per consumer warp on the empty barrier of every CTA of the cluster (lane r
    // signals CTA r, so the arrivals leave in parallel).
    auto release = [&](int st) {
      if constexpr (CS == 1) {
        if (lane == 0) mbar_arrive(empty0 + 8 * st);
      } else {
        if (lane < CS) mbar_arrive_cluster(empty0 + 8 * st, static_cast<unsigned>(lane));
      }
    };

    typename Cfg::Acc acc[M_ITERS][Cfg::ACC_REGS];
#pragma unroll
    for (int mi = 0; mi < M_ITERS; ++mi)
#pragma unroll
      for (int i = 0; i < Cfg::ACC_REGS; ++i) acc[mi][i] = 0;  // once per CTA: every tile's first wgmma overwrites
    // The pair of accumulators i and i + 1 (i even, in the f32 layout's numbering) as f32 values.
    auto acc2 = [&](int mi, int i) -> float2 {
      if constexpr (Cfg::ACC_F16) {
        const unsigned bits = acc[mi][i / 2];
        return __half22float2(*reinterpret_cast<const __half2*>(&bits));
      } else {
        return make_float2(acc[mi][i], acc[mi][i + 1]);
      }
    };

    // TMA-store epilogues: the tile as 16-bit pairs (rows r and r+8 of each 8-column block), written into the
    // staging tile (BN/64/EPI_SPLIT boxes of WG_M rows x 128 bytes, 128-byte swizzled like the map of C, per
    // column group) and stored with TMA by one thread; the stores clip at the matrix edges. The deferred epilogue
    // keeps the pairs in `packed` until the next tile's main loop; the immediate one converts while it stores.
    constexpr int PK = Cfg::EPI == kEpilogueTmaStoreDeferred ? BN / 8 : 1;
    unsigned packed[M_ITERS][PK][2];
    auto to_pair = [&](int mi, int j, int h, float alpha) -> unsigned {
      const float2 v = acc2(mi, 4 * j + 2 * h);
      const float v0 = alpha * v.x, v1 = alpha * v.y;
      if constexpr (Cfg::OUT == 1) {
        __half2 t = __floats2half2_rn(v0, v1);
        return *reinterpret_cast<unsigned*>(&t);
      } else {
        __nv_bfloat162 t = __floats2bfloat162_rn(v0, v1);
        return *reinterpret_cast<unsigned*>(&t);
      }
    };
    auto pack = [&](float alpha) {
      if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
#pragma unroll
        for (int mi = 0; mi < M_ITERS; ++mi)
#pragma unroll
          for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) packed[mi][j][h] = to_pair(mi, j, h, alpha);
      }
    };
    auto pair = [&](int mi, int j, int h, float alpha) -> unsigned {
      if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
        return packed[mi][j][h];
      } else {
        return to_pair(mi, j, h, alpha);
      }
    };
    // The staging tile written out without TMA (Params::c_staged_stores): warp w of the warpgroup takes rows w, w + 4,
    // ..., lane l the elements l, l + 32, ... of a row, so that each store covers 64 consecutive bytes of C whatever
    // its alignment (the direct epilogue's stores, 8 rows x 4 bytes per instruction, cost 4095x4097x4093 about 20%);
    // the shared-memory reads undo the 128-byte swizzle (16-byte chunk j of row r at chunk j ^ (r % 8)). The next
    // round's named barrier keeps the staging tile until every thread has read it.
    auto write_staged = [&](unsigned region, int row0, int col0) {
      if constexpr (Cfg::EPI != kEpilogueDirect) {
        constexpr int GROUP_COLS = BN / Cfg::EPI_SPLIT;
        auto* const out = static_cast<typename Out::T*>(p.c_ptr);
        for (int r = warp; r < WG_M; r += 4) {
          const int row = row0 + r;
          if (row >= p.m) break;
          typename Out::T* const c_row = out + static_cast<long long>(row) * p.ldc;
#pragma unroll 4
          for (int c = lane; c < GROUP_COLS; c += 32) {
            const int col = col0 + c;
            if (col >= p.n) break;
            const unsigned at = region + (c / 64) * (WG_M * 128) + r * 128 +
                                static_cast<unsigned>((((c % 64) / 8) ^ (r % 8)) << 4) + (c % 8) * 2;
            unsigned short bits;
            asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(bits) : "r"(at));
            c_row[col] = *reinterpret_cast<const typename Out::T*>(&bits);
          }
        }
      }
    };
    auto store_packed = [&](int tm0, int tn0, float alpha) {
      if constexpr (Cfg::EPI != kEpilogueDirect) {
        constexpr int GROUP_COLS = BN / Cfg::EPI_SPLIT, JG = GROUP_COLS / 8;
        const unsigned region = c_tile + cw * (WG_M * GROUP_COLS * 2);
#pragma unroll
        for (int g = 0; g < Cfg::EPI_SPLIT; ++g) {
          if (tid == 0) bulk_wait_read_all();  // the last store from the staging tile has read it
          named_barrier(1 + cw, 128);
#pragma unroll
          for (int mi = 0; mi < M_ITERS; ++mi) {
            const int r0 = mi * 64 + warp * 16 + lane / 4;
            if constexpr (Cfg::STMATRIX) {
              // Lane L addresses row L%8 of 8x8 block L/8: blocks (jj, rows 0-7), (jj, rows 8-15), (jj+1, 0-7),
              // (jj+1, 8-15) of the warp's 16 rows; each block's fragment is exactly the accumulator pair layout.
              const int m = lane / 8;
              const int r = mi * 64 + warp * 16 + (m % 2) * 8 + lane % 8;
#pragma unroll
              for (int jj = 0; jj < JG; jj += 2) {
                const int js = jj + m / 2;
                const unsigned addr = region + (js / 8) * (WG_M * 128) + r * 128 +
                                      static_cast<unsigned>(((js % 8) ^ (lane % 8)) << 4);
                asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                             "r"(pair(mi, g * JG + jj, 0, alpha)), "r"(pair(mi, g * JG + jj, 1, alpha)),
                             "r"(pair(mi, g * JG + jj + 1, 0, alpha)), "r"(pair(mi, g * JG + jj + 1, 1, alpha))
                             : "memory");
              }
            } else {
#pragma unroll
              for (int jj = 0; jj < JG; ++jj) {
                const unsigned chunk = region + (jj / 8) * (WG_M * 128) + ((lane % 4) * 4);
                const unsigned sw = static_cast<unsigned>(((jj % 8) ^ ((lane / 4) % 8)) << 4);
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(chunk + r0 * 128 + sw),
                             "r"(pair(mi, g * JG + jj, 0, alpha))
                             : "memory");
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(chunk + (r0 + 8) * 128 + sw),
                             "r"(pair(mi, g * JG + jj, 1, alpha))
                             : "memory");
              }
            }
          }
          fence_proxy_async();
          named_barrier(1 + cw, 128);
          if (p.c_staged_stores) {
            write_staged(region, tm0 + cw * WG_M, tn0 + g * GROUP_COLS);
          } else if (tid == 0) {
#pragma unroll
            for (int q = 0; q < GROUP_COLS / 64; ++q)
              tma_store(&p.c, region + q * (WG_M * 128), tn0 + g * GROUP_COLS + q * 64, tm0 + cw * WG_M);
            bulk_commit();
          }
        }
      }
    };
    // One thread's pair of C elements (row, col) and (row, col + 1) from f32 values: alpha, beta C, the conversion
    // and the bounds; a pair in one store where every pair is aligned to its size (ldc even, C's base aligned),
    // otherwise (an odd ldc, as in 4095x4097) one element per store.
    auto* const C = static_cast<typename Out::T*>(p.c_ptr);
    const bool pairs =
        (p.ldc & 1) == 0 && reinterpret_cast<unsigned long long>(p.c_ptr) % (2 * sizeof(typename Out::T)) == 0;
    auto store_c = [&](int row, int col, float v0, float v1) {
      if (row >= p.m || col >= p.n) return;
      typename Out::T* at = C + static_cast<long long>(row) * p.ldc + col;
      const bool second = col + 1 < p.n;
      v0 *= p.alpha;
      v1 *= p.alpha;
      if (p.beta != 0.0f) {
        v0 += p.beta * Out::to_float(at[0]);
        if (second) v1 += p.beta * Out::to_float(at[1]);
      }
      if (pairs && second) {
        if constexpr (Cfg::OUT == 0) {
          *reinterpret_cast<float2*>(at) = make_float2(v0, v1);
        } else if constexpr (Cfg::OUT == 1) {
          *reinterpret_cast<__half2*>(at) = __floats2half2_rn(v0, v1);
        } else {
          *reinterpret_cast<__nv_bfloat162*>(at) = __floats2bfloat162_rn(v0, v1);
        }
        return;
      }
      auto store1 = [](typename Out::T* to, float v) {
        if constexpr (Cfg::OUT == 0) {
          *to = v;
        } else if constexpr (Cfg::OUT == 1) {
          *to = __float2half_rn(v);
        } else {
          *to = __float2bfloat16_rn(v);
        }
      };
      store1(at, v0);
      if (second) store1(at + 1, v1);
    };

    // Split-K with a shared sum (Params::shared_sum): once every slice's partial is stored, slice `seg` sums the
    // float4 [seg, seg + 1) x SLOT / nseg of the tile's slots (fragment order, so that consecutive threads read
    // consecutive float4) over every slice in slice order from zero, as the last-slice sum does element by element
    // (the same bits), and writes them to C. Each float4 is a thread t's pair of columns in rows r and r + 8 of one
    // 8-column block of one m64 block of consumer warpgroup cw: any thread can place it.
    auto shared_sum = [&](const Work& w, const Schedule<Cfg::SPLIT_K, Cfg::STREAM_K>& sched, int m0, int n0) {
      constexpr int SLOT = BM * BN / 4, NV = BN / 8, BATCH = kSharedSumBatch;
      const float4* ws = reinterpret_cast<const float4*>(p.partials) + static_cast<long long>(rank) * SLOT;
      const long long slot_stride = static_cast<long long>(CS) * SLOT;
      const int f1 = (w.seg + 1) * SLOT / w.nseg;
      for (int f = w.seg * SLOT / w.nseg + cw * 128 + tid; f < f1; f += 128 * Cfg::CONSUMERS) {
        const int t = f % 128, g = f / 128;
        const int v = g % NV, mi = (g / NV) % M_ITERS, owner = g / (NV * M_ITERS);
        const int row = m0 + owner * WG_M + mi * 64 + (t / 32) * 16 + (t % 32) / 4;
        const int col = n0 + 8 * v + 2 * (t % 4);
        // A warp whose first row lies outside C stored nothing; this row lies past that one.
        if (row >= p.m || col >= p.n) continue;
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int j0 = 0; j0 < w.nseg; j0 += BATCH) {
          float4 x[BATCH];
#pragma unroll
          for (int u = 0; u < BATCH; ++u) {
            if (j0 + u < w.nseg) x[u] = __ldcg(ws + sched.slot(w, j0 + u) * slot_stride + f);
          }
#pragma unroll
          for (int u = 0; u < BATCH; ++u) {
            if (j0 + u < w.nseg) sum.x += x[u].x, sum.y += x[u].y, sum.z += x[u].z, sum.w += x[u].w;
          }
        }
        store_c(row, col, sum.x, sum.y);
        store_c(row + 8, col, sum.z, sum.w);
      }
    };

    // Split-K / stream-K fix-up of a slice of a shared tile. The partial tile is stored in the accumulators' own
    // fragment order (float4 v of thread t of m64 block mi: 128 consecutive float4 per (mi, v)), so that every
    // store and load is coalesced; warps whose 16 rows lie outside C skip theirs (the columns are not checked: the
    // slot holds the whole tile, and what lies outside C is never written to it). Every slice stores its partial,
    // then counts itself on the tile's counter; the slice that brings the count to nseg resets it and sums all the
    // stored partials in slice order into acc. Returns whether this CTA holds the finished tile.
    auto fixup = [&](const Work& w, const Schedule<Cfg::SPLIT_K, Cfg::STREAM_K>& sched, int m0, int n0) -> bool {
      constexpr long long SLOT = static_cast<long long>(BM) * BN / 4;  // float4 per slot
      float4* ws = reinterpret_cast<float4*>(p.partials);
      auto at = [&](long long slot, int mi, int v) -> float4* {
        return ws + (slot * CS + rank) * SLOT + ((static_cast<long long>(cw) * M_ITERS + mi) * (BN / 8) + v) * 128 + tid;
      };
      auto rows_in = [&](int mi) { return m0 + cw * WG_M + mi * 64 + warp * 16 < p.m; };
      const long long own = sched.slot(w, w.seg);
#if TF_SM90_FIXUP_PROBE == 1
      return true;  // diagnostic: no fix-up at all, every slice stores its own partial as C
#endif
#pragma unroll
      for (int mi = 0; mi < M_ITERS; ++mi) {
        if (!rows_in(mi)) continue;
#pragma unroll
        for (int v = 0; v < BN / 8; ++v) {
          const float2 lo = acc2(mi, 4 * v), hi = acc2(mi, 4 * v + 2);
          __stcg(at(own, mi, v), make_float4(lo.x, lo.y, hi.x, hi.y));
        }
      }
#if TF_SM90_FIXUP_PROBE == 2
      return w.seg == w.nseg - 1;  // diagnostic: the partial stores only
#endif
      // Release / acquire at GPU scope on the counter, as one thread's atomic: the CTA barrier orders every
      // consumer thread's stores before it (cumulativity), and orders the summing threads' loads after it.
      named_barrier(3, 128 * Cfg::CONSUMERS);
      int* const counter = p.counters + static_cast<long long>(w.tile) * CS + rank;
      if constexpr (Cfg::SPLIT_K > 1) {
        if (p.shared_sum) {
          int* departed = counter + static_cast<long long>(num_tiles) * CS;
          if (cw == 0 && tid == 0) {
            int arrived;
            asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(arrived) : "l"(counter) : "memory");
            ++arrived;  // with this slice
            // Every slice of the tile is resident (one unit per cluster, a cooperative launch): wait for them all.
            while (arrived < w.nseg) {
              __nanosleep(64);
              asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(arrived) : "l"(counter) : "memory");
            }
          }
          named_barrier(3, 128 * Cfg::CONSUMERS);
          shared_sum(w, sched, m0, n0);
          // Every load of the share has been used (stored to C) before this barrier; the last slice to leave
          // resets both counters for the next launch, after every slice has seen the arrivals complete.
          named_barrier(3, 128 * Cfg::CONSUMERS);
          if (cw == 0 && tid == 0) {
            int old;
            asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(departed) : "memory");
            if (old == w.nseg - 1) {
              asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(counter) : "memory");
              asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(departed) : "memory");
            }
          }
          return false;
        }
      }
      if (cw == 0 && tid == 0) {
        int old;
        asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(counter) : "memory");
        const bool last = old == w.nseg - 1;
        // Ready for the next launch; no other slice touches it in this one.
        if (last) asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(counter) : "memory");
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(fixup_flag), "r"(last ? 1u : 0u) : "memory");
      }
      named_barrier(3, 128 * Cfg::CONSUMERS);
      unsigned last;
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(last) : "r"(fixup_flag) : "memory");
      if (!last) return false;
#if TF_SM90_FIXUP_PROBE == 3
      return true;  // diagnostic: stores, barriers and the counter, no read-back
#endif
      // The sum, slice by slice in slice order, from zero (0 + x is x, so the order alone fixes every bit). All
      // loads of a group of a slice are issued before any is used: one L2 round trip per group and slice. (The
      // first version tested each 8-column block before its load and added it at once, which serialized the
      // loads: 13 us for two partial tiles of 64x128, bench/results/h200/2026-12-01-splitk/probe.)
      constexpr int VG = fixup_group(M_ITERS, BN);
#pragma unroll
      for (int mi = 0; mi < M_ITERS; ++mi) {
        if (!rows_in(mi)) continue;
        if constexpr (Cfg::ACC_F16) {
          // f16 accumulators: the slices are summed in f32 (as for f32 accumulators, in slice order from zero) and
          // the sum rounded once to the f16 pair the epilogue reads.
#pragma unroll
          for (int g = 0; g < BN / 8; g += VG) {
            float4 s[VG];
#pragma unroll
            for (int v = 0; v < VG; ++v) s[v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 1
            for (int j = 0; j < w.nseg; ++j) {
              const long long slot = sched.slot(w, j);
              float4 x[VG];
#pragma unroll
              for (int v = 0; v < VG; ++v) x[v] = __ldcg(at(slot, mi, g + v));
#pragma unroll
              for (int v = 0; v < VG; ++v) s[v].x += x[v].x, s[v].y += x[v].y, s[v].z += x[v].z, s[v].w += x[v].w;
            }
#pragma unroll
            for (int v = 0; v < VG; ++v) {
              __half2 lo = __floats2half2_rn(s[v].x, s[v].y), hi = __floats2half2_rn(s[v].z, s[v].w);
              acc[mi][2 * (g + v)] = *reinterpret_cast<unsigned*>(&lo);
              acc[mi][2 * (g + v) + 1] = *reinterpret_cast<unsigned*>(&hi);
            }
          }
        } else {
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[mi][i] = 0.0f;
#pragma unroll
          for (int g = 0; g < BN / 8; g += VG) {
#pragma unroll 1
            for (int j = 0; j < w.nseg; ++j) {
              const long long slot = sched.slot(w, j);
              float4 x[VG];
#pragma unroll
              for (int v = 0; v < VG; ++v) x[v] = __ldcg(at(slot, mi, g + v));
#pragma unroll
              for (int v = 0; v < VG; ++v) {
                float* d = &acc[mi][4 * (g + v)];
                d[0] += x[v].x, d[1] += x[v].y, d[2] += x[v].z, d[3] += x[v].w;
              }
            }
          }
        }
      }
      // The flag is read by every consumer thread above before the next slice's fix-up can write it: that fix-up
      // starts with a barrier all of them pass after this point.
      return true;
    };

    bool pending = false;  // deferred epilogue: `packed` holds tile (pend_m0, pend_n0), not yet stored
    int pend_m0 = 0, pend_n0 = 0;

    int stage = 0;
    unsigned phase = 0;
    Schedule<Cfg::SPLIT_K, Cfg::STREAM_K> sched(num_tiles, kblocks, cluster_id, num_clusters, p.sk_tiles);
    Work w;
    while (sched.step(w)) {
      int tm, tn;
      tile_of<Cfg>(w.tile, tiles_m, tiles_n, tm, tn);
      const int m0 = (tm * Cfg::CM + rank_m) * BM, n0 = (tn * Cfg::CN + rank_n) * BN;

      // Main loop: one group of wgmmas per stage; the previous group is waited for (wait_group 1) before its
      // stage is handed back to the producer, so one group is always in flight behind the one being issued.
      int prev = 0;
#pragma unroll
      for (int mi = 0; mi < M_ITERS; ++mi) fence_accumulators(acc[mi]);
      for (int kb = w.kb0; kb < w.kb1; ++kb) {
        mbar_wait(full0 + 8 * stage, phase);
        __syncwarp();  // the warp leaves the spin loop together before the .aligned wgmma instructions
        wgmma_fence();
        const unsigned long long da = desc_a0 + ((stage * STAGE_BYTES) >> 4);
        const unsigned long long db = desc_b0 + ((stage * STAGE_BYTES) >> 4);
#pragma unroll
        for (int kk = 0; kk < Cfg::BK / 16; ++kk) {
#pragma unroll
          for (int mi = 0; mi < M_ITERS; ++mi) {
            wgmma<BN, Cfg::IN, TRANS_A, TRANS_B>(acc[mi], da + ((a_rows_off(mi) + kk * A_KSTEP) >> 4),
                                                 db + ((kk * B_KSTEP) >> 4), (kb > w.kb0 || kk > 0) ? 1 : 0);
          }
        }
        wgmma_commit();
        if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
          // The previous tile's output goes out while this tile's first two wgmma groups run.
          if (pending && kb - w.kb0 == min(1, w.kb1 - w.kb0 - 1)) {
            store_packed(pend_m0, pend_n0, 1.0f);
            pending = false;
          }
        }
        if (kb > w.kb0) {
          wgmma_wait<1>();
          release(prev);
        }
        prev = stage;
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
#pragma unroll
      for (int mi = 0; mi < M_ITERS; ++mi) fence_accumulators(acc[mi]);
      release(prev);

      // A slice of a shared tile: its partial goes to the workspace; the last slice to arrive sums them all and
      // goes on to the epilogue, the others go on to their next work.
      if constexpr (Cfg::FIXUP) {
        if (w.nseg > 1 && !fixup(w, sched, m0, n0)) continue;
      }

      // Epilogue. Accumulator layout of m64nN: thread (warp w, lane l) holds rows 16w + l/4 and +8 of each m64
      // block, columns 8j + 2(l%4) and +1 of each 8-column block j: acc[4j + {0,1}] and acc[4j + {2,3}].
      const float alpha = p.alpha, beta = p.beta;
      bool direct = true;
      if constexpr (Cfg::EPI != kEpilogueDirect) {
        if (beta == 0.0f) {
          direct = false;
          if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
            pack(alpha);  // the main loop above has already stored the pending tile (k >= 1: it ran at least once)
            pending = true;
            pend_m0 = m0;
            pend_n0 = n0;
          } else {
            store_packed(m0, n0, alpha);
          }
        }
      }
      if (direct) {
#pragma unroll
        for (int mi = 0; mi < M_ITERS; ++mi) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + cw * WG_M + mi * 64 + warp * 16 + lane / 4 + 8 * h;
            if (row >= p.m) continue;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
              const float2 v = acc2(mi, 4 * j + 2 * h);
              store_c(row, n0 + 8 * j + 2 * (lane % 4), v.x, v.y);
            }
          }
        }
      }
    }
    if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
      if (pending) store_packed(pend_m0, pend_n0, 1.0f);
    }
    if constexpr (Cfg::EPI != kEpilogueDirect) {
      if (tid == 0) bulk_wait_all();
    }
  }

  // No CTA of a cluster leaves while the other may still multicast into it or arrive on its barriers.
  if constexpr (CS > 1) {
    __syncwarp();
    cluster_sync();
  }
}

}  // namespace tf::sm90
