// The sm90 kernel's work decomposition (kernels/sm90/schedule.cuh) walked on the host for every cluster, with the
// grid and stream-K split the launch computes (sm90_schedule): each k-block of each tile is run exactly once, the
// slices of a shared tile are contiguous in k order and agree on their count, and every slice's workspace slot is
// its own, inside the workspace, and found the same way by the CTA that sums the tile.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <vector>

#include "backends/cuda/kernels/sm90/schedule.cuh"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "backends/cuda/sm90/sm90_test_config.hpp"
#include "support/test_support.hpp"

namespace tileforge::cuda {
namespace {

using testing_sm90::sm90_config;

struct Piece {
  int cluster;
  tf::sm90::Work work;
  long long slot;  // -1: a whole tile
};

// Calls f.template operator()<SPLIT_K, STREAM_K>() with the schedule's own values as template arguments (the
// kernel's are compile-time; the test covers the SPLIT_K values of the family's space).
template <class F>
auto with_schedule(const Sm90Schedule& s, F&& f) {
  if (s.stream_k) return f.template operator()<1, true>();
  switch (s.split_k) {
    case 2: return f.template operator()<2, false>();
    case 3: return f.template operator()<3, false>();
    case 4: return f.template operator()<4, false>();
    case 5: return f.template operator()<5, false>();
    case 6: return f.template operator()<6, false>();
    case 7: return f.template operator()<7, false>();
    case 8: return f.template operator()<8, false>();
    case 12: return f.template operator()<12, false>();
    case 15: return f.template operator()<15, false>();
    case 16: return f.template operator()<16, false>();
    case 32: return f.template operator()<32, false>();
  }
  EXPECT_EQ(s.split_k, 1) << "SPLIT_K " << s.split_k << " is not walked by this test";
  return f.template operator()<1, false>();
}

std::vector<Piece> walk_any(const Sm90Schedule& s) {
  return with_schedule(s, [&]<int kSplitK, bool kStreamK>() {
    std::vector<Piece> out;
    for (int c = 0; c < int(s.clusters); ++c) {
      tf::sm90::Schedule<kSplitK, kStreamK> sched(int(s.cluster_tiles), int(s.k_blocks), c, int(s.clusters),
                                                  int(s.sk_tiles));
      tf::sm90::Work w;
      while (sched.step(w)) {
        Piece p{c, w, -1};
        if (w.nseg > 1) {
          p.slot = sched.slot(w, w.seg);
          // The summing CTA finds every slice's slot from its own Work.
          for (int j = 0; j < w.nseg; ++j) EXPECT_GE(sched.slot(w, j), 0);
        }
        out.push_back(p);
      }
    }
    return out;
  });
}

// The slot the summing CTA computes for slice j of a tile, from the Work of any of its slices.
long long slot_any(const Sm90Schedule& s, const Piece& p, int j) {
  return with_schedule(s, [&]<int kSplitK, bool kStreamK>() -> long long {
    tf::sm90::Schedule<kSplitK, kStreamK> sched(int(s.cluster_tiles), int(s.k_blocks), p.cluster, int(s.clusters),
                                                int(s.sk_tiles));
    return sched.slot(p.work, j);
  });
}

void check(const Problem& problem, const Config& config, int64_t max_clusters) {
  const Sm90Schedule s = sm90_schedule(problem, config, max_clusters);
  SCOPED_TRACE(problem.describe() + " " + config.describe() + " on " + std::to_string(max_clusters) + " clusters");
  ASSERT_GT(s.clusters, 0);
  ASSERT_LE(s.clusters, max_clusters);
  const std::vector<Piece> pieces = walk_any(s);
  std::vector<int> covered(std::size_t(s.cluster_tiles * s.k_blocks), 0);
  std::map<int, std::vector<const Piece*>> by_tile;
  std::set<long long> slots;
  for (const Piece& p : pieces) {
    const auto& w = p.work;
    ASSERT_GE(w.tile, 0);
    ASSERT_LT(w.tile, s.cluster_tiles);
    ASSERT_LT(w.kb0, w.kb1) << "an empty slice";
    ASSERT_LE(w.kb1, s.k_blocks);
    for (int kb = w.kb0; kb < w.kb1; ++kb) ++covered[std::size_t(w.tile * s.k_blocks + kb)];
    by_tile[w.tile].push_back(&p);
    if (w.nseg > 1) {
      EXPECT_GE(p.slot, 0);
      EXPECT_LT(p.slot, s.slots) << "the slot lies outside the workspace";
      EXPECT_TRUE(slots.insert(p.slot).second) << "two slices share slot " << p.slot;
    }
  }
  for (std::size_t i = 0; i < covered.size(); ++i) {
    ASSERT_EQ(covered[i], 1) << "tile " << i / s.k_blocks << " k-block " << i % s.k_blocks;
  }
  for (auto& [tile, ps] : by_tile) {
    const int nseg = ps.front()->work.nseg;
    ASSERT_EQ(int(ps.size()), nseg) << "tile " << tile;
    std::vector<const Piece*> ordered(std::size_t(nseg), nullptr);
    for (const Piece* p : ps) {
      ASSERT_EQ(p->work.nseg, nseg);
      ASSERT_GE(p->work.seg, 0);
      ASSERT_LT(p->work.seg, nseg);
      ASSERT_EQ(ordered[std::size_t(p->work.seg)], nullptr) << "slice " << p->work.seg << " twice";
      ordered[std::size_t(p->work.seg)] = p;
    }
    for (int j = 1; j < nseg; ++j) EXPECT_EQ(ordered[std::size_t(j - 1)]->work.kb1, ordered[std::size_t(j)]->work.kb0);
    if (nseg > 1) {
      for (const Piece* p : ps) {
        for (int j = 0; j < nseg; ++j) EXPECT_EQ(slot_any(s, *p, j), ordered[std::size_t(j)]->slot);
      }
    }
  }
  // The shared sum: from kSm90SharedSumMinSplit slices, and only with a cluster for every unit (its slices wait for
  // one another), which then has two counters per CTA tile.
  EXPECT_EQ(s.shared_sum, s.split_k >= kSm90SharedSumMinSplit && s.cluster_tiles * s.split_k <= max_clusters);
  if (s.shared_sum) {
    EXPECT_EQ(s.clusters, s.slots) << "a cluster with two units would wait on itself";
    std::set<int> walked;
    for (const Piece& p : pieces) EXPECT_TRUE(walked.insert(p.cluster).second) << "cluster " << p.cluster << " walks two units";
  }
  if (s.slots > 0) {
    const int64_t ctas = config.at("CLUSTER_M") * config.at("CLUSTER_N");
    EXPECT_GE(s.counter_bytes, s.cluster_tiles * ctas * 4 * (s.shared_sum ? 2 : 1));
    EXPECT_EQ(s.counter_bytes % 256, 0);
    EXPECT_EQ(s.workspace_bytes,
              s.counter_bytes + s.slots * config.at("CLUSTER_M") * config.at("CLUSTER_N") * config.at("BLOCK_M") *
                                    config.at("BLOCK_N") * 4);
  } else {
    EXPECT_EQ(s.workspace_bytes, 0);
  }
}

Problem half(int64_t m, int64_t n, int64_t k) { return testing::make_problem(m, n, k, Layout::RR, DType::f16, DType::f16).normalized(); }

TEST(Sm90Schedule, EveryKBlockOfEveryTileRunsOnceAndEverySliceHasItsOwnSlot) {
  const int64_t shapes[][3] = {{16, 4096, 4096}, {512, 512, 8192}, {256, 256, 16384}, {1000, 1000, 1000},
                               {3000, 3000, 3000}, {4096, 4096, 512}, {128, 4096, 14336}, {64, 64, 64},
                               {520, 264, 4104}, {2056, 2056, 1032}};
  for (auto& sh : shapes) {
    const Problem p = half(sh[0], sh[1], sh[2]);
    for (int split : {1, 2, 3, 4, 5, 6, 7, 8, 12, 15, 16, 32}) {
      for (int stream_k : {0, 1}) {
        if (stream_k && split > 1) continue;
        for (auto [bm, bn, cm, cn] : {std::array{128, 256, 1, 1}, std::array{128, 128, 2, 1}, std::array{64, 64, 1, 2}}) {
          const Config c = sm90_config(bm, bn, 4, bm == 64 ? 1 : 2, cm, cn, 8, 1, 1, 1, split, stream_k);
          if (split > (sh[2] + 63) / 64) continue;  // the space's constraint: every slice holds a k-block
          for (int64_t clusters : {132 / (cm * cn), 7, 1}) check(p, c, clusters);
        }
      }
    }
  }
}

TEST(Sm90Schedule, StreamKSharesOnlyThePartialWave) {
  // 289 tiles of 128x128 on 132 SMs: two whole waves less one are whole tiles, the last 25 + 132 shared.
  const Config c = sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 1, 1);
  Sm90Schedule s = sm90_schedule(half(2056, 2056, 1032), c, 132);
  EXPECT_EQ(s.cluster_tiles, 289);
  EXPECT_EQ(s.sk_tiles, 25 + 132);
  EXPECT_EQ(s.clusters, 132);
  EXPECT_EQ(s.slots, 2 * 132);
  // Whole waves: nothing shared, no workspace.
  s = sm90_schedule(half(2048, 2048 * 33 / 16, 1024), c, 132);
  EXPECT_EQ(s.cluster_tiles % 132, 0);
  EXPECT_EQ(s.sk_tiles, 0);
  EXPECT_EQ(s.workspace_bytes, 0);
  // Fewer tiles than SMs: all of them shared.
  s = sm90_schedule(half(512, 512, 8192), c, 132);
  EXPECT_EQ(s.sk_tiles, 16);
  EXPECT_EQ(s.clusters, 132);
}

// REDUCE 1 (the float-atomic sum): every slice of a shared tile adds into the tile's own sum tile (the same for all of
// its slices, another for every other tile), inside the zone the counters' memset and every launch leave zero; no
// partial slots, no shared sum.
TEST(Sm90Schedule, AtomicSumGivesEachSharedTileOneSumTileInTheZeroedZone) {
  const int64_t shapes[][3] = {{16, 4096, 4096}, {512, 512, 8192}, {256, 256, 16384}, {1000, 1000, 1000},
                               {2056, 2056, 1032}, {520, 264, 4104}};
  int shared_seen = 0;
  for (auto& sh : shapes) {
    const Problem p = half(sh[0], sh[1], sh[2]);
    for (auto [split, stream_k] : {std::array{2, 0}, std::array{4, 0}, std::array{16, 0}, std::array{1, 1}}) {
      for (auto [bm, bn, cm, cn] : {std::array{128, 256, 1, 1}, std::array{64, 64, 1, 2}}) {
        Config c = sm90_config(bm, bn, 4, bm == 64 ? 1 : 2, cm, cn, 8, 1, 1, 1, split, stream_k);
        c.params["REDUCE"] = 1;
        for (int64_t clusters : {132 / (cm * cn), 7}) {
          const Sm90Schedule s = sm90_schedule(p, c, clusters);
          SCOPED_TRACE(p.describe() + " " + c.describe() + " on " + std::to_string(clusters) + " clusters");
          const bool shares = s.split_k > 1 || s.sk_tiles > 0;
          ASSERT_EQ(s.atomic_sum, shares);
          EXPECT_FALSE(s.shared_sum);
          EXPECT_EQ(s.slots, 0);
          if (!shares) continue;
          ++shared_seen;
          EXPECT_EQ(s.sum_tiles, s.split_k > 1 ? s.cluster_tiles : s.sk_tiles);
          const int64_t ctas = cm * cn;
          EXPECT_GE(s.sums_offset, s.cluster_tiles * ctas * 4);
          EXPECT_EQ(s.sums_offset % 256, 0);
          EXPECT_EQ(s.counter_bytes, s.sums_offset + s.sum_tiles * ctas * bm * bn * 4);
          EXPECT_EQ(s.workspace_bytes, s.counter_bytes) << "no partials beside the sum tiles";
          std::map<int, int> sum_of_tile;
          std::set<int> used;
          with_schedule(s, [&]<int kSplitK, bool kStreamK>() {
            for (int cl = 0; cl < int(s.clusters); ++cl) {
              tf::sm90::Schedule<kSplitK, kStreamK> sched(int(s.cluster_tiles), int(s.k_blocks), cl, int(s.clusters),
                                                          int(s.sk_tiles));
              tf::sm90::Work w;
              while (sched.step(w)) {
                if (w.nseg == 1) continue;
                const int slot = sched.sum_slot(w);
                ASSERT_GE(slot, 0);
                ASSERT_LT(slot, s.sum_tiles) << "the sum tile lies outside the zone";
                auto [it, fresh] = sum_of_tile.emplace(w.tile, slot);
                if (fresh) {
                  EXPECT_TRUE(used.insert(slot).second) << "tiles " << w.tile << " and another share sum tile " << slot;
                } else {
                  EXPECT_EQ(it->second, slot) << "the slices of tile " << w.tile << " add into different sum tiles";
                }
              }
            }
          });
        }
      }
    }
  }
  EXPECT_GT(shared_seen, 20);
}

// The fix-up's read-back groups (fixup_group): for every BLOCK_N the family declares (the narrow ones of SWAP_AB
// too) and every count of m64 blocks a consumer may hold beside it, a divisor of the 8-column blocks a thread holds
// (so that the groups cover them exactly: 192 once gave 16 of 24), at most 16, and 4 at most beside 128 accumulators.
TEST(Sm90Schedule, FixupGroupsCoverEachLanesColumnBlocksExactly) {
  std::vector<int64_t> widths = sm90_narrow_block_n();
  for (int64_t bn : {64, 128, 192, 256}) widths.push_back(bn);
  for (const int bn : widths) {
    for (int m_iters = 1; m_iters * bn / 2 <= 128; ++m_iters) {
      const int g = tf::sm90::fixup_group(m_iters, bn);
      EXPECT_GE(g, 1) << bn << " " << m_iters;
      EXPECT_EQ((bn / 8) % g, 0) << bn << " " << m_iters;
      EXPECT_LE(g, m_iters * bn / 2 >= 128 ? 4 : 16) << bn << " " << m_iters;
    }
  }
  EXPECT_EQ(tf::sm90::fixup_group(1, 192), 12);
  EXPECT_EQ(tf::sm90::fixup_group(1, 128), 16);
  EXPECT_EQ(tf::sm90::fixup_group(1, 256), 4);
  EXPECT_EQ(tf::sm90::fixup_group(1, 72), 9);
}

}  // namespace
}  // namespace tileforge::cuda
