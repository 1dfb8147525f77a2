// The sm90 family's decision log: each choice of a served plan under its layer, with the analysis's and the cost
// model's numbers.
#include "backends/cuda/sm90/sm90_decisions.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cuda/sm90/sm90_cost_constants.hpp"
#include "backends/cuda/sm90/sm90_cost_model.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "core/int_math.hpp"
#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda {

using namespace sm90_constants;
using namespace plan;

namespace {

// What every layer's entries read: the choice, the problem and the chip, and the numbers derived from them.
struct Facts {
  explicit Facts(const plan::Plan& plan)
      : best(plan.ranked.front()), c(best.config), cost(best.cost), hw(plan.profile), q(plan.problem),
        bm(c.at("BLOCK_M")), bn(c.at("BLOCK_N")), bk(c.at("BLOCK_K")), st(c.at("STAGES")), cons(c.at("CONSUMERS")),
        cm(c.at("CLUSTER_M")), cn(c.at("CLUSTER_N")), gm(c.at("GROUP_M")), epi(c.at("EPILOGUE")),
        split(c.at("EPI_SPLIT")), stm(c.at("STMATRIX")), in(double(size_of(q.precision.input))),
        out(double(size_of(q.precision.output))), peak(plan.roofline.peak.tflops.value_or(0)),
        sms(std::max(1, hw.cores)), grid(sm90_grid(q, c, hw)), cs(cm * cn),
        sched(sm90_schedule(q, c, sm90_resident_clusters(hw, cs))), busiest(sm90_share(sched)),
        share(kWgmmaShare * (cons == 1 ? kOneConsumerShare : 1.0)), stage_bytes(double((bm + bn) * bk) * in) {}
  const Candidate& best;
  const Config& c;
  const Cost& cost;
  const hw::HwProfile& hw;
  const Problem& q;
  const int64_t bm, bn, bk, st, cons, cm, cn, gm, epi, split, stm;
  const double in, out, peak;
  const int sms;
  const Sm90Grid grid;
  const int64_t cs;
  const Sm90Schedule sched;  // the config's work decomposition (whole tiles, split-K or stream-K)
  const Sm90Share busiest;   // the busiest CTA's share of it
  const double share;        // of the dense peak the model credits wgmma with
  const double stage_bytes;  // A and B of one stage
};


// Hardware mapping: the instruction, the loads, the cluster and the epilogue.
void explain_mapping(plan::Plan& plan, const Facts& f) {
  const Cost& cost = f.cost;
  const hw::HwProfile& hw = f.hw;
  const Problem& q = f.q;
  const int64_t bm = f.bm, bn = f.bn, cons = f.cons, cm = f.cm, cn = f.cn, epi = f.epi, stm = f.stm, cs = f.cs;
  const double out = f.out, peak = f.peak, share = f.share;
  const Sm90Grid& grid = f.grid;
  const std::string L(kLayers[0]);
  // ---- hardware mapping
  plan.log.add(L,
               fmt::format("wgmma.mma_async m64n{}k16 ({} inputs from shared memory by descriptor, {} accumulators "
                           "in registers)",
                           bn, to_string(q.precision.input), to_string(q.precision.accum)),
               fmt::format("{}'s tensor-core instruction (the chip record lists wgmma); the model credits it with {} "
                           "of the {:g} TFLOP/s dense peak between k-step barriers ({} consumer warpgroup{})",
                           hw.name, fmtx::pct(share), peak, cons, cons > 1 ? "s" : ""),
               fmt::format("compute term {} ({} of peak over the busiest SM's main loops)", fmtx::time(cost.compute_s),
                           fmtx::pct(cost.compute_share)));
  if (const std::optional<int64_t> swap = f.c.get("SWAP_AB")) {
    plan.log.add(L, fmt::format("SWAP_AB={}", *swap),
                 *swap ? fmt::format("the kernel runs C^T = B^T A^T and writes C column by column: M = {} lies along "
                                     "the wgmma's N in {}-row tiles ({} of them, {} rows past M), N = {} along its "
                                     "64-row blocks in {}-column tiles",
                                     q.m, bn, cdiv(q.m, bn), cdiv(q.m, bn) * bn - q.m, q.n, bm)
                       : fmt::format("the kernel runs C = A B as given: M = {} in {}-row tiles of 64-row wgmma "
                                     "blocks, N = {} along the wgmma's N",
                                     q.m, bm, q.n),
                 neighbours_of(plan, {"SWAP_AB"}));
  }
  plan.log.add(L, "TMA loads (cp.async.bulk.tensor, 128-byte swizzle) completing on mbarriers",
               fmt::format("{}; one thread of the producer warpgroup issues every copy, the tensor maps are built per "
                           "call from the pointers and leading dimensions (all four layouts through the wgmma "
                           "descriptors' transpose bits, no copy)",
                           plan.paths.tma_reason));
  {
    std::string reason;
    if (cs == 1) {
      reason = "no cluster: each CTA loads its own A and B tiles";
    } else {
      // Who shares what: the CLUSTER_M CTAs of a cluster column one B tile, the CLUSTER_N of a row one A tile.
      std::vector<std::string> shared;
      if (cm > 1) shared.push_back(fmt::format("the {} CTAs of a column share a B tile (L2 reads of B 1/{})", cm, cm));
      if (cn > 1) shared.push_back(fmt::format("the {} CTAs of a row share an A tile (L2 reads of A 1/{})", cn, cn));
      reason = fmt::format("clusters of {} CTAs ({}x{}): {}; each copies its part of a shared tile (a box of its rows, "
                           "or 8-row atoms dealt out where the rows do not divide into whole atoms) and multicasts it; "
                           "each k-step waits for every CTA's release of the stage (+{} of its tensor time in the "
                           "model)",
                           cs, cm, cn, fmt::join(shared, ", "), fmtx::pct(kClusterStepShare));
    }
    const LevelTime* l2 = find_level(cost, "L2");
    plan.log.add(L, fmt::format("CLUSTER_M={}, CLUSTER_N={}", cm, cn), reason,
                 fmt::format("L2 term {}; {}", l2 ? fmtx::time(l2->seconds) : "?",
                             neighbours_of(plan, {"CLUSTER_M", "CLUSTER_N"})));
  }
  {
    std::string reason;
    if (q.beta != 0.0) {
      reason = "beta != 0: every epilogue stores from registers and reads C (the TMA-store epilogues take the direct "
               "path at run time)";
    } else if (epi == kSm90EpilogueDirect) {
      reason = fmt::format("direct stores of 2-element pairs from the accumulator registers ({:g} B/cycle/SM in the "
                           "model)",
                           kEpilogueDirectBytesPerSmCycle);
    } else {
      reason = fmt::format("the tile is converted to {}, written to a swizzled staging tile in shared memory ({}) and "
                           "stored by TMA ({:g} B/cycle/SM in the model){}",
                           to_string(q.precision.output), stm ? "stmatrix, four 8x8 blocks per instruction"
                                                              : "32-bit shared stores",
                           kEpilogueTmaBytesPerSmCycle,
                           epi == kSm90EpilogueDeferred ? "; deferred under the next tile's first wgmma groups" : "");
    }
    const double epi_tile_bytes = double(bm * bn) * out;
    plan.log.add(L, fmt::format("EPILOGUE={}, STMATRIX={}", epi, stm), reason,
                 fmt::format("{} tiles of {} on the busiest SM; {}", grid.tiles_per_cta, fmtx::bytes(epi_tile_bytes),
                             neighbours_of(plan, {"EPILOGUE", "STMATRIX"})));
  }

}

// Data scheduling: the tile, BLOCK_K, the walk, the staging split and how K is shared.
void explain_scheduling(plan::Plan& plan, const Facts& f) {
  const Config& c = f.c;
  const Cost& cost = f.cost;
  const hw::HwProfile& hw = f.hw;
  const Problem& q = f.q;
  const int64_t bm = f.bm, bn = f.bn, bk = f.bk, st = f.st, cm = f.cm, cn = f.cn, gm = f.gm, epi = f.epi, split = f.split, cs = f.cs;
  const double in = f.in, stage_bytes = f.stage_bytes;
  const int sms = f.sms;
  const Sm90Grid& grid = f.grid;
  const std::string L(kLayers[1]);
  // ---- data scheduling
  const WaveAnalysis& w = cost.waves;
  plan.log.add(L, fmt::format("BLOCK_M={}, BLOCK_N={}", bm, bn),
               fmt::format("{} x {} = {} cluster tiles of {}x{} over {} persistent cluster(s) of {} (one CTA per SM): "
                           "the busiest CTA runs {} tiles ({:.2f} on average); tail waste M {}, N {}",
                           cdiv(q.m, bm * cm), cdiv(q.n, bn * cn), grid.cluster_tiles, bm * cm, bn * cn, grid.clusters,
                           cs, grid.tiles_per_cta, double(grid.cluster_tiles) / double(std::max<int64_t>(1, grid.clusters)),
                           fmtx::pct(w.waste_m), fmtx::pct(w.waste_n)),
               neighbours_of(plan, {"BLOCK_M", "BLOCK_N"}));
  const LevelTime* l2 = find_level(cost, "L2");
  plan.log.add(L, fmt::format("BLOCK_K={}", bk),
               fmt::format("one 128-byte swizzle row of {}-byte elements (fixed by the family): {} k-steps (tail waste K "
                           "{}); one stage holds {} of A and B; the L2 serves {} in all ({})",
                           int(in), w.k_steps, fmtx::pct(w.waste_k), fmtx::bytes(stage_bytes),
                           l2 ? fmtx::bytes(l2->bytes) : "?", l2 ? fmtx::time(l2->seconds) : "?"));
  const double min_ab = plan.roofline.bytes_a + plan.roofline.bytes_b;
  const LevelTime* hbm = find_level(cost, "HBM");
  const hw::CacheLevel* l2c = hw.cache(2);
  plan.log.add(L, fmt::format("GROUP_M={}", gm),
               fmt::format("{}: the {} clusters in flight walk consecutive tiles, so they share A rows and B columns in "
                           "L2 ({} of it); DRAM traffic {} (A and B once: {})",
                           gm == 0  ? std::string("a generalized Hilbert curve over the whole grid of tiles")
                           : gm > 1 ? fmt::format("grouped order, {} tile rows walked column by column", gm)
                                    : std::string("row-major order"),
                           grid.clusters, l2c ? fmtx::bytes(double(l2c->size_bytes)) : "?",
                           hbm ? fmtx::bytes(hbm->bytes) : "?", fmtx::bytes(min_ab)),
               neighbours_of(plan, {"GROUP_M"}));
  plan.log.add(L, fmt::format("EPI_SPLIT={}", split),
               fmt::format("shared memory {} per block of {}: {} stages of {}{}", fmtx::bytes(double(sm90_smem_bytes(c))),
                           fmtx::bytes(double(hw.smem_per_block_bytes)), st, fmtx::bytes(stage_bytes),
                           epi != kSm90EpilogueDirect
                               ? fmt::format(" and a staging tile of {}",
                                             fmtx::bytes(double(bm * bn * 2 / sm90_epi_rounds(sm90_consumer_cols(c), split))))
                               : std::string()),
               neighbours_of(plan, {"EPI_SPLIT"}));
  {
    const Sm90Schedule& sched = f.sched;
    const Sm90Share& busiest = f.busiest;
    const int64_t sk = c.get("SPLIT_K").value_or(1), stk = c.get("STREAM_K").value_or(0);
    std::string what, reason;
    if (sched.shared_sum) {
      reason = fmt::format("{} tiles x {} slices of K = {} work units for {} clusters, one each (a cooperative "
                           "launch): each slice runs {} of the {} k-blocks and stores an f32 partial tile; once all {} "
                           "are stored, each sums its 1/{} of the tile from them in slice order and writes it "
                           "(deterministic: bit-identical from run to run)",
                           sched.cluster_tiles, sk, sched.cluster_tiles * sk, sched.clusters, cdiv(sched.k_blocks, sk),
                           sched.k_blocks, sk, sk);
    } else if (sk > 1) {
      reason = fmt::format("{} tiles x {} slices of K = {} work units for {} clusters: each slice runs {} of the {} "
                           "k-blocks, stores an f32 partial tile, and the tile's last slice sums all {} in slice order "
                           "(deterministic: bit-identical from run to run)",
                           sched.cluster_tiles, sk, sched.cluster_tiles * sk, sched.clusters, cdiv(sched.k_blocks, sk),
                           sched.k_blocks, sk);
    } else if (stk) {
      reason = sched.sk_tiles == 0
                   ? fmt::format("stream-K with {} tiles in whole waves of {} clusters: nothing to share", sched.cluster_tiles,
                                 sched.clusters)
                   : fmt::format("stream-K: {} whole tiles round-robin, then the last {} tiles' {} k-blocks shared out "
                                 "evenly, {} per cluster; a tile's slices are summed in k order by the last to arrive "
                                 "(deterministic)",
                                 sched.cluster_tiles - sched.sk_tiles, sched.sk_tiles, sched.sk_tiles * sched.k_blocks,
                                 cdiv(sched.sk_tiles * sched.k_blocks, sched.clusters));
    } else {
      reason = fmt::format("whole tiles: {} tiles over {} clusters, the busiest runs {} ({} of {} SMs busy)",
                           sched.cluster_tiles, sched.clusters, busiest.units,
                           std::min<int64_t>(sms, sched.clusters * cs), sms);
    }
    if (sched.atomic_sum) {
      // REDUCE 1 replaces the ordered sum the reasons above describe.
      reason += fmt::format("; REDUCE=1: the slices add their partials into one f32 sum tile per tile by float "
                            "atomics in the order they arrive (not bit-identical from run to run: the "
                            "non-deterministic policy), and the last reads that one tile back");
    }
    plan.log.add(L, fmt::format("SPLIT_K={}, STREAM_K={}", sk, stk), reason,
                 fmt::format("busiest CTA: {} k-steps, {} partial tile(s) stored and {} read back; workspace {} "
                             "(the caller's stream's own); {}",
                             busiest.k_steps, busiest.partials_written, busiest.partials_read,
                             fmtx::bytes(double(sched.workspace_bytes)),
                             neighbours_of(plan, {"SPLIT_K", "STREAM_K", "REDUCE"})));
  }

}

// Compute pipeline: the stages against the loaded latency, and warp specialization.
void explain_pipeline(plan::Plan& plan, const Facts& f) {
  const Cost& cost = f.cost;
  const int64_t bm = f.bm, bn = f.bn, bk = f.bk, st = f.st, cons = f.cons;
  const double peak = f.peak, share = f.share, stage_bytes = f.stage_bytes;
  const int sms = f.sms;
  const Sm90Grid& grid = f.grid;
  const std::string L(kLayers[2]);
  // ---- compute pipeline
  const double in_flight = double(std::max<int64_t>(1, st - 1)) * stage_bytes;
  const double rate_sm = peak * 1e12 * share / double(sms);
  const double per_kstep = 2.0 * double(bm * bn * bk) / rate_sm;
  // The latency the price waited on (the L2's, DRAM's under load, or a mix: latency_seconds in the cost model), read
  // back from its term over the busiest CTA's k-steps.
  const int64_t steps = f.busiest.k_steps;
  const double latency =
      steps > 0 && cost.latency_s > 0 ? cost.latency_s * double(std::max<int64_t>(1, st - 1)) / double(steps)
                                      : kLoadedLatencySeconds;
  plan.log.add(L, fmt::format("STAGES={}", st),
               fmt::format("Little's law: {} stage(s) in flight x {} over a loaded latency of {} allow {} per SM; the "
                           "consumers take {} per k-step of {} ({})",
                           st - 1, fmtx::bytes(stage_bytes), fmtx::time(latency),
                           fmtx::rate(in_flight / latency), fmtx::bytes(stage_bytes),
                           fmtx::time(per_kstep), fmtx::rate(stage_bytes / per_kstep)),
               fmt::format("latency term {}; {}", fmtx::time(cost.latency_s), neighbours_of(plan, {"STAGES"})));
  plan.log.add(L,
               fmt::format("warp specialization: 1 producer + {} consumer warpgroup{}, persistent grid of {} CTAs", cons,
                           cons > 1 ? "s" : "", grid.ctas),
               fmt::format("the producer streams stages through the full/empty mbarrier ring while the consumers run "
                           "wgmma (one group in flight behind the one issued); each CTA pays one pipeline fill and "
                           "walks its tiles (cluster id, then + {} clusters)",
                           grid.clusters),
               fmt::format("pipeline fill {} ({} of the prediction), launch {}", fmtx::time(cost.fill_s),
                           fmtx::pct(cost.fill_s / cost.seconds), fmtx::time(cost.overhead_s)));

}

// Parameter adaptation: the consumer warpgroups, registers and the accumulator type.
void explain_adaptation(plan::Plan& plan, const Facts& f) {
  const Config& c = f.c;
  const hw::HwProfile& hw = f.hw;
  const Problem& q = f.q;
  const int64_t bm = f.bm, cons = f.cons;
  const std::string L(kLayers[3]);
  // ---- parameter adaptation
  const int preg = sm90_producer_regs(c), creg = sm90_consumer_regs(c);
  plan.log.add(L,
               c.get("CONSUMER_COLS").value_or(0) != 0
                   ? fmt::format("CONSUMERS={}, CONSUMER_COLS=1: {} threads, {} columns of all {} rows per consumer "
                                 "warpgroup",
                                 cons, sm90_threads(c), sm90_consumer_cols(c), bm)
               : c.get("CONSUMER_K").value_or(0) != 0
                   ? fmt::format("CONSUMERS={}, CONSUMER_K=1: {} threads, the whole {}x{} tile per consumer warpgroup, "
                                 "every other k-block each; the second hands its partial tile to the first",
                                 cons, sm90_threads(c), bm, sm90_consumer_cols(c))
                   : fmt::format("CONSUMERS={}: {} threads, {} rows per consumer warpgroup", cons, sm90_threads(c),
                                 bm / cons),
               fmt::format("{} {} per consumer thread; {}; one CTA per SM, limited by the persistent design",
                           q.precision.accum == DType::f16 ? sm90_accumulators(c) / 2 : sm90_accumulators(c),
                           q.precision.accum == DType::f16 ? "registers of f16 accumulator pairs" : "f32 accumulators",
                           preg > 0 ? fmt::format("setmaxnreg: producer {} and consumers {} registers ({} of {} per SM)",
                                                  preg, creg, sm90_register_budget(c), hw.registers_per_core)
                                    : std::string("no setmaxnreg: 256 threads may use 255 registers each")),
               neighbours_of(plan, {"CONSUMERS"}));
  plan.log.add(L, fmt::format("accumulate in {}", to_string(q.precision.accum)),
               q.precision.accum == DType::f16
                   ? "the problem's precision policy (opt-in, f16 inputs): wgmma .f16 accumulators at the f32 "
                     "accumulators' rate on this chip, half their registers; split-K partials are still summed in f32. "
                     "The planner never changes the policy"
                   : "the problem's precision policy: the planner never changes it");
}

}  // namespace

void sm90_explain(plan::Plan& plan) {
  const Facts f(plan);
  explain_mapping(plan, f);
  explain_scheduling(plan, f);
  explain_pipeline(plan, f);
  explain_adaptation(plan, f);
}

}  // namespace tileforge::cuda
