// sm90 family: the two sides of the main loop's ring of STAGES shared-memory stages: the producer warpgroup's loop
// of TMA copies of A and B tiles into free stages, and the consumer warpgroups' parts of theirs (the stage's wgmma
// descriptors, its wgmmas, handing it back), which the persistent loop in sm90/gemm.cuh runs.
#pragma once

#include "sm90/config.cuh"

namespace tf::sm90 {

// The ring's barriers, by one thread: full[s] completes when the producer's arrival and the stage's bytes have
// come (with cp.async, also every producer thread's arrival once its copies have landed), empty[s] when every
// consumer warp of every CTA of the cluster has released the stage.
template <class Cfg>
__device__ __forceinline__ void init_barriers(unsigned full0, unsigned empty0) {
#pragma unroll
  for (int s = 0; s < Cfg::STAGES; ++s) {
    mbar_init(full0 + 8 * s, Cfg::CP_ASYNC ? 1 + 128 : 1);   // the producer's arrive.expect_tx (+ cp.async's)
    mbar_init(empty0 + 8 * s, Cfg::CONSUMERS * 4 * Cfg::CS);  // every consumer warp of every CTA of the cluster
  }
  fence_barrier_init();
  fence_proxy_async();
}

// ---- producer --------------------------------------------------------------------------------------------------

// Copies a box of ROWS rows x 64 16-bit elements (128 bytes a row) of a matrix whose rows are `ld_bytes` apart
// (`rows` x `cols` elements in bounds), from (row0, col0), into shared memory at `dst` in the layout TMA's 128-byte
// swizzle writes: 16-byte piece j of row r at piece j ^ (r % 8), `dst` 1024-byte aligned. Pieces out of bounds are
// zero-filled. Thread t of the producer warpgroup's 128 copies piece t % 8 of rows t / 8, + 16, ...: eight
// consecutive threads read one row's 128 contiguous bytes.
template <int ROWS>
__device__ __forceinline__ void cp_async_box(unsigned dst, const unsigned char* src, long long ld_bytes, int rows,
                                             int cols, int row0, int col0, int t) {
  static_assert(ROWS % 16 == 0, "whole rounds of 16 rows");
  const int j = t % 8, r = t / 8;
  const int col = col0 + j * 8, left = cols - col;
  const unsigned bytes = left >= 8 ? 16u : left > 0 ? static_cast<unsigned>(left) * 2u : 0u;
  const unsigned char* from = src + static_cast<long long>(row0 + r) * ld_bytes + static_cast<long long>(col) * 2;
  const unsigned to = dst + r * 128 + ((j ^ (r & 7)) << 4);
#pragma unroll
  for (int q = 0; q < ROWS / 16; ++q) {
    const unsigned n = row0 + r + 16 * q < rows ? bytes : 0u;
    cp_async_16(to + q * 2048, n ? from + q * 16 * ld_bytes : src, n);
  }
}

// The producer warpgroup: for every k-block of every work unit of the cluster, waits until the next stage is free
// (released by every consumer warp of every CTA of the cluster); its one issuing thread (t == 0) arms the stage's
// full barrier with the bytes TMA brings and copies A and B into it by TMA. With CP_ASYNC all 128 threads run this
// loop and copy their pieces of the cp.async operands, each arriving on the full barrier once they have landed.
template <class Cfg>
__device__ __forceinline__ void produce(const Params& p, const Grid& g, unsigned base, unsigned full0,
                                        unsigned empty0, int t) {
  constexpr unsigned STAGE_BYTES = Cfg::STAGE_BYTES, A_BYTES = Cfg::A_BYTES;
  const bool issuer = !Cfg::CP_ASYNC || t == 0;
  if (issuer) {
    if constexpr (!Cfg::A_CP) prefetch_map(&p.a);
    if constexpr (!Cfg::B_CP) prefetch_map(&p.b);
  }
  const auto* const a_src = static_cast<const unsigned char*>(p.a_ptr);
  const auto* const b_src = static_cast<const unsigned char*>(p.b_ptr);
  const long long lda_bytes = p.lda * 2, ldb_bytes = p.ldb * 2;
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
    int tm, tn;
    tile_of<Cfg>(w.tile, g.tiles_m, g.tiles_n, tm, tn);
    const int m0 = (tm * Cfg::CM + g.rank_m) * Cfg::BM, n0 = (tn * Cfg::CN + g.rank_n) * Cfg::BN;
    for (int kb = w.kb0; kb < w.kb1; ++kb) {
      const unsigned full = full0 + 8 * stage;
      mbar_wait(empty0 + 8 * stage, phase ^ 1);
      const int k0 = kb * Cfg::BK;
      const unsigned sa = base + stage * STAGE_BYTES, sb = sa + A_BYTES;
      if (issuer) mbar_expect_tx(full, Cfg::TMA_BYTES);
      // cp.async: A as K-major rows of the tile or M-major 64 x 64 boxes, B as N-major 64 x 64 boxes or K-major rows
      // (the layouts TMA writes, below).
      if constexpr (Cfg::A_CP) {
        if constexpr (Cfg::A_ROW) {
          cp_async_box<Cfg::BM>(sa, a_src, lda_bytes, p.m, p.k, m0, k0, t);
        } else {
#pragma unroll
          for (int i = 0; i < Cfg::BM / 64; ++i) {
            cp_async_box<64>(sa + i * 8192, a_src, lda_bytes, p.k, p.m, k0, m0 + i * 64, t);
          }
        }
      }
      if constexpr (Cfg::B_CP) {
        if constexpr (Cfg::B_ROW) {
#pragma unroll
          for (int i = 0; i < Cfg::BN / 64; ++i) {
            cp_async_box<64>(sb + i * 8192, b_src, ldb_bytes, p.k, p.n, k0, n0 + i * 64, t);
          }
        } else {
          cp_async_box<Cfg::BN>(sb, b_src, ldb_bytes, p.n, p.k, n0, k0, t);
        }
      }
      if constexpr (Cfg::CP_ASYNC) cp_async_arrive(full);
      if (issuer) {
        // A: K-major (row-major A) rows [rank_n*R, +R) of the tile, or M-major 64 x 64 boxes.
        if constexpr (Cfg::A_CP) {
          // copied above
        } else if constexpr (Cfg::A_ROW) {
          constexpr int R = Cfg::BM / Cfg::A_SPLIT;
          if constexpr (Cfg::A_SPLIT > 1) {
            tma_load_multicast(&p.a, sa + g.rank_n * R * 128, full, k0, m0 + g.rank_n * R, mask_a);
          } else {
            tma_load(&p.a, sa, full, k0, m0);
          }
        } else {
          constexpr int PIECES = Cfg::BM / 64 / Cfg::A_SPLIT;
#pragma unroll
          for (int i = 0; i < PIECES; ++i) {
            const int piece = g.rank_n * PIECES + i;
            if constexpr (Cfg::A_SPLIT > 1) {
              tma_load_multicast(&p.a, sa + piece * 8192, full, m0 + piece * 64, k0, mask_a);
            } else {
              tma_load(&p.a, sa + piece * 8192, full, m0 + piece * 64, k0);
            }
          }
        }
        // B: N-major (row-major B) 64 x 64 boxes, or K-major rows [rank_m*R, +R).
        if constexpr (Cfg::B_CP) {
          // copied above
        } else if constexpr (Cfg::B_ROW) {
          constexpr int PIECES = Cfg::BN / 64 / Cfg::B_SPLIT;
#pragma unroll
          for (int i = 0; i < PIECES; ++i) {
            const int piece = g.rank_m * PIECES + i;
            if constexpr (Cfg::B_SPLIT > 1) {
              tma_load_multicast(&p.b, sb + piece * 8192, full, n0 + piece * 64, k0, mask_b);
            } else {
              tma_load(&p.b, sb + piece * 8192, full, n0 + piece * 64, k0);
            }
          }
        } else {
          constexpr int R = Cfg::BN / Cfg::B_SPLIT;
          if constexpr (Cfg::B_SPLIT > 1) {
            tma_load_multicast(&p.b, sb + g.rank_m * R * 128, full, k0, n0 + g.rank_m * R, mask_b);
          } else {
            tma_load(&p.b, sb, full, k0, n0);
          }
        }
      }
      if (++stage == Cfg::STAGES) {
        stage = 0;
        phase ^= 1;
      }
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
  const int row = cw * Cfg::WG_M + mi * 64;
  return Cfg::A_ROW ? static_cast<unsigned>(row * 128) : static_cast<unsigned>((row / 64) * 8192);
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

// One stage's wgmmas (BLOCK_K / 16 k-steps of every m64 block of the warpgroup) from the A and B tiles at
// descriptors da and db; `accumulate` false overwrites the accumulators at the first k-step (a tile's first stage).
template <class Cfg>
__device__ __forceinline__ void mma_stage(typename Cfg::AccTile& acc, unsigned long long da, unsigned long long db,
                                          int cw, bool accumulate) {
  constexpr unsigned A_KSTEP = Cfg::A_ROW ? 32 : 2048, B_KSTEP = Cfg::B_ROW ? 2048 : 32;
  constexpr int TRANS_A = Cfg::A_ROW ? 0 : 1, TRANS_B = Cfg::B_ROW ? 1 : 0;
#pragma unroll
  for (int kk = 0; kk < Cfg::BK / 16; ++kk) {
#pragma unroll
    for (int mi = 0; mi < Cfg::M_ITERS; ++mi) {
      wgmma<Cfg::BN, Cfg::IN, TRANS_A, TRANS_B>(acc[mi], da + ((a_rows_off<Cfg>(cw, mi) + kk * A_KSTEP) >> 4),
                                                db + ((kk * B_KSTEP) >> 4), (accumulate || kk > 0) ? 1 : 0);
    }
  }
}

}  // namespace tf::sm90
