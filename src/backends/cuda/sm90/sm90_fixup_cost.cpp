// The sm90 cost model's price of split-K's and stream-K's fix-up: partial tiles stored, summed and read back.
#include "backends/cuda/sm90/sm90_fixup_cost.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backends/cuda/kernels/sm90/schedule.cuh"
#include "backends/cuda/sm90/sm90_cost_constants.hpp"
#include "core/int_math.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda::sm90_fixup {

using namespace sm90_constants;
using plan::Cost;
namespace fmtx = plan::fmtx;

Fixup fixup_seconds(const Problem& q, int64_t bm, int64_t bn, const Sm90Schedule& sched, const Sm90Share& share,
                    std::optional<int64_t> consumers, double l2_bw_sm, bool consumer_cols) {
  Fixup f;
  if (share.partials_written <= 0) return f;
  f.part = double(std::min(bm, q.m)) * double(std::min(bn, q.n)) * 4.0;
  const double atomic = sched.atomic_sum ? kFixupAtomicSlowdown : 1.0;  // REDUCE 1: added, the sum tile re-zeroed
  const double bytes =
      (double(share.partials_written) * atomic + double(share.partials_read) * (sched.atomic_sum ? 2 : 1)) * f.part;
  int64_t round_trips = 0;
  double fixed_s = double(share.partials_written) * kFixupSeconds;
  if (sched.shared_sum) {
    const int64_t share_f4 = cdiv(bm * bn / 4, sched.split_k);
    if (consumers) {
      round_trips = cdiv(share_f4, 128 * std::max<int64_t>(1, *consumers)) *
                    cdiv(sched.split_k, int64_t(tf::sm90::kSharedSumBatch));
    }
    fixed_s += kFixupSeconds;
  } else if (consumers) {
    // Each consumer thread reads back its own part of the tile: its rows of every column, or (CONSUMER_COLS) its
    // columns of every row.
    const int64_t cons = std::max<int64_t>(1, *consumers);
    const int64_t m_iters = std::max<int64_t>(1, (consumer_cols ? bm : bm / cons) / 64);
    const int64_t wg_n = consumer_cols ? bn / cons : bn;
    const int64_t vg = tf::sm90::fixup_group(int(m_iters), int(wg_n));
    round_trips = share.partials_read * m_iters * cdiv(wg_n / 8, std::max<int64_t>(1, vg));
  }
  f.seconds = bytes / (l2_bw_sm * kFixupL2Share) + fixed_s + double(round_trips) * kFixupReadSeconds;
  return f;
}

// The note on the busiest CTA's fix-up (split-K with or without the shared sum, or stream-K).
void add_cluster_sum(Cost& c, int64_t bm, int64_t bn, const Sm90Schedule& sched, const Sm90Share& share,
                     double smem_bw_sm, bool notes) {
  const double bytes = 2.0 * double(bm * bn) * 4.0;
  const double per_tile = kClusterSumBarrierSeconds + bytes / smem_bw_sm;
  c.body_s += double(share.finished) * per_tile;
  if (notes) {
    c.notes.push_back(fmt::format("SPLIT_CLUSTER: {} slices summed in the cluster's shared memory, {} per tile",
                                  sched.split_k, fmtx::time(per_tile)));
  }
}

void add_fixup_note(Cost& c, const Sm90Schedule& sched, const Sm90Share& share, const Fixup& fix) {
  if (sched.shared_sum) {
    c.notes.push_back(fmt::format("split-K {} with a shared sum: each CTA stores its partial tile of {}, then sums "
                                  "its 1/{} of the tile from all {} and writes it: {}",
                                  sched.split_k, fmtx::bytes(fix.part), sched.split_k, sched.split_k,
                                  fmtx::time(fix.seconds)));
  } else {
    c.notes.push_back(fmt::format("{}: the busiest CTA {} {} partial tile(s) of {} and reads {} back: {}",
                                  sched.split_k > 1 ? fmt::format("split-K {}", sched.split_k)
                                                    : fmt::format("stream-K over the last {} tiles", sched.sk_tiles),
                                  sched.atomic_sum ? "adds by float atomics" : "stores", share.partials_written,
                                  fmtx::bytes(fix.part), share.partials_read, fmtx::time(fix.seconds)));
  }
}

}  // namespace tileforge::cuda::sm90_fixup
