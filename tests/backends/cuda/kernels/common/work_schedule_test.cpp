// Split-K's interleaved k-blocks (kernels/common/work_schedule.cuh's interleaved_kblock) on the host: for every
// k-block count and slice count the kernels may meet, each slice keeps the count of its contiguous cut, the slices
// together take each k-block exactly once, and a slice's k-blocks lie `split` apart before its one extra.
#include <gtest/gtest.h>

#include <vector>

#include "backends/cuda/kernels/common/work_schedule.cuh"

namespace {

TEST(InterleavedKBlocks, EverySliceKeepsItsCountAndEachKBlockIsTakenOnce) {
  for (int split = 2; split <= 64; ++split) {
    for (int kblocks = split; kblocks <= 4 * split + 67; ++kblocks) {
      std::vector<int> taken(static_cast<size_t>(kblocks), 0);
      for (int seg = 0; seg < split; ++seg) {
        // The contiguous cut Schedule::step gives slice `seg` (its count is what the consumers run).
        const int kb0 = seg * kblocks / split, kb1 = (seg + 1) * kblocks / split;
        for (int i = 0; i < kb1 - kb0; ++i) {
          const int kb = tf::interleaved_kblock(seg, i, kblocks, split);
          ASSERT_GE(kb, 0) << "split " << split << " kblocks " << kblocks << " seg " << seg << " i " << i;
          ASSERT_LT(kb, kblocks) << "split " << split << " kblocks " << kblocks << " seg " << seg << " i " << i;
          ++taken[static_cast<size_t>(kb)];
          if (i < kblocks / split) EXPECT_EQ(kb, i * split + seg);
        }
      }
      for (int kb = 0; kb < kblocks; ++kb) {
        ASSERT_EQ(taken[static_cast<size_t>(kb)], 1)
            << "split " << split << " kblocks " << kblocks << " k-block " << kb;
      }
    }
  }
}

}  // namespace
