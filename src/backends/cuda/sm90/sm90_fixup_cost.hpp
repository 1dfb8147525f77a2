// The sm90 cost model's price of split-K's and stream-K's fix-up on the busiest CTA (sm90_cost_model.cpp's part).
#pragma once

#include <cstdint>
#include <optional>

#include "backends/cuda/sm90/sm90_cost_model.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "plan/cost_model.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cuda::sm90_fixup {

struct Fixup {
  double seconds = 0, part = 0;  // the busiest CTA's fix-up, and the bytes of one partial tile inside C
};

// Split-K / stream-K fix-up on the busiest CTA: each slice it ends stores its f32 partial (the part inside C, `part`
// bytes) and waits for the store to be visible (fence, counter); the tiles it finishes read every slice back, in
// order, in groups of float4 per thread (the kernel's own fixup_group), one L2 round trip per group and slice. With
// the shared sum each consumer thread sums its float4 of the share over every slice, kSharedSumBatch slices' loads
// at once; the wait for the other slices and the departure add one more fixed cost. REDUCE 1 adds the partials by
// atomics and reads one sum tile back. Without CONSUMERS (the bound's partial configs) no round trips are counted.
Fixup fixup_seconds(const Problem& q, int64_t bm, int64_t bn, const Sm90Schedule& sched, const Sm90Share& share,
                    std::optional<int64_t> consumers, double l2_bw_sm, bool consumer_cols = false);

// SPLIT_CLUSTER: per tile the busiest CTA finishes, its partial written to shared memory and its share read from every
// slice's (2 x BLOCK_M x BLOCK_N x 4 bytes at `smem_bw_sm`, the SM's shared-memory rate), and the two cluster
// barriers around the sum; added to the body, with a note.
void add_cluster_sum(plan::Cost& c, int64_t bm, int64_t bn, const Sm90Schedule& sched, const Sm90Share& share,
                     double smem_bw_sm, bool notes);

// The note on the busiest CTA's fix-up (split-K with or without the shared sum, or stream-K).
void add_fixup_note(plan::Cost& c, const Sm90Schedule& sched, const Sm90Share& share, const Fixup& fix);

}  // namespace tileforge::cuda::sm90_fixup
