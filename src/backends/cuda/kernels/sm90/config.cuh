// sm90 family: what one instance of the Hopper GEMM (sm90/gemm.cuh) is built from: its planned parameters (Config,
// every one a template argument), its run-time arguments (Params), and the CTA's place in the persistent walk over
// the output tiles (Grid, tile_of).
#pragma once

#include "common/elem.cuh"
#include "common/raster.cuh"
#include "sm90/ptx.cuh"
#include "sm90/schedule.cuh"

// An experiment (issue 13), set by the generated source with TILEFORGE_SM90_ROW_SPLIT=1: M/N-major boxes shared in a
// cluster are split by K rows even where whole boxes divide evenly (Config::*_ROW_PARTS).
#ifndef TF_SM90_ROW_SPLIT
#define TF_SM90_ROW_SPLIT 0
#endif
// Another, with TILEFORGE_SM90_LEADER_MULTICAST=1: rank 0 of the CTAs sharing an operand copies all of it, multicast
// to each (sm90/mainloop.cuh's load_mn_major, load_k_major); by default each copies its share.
#ifndef TF_SM90_LEADER_MULTICAST
#define TF_SM90_LEADER_MULTICAST 0
#endif

// Another, with TILEFORGE_SM90_K_INTERLEAVE=1: split-K's slices take interleaved k-blocks (common/work_schedule.cuh's
// interleaved_kblock) instead of contiguous runs; only the producer's copies change.
#ifndef TF_SM90_K_INTERLEAVE
#define TF_SM90_K_INTERLEAVE 0
#endif

// Another, with TILEFORGE_SM90_L2_PREFETCH=D: the producer asks the L2 for each CTA's share of the k-block D ahead of
// the one it copies (within the work unit; at a unit's start, its first D), so that the DRAM reads of a short, one-wave
// loop start before the ring has room for them (sm90/mainloop.cuh's produce). 0: no prefetch.
#ifndef TF_SM90_L2_PREFETCH
#define TF_SM90_L2_PREFETCH 0
#endif

namespace tf::sm90 {

// Run-time arguments. Pass the whole struct as `const __grid_constant__ Params`, so that the tensor maps stay in
// the parameter space, where the TMA unit reads them.
struct Params {
  TmaDesc a;  // A: M x K; row-major: dims {K, M}, box {64, A_BOX_OUTER}; column-major: dims {M, K}, box {64, 64}
  TmaDesc b;  // B: K x N; row-major: dims {N, K}, box {64, 64}; column-major: dims {K, N}, box {64, B_BOX_OUTER}
  TmaDesc c;  // C: M x N row-major, dims {N, M}; column-major (Config::C_COL), dims {M, N}; box {64, C_BOX_OUTER};
              // read only by the TMA-store epilogue
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
  // REDUCE 1 (Config::ATOMIC_SUM, only under the non-deterministic policy): f32 tiles of BM x BN, one per shared tile
  // (split-K: every cluster tile; stream-K: the sk_tiles shared ones) x CTAs per cluster, which every slice adds its
  // partial into with float atomics; zero before the first launch (they lie in the counters' zone), and each launch
  // leaves them zero. `partials` is then unused.
  float* sums;
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

// Consumer warpgroups a CTA may have.
enum : int { kMaxConsumers = 3 };

// Named barriers (0 is __syncthreads): one per consumer warpgroup for its staging epilogue (1 + cw), after them one
// for all the consumers of the CTA in the fix-up, then the two of CONSUMER_K's hand-over of the second warpgroup's
// partial tile (written, and taken by the first).
enum : unsigned {
  kBarrierEpilogue0 = 1,
  kBarrierFixup = kBarrierEpilogue0 + kMaxConsumers,
  kBarrierHalfWritten,
  kBarrierHalfTaken
};

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
//   kStages: shared-memory ring depth. kConsumers: consumer warpgroups (1 to 3), which split BLOCK_M (three: a
//     192-row tile, whose 2 waves cover a grid that 128-row tiles would need 3 for, as in 3000x3000), or with
//     kConsumerCols BLOCK_N: each warpgroup then owns BLOCK_N / kConsumers columns of every row, so that a 64-row
//     tile (one m64 block) still has two warpgroups feeding the tensor cores, each waiting on its own wgmma groups
//     while the other issues (both read the whole A tile from shared memory). Or, with kConsumerK, along K: each of
//     two warpgroups owns the whole tile and takes every other k-block of it (every other stage of the ring), meant
//     to overlap a small tile's wgmma chains (measured no faster than one consumer); the second hands its partial
//     tile to the first through shared memory (K_BYTES) and goes on to its next work unit, while the first sums the
//     two and runs the fix-up and epilogue.
//   kClusterM x kClusterN: CTAs per cluster (1, 2, 4 or 8 in all); CTAs of a cluster along M share the B tile, along
//     N the A tile, each loading its part and multicasting it to all that share it.
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
//   kAtomicSum: REDUCE 1, the non-deterministic policy's fix-up: every slice adds its partial tile into the tile's f32
//     sum (Params::sums) with vector float atomics, in the order the slices arrive, and the last to arrive reads the
//     sum back (one tile instead of one per slice) and leaves it zero. The bits then depend on the arrival order.
//   kSliceCluster (SPLIT_CLUSTER 1): the SPLIT_K slices of a tile are the CTAs of one cluster (cluster rank = slice;
//     no operand is shared), and the tile is summed through distributed shared memory instead of a global
//     workspace: every slice writes its partial tile into its own ring (the main loop is over), the cluster meets,
//     and each slice sums its share of the tile from every slice's shared memory in slice order (bit-identical from
//     run to run) and writes it to C. The cluster is the work unit of the persistent walk (whole tiles).
//   kCCol: C is column-major (element (i, j) at j * ldc + i). The host runs a row-major C as the transposed problem
//     C^T = B^T A^T this way (SWAP_AB), so that a narrow M lies along wgmma's N, which takes any multiple of 8: the
//     epilogues write the accumulators' columns as C's rows (stmatrix .trans into the staging tile, whose TMA boxes
//     are 64 rows of M by the column group's columns; the direct stores one element at a time).
template <int kBlockM, int kBlockN, int kBlockK, int kStages, int kConsumers, int kClusterM, int kClusterN, int kOrder,
          int kGroupM, int kInTag, int kOutTag, bool kARow, bool kBRow, int kEpilogue, int kProducerRegs,
          int kConsumerRegs, int kEpiSplit = 1, bool kStMatrix = false, int kSplitK = 1, bool kStreamK = false,
          bool kAccF16 = false, bool kCCol = false, bool kAtomicSum = false, bool kConsumerCols = false,
          bool kConsumerK = false, bool kSliceCluster = false>
struct Config {
  static constexpr int BM = kBlockM, BN = kBlockN, BK = kBlockK, STAGES = kStages, CONSUMERS = kConsumers;
  // CS: the CTAs sharing operands (multicast); LAUNCH_CS: the CTAs of a launched cluster, with SPLIT_CLUSTER the
  // tile's slices, which share nothing but their partial tiles.
  static constexpr int CM = kClusterM, CN = kClusterN, CS = kClusterM * kClusterN;
  static constexpr bool SLICE_CLUSTER = kSliceCluster;
  static constexpr int LAUNCH_CS = kSliceCluster ? kSplitK : CS;
  static constexpr int ORDER = kOrder, GROUP_M = kGroupM;
  static constexpr int IN = kInTag, OUT = kOutTag;
  static constexpr bool A_ROW = kARow, B_ROW = kBRow;
  static constexpr int EPI = kEpilogue, PRODUCER_REGS = kProducerRegs, CONSUMER_REGS = kConsumerRegs;
  static constexpr int EPI_SPLIT = kEpiSplit;
  static constexpr bool C_COL = kCCol;
  // The part of the tile each consumer warpgroup owns: WG_M rows x WG_N columns, at (cw_row(cw), cw_col(cw)).
  static constexpr bool CONSUMER_COLS = kConsumerCols, CONSUMER_K = kConsumerK;
  static constexpr int WG_M = kConsumerCols || kConsumerK ? kBlockM : kBlockM / kConsumers;
  static constexpr int WG_N = kConsumerCols ? kBlockN / kConsumers : kBlockN;
  static constexpr int M_ITERS = WG_M / 64;  // wgmma m64 row blocks per consumer warpgroup
  // The consumer warpgroups that read each stage and hold the finished tile in the fix-up and epilogue: all of them,
  // or with CONSUMER_K the first only (each stage is read by one of the two, the second's partial is handed over).
  static constexpr int HOLDERS = kConsumerK ? 1 : kConsumers;
  TF_SM90_HD static constexpr int cw_row(int cw) { return kConsumerCols || kConsumerK ? 0 : cw * WG_M; }
  TF_SM90_HD static constexpr int cw_col(int cw) { return kConsumerCols ? cw * WG_N : 0; }
  // Staging rounds per tile of the TMA-store epilogues: EPI_SPLIT 2 stages halves of a warpgroup's columns, or
  // thirds where halves would not be whole 64-column boxes (WG_N 192: a 24 KB staging tile per 64 rows instead of 72,
  // which leaves room for a fourth stage beside 192x192 tiles).
  static constexpr int EPI_ROUNDS = kEpiSplit == 1 ? 1 : (WG_N % 128 == 0 ? 2 : WG_N / 64);
  static constexpr bool STMATRIX = kStMatrix;
  static constexpr int SPLIT_K = kSplitK;
  static constexpr bool STREAM_K = kStreamK;
  // Tiles may be shared by CTAs and summed in a workspace (SPLIT_CLUSTER sums them in the cluster instead).
  static constexpr bool FIXUP = (SPLIT_K > 1 || STREAM_K) && !kSliceCluster;
  static constexpr bool ATOMIC_SUM = kAtomicSum;
  // f16 accumulators (the opt-in precision policy): each 32-bit register holds the f16 pair of two neighbouring
  // columns, so a thread holds half the registers of the f32 accumulators, in the same fragment order.
  static constexpr bool ACC_F16 = kAccF16;
  using Acc = typename AccType<kAccF16>::T;
  static constexpr int ACC_REGS = kAccF16 ? WG_N / 4 : WG_N / 2;

  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  // One consumer thread's accumulators, and the deferred TMA-store epilogue's 16-bit pairs of one tile (held in
  // registers until the next tile's main loop; a placeholder for the other epilogues).
  using AccTile = Acc[M_ITERS][ACC_REGS];
  using Packed = unsigned[M_ITERS][kEpilogue == kEpilogueTmaStoreDeferred ? WG_N / 8 : 1][2];
  // The sequence of work units of one cluster (sm90/schedule.cuh).
  // With SPLIT_CLUSTER a cluster's unit is a whole tile; its CTAs take their slices of its k-blocks (slice_of).
  using Sched = Schedule<kSliceCluster ? 1 : kSplitK, kStreamK>;
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int C_BYTES = EPI != kEpilogueDirect ? BM * BN * 2 / EPI_ROUNDS : 0;  // every warpgroup's region
  static constexpr int K_BYTES = kConsumerK ? BM * BN * 4 : 0;  // CONSUMER_K's f32 partial tile, after the staging
  static constexpr int BAR_OFFSET = STAGES * STAGE_BYTES + C_BYTES + K_BYTES;  // from the 1024-aligned base
  // + 16 bytes for the fix-up's flag, + slack to align the base
  static constexpr int SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 16 + 1024;

  // Operand sharing inside a cluster: A is split over the CN CTAs of a cluster row, B over the CM of a column.
  static constexpr int A_SPLIT = CN, B_SPLIT = CM;
  // An M/N-major operand's tile is 64-column boxes of 64 K rows. Split over its CTAs by whole boxes where their
  // count divides evenly (fewest TMA copies), else every box by K rows: each CTA copies 64 / *_ROW_PARTS rows of
  // each of them (whole 8-row swizzle atoms, 1024-byte aligned, so the swizzle pattern is the one a whole box has).
  static constexpr int A_MN_BOXES = BM / 64, B_MN_BOXES = BN / 64;
  // TF_SM90_ROW_SPLIT (an experiment, set by the host with TILEFORGE_SM90_ROW_SPLIT=1): split by K rows always.
  static constexpr int A_ROW_PARTS = A_MN_BOXES % A_SPLIT == 0 && !(TF_SM90_ROW_SPLIT && A_SPLIT > 1) ? 1 : A_SPLIT;
  static constexpr int B_ROW_PARTS = B_MN_BOXES % B_SPLIT == 0 && !(TF_SM90_ROW_SPLIT && B_SPLIT > 1) ? 1 : B_SPLIT;
  // A K-major operand's tile (rows of 64 K elements, 128 bytes each) is split over its CTAs by rows: one box of
  // rows / SPLIT per CTA where that is whole 8-row swizzle atoms, else the atoms dealt out one 8-row box at a time
  // (72 rows over 4 CTAs: 3, 2, 2 and 2 atoms). A swizzled box lands on a 1024-byte boundary either way.
  static constexpr int A_K_BOX = (BM / A_SPLIT) % 8 == 0 ? BM / A_SPLIT : 8;
  static constexpr int B_K_BOX = (BN / B_SPLIT) % 8 == 0 ? BN / B_SPLIT : 8;
  // Tensor-map boxes (the host encodes the maps with these). K-major operands: 64 x *_K_BOX rows; M/N-major
  // operands: boxes of 64 (M or N) x 64 (K), or x 64 / ROW_PARTS K rows where split by rows.
  static constexpr int A_BOX_INNER = 64, A_BOX_OUTER = A_ROW ? A_K_BOX : 64 / A_ROW_PARTS;
  static constexpr int B_BOX_INNER = 64, B_BOX_OUTER = B_ROW ? 64 / B_ROW_PARTS : B_K_BOX;
  // C's boxes: 64 columns x the warpgroup's rows; column-major, 64 rows x the staging round's columns.
  static constexpr int C_BOX_INNER = 64, C_BOX_OUTER = kCCol ? WG_N / EPI_ROUNDS : WG_M;

  static_assert(IN == 1 || IN == 2, "inputs are f16 or bf16");
  static_assert(OUT == 0 || OUT == 1 || OUT == 2, "output is f32, f16 or bf16");
  static_assert(BK == 64, "BLOCK_K is one 128-byte swizzle row of 16-bit elements");
  static_assert(CONSUMERS >= 1 && CONSUMERS <= kMaxConsumers, "one to three consumer warpgroups");
  static_assert(WG_M % 64 == 0 && M_ITERS >= 1, "each consumer warpgroup owns whole m64 row blocks");
  static_assert(BN <= 256 && (BN % 64 == 0 || (!B_ROW && BN % 8 == 0)),
                "BLOCK_N: at most 256 (one wgmma), a multiple of 64 (128-byte boxes of an N-major B), or of 8 for a "
                "K-major B");
  static_assert(M_ITERS * WG_N / 2 <= 128, "at most 128 f32 accumulators per thread");
  static_assert(!kConsumerCols || (kConsumers >= 2 && kBlockN % kConsumers == 0 &&
                                   (B_ROW ? WG_N % 64 == 0 : WG_N % 8 == 0)),
                "consumers along N: two or three, each owning whole 64-column boxes of an N-major B (8-row atoms of a "
                "K-major one)");
  static_assert(!kConsumerK || (kConsumers == 2 && !kConsumerCols && kEpilogue != kEpilogueTmaStoreDeferred &&
                                !kAccF16),
                "consumers along K: two warpgroups, not along N as well, without the deferred epilogue (the second "
                "warpgroup's k-blocks run beside the first's epilogue already) and with f32 accumulators");
  static_assert(!kAccF16 || kInTag == 1, "f16 accumulators take f16 inputs only");
  static_assert(STAGES >= 2, "a ring needs two stages");
  static_assert(CS == 1 || CS == 2 || CS == 4 || CS == 8, "clusters of 1, 2, 4 or 8 CTAs (the portable limit)");
  static_assert(!kSliceCluster || (CS == 1 && (kSplitK == 2 || kSplitK == 4 || kSplitK == 8) && !kStreamK &&
                                   !kAtomicSum && !kConsumerK && !kAccF16 &&
                                   kStages * STAGE_BYTES >= kBlockM * kBlockN * 4),
                "a cluster of slices: 2, 4 or 8 of them, no operand shared, no stream-K, atomic sum or CONSUMER_K, f32 "
                "accumulators, and a ring that holds the f32 partial tile");
  static_assert(!A_ROW || (BM % 8 == 0 && BM / 8 >= A_SPLIT && A_K_BOX <= 256),
                "A's K-major tile: whole 8-row atoms, at least one per CTA sharing it; boxes of at most 256 rows");
  static_assert(B_ROW || (BN % 8 == 0 && BN / 8 >= B_SPLIT && B_K_BOX <= 256),
                "B's K-major tile: whole 8-row atoms, at least one per CTA sharing it; boxes of at most 256 rows");
  static_assert(A_ROW || A_ROW_PARTS == 1 || 64 % (A_ROW_PARTS * 8) == 0, "A's boxes split into whole 8-row atoms");
  static_assert(!B_ROW || B_ROW_PARTS == 1 || 64 % (B_ROW_PARTS * 8) == 0, "B's boxes split into whole 8-row atoms");
  static_assert(EPI == kEpilogueDirect || OUT != 0, "the TMA-store epilogue writes 16-bit C");
  static_assert(EPI_SPLIT == 1 || EPI_SPLIT == 2, "whole staging tiles, or halves (thirds of 192 columns)");
  static_assert(EPI_ROUNDS >= 1, "EPI_SPLIT 2 needs a BLOCK_N of at least 128");
  static_assert(EPI == kEpilogueDirect || (kCCol ? (WG_N / EPI_ROUNDS) % 8 == 0 : (WG_N / EPI_ROUNDS) % 64 == 0),
                "staged column groups: whole 64-column boxes, or column-major whole 8-column blocks");
  static_assert(!kCCol || EPI == kEpilogueDirect || STMATRIX, "a column-major staging tile is written by stmatrix");
  static_assert(SPLIT_K >= 1 && SPLIT_K <= 64, "SPLIT_K: 1 (none) to 64 slices of K");
  static_assert(!(STREAM_K && SPLIT_K > 1), "stream-K or split-K, not both");
  static_assert(!ATOMIC_SUM || FIXUP, "the atomic sum is a fix-up: split-K or stream-K");
  static_assert(SMEM_BYTES <= 232448, "at most 227 KB of shared memory per CTA");
  static_assert(PRODUCER_REGS == 0 || (PRODUCER_REGS >= 24 && PRODUCER_REGS % 8 == 0), "setmaxnreg: 24..256, x8");
  static_assert(CONSUMER_REGS == 0 || (CONSUMER_REGS <= 256 && CONSUMER_REGS % 8 == 0), "setmaxnreg: 24..256, x8");
  static_assert(PRODUCER_REGS == 0 || 128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536,
                "the warpgroups' registers fit the register file");
};

// ---- the persistent walk ---------------------------------------------------------------------------------------

// Coordinates (row, column) of the cluster tile `s` in a grid of tiles_m x tiles_n cluster tiles, in the planned
// order (common/raster.cuh).
template <class Cfg>
__device__ __forceinline__ void tile_of(int s, int tiles_m, int tiles_n, int& tm, int& tn) {
  raster_cell(Cfg::ORDER, s, tiles_m, tiles_n, Cfg::GROUP_M, tm, tn);
}

// The CTA's place in the persistent grid: the grid of tiles_m x tiles_n cluster tiles, the k-blocks of a tile, the
// CTA's cluster among the clusters and its rank in the cluster (along M and along N; with SPLIT_CLUSTER its slice).
struct Grid {
  int tiles_m, tiles_n, tiles, cluster, clusters, rank, rank_m, rank_n, kblocks;
};

template <class Cfg>
__device__ __forceinline__ Grid grid_of(const Params& p) {
  constexpr int CS = Cfg::LAUNCH_CS;
  Grid g;
  g.tiles_m = (p.m + Cfg::BM * Cfg::CM - 1) / (Cfg::BM * Cfg::CM);
  g.tiles_n = (p.n + Cfg::BN * Cfg::CN - 1) / (Cfg::BN * Cfg::CN);
  g.tiles = g.tiles_m * g.tiles_n;
  g.cluster = blockIdx.x / CS;
  g.clusters = gridDim.x / CS;
  g.rank = CS > 1 ? static_cast<int>(cluster_rank()) : 0;
  const int share = Cfg::SLICE_CLUSTER ? 0 : g.rank;  // the rank among the CTAs sharing operands
  g.rank_m = share % Cfg::CM;
  g.rank_n = share / Cfg::CM;
  g.kblocks = (p.k + Cfg::BK - 1) / Cfg::BK;
  return g;
}

}  // namespace tf::sm90
