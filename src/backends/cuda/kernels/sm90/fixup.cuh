// sm90 family: the split-K / stream-K fix-up of a tile whose K is shared by several CTAs: every slice stores its f32
// partial tile in the workspace (Params::partials) and counts itself on the tile's counter; the tile is summed there
// in slice order (bit-identical from run to run) by the last slice to arrive, or with Params::shared_sum by all of
// its slices at once, each summing and writing its own share of C. Under the non-deterministic policy (REDUCE 1)
// the slices add their partials into one sum tile with float atomics instead, and the last reads that one back.
#pragma once

#include "sm90/config.cuh"
#include "common/slice_counter.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/timeline.cuh"

// Diagnostic only (TILEFORGE_SM90_FIXUP_PROBE, read by the generated source): 1, 2, 3 or 4 leave out parts of the
// split-K / stream-K fix-up so that their cost can be timed; C is then wrong. 0 (the default) is the kernel.
#ifndef TF_SM90_FIXUP_PROBE
#define TF_SM90_FIXUP_PROBE 0
#endif

namespace tf::sm90 {

// Where float4 f of a partial tile in fragment order (partial_at) lies in C: thread t's pair of columns in rows r and
// r + 8 of one 8-column block of one m64 block of consumer warpgroup cw (its rows or its columns of the tile), so any
// thread can place it. False where it lies outside C (its warp stored nothing there, or past C's columns).
template <class Cfg>
__device__ __forceinline__ bool slot_place(const Params& p, int f, int m0, int n0, int& row, int& col) {
  constexpr int NV = Cfg::WG_N / 8, M_ITERS = Cfg::M_ITERS;
  const int t = f % 128, g = f / 128;
  const int v = g % NV, mi = (g / NV) % M_ITERS, owner = g / (NV * M_ITERS);
  row = m0 + Cfg::cw_row(owner) + mi * 64 + (t / 32) * 16 + (t % 32) / 4;
  col = n0 + Cfg::cw_col(owner) + 8 * v + 2 * (t % 4);
  return row < p.m && col < p.n;
}

// Split-K with a shared sum (Params::shared_sum): once every slice's partial is stored, slice `seg` sums the
// float4 [seg, seg + 1) x SLOT / nseg of the tile's slots (fragment order, so that consecutive threads read
// consecutive float4) over every slice in slice order from zero, as the last-slice sum does element by element
// (the same bits), and writes them to C.
template <class Cfg>
__device__ __forceinline__ void shared_sum(const Params& p, typename Elem<Cfg::OUT>::T* C, bool pairs, int rank, int cw,
                                           int tid, const Work& w, const typename Cfg::Sched& sched, int m0, int n0) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, CS = Cfg::CS;
  constexpr int SLOT = BM * BN / 4, BATCH = kSharedSumBatch;
  const float4* ws = reinterpret_cast<const float4*>(p.partials) + static_cast<long long>(rank) * SLOT;
  const long long slot_stride = static_cast<long long>(CS) * SLOT;
  const int f1 = (w.seg + 1) * SLOT / w.nseg;
  for (int f = w.seg * SLOT / w.nseg + cw * 128 + tid; f < f1; f += 128 * Cfg::HOLDERS) {
    int row, col;
    if (!slot_place<Cfg>(p, f, m0, n0, row, col)) continue;
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
    store_c<Cfg>(p, C, pairs, row, col, sum.x, sum.y);
    store_c<Cfg>(p, C, pairs, row + 8, col, sum.z, sum.w);
  }
}

// Whether the 16 rows of warp `warp` of consumer warpgroup cw in m64 block mi of the tile at row m0 start inside C.
template <class Cfg>
__device__ __forceinline__ bool warp_rows_in(const Params& p, int m0, int cw, int warp, int mi) {
  return m0 + Cfg::cw_row(cw) + mi * 64 + warp * 16 < p.m;
}

// Thread tid's float4 v of m64 block mi of consumer warpgroup cw in workspace slot `slot` (before the
// CTAs-per-cluster factor; `rank` is the CTA's in its cluster). A slot holds a partial tile in the accumulators'
// fragment order: 128 consecutive float4 per (mi, v), so that every store and load is coalesced.
template <class Cfg>
__device__ __forceinline__ float4* partial_at(float4* ws, int rank, int cw, int tid, long long slot, int mi, int v) {
  constexpr long long SLOT = static_cast<long long>(Cfg::BM) * Cfg::BN / 4;  // float4 per slot
  return ws + (slot * Cfg::CS + rank) * SLOT +
         ((static_cast<long long>(cw) * Cfg::M_ITERS + mi) * (Cfg::WG_N / 8) + v) * 128 + tid;
}

// Calls f(mi, v, x) with each float4 x of the thread's partial tile: its pairs of columns in rows r and r + 8 of
// 8-column block v of m64 block mi, in the accumulators' fragment order (partial_at); warps whose 16 rows lie outside
// C have none.
template <class Cfg, class F>
__device__ __forceinline__ void for_each_partial(const Params& p, typename Cfg::AccTile& acc, int cw, int warp, int m0,
                                                 F&& f) {
#pragma unroll
  for (int mi = 0; mi < Cfg::M_ITERS; ++mi) {
    if (!warp_rows_in<Cfg>(p, m0, cw, warp, mi)) continue;
#pragma unroll
    for (int v = 0; v < Cfg::WG_N / 8; ++v) {
      const float2 lo = acc_pair<Cfg>(acc, mi, 4 * v), hi = acc_pair<Cfg>(acc, mi, 4 * v + 2);
      f(mi, v, make_float4(lo.x, lo.y, hi.x, hi.y));
    }
  }
}

// Every slice's first step: its partial tile into workspace slot `own` (for_each_partial's order).
template <class Cfg>
__device__ __forceinline__ void store_partial(const Params& p, typename Cfg::AccTile& acc, float4* ws, int rank, int cw,
                                              int tid, int warp, long long own, int m0) {
  for_each_partial<Cfg>(p, acc, cw, warp, m0,
                        [&](int mi, int v, float4 x) { __stcg(partial_at<Cfg>(ws, rank, cw, tid, own, mi, v), x); });
}

// REDUCE 1 (Cfg::ATOMIC_SUM): the slice's partial tile added into the tile's f32 sum tile `slot` (Params::sums, laid
// out as partial_at lays out a slot) with vector float atomics.
template <class Cfg>
__device__ __forceinline__ void add_partial(const Params& p, typename Cfg::AccTile& acc, float4* sums, int rank, int cw,
                                            int tid, int warp, long long slot, int m0) {
  for_each_partial<Cfg>(p, acc, cw, warp, m0, [&](int mi, int v, float4 x) {
    red_add_v4(partial_at<Cfg>(sums, rank, cw, tid, slot, mi, v), x.x, x.y, x.z, x.w);
  });
}

// REDUCE 1, the last slice to arrive: the tile's sum read back into acc (f16 accumulators: rounded once to the pairs
// the epilogue reads) in groups of loads in flight at once, as the ordered read-back does, and the sum tile left zero
// for the next launch.
template <class Cfg>
__device__ __forceinline__ void take_sum(const Params& p, typename Cfg::AccTile& acc, float4* sums, int rank, int cw,
                                         int tid, int warp, long long slot, int m0) {
  constexpr int WG_N = Cfg::WG_N, M_ITERS = Cfg::M_ITERS;
  constexpr int VG = fixup_group(M_ITERS, WG_N);
#pragma unroll
  for (int mi = 0; mi < M_ITERS; ++mi) {
    if (!warp_rows_in<Cfg>(p, m0, cw, warp, mi)) continue;
#pragma unroll
    for (int g = 0; g < WG_N / 8; g += VG) {
      float4 x[VG];
#pragma unroll
      for (int v = 0; v < VG; ++v) x[v] = __ldcg(partial_at<Cfg>(sums, rank, cw, tid, slot, mi, g + v));
#pragma unroll
      for (int v = 0; v < VG; ++v) {
        __stcg(partial_at<Cfg>(sums, rank, cw, tid, slot, mi, g + v), make_float4(0.0f, 0.0f, 0.0f, 0.0f));
        acc_set4<Cfg>(acc, mi, g + v, x[v]);
      }
    }
  }
}

// A slice of a shared-sum tile once its partial is stored: it waits on the tile's counter for every slice (all are
// resident: one unit per cluster, a cooperative launch), sums and writes its share of C (shared_sum), and the last
// slice to leave resets the counter and the departures counter after it for the next launch.
template <class Cfg>
__device__ __forceinline__ void shared_sum_slice(const Params& p, typename Elem<Cfg::OUT>::T* C, bool pairs, int rank,
                                                 int cw, int tid, int* const counter, int num_tiles, const Work& w,
                                                 const typename Cfg::Sched& sched, int m0, int n0) {
  int* departed = counter + static_cast<long long>(num_tiles) * Cfg::CS;
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
  named_barrier(kBarrierFixup, 128 * Cfg::HOLDERS);
  if (TF_SM90_TIMELINE && cw == 0 && tid == 0) timeline_stamp(kStampArrived);
#if TF_SM90_FIXUP_PROBE != 4  // diagnostic: stores, counter and the wait for every slice, no sum
  shared_sum<Cfg>(p, C, pairs, rank, cw, tid, w, sched, m0, n0);
#endif
  // Every load of the share has been used (stored to C) before this barrier; the last slice to leave
  // resets both counters for the next launch, after every slice has seen the arrivals complete.
  named_barrier(kBarrierFixup, 128 * Cfg::HOLDERS);
  if (cw == 0 && tid == 0) {
    int old;
    asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(departed) : "memory");
    if (old == w.nseg - 1) {
      asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(counter) : "memory");
      asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(departed) : "memory");
    }
  }
}

// SPLIT_CLUSTER: the tile's slices are the CTAs of one cluster. Once every consumer warpgroup's wgmmas are done
// with the ring, each slice writes its partial tile into its own ring at `part` (fragment order, as partial_at lays
// out a slot: consecutive threads, consecutive float4), the cluster meets (release / acquire), and slice `seg` sums the
// float4 [seg, seg + 1) x SLOT / S of the tile over the S slices' rings in slice order from zero (bit-identical from
// run to run) and writes them to C; a second meeting keeps each CTA's shared memory until every slice has read it.
// The producer warpgroup meets the cluster as often (produce()). Nothing goes through the L2 but C.
template <class Cfg>
__device__ __forceinline__ void cluster_sum(const Params& p, typename Cfg::AccTile& acc, typename Elem<Cfg::OUT>::T* C,
                                            bool pairs, float4* part, int cw, int tid, int warp, const Work& w,
                                            int m0, int n0) {
  constexpr int S = Cfg::SPLIT_K, SLOT = Cfg::BM * Cfg::BN / 4;
  named_barrier(kBarrierFixup, 128 * Cfg::HOLDERS);  // every consumer warpgroup's last wgmmas have read the ring
  for_each_partial<Cfg>(p, acc, cw, warp, m0,
                        [&](int mi, int v, float4 x) { *partial_at<Cfg>(part, 0, cw, tid, 0, mi, v) = x; });
  cluster_sync<true>();
  const float4* from[S];
#pragma unroll
  for (int j = 0; j < S; ++j) from[j] = cluster_map<float4>(part, static_cast<unsigned>(j));
  const int f1 = (w.seg + 1) * SLOT / S;
  for (int f = w.seg * SLOT / S + cw * 128 + tid; f < f1; f += 128 * Cfg::HOLDERS) {
    int row, col;
    if (!slot_place<Cfg>(p, f, m0, n0, row, col)) continue;
    float4 x[S];
#pragma unroll
    for (int j = 0; j < S; ++j) x[j] = from[j][f];
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int j = 0; j < S; ++j) sum.x += x[j].x, sum.y += x[j].y, sum.z += x[j].z, sum.w += x[j].w;
    store_c<Cfg>(p, C, pairs, row, col, sum.x, sum.y);
    store_c<Cfg>(p, C, pairs, row + 8, col, sum.z, sum.w);
  }
  cluster_sync<false>();
}

// Split-K / stream-K fix-up of a slice of a shared tile. The partial tile is stored in the accumulators' own
// fragment order (partial_at); warps whose 16 rows lie outside C skip theirs (the columns are not checked: the slot
// holds the whole tile, and what lies outside C is never written to it). Every slice stores its partial, then counts
// itself on the tile's counter; the slice that brings the count to nseg resets it and sums all the stored partials
// in slice order into acc. Returns whether this CTA holds the finished tile.
template <class Cfg>
__device__ __forceinline__ bool fixup(const Params& p, typename Cfg::AccTile& acc, typename Elem<Cfg::OUT>::T* C,
                                      bool pairs, int rank, int cw, int tid, int warp, unsigned fixup_flag,
                                      int num_tiles, const Work& w, const typename Cfg::Sched& sched, int m0, int n0) {
  constexpr int WG_N = Cfg::WG_N, CS = Cfg::CS, M_ITERS = Cfg::M_ITERS;
  float4* ws = reinterpret_cast<float4*>(Cfg::ATOMIC_SUM ? p.sums : p.partials);
  const long long own = Cfg::ATOMIC_SUM ? sched.sum_slot(w) : sched.slot(w, w.seg);
#if TF_SM90_FIXUP_PROBE == 1
  return true;  // diagnostic: no fix-up at all, every slice stores its own partial as C
#endif
  if constexpr (Cfg::ATOMIC_SUM) {
    add_partial<Cfg>(p, acc, ws, rank, cw, tid, warp, own, m0);
    // Each thread's reductions ordered before the count at GPU scope by its own fence, not by the barrier's
    // cumulativity alone (which the plain stores of the ordered sum rely on).
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  } else {
    store_partial<Cfg>(p, acc, ws, rank, cw, tid, warp, own, m0);
  }
#if TF_SM90_FIXUP_PROBE == 2
  return w.seg == w.nseg - 1;  // diagnostic: the partial stores only
#endif
  // Release / acquire at GPU scope on the counter, as one thread's atomic: the CTA barrier orders every
  // consumer thread's stores before it (cumulativity), and orders the summing threads' loads after it.
  named_barrier(kBarrierFixup, 128 * Cfg::HOLDERS);
  if (TF_SM90_TIMELINE && cw == 0 && tid == 0) timeline_stamp(kStampStored);
  int* const counter = p.counters + static_cast<long long>(w.tile) * CS + rank;
  if constexpr (Cfg::SPLIT_K > 1 && !Cfg::ATOMIC_SUM) {
    if (p.shared_sum) {
      shared_sum_slice<Cfg>(p, C, pairs, rank, cw, tid, counter, num_tiles, w, sched, m0, n0);
      return false;
    }
  }
  if (cw == 0 && tid == 0) tf::count_slice(counter, w.nseg, fixup_flag);
  named_barrier(kBarrierFixup, 128 * Cfg::HOLDERS);
  if (TF_SM90_TIMELINE && cw == 0 && tid == 0) timeline_stamp(kStampArrived);
  if (!tf::last_slice(fixup_flag)) return false;
#if TF_SM90_FIXUP_PROBE == 3
  return true;  // diagnostic: stores, barriers and the counter, no read-back
#endif
  if constexpr (Cfg::ATOMIC_SUM) {
    take_sum<Cfg>(p, acc, ws, rank, cw, tid, warp, own, m0);
    return true;
  }
  // The sum, slice by slice in slice order, from zero (0 + x is x, so the order alone fixes every bit). All
  // loads of a group of a slice are issued before any is used: one L2 round trip per group and slice. (The
  // first version tested each 8-column block before its load and added it at once, which serialized the
  // loads: 13 us for two partial tiles of 64x128, bench/results/h200/2026-12-01-splitk/probe.)
  constexpr int VG = fixup_group(M_ITERS, WG_N);
  static_assert((WG_N / 8) % VG == 0, "the read-back's groups cover the 8-column blocks exactly");
#pragma unroll
  for (int mi = 0; mi < M_ITERS; ++mi) {
    if (!warp_rows_in<Cfg>(p, m0, cw, warp, mi)) continue;
    if constexpr (!Cfg::ACC_F16) {
#pragma unroll
      for (int i = 0; i < WG_N / 2; ++i) acc[mi][i] = 0.0f;  // f32 accumulators take the sums directly
    }
#pragma unroll
    for (int g = 0; g < WG_N / 8; g += VG) {
      float4 s[VG];  // f16 accumulators: the group's sums, rounded once to the f16 pairs the epilogue reads
      if constexpr (Cfg::ACC_F16) {
#pragma unroll
        for (int v = 0; v < VG; ++v) s[v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
#pragma unroll 1
      for (int j = 0; j < w.nseg; ++j) {
        const long long slot = sched.slot(w, j);
        float4 x[VG];
#pragma unroll
        for (int v = 0; v < VG; ++v) x[v] = __ldcg(partial_at<Cfg>(ws, rank, cw, tid, slot, mi, g + v));
#pragma unroll
        for (int v = 0; v < VG; ++v) {
          if constexpr (Cfg::ACC_F16) {
            s[v].x += x[v].x, s[v].y += x[v].y, s[v].z += x[v].z, s[v].w += x[v].w;
          } else {
            float* d = &acc[mi][4 * (g + v)];
            d[0] += x[v].x, d[1] += x[v].y, d[2] += x[v].z, d[3] += x[v].w;
          }
        }
      }
      if constexpr (Cfg::ACC_F16) {
#pragma unroll
        for (int v = 0; v < VG; ++v) acc_set4<Cfg>(acc, mi, g + v, s[v]);
      }
    }
  }
  // The flag is read by every consumer thread above before the next slice's fix-up can write it: that fix-up
  // starts with a barrier all of them pass after this point.
  return true;
}

}  // namespace tf::sm90
