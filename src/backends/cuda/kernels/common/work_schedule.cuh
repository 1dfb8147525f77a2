// The work decomposition of a persistent grid (whole tiles, split-K, stream-K) shared by the sm80 and sm90 families:
// a worker (an sm90 cluster, an sm80 block) walks its sequence of tiles and k-block ranges. A header the host compiler
// also reads, so that tests can walk it for every worker and check that each k-block of each tile is covered exactly
// once, and the cost models count what the kernels do.
#pragma once

#ifndef TF_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TF_HD __host__ __device__
#else
#define TF_HD
#endif
#endif

namespace tf {

// Stream-K's shared tiles over `workers` workers (the host's choice, passed to the kernel): none where the tiles fill
// whole waves; all of them where they are fewer than the workers; otherwise the last partial wave and one whole wave
// before it, so that every worker's run spans at least one tile's worth of k-blocks and the rest are whole tiles.
TF_HD constexpr long long stream_k_shared_tiles(long long tiles, long long workers) {
  const long long rest = workers > 0 ? tiles % workers : 0;
  return rest == 0 ? 0 : tiles < workers ? tiles : rest + workers;
}

// One piece of a worker's work: tile `tile`, k-blocks [kb0, kb1); `nseg` > 1 when the tile's K is shared
// with other workers, this being slice `seg` of them (slices in k order), `first` the schedule's index of slice 0.
struct Work {
  int tile, kb0, kb1, seg, nseg, first;
};

// Split-K with the slices' k-blocks interleaved (an experiment, issue 13: sm90/config.cuh's TF_SM90_K_INTERLEAVE):
// the i-th k-block of slice `seg` of `split` is i x split + seg, so that the slices running at once read neighbouring
// k-blocks of each row of A (one DRAM page) instead of k-blocks kblocks / split apart. A slice keeps the count of
// k-blocks the contiguous cut [seg x kblocks / split, (seg + 1) x kblocks / split) gives it; where split does not
// divide kblocks, the slices with one more take the last kblocks % split k-blocks in slice order. A bijection onto
// [0, kblocks) for each tile (tested on the host), so the consumers, who only count their k-blocks, need not know.
TF_HD constexpr int interleaved_kblock(int seg, int i, int kblocks, int split) {
  const int q = kblocks / split;
  if (i < q) return i * split + seg;
  const int ends = static_cast<int>(static_cast<long long>(seg + 1) * kblocks / split);  // slices 0..seg's k-blocks
  return q * split + (ends - (seg + 1) * q - 1);
}

// The sequence of Work of one worker (in the sm90 family every warpgroup of every CTA of a cluster walks the same
// sequence).
template <int kSplitK, bool kStreamK>
struct Schedule {
  int tiles, kblocks, worker, workers;
  int dp_tiles;            // stream-K: tiles [0, dp_tiles) are whole tiles dealt round-robin to the workers
  // 32-bit throughout (both families' spaces keep tiles x SPLIT_K and tiles x k-blocks below 2^31): the schedule
  // lives in registers beside up to 128 accumulators.
  int sk_iters;     // stream-K: k-blocks of the shared tiles, sk_tiles x kblocks
  int sk_workers;   // stream-K: workers sharing them, min(workers, sk_iters): none has an empty run
  int next;         // split-K / whole tiles: the next unit; stream-K: the next tile of the whole-tile part
  int it, it_end;   // stream-K: this worker's run of shared k-blocks [it, it_end)

  TF_HD Schedule(int tiles_, int kblocks_, int worker_, int workers_, int sk_tiles)
      : tiles(tiles_), kblocks(kblocks_), worker(worker_), workers(workers_), next(worker_) {
    if constexpr (kStreamK) {
      dp_tiles = tiles - sk_tiles;
      sk_iters = sk_tiles * kblocks;
      sk_workers = workers < sk_iters ? workers : sk_iters;
      if (worker < sk_workers) {
        it = start(worker);
        it_end = start(worker + 1);
      } else {
        it = it_end = 0;
      }
    } else {
      dp_tiles = tiles;
      sk_iters = sk_workers = it = it_end = 0;
    }
  }

  // Stream-K: the first shared k-block of worker c's run, and the worker whose run holds k-block i.
  TF_HD int start(int c) const {
    return static_cast<int>(static_cast<long long>(c) * sk_iters / sk_workers);
  }
  TF_HD int owner(int i) const {
    return static_cast<int>((static_cast<long long>(i + 1) * sk_workers - 1) / sk_iters);
  }

  TF_HD bool step(Work& w) {
    if constexpr (kSplitK > 1) {
      if (next >= tiles * kSplitK) return false;
      w.tile = next / kSplitK;
      w.seg = next % kSplitK;
      w.nseg = kSplitK;
      w.kb0 = w.seg * kblocks / kSplitK;
      w.kb1 = (w.seg + 1) * kblocks / kSplitK;
      w.first = w.tile * kSplitK;
      next += workers;
      return true;
    } else {
      if (next < dp_tiles) {
        w.tile = next;
        w.kb0 = 0;
        w.kb1 = kblocks;
        w.seg = 0;
        w.nseg = 1;
        w.first = 0;
        next += workers;
        return true;
      }
      if constexpr (kStreamK) {
        if (it >= it_end) return false;
        const int t = it / kblocks, t_begin = t * kblocks, t_end = t_begin + kblocks;
        w.tile = dp_tiles + t;
        w.kb0 = it - t_begin;
        w.kb1 = (it_end < t_end ? it_end : t_end) - t_begin;
        const int c0 = owner(t_begin), c1 = owner(t_end - 1);
        w.first = c0;
        w.seg = worker - c0;
        w.nseg = c1 - c0 + 1;
        it += w.kb1 - w.kb0;
        return true;
      }
      return false;
    }
  }

  // The workspace slot (in the sm90 family, before the CTAs-per-cluster factor) of slice j of the tile of `w`.
  // Split-K: one per unit. Stream-K: two per worker, the tile its run starts in (0) and the tile its run ends in (1).
  TF_HD int slot(const Work& w, int j) const {
    if constexpr (kSplitK > 1) {
      return w.first + j;
    } else {
      const int c = w.first + j;
      const bool starts_here = dp_tiles + start(c) / kblocks == w.tile;
      return 2 * c + (starts_here ? 0 : 1);
    }
  }

  // The sm90 family's REDUCE 1 (float atomics): the sum tile (before the CTAs-per-cluster factor) that every slice of the tile of `w`
  // adds its partial into. Split-K: one per tile; stream-K: one per shared tile.
  TF_HD int sum_slot(const Work& w) const { return w.tile - (kSplitK > 1 ? 0 : dp_tiles); }
};

}  // namespace tf
