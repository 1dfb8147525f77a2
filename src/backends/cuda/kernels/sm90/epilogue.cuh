// sm90 family: the consumer warpgroups' epilogues, which write a finished tile of C from the accumulators: direct
// stores (alpha, beta C, the conversion, the bounds), or with beta == 0 the TMA-store epilogues, which stage the
// tile in shared memory as 16-bit pairs and store it with TMA, right after the tile's main loop or deferred into
// the next tile's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "sm90/config.cuh"
#include "sm90/staging.cuh"

namespace tf::sm90 {

// The pair of accumulators i and i + 1 (i even, in the f32 layout's numbering) of m64 block mi as f32 values.
template <class Cfg>
__device__ __forceinline__ float2 acc_pair(const typename Cfg::AccTile& acc, int mi, int i) {
  if constexpr (Cfg::ACC_F16) {
    const unsigned bits = acc[mi][i / 2];
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  } else {
    return make_float2(acc[mi][i], acc[mi][i + 1]);
  }
}

// acc_pair's inverse for accumulators 4v .. 4v + 3 of m64 block mi (the thread's pairs of 8-column block v, rows r
// and r + 8): f32 accumulators take x as it is, f16 ones its two pairs rounded once.
template <class Cfg>
__device__ __forceinline__ void acc_set4(typename Cfg::AccTile& acc, int mi, int v, float4 x) {
  if constexpr (Cfg::ACC_F16) {
    __half2 lo = __floats2half2_rn(x.x, x.y), hi = __floats2half2_rn(x.z, x.w);
    acc[mi][2 * v] = *reinterpret_cast<unsigned*>(&lo);
    acc[mi][2 * v + 1] = *reinterpret_cast<unsigned*>(&hi);
  } else {
    float* d = &acc[mi][4 * v];
    d[0] = x.x, d[1] = x.y, d[2] = x.z, d[3] = x.w;
  }
}

// TMA-store epilogues: the tile as 16-bit pairs (rows r and r+8 of each 8-column block), written into the staging
// tile (WG_N/64/EPI_ROUNDS boxes of WG_M rows x 128 bytes, 128-byte swizzled like the map of C, per column group) and
// stored with TMA by one thread; the stores clip at the matrix edges. The deferred epilogue keeps the pairs in
// `packed` until the next tile's main loop; the immediate one converts while it stores.
template <class Cfg>
__device__ __forceinline__ unsigned to_pair(const typename Cfg::AccTile& acc, int mi, int j, int h, float alpha) {
  const float2 v = acc_pair<Cfg>(acc, mi, 4 * j + 2 * h);
  const float v0 = alpha * v.x, v1 = alpha * v.y;
  if constexpr (Cfg::OUT == 1) {
    __half2 t = __floats2half2_rn(v0, v1);
    return *reinterpret_cast<unsigned*>(&t);
  } else {
    __nv_bfloat162 t = __floats2bfloat162_rn(v0, v1);
    return *reinterpret_cast<unsigned*>(&t);
  }
}

template <class Cfg>
__device__ __forceinline__ void pack(const typename Cfg::AccTile& acc, typename Cfg::Packed& packed, float alpha) {
  if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
#pragma unroll
    for (int mi = 0; mi < Cfg::M_ITERS; ++mi)
#pragma unroll
      for (int j = 0; j < Cfg::WG_N / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) packed[mi][j][h] = to_pair<Cfg>(acc, mi, j, h, alpha);
  }
}

template <class Cfg>
__device__ __forceinline__ unsigned staged_pair(const typename Cfg::AccTile& acc, const typename Cfg::Packed& packed,
                                                int mi, int j, int h, float alpha) {
  if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
    return packed[mi][j][h];
  } else {
    return to_pair<Cfg>(acc, mi, j, h, alpha);
  }
}

// The staging tile written out without TMA (Params::c_staged_stores): warp w of the warpgroup takes rows w, w + 4,
// ..., lane l the elements l, l + 32, ... of a row, so that each store covers 64 consecutive bytes of C whatever
// its alignment (the direct epilogue's stores, 8 rows x 4 bytes per instruction, cost 4095x4097x4093 about 20%);
// the shared-memory reads undo the 128-byte swizzle (16-byte chunk j of row r at chunk j ^ (r % 8)). The next
// round's named barrier keeps the staging tile until every thread has read it.
template <class Cfg>
__device__ __forceinline__ void write_staged(const Params& p, int warp, int lane, unsigned region, int row0, int col0) {
  if constexpr (Cfg::EPI != kEpilogueDirect) {
    using Out = Elem<Cfg::OUT>;
    constexpr int WG_M = Cfg::WG_M, GROUP_COLS = Cfg::WG_N / Cfg::EPI_ROUNDS;
    auto* const out = static_cast<typename Out::T*>(p.c_ptr);
    if constexpr (Cfg::C_COL) {
      // Column-major: warp w takes columns w, w + 4, ... (staging rows), lane l the rows l, l + 32, ... of one,
      // consecutive in C; row i of the tile is element i % 64 of staging row c of 64-row block i / 64.
      for (int c = warp; c < GROUP_COLS; c += 4) {
        const int col = col0 + c;
        if (col >= p.n) break;
        typename Out::T* const c_col = out + static_cast<long long>(col) * p.ldc;
#pragma unroll 2
        for (int i = lane; i < WG_M; i += 32) {
          const int row = row0 + i;
          if (row >= p.m) break;
          const unsigned at = region + staged_offset(GROUP_COLS, c, i);
          unsigned short bits;
          asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(bits) : "r"(at));
          c_col[row] = *reinterpret_cast<const typename Out::T*>(&bits);
        }
      }
      return;
    }
    for (int r = warp; r < WG_M; r += 4) {
      const int row = row0 + r;
      if (row >= p.m) break;
      typename Out::T* const c_row = out + static_cast<long long>(row) * p.ldc;
#pragma unroll 4
      for (int c = lane; c < GROUP_COLS; c += 32) {
        const int col = col0 + c;
        if (col >= p.n) break;
        const unsigned at = region + staged_offset(WG_M, r, c);
        unsigned short bits;
        asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(bits) : "r"(at));
        c_row[col] = *reinterpret_cast<const typename Out::T*>(&bits);
      }
    }
  }
}

// Column-major C (Config::C_COL): warp `warp`'s 16 rows of m64 block mi, column blocks jj and jj + 1 of round g
// (jj alone with `x2`), stored transposed by stmatrix .trans: each 8x8 block's column becomes a 16-byte staging row.
// The staging tile holds, per 64-row block, GROUP_COLS rows of 128 bytes (one per column of C, 128-byte swizzled
// like the map of C). Lane L addresses column L%8 of block L/8: blocks (rows 0-7, jj), (rows 8-15, jj), (rows 0-7,
// jj+1), (rows 8-15, jj+1), whose registers are the accumulator pairs (jj, h 0), (jj, 1), (jj+1, 0), (jj+1, 1).
template <class Cfg, bool kX2>
__device__ __forceinline__ void stmatrix_trans(const typename Cfg::AccTile& acc, const typename Cfg::Packed& packed,
                                               unsigned region, int warp, int lane, int mi, int g, int jj,
                                               float alpha) {
  constexpr int GROUP_COLS = Cfg::WG_N / Cfg::EPI_ROUNDS, JG = GROUP_COLS / 8;
  const unsigned addr = region + stmatrix_col_offset(GROUP_COLS, warp, lane, mi, jj);
  if constexpr (kX2) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" ::"r"(addr),
                 "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 0, alpha)),
                 "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 1, alpha))
                 : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                 "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 0, alpha)),
                 "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 1, alpha)),
                 "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj + 1, 0, alpha)),
                 "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj + 1, 1, alpha))
                 : "memory");
  }
}

// The tile at (tm0, tn0) through the staging tile (at c_tile, one region per consumer warpgroup), one column group
// after another: once the last TMA store has read the staging tile, the warpgroup writes its pairs into it
// (stmatrix or 32-bit shared stores) and stores it to C.
template <class Cfg>
__device__ __forceinline__ void store_packed(const Params& p, const typename Cfg::AccTile& acc,
                                             const typename Cfg::Packed& packed, unsigned c_tile, int cw, int tid,
                                             int warp, int lane, int tm0, int tn0, float alpha) {
  if constexpr (Cfg::EPI != kEpilogueDirect) {
    constexpr int WG_M = Cfg::WG_M, GROUP_COLS = Cfg::WG_N / Cfg::EPI_ROUNDS, JG = GROUP_COLS / 8;
    const unsigned region = c_tile + cw * (WG_M * GROUP_COLS * 2);
    // The warpgroup's part of the tile: its rows (consumers along M) or its columns (along N).
    const int row0 = tm0 + Cfg::cw_row(cw), col0 = tn0 + Cfg::cw_col(cw);
#pragma unroll
    for (int g = 0; g < Cfg::EPI_ROUNDS; ++g) {
      if (tid == 0) bulk_wait_read_all();  // the last store from the staging tile has read it
      named_barrier(kBarrierEpilogue0 + cw, 128);
#pragma unroll
      for (int mi = 0; mi < Cfg::M_ITERS; ++mi) {
        if constexpr (Cfg::C_COL) {
#pragma unroll
          for (int jj = 0; jj + 1 < JG; jj += 2) {
            stmatrix_trans<Cfg, false>(acc, packed, region, warp, lane, mi, g, jj, alpha);
          }
          if constexpr (JG % 2 == 1) {
            stmatrix_trans<Cfg, true>(acc, packed, region, warp, lane, mi, g, JG - 1, alpha);
          }
        } else if constexpr (Cfg::STMATRIX) {
          // stmatrix_row_offset (sm90/staging.cuh) with the lane's row hoisted out of the loop. Each 8x8 block's
          // fragment is exactly the accumulator pair layout.
          const int m = lane / 8;
          const int r = mi * 64 + warp * 16 + (m % 2) * 8 + lane % 8;
#pragma unroll
          for (int jj = 0; jj < JG; jj += 2) {
            const unsigned addr = region + staged_offset(WG_M, r, (jj + m / 2) * 8, lane % 8);
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                         "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 0, alpha)),
                         "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 1, alpha)),
                         "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj + 1, 0, alpha)),
                         "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj + 1, 1, alpha))
                         : "memory");
          }
        } else {
          // pair_offset (sm90/staging.cuh) with the lane's rows hoisted out of the loop.
          const int r0 = mi * 64 + warp * 16 + lane / 4;
#pragma unroll
          for (int jj = 0; jj < JG; ++jj) {
            const int e = jj * 8 + 2 * (lane % 4);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(region + staged_offset(WG_M, r0, e, (lane / 4) % 8)),
                         "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 0, alpha))
                         : "memory");
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(region + staged_offset(WG_M, r0 + 8, e, (lane / 4) % 8)),
                         "r"(staged_pair<Cfg>(acc, packed, mi, g * JG + jj, 1, alpha))
                         : "memory");
          }
        }
      }
      fence_proxy_async();
      named_barrier(kBarrierEpilogue0 + cw, 128);
      if (p.c_staged_stores) {
        write_staged<Cfg>(p, warp, lane, region, row0, col0 + g * GROUP_COLS);
      } else if (tid == 0) {
        if constexpr (Cfg::C_COL) {
          // Column-major: one box per 64-row block, 64 rows (contiguous in C) x the round's columns.
#pragma unroll
          for (int q = 0; q < Cfg::M_ITERS; ++q)
            tma_store(&p.c, region + q * (GROUP_COLS * 128), row0 + q * 64, col0 + g * GROUP_COLS);
        } else {
#pragma unroll
          for (int q = 0; q < GROUP_COLS / 64; ++q)
            tma_store(&p.c, region + q * (WG_M * 128), col0 + g * GROUP_COLS + q * 64, row0);
        }
        bulk_commit();
      }
    }
  }
}

// One thread's pair of C elements (row, col) and (row, col + 1) from f32 values: alpha, beta C, the conversion and
// the bounds; a pair in one store where `pairs` says that every pair is aligned to its size (ldc even, C's base
// aligned), otherwise (an odd ldc, as in 4095x4097, or a column-major C) one element per store.
template <class Cfg>
__device__ __forceinline__ void store_c(const Params& p, typename Elem<Cfg::OUT>::T* C, bool pairs, int row, int col,
                                        float v0, float v1) {
  using Out = Elem<Cfg::OUT>;
  if (row >= p.m || col >= p.n) return;
  // Column-major C: the pair's elements are a column apart, ldc elements.
  typename Out::T* at = Cfg::C_COL ? C + static_cast<long long>(col) * p.ldc + row
                                   : C + static_cast<long long>(row) * p.ldc + col;
  const long long next = Cfg::C_COL ? p.ldc : 1;
  const bool second = col + 1 < p.n;
  v0 *= p.alpha;
  v1 *= p.alpha;
  if (p.beta != 0.0f) {
    v0 += p.beta * Out::to_float(at[0]);
    if (second) v1 += p.beta * Out::to_float(at[next]);
  }
  if (!Cfg::C_COL && pairs && second) {
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
  if (second) store1(at + next, v1);
}

// The direct epilogue of tile (m0, n0). Accumulator layout of m64nN: thread (warp w, lane l) holds rows 16w + l/4
// and +8 of each m64 block, columns 8j + 2(l%4) and +1 of each 8-column block j: acc[4j + {0,1}] and
// acc[4j + {2,3}].
template <class Cfg>
__device__ __forceinline__ void store_direct(const Params& p, const typename Cfg::AccTile& acc,
                                             typename Elem<Cfg::OUT>::T* C, bool pairs, int cw, int warp, int lane,
                                             int m0, int n0) {
#pragma unroll
  for (int mi = 0; mi < Cfg::M_ITERS; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + Cfg::cw_row(cw) + mi * 64 + warp * 16 + lane / 4 + 8 * h;
      if (row >= p.m) continue;
#pragma unroll
      for (int j = 0; j < Cfg::WG_N / 8; ++j) {
        const float2 v = acc_pair<Cfg>(acc, mi, 4 * j + 2 * h);
        store_c<Cfg>(p, C, pairs, row, n0 + Cfg::cw_col(cw) + 8 * j + 2 * (lane % 4), v.x, v.y);
      }
    }
  }
}

}  // namespace tf::sm90
