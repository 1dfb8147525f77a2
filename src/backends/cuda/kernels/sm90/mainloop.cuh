// sm90 family: the two sides of the main loop's ring of STAGES shared-memory stages: the producer warpgroup's loop
// of TMA copies of A and B tiles into free stages, and the consumer warpgroups' parts of theirs (the stage's wgmma
// descriptors, its wgmmas, handing it back), which the persistent loop in sm90/gemm.cuh runs.
#pragma once

#include "sm90/config.cuh"

namespace tf::sm90 {

// The ring's barriers, by one thread: full[s] completes when the producer's arrival and the stage's bytes have
// come, empty[s] when every consumer warp that reads it (all of them; with CONSUMER_K those of one warpgroup) of every
// CTA of the cluster has released the stage.
template <class Cfg>
__device__ __forceinline__ void init_barriers(unsigned full0, unsigned empty0) {
#pragma unroll
  for (int s = 0; s < Cfg::STAGES; ++s) {
    mbar_init(full0 + 8 * s, 1);                              // the producer's arrive.expect_tx
    mbar_init(empty0 + 8 * s, Cfg::HOLDERS * 4 * Cfg::CS);  // every reading consumer warp of every CTA of the cluster
  }
  fence_barrier_init();
  fence_proxy_async();
}

// The ring's next stage: the index wraps at STAGES, and the parity of the barriers' phase flips as it does.
template <class Cfg>
__device__ __forceinline__ void next_stage(int& stage, unsigned& phase) {
  if (++stage == Cfg::STAGES) {
    stage = 0;
    phase ^= 1;
  }
}

// ---- producer --------------------------------------------------------------------------------------------------

// One box of an operand tile: copied into shared memory at `dst` (completing on `full`; multicast to `mask` where
// MC), or with PF only requested into the L2 (TF_SM90_L2_PREFETCH), the same box the copy will take later.
template <bool PF, bool MC>
__device__ __forceinline__ void copy_box(const TmaDesc* map, unsigned dst, unsigned full, int c0, int c1,
                                         unsigned short mask) {
  if constexpr (PF) {
    tma_prefetch_l2(map, c0, c1);
  } else if constexpr (MC) {
    tma_load_multicast(map, dst, full, c0, c1, mask);
  } else {
    tma_load(map, dst, full, c0, c1);
  }
}

// One stage's share of an M/N-major operand tile (BOXES boxes of 64 columns x 64 K rows, 8192 bytes each, at smem
// address `dst`; the tile's first column `mn0`, its first K row `k0`) for the CTA of rank `rank` among the SPLIT
// that share it: whole boxes where ROW_PARTS is 1, else 64 / ROW_PARTS K rows of every box; multicast to `mask`
// (PF: the same boxes requested into the L2 only).
// TF_SM90_LEADER_MULTICAST (an experiment, issue 13; sm90/config.cuh): the CTA of rank 0 copies every CTA's share
// of a shared operand, multicasting each to all of them; the others copy none of it.
template <int BOXES, int SPLIT, int ROW_PARTS, bool PF, bool LEAD = bool(TF_SM90_LEADER_MULTICAST)>
__device__ __forceinline__ void load_mn_major(const TmaDesc* map, unsigned dst, unsigned full, int mn0, int k0, int rank,
                                              unsigned short mask) {
  if constexpr (LEAD && SPLIT > 1) {
    if (rank != 0) return;
#pragma unroll
    for (int r = 0; r < SPLIT; ++r) load_mn_major<BOXES, SPLIT, ROW_PARTS, PF, false>(map, dst, full, mn0, k0, r, mask);
    return;
  }
  if constexpr (ROW_PARTS == 1) {
    constexpr int PIECES = BOXES / SPLIT;
#pragma unroll
    for (int i = 0; i < PIECES; ++i) {
      const int piece = rank * PIECES + i;
      copy_box<PF, (SPLIT > 1)>(map, dst + piece * 8192, full, mn0 + piece * 64, k0, mask);
    }
  } else {
    constexpr int ROWS = 64 / ROW_PARTS;
#pragma unroll
    for (int box = 0; box < BOXES; ++box) {
      copy_box<PF, true>(map, dst + box * 8192 + rank * ROWS * 128, full, mn0 + box * 64, k0 + rank * ROWS, mask);
    }
  }
}

// One stage's share of a K-major operand tile (ROWS rows of 64 K elements, 128 bytes each, at smem address `dst`;
// its first row `mn0`, its K offset `k0`) for the CTA of rank `rank` among the SPLIT that share it: rows
// [rank * BOX, +BOX) where BOX (Config's *_K_BOX) is ROWS / SPLIT, else BOX is one 8-row atom and the CTA copies
// atoms rank, rank + SPLIT, ...; multicast to `mask` (PF: the same boxes requested into the L2 only).
template <int ROWS, int SPLIT, int BOX, bool PF, bool LEAD = bool(TF_SM90_LEADER_MULTICAST)>
__device__ __forceinline__ void load_k_major(const TmaDesc* map, unsigned dst, unsigned full, int k0, int mn0, int rank,
                                             unsigned short mask) {
  if constexpr (LEAD && SPLIT > 1) {
    if (rank != 0) return;
#pragma unroll
    for (int r = 0; r < SPLIT; ++r) load_k_major<ROWS, SPLIT, BOX, PF, false>(map, dst, full, k0, mn0, r, mask);
    return;
  }
  if constexpr (SPLIT == 1) {
    copy_box<PF, false>(map, dst, full, k0, mn0, mask);
  } else if constexpr (BOX * SPLIT == ROWS) {
    copy_box<PF, true>(map, dst + rank * BOX * 128, full, k0, mn0 + rank * BOX, mask);
  } else {
    static_assert(BOX == 8, "an uneven split deals out 8-row atoms");
#pragma unroll
    for (int atom = rank; atom < ROWS / 8; atom += SPLIT) {
      copy_box<PF, true>(map, dst + atom * 1024, full, k0, mn0 + atom * 8, mask);
    }
  }
}

// This CTA's share of k-block `kb` of work unit `w` (A and B, the k-block through split-K's interleaving where it is
// on), copied into the stage at `sa` (B after A's bytes) completing on `full`, or with PF requested into the L2 only.
template <class Cfg, bool PF>
__device__ __forceinline__ void copy_kblock(const Params& p, const Grid& g, const Work& w, int kb, int m0, int n0,
                                            unsigned sa, unsigned full, unsigned short mask_a,
                                            unsigned short mask_b) {
  int kb_copy = kb;
  if constexpr (Cfg::SPLIT_K > 1 && bool(TF_SM90_K_INTERLEAVE)) {
    kb_copy = interleaved_kblock(w.seg, kb - w.kb0, g.kblocks, Cfg::SPLIT_K);
  }
  const int k0 = kb_copy * Cfg::BK;
  const unsigned sb = sa + Cfg::A_BYTES;
  // A: K-major (row-major A) rows of the tile shared by the cluster row, or M-major 64 x 64 boxes.
  if constexpr (Cfg::A_ROW) {
    load_k_major<Cfg::BM, Cfg::A_SPLIT, Cfg::A_K_BOX, PF>(&p.a, sa, full, k0, m0, g.rank_n, mask_a);
  } else {
    load_mn_major<Cfg::A_MN_BOXES, Cfg::A_SPLIT, Cfg::A_ROW_PARTS, PF>(&p.a, sa, full, m0, k0, g.rank_n, mask_a);
  }
  // B: N-major (row-major B) 64 x 64 boxes, or K-major rows shared by the cluster column.
  if constexpr (Cfg::B_ROW) {
    load_mn_major<Cfg::B_MN_BOXES, Cfg::B_SPLIT, Cfg::B_ROW_PARTS, PF>(&p.b, sb, full, n0, k0, g.rank_m, mask_b);
  } else {
    load_k_major<Cfg::BN, Cfg::B_SPLIT, Cfg::B_K_BOX, PF>(&p.b, sb, full, k0, n0, g.rank_m, mask_b);
  }
}

// SPLIT_CLUSTER: the CTA's slice of its cluster's whole tile `w`, k-blocks [r x kblocks / S, (r + 1) x kblocks / S)
// for the CTA of rank r (every slice holds one: S <= kblocks); otherwise `w` as it is.
template <class Cfg>
__device__ __forceinline__ void slice_of(Work& w, const Grid& g) {
  if constexpr (Cfg::SLICE_CLUSTER) {
    const int first = w.kb0, kblocks = w.kb1 - w.kb0;
    w.kb0 = first + g.rank * kblocks / Cfg::SPLIT_K;
    w.kb1 = first + (g.rank + 1) * kblocks / Cfg::SPLIT_K;
    w.seg = g.rank;
    w.nseg = Cfg::SPLIT_K;
  }
}

// SPLIT_CLUSTER: the producer warpgroup's threads other than the issuing one meet the cluster twice per work unit,
// as the issuing thread and the consumers do (cluster_sum).
template <class Cfg>
__device__ __forceinline__ void meet_per_unit(const Params& p, const Grid& g) {
  typename Cfg::Sched sched(g.tiles, g.kblocks, g.cluster, g.clusters, p.sk_tiles);
  Work w;
  while (sched.step(w)) {
    cluster_sync<true>();
    cluster_sync<false>();
  }
}

// The producer warpgroup's one issuing thread: for every k-block of every work unit of the cluster, waits until the
// next stage is free (released by every consumer warp of every CTA of the cluster), arms its full barrier with the
// stage's bytes and copies A and B into it.
template <class Cfg>
__device__ __forceinline__ void produce(const Params& p, const Grid& g, unsigned base, unsigned full0,
                                        unsigned empty0) {
  constexpr unsigned STAGE_BYTES = Cfg::STAGE_BYTES;
  constexpr int PF_AHEAD = TF_SM90_L2_PREFETCH;
  unsigned short mask_a = 0, mask_b = 0;  // CTAs sharing this CTA's A tile (same rank_m), B tile (same rank_n)
#pragma unroll
  for (int j = 0; j < Cfg::CN; ++j) mask_a |= static_cast<unsigned short>(1u << (g.rank_m + Cfg::CM * j));
#pragma unroll
  for (int i = 0; i < Cfg::CM; ++i) mask_b |= static_cast<unsigned short>(1u << (i + Cfg::CM * g.rank_n));
  int stage = 0;
  unsigned phase = 0;
  typename Cfg::Sched sched(g.tiles, g.kblocks, g.cluster, g.clusters, p.sk_tiles);
  Work w;
  while (sched.step(w)) {
    slice_of<Cfg>(w, g);
    int tm, tn;
    tile_of<Cfg>(w.tile, g.tiles_m, g.tiles_n, tm, tn);
    const int m0 = (tm * Cfg::CM + g.rank_m) * Cfg::BM, n0 = (tn * Cfg::CN + g.rank_n) * Cfg::BN;
    int pf_next = w.kb0 + 1;  // TF_SM90_L2_PREFETCH: the unit's next k-block not yet requested into the L2
    for (int kb = w.kb0; kb < w.kb1; ++kb) {
      if constexpr (PF_AHEAD > 0) {
        // Before the wait for a free stage: the point is to have DRAM working while the ring is full.
        const int pf_end = kb + PF_AHEAD < w.kb1 ? kb + PF_AHEAD + 1 : w.kb1;
        for (; pf_next < pf_end; ++pf_next) copy_kblock<Cfg, true>(p, g, w, pf_next, m0, n0, 0, 0, mask_a, mask_b);
      }
      const unsigned full = full0 + 8 * stage;
      mbar_wait(empty0 + 8 * stage, phase ^ 1);
      mbar_expect_tx(full, STAGE_BYTES);
      copy_kblock<Cfg, false>(p, g, w, kb, m0, n0, base + stage * STAGE_BYTES, full, mask_a, mask_b);
      next_stage<Cfg>(stage, phase);
    }
    if constexpr (Cfg::SLICE_CLUSTER) {
      // The consumers write the unit's partial tile into the ring and read the cluster's: nothing is copied into it
      // until every slice has summed its share.
      cluster_sync<true>();
      cluster_sync<false>();
    }
  }
  // The tail, in a cluster: waits until every consumer warp of every CTA of the cluster has handed back each of the
  // last STAGES fills (a stage never filled passes at once). Those arrivals are the last accesses other CTAs make to
  // this CTA's shared memory (their copies into it complete on barriers this CTA's consumers wait for), so once they
  // are in, the CTA may leave without a cluster barrier.
  if constexpr (Cfg::CS > 1) {
    for (int i = 0; i < Cfg::STAGES; ++i) {
      mbar_wait(empty0 + 8 * stage, phase ^ 1);
      next_stage<Cfg>(stage, phase);
    }
  }
}

// ---- consumers -------------------------------------------------------------------------------------------------

// Descriptors of stage 0 (k-step 0), and below the per-k-step advance. K-major: rows of 128 bytes, 8-row groups
// 1024 bytes apart (SBO), a k-step is 32 bytes inside the swizzled row. M/N-major: 64-element columns of 128 bytes
// per K row; 8-K-row groups 1024 bytes apart (SBO), 64-column boxes 8192 bytes apart (LBO), a k-step is 16 K rows
// = 2048 bytes.
template <class Cfg>
__device__ __forceinline__ unsigned long long desc_a0(unsigned base) {
  return Cfg::A_ROW ? make_desc(base, 16, 1024) : make_desc(base, 8192, 1024);
}
template <class Cfg>
__device__ __forceinline__ unsigned long long desc_b0(unsigned base) {
  constexpr unsigned A_BYTES = Cfg::A_BYTES;
  return Cfg::B_ROW ? make_desc(base + A_BYTES, 8192, 1024) : make_desc(base + A_BYTES, 16, 1024);
}

// Byte offset of consumer warpgroup cw's m64 block mi in the A tile.
template <class Cfg>
__device__ __forceinline__ unsigned a_rows_off(int cw, int mi) {
  const int row = Cfg::cw_row(cw) + mi * 64;
  return Cfg::A_ROW ? static_cast<unsigned>(row * 128) : static_cast<unsigned>((row / 64) * 8192);
}

// Byte offset of consumer warpgroup cw's first column in the B tile (0 unless the consumers split BLOCK_N): whole
// 64-column boxes of an N-major B, rows of 128 bytes of a K-major one.
template <class Cfg>
__device__ __forceinline__ unsigned b_cols_off(int cw) {
  const int col = Cfg::cw_col(cw);
  return Cfg::B_ROW ? static_cast<unsigned>((col / 64) * 8192) : static_cast<unsigned>(col * 128);
}

// Hands stage `st` back: one arrival per consumer warp on the empty barrier of every CTA of the cluster (lane r
// signals CTA r, so the arrivals leave in parallel).
template <class Cfg>
__device__ __forceinline__ void release(unsigned empty0, int lane, int st) {
  if constexpr (Cfg::CS == 1) {
    if (lane == 0) mbar_arrive(empty0 + 8 * st);
  } else {
    if (lane < Cfg::CS) mbar_arrive_cluster(empty0 + 8 * st, static_cast<unsigned>(lane));
  }
}

// One stage's wgmmas (BLOCK_K / 16 k-steps of every m64 block of the warpgroup, WG_N columns wide) from the A and
// B tiles at descriptors da and db; `accumulate` false overwrites the accumulators at the first k-step (a tile's
// first stage).
template <class Cfg>
__device__ __forceinline__ void mma_stage(typename Cfg::AccTile& acc, unsigned long long da, unsigned long long db,
                                          int cw, bool accumulate) {
  constexpr unsigned A_KSTEP = Cfg::A_ROW ? 32 : 2048, B_KSTEP = Cfg::B_ROW ? 2048 : 32;
  constexpr int TRANS_A = Cfg::A_ROW ? 0 : 1, TRANS_B = Cfg::B_ROW ? 1 : 0;
  const unsigned b_off = b_cols_off<Cfg>(cw);
#pragma unroll
  for (int kk = 0; kk < Cfg::BK / 16; ++kk) {
#pragma unroll
    for (int mi = 0; mi < Cfg::M_ITERS; ++mi) {
      wgmma<Cfg::WG_N, Cfg::IN, TRANS_A, TRANS_B>(acc[mi], da + ((a_rows_off<Cfg>(cw, mi) + kk * A_KSTEP) >> 4),
                                                  db + ((b_off + kk * B_KSTEP) >> 4), (accumulate || kk > 0) ? 1 : 0);
    }
  }
}

}  // namespace tf::sm90
