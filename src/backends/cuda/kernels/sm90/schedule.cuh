// sm90 family: the fix-up's constants and the work decomposition of the persistent grid (whole tiles, split-K,
// stream-K; common/work_schedule.cuh) that every warpgroup of the kernel walks, a worker being a cluster, in a header
// the host compiler also reads so that the cost model and the tests count what the kernel does.
#pragma once

#include "common/work_schedule.cuh"

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

// The work decomposition is the one the sm80 family's stream-K walks too (common/work_schedule.cuh): a worker is a
// cluster here.
using Work = tf::Work;
template <int kSplitK, bool kStreamK>
using Schedule = tf::Schedule<kSplitK, kStreamK>;

}  // namespace tf::sm90
