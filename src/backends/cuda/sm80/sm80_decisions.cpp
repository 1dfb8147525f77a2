// The sm80 family's decision log: each choice of a served plan under its layer, with the analysis's and the cost
// model's numbers.
#include "backends/cuda/sm80/sm80_decisions.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cuda/sm80/sm80_cost_constants.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "core/int_math.hpp"
#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda {

using namespace sm80_constants;
using namespace plan;

namespace {

// Parameter adaptation: the warps' layout, registers and occupancy, and the accumulator type.
void explain_adaptation(plan::Plan& plan) {
  const Config& c = plan.ranked.front().config;
  const Cost& cost = plan.ranked.front().cost;
  const Problem& q = plan.problem;
  const int64_t bm = c.at("BLOCK_M"), bn = c.at("BLOCK_N"), wm = c.at("WARPS_M"), wn = c.at("WARPS_N");
  const std::string L3(kLayers[3]);
  plan.log.add(L3,
               fmt::format("WARPS_M={}, WARPS_N={}: {} threads, warp tile {}x{}", wm, wn, cuda::sm80_threads(c), bm / wm,
                           bn / wn),
               fmt::format("an estimated {} registers per thread ({} accumulators); {} block(s) per SM, limited by {}",
                           cuda::sm80_register_estimate(c, plan.profile.arch), (bm / wm) * (bn / wn) / 32, cost.occupancy,
                           cost.occupancy_limit),
               neighbours_of(plan, {"WARPS_M", "WARPS_N"}));
  plan.log.add(L3, fmt::format("accumulate in {}", to_string(q.precision.accum)),
               "the problem's precision policy: the planner never changes it");
}

// SPLIT_K and STREAM_K where declared (SPLIT_K unless TILEFORGE_SM80_SPLIT_K=0), else, on a grid that leaves most SMs
// idle, why split-K is not offered.
void explain_split_k(plan::Plan& plan, const Config& c, const WaveAnalysis& w) {
  const std::string L1(kLayers[1]);
  if (sm80_stream_k(c)) {
    const Sm80StreamK s = sm80_stream_k_schedule(plan.problem, c, sm80_stream_k_workers(c, plan.profile));
    const std::string why =
        s.sk_tiles == 0
            ? fmt::format("a persistent grid of {} blocks (one wave) walking {} whole tiles round-robin: the tiles fill "
                          "whole waves, so none is shared",
                          s.workers, s.tiles)
            : fmt::format("a persistent grid of {} blocks (one wave): {} whole tiles dealt round-robin, then the {} "
                             "k-blocks of the last {} tiles in equal runs of about {}; the pieces of a shared tile are "
                             "stored as f32 partials and summed in block order by the last to arrive (deterministic: "
                             "bit-identical from run to run); workspace {} (the caller's stream's own)",
                             s.workers, s.tiles - s.sk_tiles, s.sk_tiles * s.k_blocks, s.sk_tiles,
                             cdiv(s.sk_tiles * s.k_blocks, s.workers),
                             fmtx::bytes(double(sm80_workspace(plan.problem, c, s.workers).workspace_bytes)));
    plan.log.add(L1, "SPLIT_K=1, STREAM_K=1", why, neighbours_of(plan, {"SPLIT_K", "STREAM_K"}));
  } else if (const std::optional<int64_t> split = c.get("SPLIT_K")) {
    plan.log.add(L1, fmt::format("SPLIT_K={}", *split),
                 *split > 1 ? fmt::format("{} blocks: {} output tiles x {} slices of K, each of {} k-steps; every slice "
                                          "stores an f32 partial tile, the last to arrive sums them in slice order "
                                          "(deterministic: bit-identical from run to run); workspace {} (the caller's "
                                          "stream's own)",
                                          w.tiles, w.tiles / *split, *split, w.k_steps,
                                          fmtx::bytes(double(sm80_workspace(plan.problem, c).workspace_bytes)))
                            : fmt::format("whole K per block: {} tiles for {} SMs", w.tiles, w.cores),
                 neighbours_of(plan, {"SPLIT_K", "STREAM_K"}));
  } else if (w.waves == 1 && w.last_wave_fill < 0.5) {
    plan.log.add(L1, "SPLIT_K: not declared (TILEFORGE_SM80_SPLIT_K=0 took it out)",
                 fmt::format("only {} tiles for {} SMs: split-K would put the idle SMs to work along K", w.tiles,
                             w.cores),
                 fmt::format("{} of the SMs stay idle", fmtx::pct(1.0 - double(w.tiles) / double(w.cores))));
  }
}

}  // namespace

void sm80_explain(plan::Plan& plan) {
  const Candidate& best = plan.ranked.front();
  const Config& c = best.config;
  const Cost& cost = best.cost;
  const hw::HwProfile& hw = plan.profile;
  const Problem& q = plan.problem;
  const int64_t bm = c.at("BLOCK_M"), bn = c.at("BLOCK_N"), bk = c.at("BLOCK_K"), wm = c.at("WARPS_M"),
                wn = c.at("WARPS_N"), st = c.at("STAGES"), gm = c.at("GROUP_M");
  const double in = double(size_of(q.precision.input));
  const bool hopper = hw.has("wgmma");
  const double share = hopper ? kMmaSyncShareWithWgmma : kMmaSyncShareNative;
  const double peak = plan.roofline.peak.tflops.value_or(0);
  const std::string L0(kLayers[0]), L1(kLayers[1]), L2(kLayers[2]), L3(kLayers[3]);

  // ---- hardware mapping
  plan.log.add(L0, fmt::format("mma.sync.m16n8k16 ({} inputs, f32 accumulators), fragments by ldmatrix",
                               to_string(q.precision.input)),
               hopper ? fmt::format("the sm80 family's tensor-core path; {}'s {:g} TFLOP/s dense peak assumes wgmma, "
                                    "and mma.sync reaches about {} of it (the sm90 family uses wgmma)",
                                    hw.name, peak, fmtx::pct(share))
                      : fmt::format("the native tensor-core instruction of {}; the model credits it with {} of the "
                                    "{:g} TFLOP/s dense peak",
                                    hw.arch, fmtx::pct(share), peak),
               fmt::format("compute term {} ({} of peak with this tile and {} warps per SM)", fmtx::time(cost.compute_s),
                           fmtx::pct(cost.compute_share), std::min<int64_t>(cost.occupancy, cost.waves.max_tiles_per_core) * wm * wn));
  plan.log.add(L0, fmt::format("VEC_BYTES={}, COPY_AB={}", c.at("VEC_BYTES"), c.at("COPY_AB")),
               plan.paths.vector_reason +
                   (c.at("COPY_AB") ? "; A and B are first copied into 16-byte-aligned buffers (the copy is timed)"
                                    : (c.at("VEC_BYTES") >= 4 ? fmt::format("; cp.async copies {} B per instruction", c.at("VEC_BYTES"))
                                                              : "; 2-byte loads go through registers (no 2-byte cp.async)")),
               neighbours_of(plan, {"VEC_BYTES", "COPY_AB"}));
  plan.log.add(L0, "TMA: not used",
               fmt::format("{}; the sm80 family loads with cp.async (TMA is the sm90 family's)",
                           plan.paths.tma_reason));
  if (const LevelTime* s = find_level(cost, "shared memory")) {
    plan.log.add(L0, "shared-memory tiles in a 128-byte XOR swizzle of 16-byte chunks",
                 "ldmatrix reads eight rows of one 16-byte column per phase; the swizzle puts them in eight disjoint "
                 "groups of four banks, so reads are conflict-free (fixed by the family)",
                 fmt::format("shared-memory term {} at {:g} B/cycle/SM ({} of the body)", fmtx::time(s->seconds),
                             hw.smem_bytes_per_core_cycle, fmtx::pct(s->seconds / cost.body_s)));
  }

  // ---- data scheduling
  const WaveAnalysis& w = cost.waves;
  plan.log.add(L1, fmt::format("BLOCK_M={}, BLOCK_N={}", bm, bn), waves_text(w, q.batch, "SMs"),
               neighbours_of(plan, {"BLOCK_M", "BLOCK_N"}));
  const double stage_bytes = double((bm + bn) * bk) * in;
  const LevelTime* l2 = find_level(cost, "L2");
  plan.log.add(L1, fmt::format("BLOCK_K={}", bk),
               fmt::format("{} k-steps of {} (tail waste K {}); one stage holds {} of A and B; each block reads "
                           "{} per k-step from L2 ({} in all: {})",
                           w.k_steps, bk, fmtx::pct(w.waste_k), fmtx::bytes(stage_bytes), fmtx::bytes(stage_bytes),
                           l2 ? fmtx::bytes(l2->bytes) : "?", l2 ? fmtx::time(l2->seconds) : "?"),
               neighbours_of(plan, {"BLOCK_K"}));
  const double min_ab = plan.roofline.bytes_a + plan.roofline.bytes_b;
  const LevelTime* hbm = find_level(cost, "HBM");
  const hw::CacheLevel* l2c = hw.cache(2);
  plan.log.add(L1, fmt::format("GROUP_M={}", gm),
               fmt::format("group-M raster: {} row-blocks walked column by column, so blocks resident together share A "
                           "rows and B columns in L2 ({} usable of {}); DRAM traffic {} (A and B once: {})",
                           gm, l2c ? fmtx::bytes(double(l2c->size_bytes) * kL2UsableShare) : "?",
                           l2c ? fmtx::bytes(double(l2c->size_bytes)) : "?", hbm ? fmtx::bytes(hbm->bytes) : "?",
                           fmtx::bytes(min_ab)),
               neighbours_of(plan, {"GROUP_M"}));
  explain_split_k(plan, c, w);

  // ---- compute pipeline
  const int64_t active = std::min<int64_t>(cost.occupancy, w.max_tiles_per_core);
  const double in_flight = double(active) * double(std::max<int64_t>(1, st - 1)) * stage_bytes;
  const double per_kstep = 2.0 * double(bm * bn * bk) / (peak * 1e12 * share / std::max(1, hw.cores));
  plan.log.add(L2, fmt::format("STAGES={}", st),
               fmt::format("Little's law: {} stage(s) in flight x {} x {} block(s) per SM over a loaded latency of {} "
                           "allow {} per SM; one block consumes {} per k-step of {} ({}); shared memory {} per block "
                           "of {}",
                           st - 1, fmtx::bytes(stage_bytes), active, fmtx::time(kLoadedLatencySeconds),
                           fmtx::rate(in_flight / kLoadedLatencySeconds), fmtx::bytes(stage_bytes),
                           fmtx::time(per_kstep), fmtx::rate(double(active) * stage_bytes / per_kstep),
                           fmtx::bytes(double(cuda::sm80_smem_bytes(c))),
                           fmtx::bytes(double(hw.smem_per_block_bytes))),
               neighbours_of(plan, {"STAGES"}));
  const int64_t rounds = cdiv(w.max_tiles_per_core, cost.occupancy);
  plan.log.add(L2, "one tile per block, no warp specialization, no persistent blocks",
               fmt::format("the sm80 family is a multistage cp.async kernel; each round of resident blocks pays a "
                           "prologue (loaded latency + {} more stages): {} rounds on the busiest SM",
                           st - 1, rounds),
               fmt::format("pipeline fill {} ({} of the prediction)", fmtx::time(cost.fill_s),
                           fmtx::pct(cost.fill_s / cost.seconds)));

  // ---- parameter adaptation
  explain_adaptation(plan);
}

}  // namespace tileforge::cuda
