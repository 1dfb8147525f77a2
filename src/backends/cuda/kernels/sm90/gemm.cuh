// sm90 family: Hopper (sm_90a) GEMM. One producer warpgroup streams A and B tiles with the tensor memory
// accelerator (cp.async.bulk.tensor, 128-byte swizzle) into a ring of STAGES shared-memory stages that complete
// on mbarriers; one to three consumer warpgroups multiply them with wgmma.mma_async m64nNk16 into f32 register
// accumulators and write C. The grid is persistent (one CTA per SM walking the output tiles in a planned order),
// optionally in clusters of up to eight CTAs that share their operands through TMA multicast. Every planned value is a
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
// cluster dimensions (Cfg::LAUNCH_CS, 1, 1) when it is above 1, and a grid that is a multiple of it: one cluster per
// tile (ceil(M / (BM*CM)) * ceil(N / (BN*CN)) clusters) or fewer, which then loop over the tiles (persistent).
//
// Host-side contract (the tensor maps, see tma_* in sm90/ptx.cuh): 16-bit A and B, 2-D maps with the element count of the
// contiguous dimension first, 128-byte swizzle, zero fill for out-of-bounds elements; global strides multiples of
// 16 bytes (leading dimensions multiples of 8 elements) and 16-byte aligned bases. C: any ldc and an element-aligned
// base for the direct epilogue (pairs of elements per store where ldc is even and the base aligned to a pair); for
// the TMA-store epilogue also a map of C. k >= 1.
//
// The parts, each in its own header: sm90/config.cuh (Config, Params, the persistent walk), sm90/mainloop.cuh (the
// producer's copies and the consumers' wgmmas around the ring of stages), sm90/fixup.cuh (split-K and stream-K
// tiles summed in the workspace), sm90/epilogue.cuh (C written from the accumulators); sm90/schedule.cuh (the work
// units), sm90/ptx.cuh (the instructions). This header holds the kernel body and the consumers' loop over work units.
#pragma once

#include "sm90/config.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/fixup.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/ptx.cuh"
#include "sm90/schedule.cuh"
#include "sm90/timeline.cuh"

namespace tf::sm90 {

// Every accumulator register set to zero.
template <class Cfg>
__device__ __forceinline__ void zero_accumulators(typename Cfg::AccTile& acc) {
#pragma unroll
  for (int mi = 0; mi < Cfg::M_ITERS; ++mi)
#pragma unroll
    for (int i = 0; i < Cfg::ACC_REGS; ++i) acc[mi][i] = 0;
}

// CONSUMER_K: consumer warpgroup cw's part of one work unit's main loop, k-blocks kb0 + cw, kb0 + cw + 2, ... (both
// warpgroups step through every stage of the ring, each waiting for and releasing only the stages it reads), into
// acc (zero where the unit has no k-block for it). Then the hand-over of the second warpgroup's partial tile: it
// writes it to `half_tile` in its fragment order (consecutive threads, consecutive words) and waits only until the
// first has taken it; the first adds it to its own, always in that order (bit-identical from run to run), and
// returns true: it holds the unit's tile. The second returns false.
template <class Cfg>
__device__ __forceinline__ bool consume_half(typename Cfg::AccTile& acc, unsigned long long desc_a,
                                             unsigned long long desc_b, unsigned full0, unsigned empty0,
                                             float* half_tile, int cw, int tid, int lane, const Work& w, int& stage,
                                             unsigned& phase) {
  constexpr int M_ITERS = Cfg::M_ITERS, ACC_REGS = Cfg::ACC_REGS;
  constexpr unsigned STAGE_BYTES = Cfg::STAGE_BYTES;
  int prev = -1;  // the stage this warpgroup read last, still held until its wgmmas are waited for
#pragma unroll
  for (int mi = 0; mi < M_ITERS; ++mi) fence_accumulators(acc[mi]);
  for (int kb = w.kb0; kb < w.kb1; ++kb) {
    if (((kb - w.kb0) & 1) == cw) {
      mbar_wait(full0 + 8 * stage, phase);
      __syncwarp();
      wgmma_fence();
      const unsigned long long da = desc_a + ((stage * STAGE_BYTES) >> 4);
      const unsigned long long db = desc_b + ((stage * STAGE_BYTES) >> 4);
      mma_stage<Cfg>(acc, da, db, cw, prev >= 0);
      wgmma_commit();
      if (prev >= 0) {
        wgmma_wait<1>();
        release<Cfg>(empty0, lane, prev);
      }
      prev = stage;
    }
    next_stage<Cfg>(stage, phase);
  }
  if (prev >= 0) {
    wgmma_wait<0>();
#pragma unroll
    for (int mi = 0; mi < M_ITERS; ++mi) fence_accumulators(acc[mi]);
    release<Cfg>(empty0, lane, prev);
  } else {
    zero_accumulators<Cfg>(acc);  // a unit of one k-block: the second warpgroup's part is zero
  }
  if (cw == 1) {
#pragma unroll
    for (int mi = 0; mi < M_ITERS; ++mi)
#pragma unroll
      for (int i = 0; i < ACC_REGS; ++i) half_tile[(mi * ACC_REGS + i) * 128 + tid] = acc[mi][i];
    named_barrier_arrive(kBarrierHalfWritten, 256);
    named_barrier(kBarrierHalfTaken, 256);  // the tile is free to be written again
    return false;
  }
  named_barrier(kBarrierHalfWritten, 256);
#pragma unroll
  for (int mi = 0; mi < M_ITERS; ++mi)
#pragma unroll
    for (int i = 0; i < ACC_REGS; ++i) acc[mi][i] += half_tile[(mi * ACC_REGS + i) * 128 + tid];
  named_barrier_arrive(kBarrierHalfTaken, 256);
  return true;
}

// The epilogue of a finished tile at (m0, n0): with beta == 0 the TMA-store epilogue (the deferred one converts the
// tile and leaves it pending for the next tile's main loop: `pending`, at (pend_m0, pend_n0)), otherwise the direct
// stores.
template <class Cfg>
__device__ __forceinline__ void write_tile(const Params& p, typename Cfg::AccTile& acc, typename Cfg::Packed& packed,
                                           typename Elem<Cfg::OUT>::T* C, bool pairs, unsigned c_tile, int cw, int tid,
                                           int warp, int lane, int m0, int n0, bool& pending, int& pend_m0,
                                           int& pend_n0) {
  const float alpha = p.alpha, beta = p.beta;
  bool direct = true;
  if constexpr (Cfg::EPI != kEpilogueDirect) {
    if (beta == 0.0f) {
      direct = false;
      if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
        pack<Cfg>(acc, packed, alpha);  // the main loop has stored the pending tile (k >= 1: it ran at least once)
        pending = true;
        pend_m0 = m0;
        pend_n0 = n0;
      } else {
        store_packed<Cfg>(p, acc, packed, c_tile, cw, tid, warp, lane, m0, n0, alpha);
      }
    }
  }
  if (direct) store_direct<Cfg>(p, acc, C, pairs, cw, warp, lane, m0, n0);
}

// fixup(), and with `stamps` (TF_SM90_TIMELINE) the end of the unit's fix-up stamped, whichever way it ends.
template <class Cfg, class... Args>
__device__ __forceinline__ bool stamped_fixup(bool stamps, Args&&... args) {
  const bool holds = fixup<Cfg>(static_cast<Args&&>(args)...);
  if (stamps) timeline_stamp(kStampFixupEnd);
  return holds;
}

// The consumer warpgroups (cw 0 to CONSUMERS - 1 among them, tid the thread in the warpgroup): for every work unit of the
// cluster, the main loop into the accumulators; for a slice of a shared tile the fix-up, after which only the CTA
// holding the finished tile goes on; then the epilogue. `w` is the unit being worked on.
template <class Cfg>
__device__ __forceinline__ void consume(const Params& p, const Grid& g, unsigned base, unsigned c_tile, unsigned full0,
                                        unsigned empty0, unsigned fixup_flag, float* half_tile, int cw, int tid,
                                        Work& w) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, M_ITERS = Cfg::M_ITERS;
  constexpr unsigned STAGE_BYTES = Cfg::STAGE_BYTES;
  using Out = Elem<Cfg::OUT>;
  const int warp = tid / 32, lane = tid % 32;

  const unsigned long long desc_a = desc_a0<Cfg>(base), desc_b = desc_b0<Cfg>(base);
  typename Cfg::AccTile acc;
  zero_accumulators<Cfg>(acc);  // once per CTA: every tile's first wgmma overwrites

  // The deferred TMA-store epilogue keeps a tile's 16-bit pairs here until the next tile's main loop.
  typename Cfg::Packed packed;
  // The direct stores write a pair of C elements in one store where every pair is aligned to its size (ldc even, C's
  // base aligned), otherwise (an odd ldc, as in 4095x4097) one element per store.
  auto* const C = static_cast<typename Out::T*>(p.c_ptr);
  const bool pairs =
      (p.ldc & 1) == 0 && reinterpret_cast<unsigned long long>(p.c_ptr) % (2 * sizeof(typename Out::T)) == 0;

  bool pending = false;  // deferred epilogue: `packed` holds tile (pend_m0, pend_n0), not yet stored
  int pend_m0 = 0, pend_n0 = 0;

  int stage = 0, units = 0;  // units: the work units run (the timeline's count)
  unsigned phase = 0;
  const bool stamps = TF_SM90_TIMELINE && cw == 0 && tid == 0;  // timeline.cuh's stamps: one thread's
  typename Cfg::Sched sched(g.tiles, g.kblocks, g.cluster, g.clusters, p.sk_tiles);
  while (sched.step(w)) {
    ++units;
    slice_of<Cfg>(w, g);
    int tm, tn;
    tile_of<Cfg>(w.tile, g.tiles_m, g.tiles_n, tm, tn);
    const int m0 = (tm * Cfg::CM + g.rank_m) * BM, n0 = (tn * Cfg::CN + g.rank_n) * BN;

    if constexpr (Cfg::CONSUMER_K) {
      // Consumers along K: this warpgroup's k-blocks of the unit only (every other one), then the hand-over; the
      // second warpgroup goes on to its next unit from there.
      if (!consume_half<Cfg>(acc, desc_a, desc_b, full0, empty0, half_tile, cw, tid, lane, w, stage, phase)) continue;
    } else {
      // Main loop: one group of wgmmas per stage; the previous group is waited for (wait_group 1) before its
      // stage is handed back to the producer, so one group is always in flight behind the one being issued.
      int prev = 0;
#pragma unroll
      for (int mi = 0; mi < M_ITERS; ++mi) fence_accumulators(acc[mi]);
      for (int kb = w.kb0; kb < w.kb1; ++kb) {
        mbar_wait(full0 + 8 * stage, phase);
        if (stamps && units == 1 && kb == w.kb0) timeline_stamp(kStampFirstStage);
        __syncwarp();  // the warp leaves the spin loop together before the .aligned wgmma instructions
        wgmma_fence();
        const unsigned long long da = desc_a + ((stage * STAGE_BYTES) >> 4);
        const unsigned long long db = desc_b + ((stage * STAGE_BYTES) >> 4);
        mma_stage<Cfg>(acc, da, db, cw, kb > w.kb0);
        wgmma_commit();
        if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
          // The previous tile's output goes out while this tile's first two wgmma groups run.
          if (pending && kb - w.kb0 == min(1, w.kb1 - w.kb0 - 1)) {
            store_packed<Cfg>(p, acc, packed, c_tile, cw, tid, warp, lane, pend_m0, pend_n0, 1.0f);
            pending = false;
          }
        }
        if (kb > w.kb0) {
          wgmma_wait<1>();
          release<Cfg>(empty0, lane, prev);
        }
        prev = stage;
        next_stage<Cfg>(stage, phase);
      }
      wgmma_wait<0>();
#pragma unroll
      for (int mi = 0; mi < M_ITERS; ++mi) fence_accumulators(acc[mi]);
      release<Cfg>(empty0, lane, prev);
    }
    if (stamps) timeline_loop_end();

    // SPLIT_CLUSTER: the tile is summed in the cluster and its shares written to C there.
    if constexpr (Cfg::SLICE_CLUSTER) {
      cluster_sum<Cfg>(p, acc, C, pairs, static_cast<float4*>(shared_generic(base)), cw, tid, warp, w, m0, n0);
      continue;
    }

    // A slice of a shared tile: its partial goes to the workspace; the last slice to arrive sums them all and
    // goes on to the epilogue, the others go on to their next work.
    if constexpr (Cfg::FIXUP) {
      if (w.nseg > 1 && !stamped_fixup<Cfg>(stamps, p, acc, C, pairs, g.rank, cw, tid, warp, fixup_flag, g.tiles, w,
                                            sched, m0, n0)) {
        continue;
      }
    }

    write_tile<Cfg>(p, acc, packed, C, pairs, c_tile, cw, tid, warp, lane, m0, n0, pending, pend_m0, pend_n0);
  }
  if constexpr (Cfg::EPI == kEpilogueTmaStoreDeferred) {
    if (pending) store_packed<Cfg>(p, acc, packed, c_tile, cw, tid, warp, lane, pend_m0, pend_n0, 1.0f);
  }
  // The staging tile must outlive the stores' reads; the grid itself completes only once every bulk store has landed.
  if constexpr (Cfg::EPI != kEpilogueDirect) {
    if (tid == 0) bulk_wait_read_all();
  }
  if (stamps) timeline_close(units);
}

// ---- the kernel body -------------------------------------------------------------------------------------------

template <class Cfg>
__device__ __forceinline__ void gemm(const Params& p) {
  constexpr int STAGES = Cfg::STAGES, CS = Cfg::LAUNCH_CS;
  constexpr unsigned STAGE_BYTES = Cfg::STAGE_BYTES;

  extern __shared__ unsigned char smem_raw[];
  // Layout from a 1024-byte aligned base (128-byte swizzle atoms are 8 rows x 128 bytes): STAGES x [A tile][B tile],
  // the C staging tile (TMA-store epilogue), CONSUMER_K's hand-over tile, then the full[STAGES] and empty[STAGES]
  // barriers.
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const unsigned c_tile = base + STAGES * STAGE_BYTES;
  const unsigned full0 = base + Cfg::BAR_OFFSET, empty0 = full0 + 8 * STAGES;
  const unsigned fixup_flag = empty0 + 8 * STAGES;  // the fix-up's "this CTA sums the tile" for its consumers

  // The warpgroup's index broadcast from lane 0: the compiler then knows it is the same in every lane, so the
  // producer's and the consumers' branches are warp-uniform and their loop state (stage, phase, the wgmma
  // descriptors) can live in uniform registers; computed per lane, every descriptor went through vector registers
  // and an R2UR before each wgmma.
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const int tid = threadIdx.x % 128;

  if (TF_SM90_TIMELINE && threadIdx.x == 0) timeline_stamp(kStampEntry);
  if (threadIdx.x == 0) {
    // The tensor maps are requested while the barriers are set up and the cluster meets, the earliest point there
    // is; measured no faster than at the first copy (H100, 2026-12-06: the maps were not on the critical path).
    prefetch_map(&p.a);
    prefetch_map(&p.b);
    if constexpr (Cfg::EPI != kEpilogueDirect) prefetch_map(&p.c);
    init_barriers<Cfg>(full0, empty0);
  }
  // The barriers are set up before any CTA of the cluster copies into them or arrives on them: the cluster's barrier,
  // its arrival here and its wait once this CTA's own set-up is done (cuBLAS's kernels split it so too).
  if constexpr (CS > 1) {
    cluster_arrive_relaxed();
  } else {
    __syncthreads();
  }
  // Launched programmatically after the operand copy (COPY_AB), the kernel has got this far during the copy's tail;
  // nothing global is read before the copy has finished and its writes are visible. Otherwise this returns at once.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");

  const Grid g = grid_of<Cfg>(p);
  if constexpr (CS > 1) cluster_wait();
  if (TF_SM90_TIMELINE && threadIdx.x == 0) timeline_stamp(kStampSetup);

  if (wg == 0) {
    // ---- producer warpgroup: one thread issues every copy ----
    if constexpr (Cfg::PRODUCER_REGS > 0) regs_dec<Cfg::PRODUCER_REGS>();
    if (tid == 0) {
      produce<Cfg>(p, g, base, full0, empty0);
    } else if constexpr (Cfg::SLICE_CLUSTER) {
      meet_per_unit<Cfg>(p, g);
    }
  } else {
    // ---- consumer warpgroups ----
    if constexpr (Cfg::CONSUMER_REGS > 0) regs_inc<Cfg::CONSUMER_REGS>();
    // NOTE: the consumers' Work is declared here rather than in consume(): there, the compiler promotes it to
    // registers before it inlines consume(), and the stream-K instances come out with their loop registers in
    // another order and other machine code; declared here, they compile as the kernel did as one function.
    Work w;
    // CONSUMER_K's hand-over tile lies after the staging tile (Cfg::K_BYTES; unused otherwise).
    float* const half_tile = reinterpret_cast<float*>(smem_raw + (c_tile + Cfg::C_BYTES - smem_u32(smem_raw)));
    consume<Cfg>(p, g, base, c_tile, full0, empty0, fixup_flag, half_tile, wg - 1, tid, w);
  }

  // No CTA of a cluster leaves while another may still multicast into it or arrive on its barriers: its producer's
  // tail (produce()) waits for the cluster's last arrivals on its empty barriers, and its consumers have waited for
  // every copy into its stages. A cluster barrier here (release and acquire) cost a GPU-scope MEMBAR per thread.
}

}  // namespace tf::sm90
