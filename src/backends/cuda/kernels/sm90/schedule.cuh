// sm90 family: the work decomposition of the persistent grid (whole tiles, split-K, stream-K) that every
// warpgroup of the kernel walks, in a header the host compiler also reads so that tests can walk it for every
// cluster and check that each k-block of each tile is covered exactly once.
#pragma once

#ifndef TF_SM90_HD  // also defined by sm90/staging.cuh
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TF_SM90_HD __host__ __device__
#else
#define TF_SM90_HD
#endif
#endif

namespace tf::sm90 {

// The fix-up's read-back loads a slice in groups of this many float4 per thread, all of a group in flight at once:
// 16 (64 registers) beside up to 64 accumulators, 4 beside 128 of them (with 8, ptxas spills 24 bytes in the
// 128x256 stream-K instance under setmaxnreg's 232); never more than the BLOCK_N / 8 a thread holds per m64 block,
// and a divisor of it, so that the groups cover its 8-column blocks exactly (BLOCK_N 192: 12, not 16, whose second
// group would run past the accumulators). The kernel sizes its loads by it, the cost model counts the read-back's
// round trips by it.
TF_SM90_HD constexpr int fixup_group(int m_iters, int block_n) {
  const int limit = m_iters * block_n / 2 >= 128 ? 4 : 16;
  int group = block_n / 8 < limit ? block_n / 8 : limit;
  while (group > 1 && (block_n / 8) % group != 0) --group;
  return group;
}

// The shared sum of split-K (fixup.cuh, Params::shared_sum) loads this many slices' float4 of one element at once:
// one L2 round trip per batch of slices. The cost model counts its round trips by it.
inline constexpr int kSharedSumBatch = 8;

// One piece of a cluster's work: cluster tile `tile`, k-blocks [kb0, kb1); `nseg` > 1 when the tile's K is shared
// with other clusters, this being slice `seg` of them (slices in k order), `first` the schedule's index of slice 0.
struct Work {
  int tile, kb0, kb1, seg, nseg, first;
};

// The sequence of Work of one cluster. Every warpgroup of every CTA of the cluster walks the same sequence.
template <int kSplitK, bool kStreamK>
struct Schedule {
  int tiles, kblocks, cluster, clusters;
  int dp_tiles;            // stream-K: tiles [0, dp_tiles) are whole tiles walked cluster by cluster
  // 32-bit throughout (the host keeps tiles x SPLIT_K and tiles x k-blocks below 2^31): the schedule lives in the
  // consumer warpgroups' registers beside up to 128 accumulators.
  int sk_iters;     // stream-K: k-blocks of the shared tiles, sk_tiles x kblocks
  int sk_clusters;  // stream-K: clusters sharing them, min(clusters, sk_iters): none has an empty run
  int next;         // split-K / whole tiles: the next unit; stream-K: the next tile of the whole-tile part
  int it, it_end;   // stream-K: this cluster's run of shared k-blocks [it, it_end)

  TF_SM90_HD Schedule(int tiles_, int kblocks_, int cluster_, int clusters_, int sk_tiles)
      : tiles(tiles_), kblocks(kblocks_), cluster(cluster_), clusters(clusters_), next(cluster_) {
    if constexpr (kStreamK) {
      dp_tiles = tiles - sk_tiles;
      sk_iters = sk_tiles * kblocks;
      sk_clusters = clusters < sk_iters ? clusters : sk_iters;
      if (cluster < sk_clusters) {
        it = start(cluster);
        it_end = start(cluster + 1);
      } else {
        it = it_end = 0;
      }
    } else {
      dp_tiles = tiles;
      sk_iters = sk_clusters = it = it_end = 0;
    }
  }

  // Stream-K: the first shared k-block of cluster c's run, and the cluster whose run holds k-block i.
  TF_SM90_HD int start(int c) const {
    return static_cast<int>(static_cast<long long>(c) * sk_iters / sk_clusters);
  }
  TF_SM90_HD int owner(int i) const {
    return static_cast<int>((static_cast<long long>(i + 1) * sk_clusters - 1) / sk_iters);
  }

  TF_SM90_HD bool step(Work& w) {
    if constexpr (kSplitK > 1) {
      if (next >= tiles * kSplitK) return false;
      w.tile = next / kSplitK;
      w.seg = next % kSplitK;
      w.nseg = kSplitK;
      w.kb0 = w.seg * kblocks / kSplitK;
      w.kb1 = (w.seg + 1) * kblocks / kSplitK;
      w.first = w.tile * kSplitK;
      next += clusters;
      return true;
    } else {
      if (next < dp_tiles) {
        w.tile = next;
        w.kb0 = 0;
        w.kb1 = kblocks;
        w.seg = 0;
        w.nseg = 1;
        w.first = 0;
        next += clusters;
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
        w.seg = cluster - c0;
        w.nseg = c1 - c0 + 1;
        it += w.kb1 - w.kb0;
        return true;
      }
      return false;
    }
  }

  // The workspace slot (before the CTAs-per-cluster factor) of slice j of the tile of `w`. Split-K: one per unit.
  // Stream-K: two per cluster, the tile its run starts in (0) and the tile its run ends in (1).
  TF_SM90_HD int slot(const Work& w, int j) const {
    if constexpr (kSplitK > 1) {
      return w.first + j;
    } else {
      const int c = w.first + j;
      const bool starts_here = dp_tiles + start(c) / kblocks == w.tile;
      return 2 * c + (starts_here ? 0 : 1);
    }
  }

  // REDUCE 1 (float atomics): the sum tile (before the CTAs-per-cluster factor) that every slice of the tile of `w`
  // adds its partial into. Split-K: one per tile; stream-K: one per shared tile.
  TF_SM90_HD int sum_slot(const Work& w) const { return w.tile - (kSplitK > 1 ? 0 : dp_tiles); }
};

}  // namespace tf::sm90
