// The sm90 family's cost model: the persistent grid, the main loop's terms, epilogue, fill and launch.
#include "backends/cuda/sm90/sm90_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "backends/cuda/kernels/sm90/schedule.cuh"
#include "backends/cuda/sm90/sm90_cost_constants.hpp"
#include "backends/cuda/sm90/sm90_epilogue_cost.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "backends/cuda/sm90/sm90_fixup_cost.hpp"
#include "core/int_math.hpp"
#include "plan/cost_constants.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda {
namespace {

using namespace sm90_constants;
using plan::Cost;
namespace fmtx = plan::fmtx;
using sm90_fixup::Fixup;
using sm90_fixup::add_cluster_sum;
using sm90_fixup::add_fixup_note;
using sm90_fixup::fixup_seconds;
using sm90_epilogue::epilogue_seconds;

// A parameter as the model reads it: `fallback` when unset or below 1.
int64_t param(std::optional<int64_t> v, int64_t fallback) { return v && *v > 0 ? *v : fallback; }

// DRAM bytes of A and B for the persistent walk: clusters in flight at once, each one panel pair (memoized per
// cluster size in `cache`).
double operand_dram_bytes(const Problem& q, const hw::HwProfile& profile, int64_t bm, int64_t bn, int64_t cm,
                          int64_t cn, int64_t group_m, Sm90CostCache* cache) {
  const int64_t cs = cm * cn;
  DramCache local;
  DramCache* memo = cache ? &cache->dram[int(cs)] : &local;
  const int64_t clusters = sm90_resident_clusters(profile, cs);
  return operand_dram_bytes_in_flight(q, profile, clusters, bm * cm, bn * cn, group_m, 1, memo);
}

// A parameter of a partial config as cost() reads it (`fallback` for a value below 1), or nothing when not set.
std::optional<int64_t> set_param(std::optional<int64_t> v, int64_t fallback) {
  return v ? std::optional<int64_t>(*v > 0 ? *v : fallback) : std::nullopt;
}

Sm90Grid grid_of(const Problem& q, const Sm90ConfigView& c, const hw::HwProfile& profile) {
  const int64_t bm = param(c.block_m, 128), bn = param(c.block_n, 128);
  const int64_t cm = param(c.cluster_m, 1), cn = param(c.cluster_n, 1), cs = cm * cn;
  Sm90Grid g;
  g.cluster_tiles = cdiv(q.m, bm * cm) * cdiv(q.n, bn * cn);
  g.clusters = std::min<int64_t>(g.cluster_tiles, sm90_resident_clusters(profile, cs));
  g.ctas = g.clusters * cs;
  g.tiles_per_cta = g.clusters > 0 ? cdiv(g.cluster_tiles, g.clusters) : 0;
  return g;
}

// The main loop's slowdown from the persistent walk's order (GROUP_M; unset: none, as a bound needs): a row-major
// walk whose clusters in flight span more than one tile row, and the Hilbert walk.
double walk_slowdown(std::optional<int64_t> group_m, int64_t clusters, int64_t tiles_n) {
  if (!group_m) return 1.0;
  if (*group_m == 0) return kHilbertWalkSlowdown;
  return *group_m == 1 && clusters > tiles_n ? kRowMajorWalkSlowdown : 1.0;
}

// The main loop's terms, shared by sm90_cost and sm90_cost_bound so that the bound prices each term as the cost does.

// The chip record's numbers the main loop's terms read.
struct ChipRates {
  double peak_tflops = 0;  // the dense MMA peak for the problem's precision
  int sms = 1;
  double clock = 0;                    // the SM clock, Hz
  double smem_rate = 0, l2_rate = 0;   // shared-memory and L2 bytes per SM per cycle
};

// The CTA's tile and the cluster's shape.
struct TileShape {
  int64_t bm = 128, bn = 128, bk = 64, cm = 1, cn = 1;
  // Consumer warpgroups that read each m64 block of A from shared memory: CONSUMERS where they split BLOCK_N
  // (CONSUMER_COLS 1: each multiplies the whole A tile by its columns of B), else 1.
  int64_t a_readers = 1;
  // CONSUMER_K: two consumer warpgroups take turns at the k-steps of the same tile (each waits on and releases
  // only every other stage). Measured on an H100 (2026-12-07), the turns overlap nothing: a K-split tile ran 1-15%
  // slower than the same tile with one consumer, so it is priced as one consumer's.
  bool consumer_k = false;
};

// COPY_AB copies the operands it names (1 both, 2 A, 3 B) whose rows are not on 32-byte sectors (assuming aligned
// bases), with one extra kernel each that reads and writes it; the others, and all with COPY_AB 0, are read in
// place.
struct OperandCopies {
  bool a = false, b = false;
  double bytes = 0, seconds = 0;  // moved by the copies, and their time with their launches
};
OperandCopies operand_copies(const Problem& q, const hw::HwProfile& profile, bool a_off, bool b_off, int64_t copy_ab,
                             double in) {
  OperandCopies c;
  c.a = a_off && (copy_ab == 1 || copy_ab == 2);
  c.b = b_off && (copy_ab == 1 || copy_ab == 3);
  if (!c.a && !c.b) return c;
  c.bytes = 2.0 * ((c.a ? double(q.m) * double(q.k) : 0.0) + (c.b ? double(q.k) * double(q.n) : 0.0)) * in;
  c.seconds = c.bytes / (profile.mem_bandwidth_gbps * 1e9 * kCopyBandwidthShare) +
              double(int(c.a) + int(c.b)) * kGpuLaunchSeconds;
  return c;
}

// A k-step of a CTA in a cluster waits for every CTA's release of the stage: the share it adds to the step.
double cluster_step_factor(const TileShape& t) { return t.cm * t.cn > 1 ? 1.0 + kClusterStepShare : 1.0; }

// The TMA unit's time per k-step on one SM where an operand is read in place with rows off the sectors: the
// producer issues each stage as 128-byte box rows (BLOCK_M / CLUSTER_N of A and BLOCK_N / CLUSTER_M of B: a cluster
// shares a tile, each CTA copying its part), and a row off the sectors spans two 128-byte lines and five sectors,
// which takes the unit about twice as long as an aligned row. A stream of its own beside the tensor work: bigger
// tiles and clusters issue fewer rows per MAC. Zero where every operand read is on the sectors.
double tma_rows_seconds(const TileShape& t, bool a_slow, bool b_slow, double clock) {
  if (!a_slow && !b_slow) return 0;
  const double rows_a = double(t.bm) / double(t.cn), rows_b = double(t.bn) / double(t.cm);
  const double cycles = rows_a * (a_slow ? kTmaRowOffSectorsCycles : kTmaRowCycles) +
                        rows_b * (b_slow ? kTmaRowOffSectorsCycles : kTmaRowCycles);
  return cycles / clock * cluster_step_factor(t);
}

// The main loop's loss where the TMA-row stream and the tensor work are close: kTmaCouplingShare of the shorter over
// the stages in flight (the ring's depth absorbs the jitter of each). Zero where no operand is read with rows off.
double tma_coupling_seconds(double compute_s, double tma_s, int64_t stages) {
  if (tma_s <= 0) return 0;
  return kTmaCouplingShare * std::min(compute_s, tma_s) / double(std::max<int64_t>(1, stages - 1));
}

// The price's coupling step: tma_coupling_seconds joins the body, and with notes is said.
void add_tma_coupling(Cost& c, double tma_s, int64_t stages, bool notes) {
  const double coupling_s = tma_coupling_seconds(c.compute_s, tma_s, stages);
  c.body_s += coupling_s;
  if (notes && coupling_s > 0) {
    c.notes.push_back(fmt::format("the TMA rows and the tensor work share the ring of {} stages: {} more main loop",
                                  stages, fmtx::time(coupling_s)));
  }
}

// Main loop of one k-step on one SM: the wgmma work at the family's share of the dense peak, or the shared-memory
// traffic of its operands if it takes longer (each m64 row block reads 64 x BLOCK_K of A and BLOCK_K x BLOCK_N of
// B; the TMA writes the stage), plus the fixed issue and barrier cycles; a CTA of a cluster also waits for its partner. `walk` is the slowdown
// of the walk's order (walk_slowdown).
struct KStep {
  double tensor_s = 0;                 // the wgmma work
  double smem_bytes = 0, smem_s = 0;   // the operands' shared-memory reads and TMA writes, and their time
  double seconds = 0;                  // the k-step
};
KStep k_step(const ChipRates& chip, const TileShape& t, bool one_consumer, double in, double walk) {
  KStep s;
  const bool single = one_consumer || t.consumer_k;  // CONSUMER_K: one warpgroup's wgmmas at a time
  const double rate_sm =
      chip.peak_tflops * 1e12 / double(chip.sms) * kWgmmaShare * (single ? kOneConsumerShare : 1.0);
  s.tensor_s = 2.0 * double(t.bm * t.bn * t.bk) / rate_sm;
  s.smem_bytes =
      (double(t.bm / 64 * (64 * t.a_readers + t.bn) * t.bk) + kTmaWriteSmemShare * double((t.bm + t.bn) * t.bk)) * in;
  s.smem_s = s.smem_bytes / (chip.smem_rate * chip.clock);
  s.seconds = (std::max({s.tensor_s, s.smem_s, kKStepFloorCycles / chip.clock}) * cluster_step_factor(t) +
               kKStepCycles / chip.clock) *
              walk;
  return s;
}

// L2 -> SM: each CTA loads its A rows and B columns for every k-step; in a cluster the shared operand is loaded
// once (each CTA loads its part and multicasts it). `steps`: the busiest CTA's k-steps.
struct L2Stream {
  double stage_bytes = 0;  // one k-step's A and B
  double total = 0;        // every CTA's bytes
  double seconds = 0;
};
// Rows a tile's TMA copies read on average where `rows` tiles of `tile` rows cover `extent` (the rows past the
// matrix are zero-filled, not read): a whole tile where they divide evenly, M itself where M is under a tile.
double rows_read(int64_t extent, int64_t tile) {
  const int64_t tiles = std::max<int64_t>(1, cdiv(extent, tile));
  return std::min(double(tile), double(extent) / double(tiles));
}

L2Stream l2_stream(const ChipRates& chip, const TileShape& t, double in, int64_t k_steps, int64_t cluster_tiles,
                   double steps, int64_t m, int64_t n) {
  const double a_k = double(t.bm * t.bk) * in, b_k = double(t.bn * t.bk) * in;
  // What the L2 serves: only the rows inside A and B (a 112-row tile over 32 rows of the problem reads 32).
  const double a_read = rows_read(m, t.bm) * double(t.bk) * in, b_read = rows_read(n, t.bn) * double(t.bk) * in;
  const double l2_tile = double(k_steps) * (a_read / double(t.cn) + b_read / double(t.cm));
  const double l2_bw_sm = chip.l2_rate * chip.clock;
  L2Stream l2;
  l2.stage_bytes = a_k + b_k;
  l2.total = double(cluster_tiles * (t.cm * t.cn)) * l2_tile;
  const double l2_cta = steps * (std::min(double(t.bm), double(m)) * double(t.bk) * in / double(t.cn) +
                                 std::min(double(t.bn), double(n)) * double(t.bk) * in / double(t.cm));
  l2.seconds = std::max(l2.total / (l2_bw_sm * double(chip.sms)), l2_cta / l2_bw_sm);
  return l2;
}

// Little's law: STAGES - 1 stages in flight per SM over the loaded latency. A stage waits for its slowest piece:
// when its operands stream from DRAM (each panel read about once, as in skinny and long-K shapes) that is HBM's
// latency under load, when they are reused from the L2 the L2's. The share of stages that wait on DRAM is taken as
// twice the share of the L2 -> SM bytes that come from DRAM (a stage holds a piece of each operand), at most 1.
double latency_seconds(int64_t stages, const L2Stream& l2, double operand_bytes, double steps) {
  const double in_flight = double(std::max<int64_t>(1, stages - 1)) * l2.stage_bytes;
  const double dram_stages = l2.total > 0 ? std::min(1.0, 2.0 * operand_bytes / l2.total) : 1.0;
  const double latency = kLoadedLatencySeconds + dram_stages * (kDramLoadedLatencySeconds - kLoadedLatencySeconds);
  return steps * l2.stage_bytes / (in_flight / latency);
}

// A CTA of a cluster waits at each k-step for its partners' releases, so the cluster moves at its slowest member's
// pace whatever bounds the main loop: k_step() charges kClusterStepShare on the tensor work; here the same share of
// the main loop's time beyond it, where a memory stream or the latency binds.
double cluster_wait_seconds(const TileShape& t, double compute_s, double top_s) {
  return (cluster_step_factor(t) - 1.0) * std::max(0.0, top_s - compute_s);
}

// Split-K in one wave (every slice on a cluster of its own, all started together), or stream-K with every tile
// shared (each cluster's one pass over its k-blocks; weighed alike so that neither is favoured where both fit): a
// CTA's loop of a few k-steps is mostly its ring's first fills, and the L2's service of the hits (the L2 -> SM
// bytes beyond the operands' DRAM bytes: lines another CTA fetched) queues behind the first reads from DRAM instead
// of overlapping them. The body adds kOneWaveL2HitShare of that time over the part of the loop within
// kOneWaveBurstRings rings; a cluster's multicast halves the hits of the operand it shares. `operand_bytes` < 0 (a
// bound's floor): none.
double one_wave_l2_seconds(const Sm90Schedule& sched, const L2Stream& l2, int64_t stages, double steps,
                           double operand_bytes) {
  const bool split = sched.split_k > 1 && sched.cluster_tiles * sched.split_k <= sched.clusters;
  const bool stream = sched.stream_k && sched.sk_tiles == sched.cluster_tiles;  // every tile shared: one pass
  if ((!split && !stream) || operand_bytes < 0 || l2.total <= 0) return 0.0;
  const double burst = std::min(1.0, kOneWaveBurstRings * double(stages) / std::max(1.0, steps));
  return kOneWaveL2HitShare * burst * l2.seconds * std::max(0.0, l2.total - operand_bytes) / l2.total;
}

// What the price's main loop waits for beside its streams, and with notes says: the cluster's wait and the one-wave
// L2 hits (the main loop's `top_s`: its binding term).
struct MainLoopWaits {
  const TileShape& tile;
  const Sm90Schedule& sched;
  const L2Stream& l2;
  int64_t stages;
  double steps, operand_bytes;
};
void add_waits(Cost& c, const MainLoopWaits& w, double top_s, bool notes) {
  const double cluster_s = cluster_wait_seconds(w.tile, c.compute_s, top_s);
  const double hits_s = one_wave_l2_seconds(w.sched, w.l2, w.stages, w.steps, w.operand_bytes);
  c.body_s += cluster_s + hits_s;
  if (!notes) return;
  if (hits_s > 0) {
    c.notes.push_back(fmt::format("one wave of {} k-steps per CTA against a ring of {}: the L2's hits ({}) queue "
                                  "behind the first reads from DRAM: {} more main loop",
                                  w.steps, w.stages, fmtx::bytes(std::max(0.0, w.l2.total - w.operand_bytes)),
                                  fmtx::time(hits_s)));
  }
  if (cluster_s > 0) {
    c.notes.push_back(fmt::format("each k-step of the cluster waits for its slowest CTA: {} more main loop beyond "
                                  "the tensor work's share", fmtx::time(cluster_s)));
  }
}

// One pipeline fill per CTA (persistent: later tiles' first stages load under the previous tile's epilogue).
double fill_seconds(const L2Stream& l2, double l2_bw_sm) { return kLoadedLatencySeconds + l2.stage_bytes / l2_bw_sm; }

// The price's COPY_AB step: the copies' time joins the overhead; returned, which operands are read in place with
// rows off the sectors (their TMA rows are priced per k-step); with notes, both are said.
struct InPlaceOff {
  bool a = false, b = false;
};
InPlaceOff price_copies(Cost& c, const Problem& q, const hw::HwProfile& profile, int64_t copy_ab, double in,
                        bool notes) {
  const bool a_off = sm90_rows_off_sectors(q, q.lda), b_off = sm90_rows_off_sectors(q, q.ldb);
  const OperandCopies copies = operand_copies(q, profile, a_off, b_off, copy_ab, in);
  if (copies.a || copies.b) {
    c.overhead_s += copies.seconds;
    if (notes) {
      c.notes.push_back(fmt::format("COPY_AB: {} copied to 128-byte aligned rows first: {} moved, {}",
                                    copies.a && copies.b ? "A and B" : copies.a ? "A" : "B", fmtx::bytes(copies.bytes),
                                    fmtx::time(copies.seconds)));
    }
  }
  return {a_off && !copies.a, b_off && !copies.b};
}

// The note of a k-step whose wgmma waits on its shared-memory reads rather than the tensor work.
void note_smem_bound(Cost& c, const KStep& step, int64_t bn, double smem_rate) {
  if (step.smem_s <= step.tensor_s) return;
  c.notes.push_back(fmt::format("wgmma is bound by its shared-memory reads with BLOCK_N {}: {:.0f} B per k-step at {:g} "
                                "B/cycle take {} against {} of tensor work",
                                bn, step.smem_bytes, smem_rate, fmtx::time(step.smem_s), fmtx::time(step.tensor_s)));
}

// The price's TMA-row stream: the busiest CTA's k-steps of TMA rows where an operand is read in place off the
// sectors (0 otherwise); with notes, the rows per k-step and their time beside the tensor work.
double price_tma_rows(Cost& c, const TileShape& t, const InPlaceOff& off, const KStep& step, double steps,
                      double clock, bool notes) {
  const double step_s = tma_rows_seconds(t, off.a, off.b, clock);
  if (notes && step_s > 0) {
    c.notes.push_back(fmt::format("rows of {} off 32-byte sectors read in place: the TMA unit issues {} + {} rows of "
                                  "A and B per k-step, {} against {} of tensor work",
                                  off.a && off.b ? "A and B" : off.a ? "A" : "B", t.bm / t.cn, t.bn / t.cm,
                                  fmtx::time(step_s), fmtx::time(step.seconds)));
  }
  return steps * step_s;
}

}  // namespace

std::optional<std::string> sm90_missing_field(const hw::HwProfile& p) {
  // Every number the model divides by or scales with, in the order the model meets them.
  return plan::first_missing({
      {p.cores > 0, "cores (SMs)"},
      {p.boost_clock_ghz > 0, "boost_clock_ghz (the SM clock)"},
      {p.smem_bytes_per_core_cycle > 0, "smem_bytes_per_core_cycle (shared-memory bytes per SM per cycle)"},
      {p.l2_bytes_per_core_cycle > 0, "l2_bytes_per_core_cycle (L2 bytes per SM per cycle)"},
  });
}

Sm90Grid sm90_grid(const Problem& problem, const Config& c, const hw::HwProfile& profile) {
  return grid_of(sm90_kernel_problem(problem, c), Sm90ConfigView(c), profile);
}

void Sm90CostCache::fill(const Problem& problem, const hw::HwProfile& profile) {
  q = problem.normalized();
  const plan::PeakChoice peak = plan::peak_for(q, profile);
  valid = peak.tflops && *peak.tflops > 0 && profile.mem_bandwidth_gbps > 0 && !sm90_missing_field(profile);
  peak_tflops = valid ? *peak.tflops : 0;
  a_off = sm90_rows_off_sectors(q, q.lda);
  b_off = sm90_rows_off_sectors(q, q.ldb);
  ready = true;
}

Sm90CostCache& Sm90CostCache::transposed() {
  if (!transposed_) transposed_ = std::make_unique<Sm90CostCache>();
  return *transposed_;
}

namespace {

// The config's parameters as the kernel's problem reads them: with SWAP_AB, COPY_AB's "A only" (2) and "B only" (3),
// which name the caller's operands, are the kernel's B and A.
Sm90ConfigView kernel_view(const Config& config) {
  Sm90ConfigView v(config);
  if (v.swap_ab.value_or(0) != 0 && v.copy_ab && (*v.copy_ab == 2 || *v.copy_ab == 3)) v.copy_ab = 5 - *v.copy_ab;
  return v;
}

}  // namespace

// Each term of sm90_cost() as it computes it, with the parameters `partial` lacks at the value that makes the term
// least: a slowdown factor at 1, a term that needs the missing value left out (the terms only add, and the body
// grows with each of them), the busiest CTA's k-steps at the work shared evenly by every cluster that fits (each
// schedule gives some CTA at least that many). The tile (BLOCK_M, BLOCK_N, BLOCK_K, CLUSTER_M, CLUSTER_N) is needed
// for more than the launch and the fill's latency.
double sm90_cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                       Sm90CostCache* cache, double enough) {
  const Sm90ConfigView partial = kernel_view(config);
  Sm90CostCache local;
  Sm90CostCache* base = cache ? cache : &local;
  // SWAP_AB: bounded on the transposed problem, with its own memo.
  const bool swap = partial.swap_ab.value_or(0) != 0;
  Sm90CostCache& memo = swap ? base->transposed() : *base;
  if (!memo.ready) memo.fill(swap ? sm90_kernel_problem(problem, config) : problem, profile);
  if (!memo.valid) return 0;
  const Problem& q = memo.q;
  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));

  double overhead_s = kGpuLaunchSeconds;
  const std::optional<int64_t> copy_ab = partial.copy_ab;
  const OperandCopies copies = operand_copies(q, profile, memo.a_off, memo.b_off, copy_ab.value_or(0), in);
  if (copies.a || copies.b) overhead_s += copies.seconds;
  if (q.m == 0 || q.n == 0 || q.k == 0) return overhead_s;
  const auto bm_v = set_param(partial.block_m, 128), bn_v = set_param(partial.block_n, 128);
  const auto bk_v = set_param(partial.block_k, 64);
  const auto cm_v = set_param(partial.cluster_m, 1), cn_v = set_param(partial.cluster_n, 1);
  if (!bm_v || !bn_v || !bk_v || !cm_v || !cn_v) return overhead_s + kLoadedLatencySeconds;
  const std::optional<int64_t> consumers_v = set_param(partial.consumers, 1);
  const bool cols = partial.consumer_cols.value_or(0) != 0;
  const bool consumer_k = partial.consumer_k.value_or(0) != 0;
  const TileShape tile{*bm_v, *bn_v, *bk_v, *cm_v, *cn_v, cols && consumers_v ? *consumers_v : 1, consumer_k};
  const int64_t bm = tile.bm, bn = tile.bn, bk = tile.bk, cm = tile.cm, cn = tile.cn, cs = cm * cn;
  if (cs > 1) overhead_s += kClusterLaunchSeconds;
  const ChipRates chip{memo.peak_tflops, std::max(1, profile.cores), profile.boost_clock_ghz * 1e9,
                       profile.smem_bytes_per_core_cycle, profile.l2_bytes_per_core_cycle};
  const Sm90Grid grid = grid_of(q, partial, profile);

  // Without COPY_AB, which operands are read in place is not known: no TMA-row term.
  const double tma_step_s =
      copy_ab ? tma_rows_seconds(tile, memo.a_off && !copies.a, memo.b_off && !copies.b, chip.clock) : 0.0;
  const int64_t k_steps = cdiv(q.k, bk);
  const int64_t max_clusters = sm90_resident_clusters(profile, cs);
  const bool scheduled = partial.split_k && partial.stream_k;
  Sm90Schedule sched;
  Sm90Share share;
  double steps = std::max(1.0, double(grid.cluster_tiles) * double(k_steps) / double(max_clusters));
  if (scheduled) {
    sched = sm90_schedule(q, partial, max_clusters);
    share = sm90_share(sched);
    steps = double(share.k_steps);
  }

  // GROUP_M read as set: 0 is the Hilbert walk, not a value to replace.
  const std::optional<int64_t> group_m = partial.group_m;
  const KStep step = k_step(chip, tile, consumers_v && *consumers_v == 1, in,
                            walk_slowdown(group_m, grid.clusters, cdiv(q.n, bn * cn)));
  const double compute_s = steps * step.seconds;
  const double tma_s = steps * tma_step_s;
  const L2Stream l2 = l2_stream(chip, tile, in, k_steps, grid.cluster_tiles, steps, q.m, q.n);
  const double l2_s = l2.seconds;
  const double l2_bw_sm = chip.l2_rate * chip.clock;

  const std::optional<int64_t> stages = set_param(partial.stages, 2);
  const bool reads_c = q.beta != 0.0;
  const double c_bytes = double(q.m) * double(q.n) * out * (reads_c ? 2.0 : 1.0);
  const double dram_bw = profile.mem_bandwidth_gbps * 1e9 * kDramEfficiency;
  const double smem_s = steps * step.smem_s;
  // combine_terms() of the cost model, without its vector; the latency's DRAM share from the operands' DRAM bytes
  // (the price's, or its floor: fewer bytes, less latency), and the one-wave hits' time only from the price's
  // (`exact`: with the floor's bytes the hits would be overstated). The cluster's wait (cluster_wait_seconds) grows
  // as the tensor term shrinks: only where that term is the price's (`exact`, GROUP_M set, and CONSUMERS set).
  auto body_of = [&](double operand_bytes, bool exact) {
    const double dram_s = (operand_bytes + c_bytes) / dram_bw;
    const double latency_s = stages ? latency_seconds(*stages, l2, operand_bytes, steps) : 0.0;
    const double top_stream = std::max({compute_s, dram_s, l2_s, smem_s, tma_s});
    const double streams = compute_s + dram_s + l2_s + smem_s + tma_s;
    const double coupling_s = stages ? tma_coupling_seconds(compute_s, tma_s, *stages) : 0.0;
    const double top_s = std::max({0.0, top_stream, latency_s});
    return top_s + plan::constants::kOverlapLeak * (streams - top_stream) + coupling_s +
           (exact && consumers_v ? cluster_wait_seconds(tile, compute_s, top_s) : 0.0) +
           (scheduled && stages ? one_wave_l2_seconds(sched, l2, *stages, steps, exact ? operand_bytes : -1) : 0.0);
  };

  double epi_s = 0, fix_s = 0;
  if (scheduled) {
    epi_s = epilogue_seconds(q, out, chip.clock, bm, bn, sched, share.finished, partial.epilogue, partial.stmatrix,
                             set_param(partial.epi_split, 1));
    // CONSUMER_K: the first warpgroup alone holds the summed tile and reads the partials back.
    const std::optional<int64_t> holders = consumer_k ? std::optional<int64_t>(1) : consumers_v;
    fix_s = fixup_seconds(q, bm, bn, sched, share, holders, l2_bw_sm, cols).seconds;
  }
  const double fill_s = fill_seconds(l2, l2_bw_sm);
  // The operands' DRAM bytes cost an L2 simulation the first time: its floor (every panel once) while the rest
  // already exceeds `enough`.
  const double floor = sm80_operand_dram_floor(q, max_clusters, bm * cm, bn * cn);
  const double seconds = body_of(floor, false) + epi_s + fix_s + fill_s + overhead_s;
  if (seconds > enough || !group_m) return seconds;
  const double operands = operand_dram_bytes(q, profile, bm, bn, cm, cn, *group_m, cache ? &memo : nullptr);
  return body_of(operands, true) + epi_s + fix_s + fill_s + overhead_s;
}

namespace {

// sm90_cost() on the kernel's problem `q` (normalized; with SWAP_AB the transposed one) and its cache.
Cost kernel_cost(const Problem& q, const hw::HwProfile& profile, const Sm90ConfigView& cfg, Sm90CostCache* cache,
                 bool notes) {
  const plan::PeakChoice peak = plan::peak_for(q, profile);
  if (!peak.tflops || *peak.tflops <= 0) return plan::invalid_cost(peak.note);
  if (profile.mem_bandwidth_gbps <= 0) return plan::invalid_cost("the profile records no memory bandwidth");
  if (auto missing = sm90_missing_field(profile)) return plan::invalid_cost(*missing);
  Cost c;
  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  const int64_t consumers = param(cfg.consumers, 1);
  const bool consumer_k = cfg.consumer_k.value_or(0) != 0, cols = cfg.consumer_cols.value_or(0) != 0;
  const TileShape tile{param(cfg.block_m, 128), param(cfg.block_n, 128), param(cfg.block_k, 64),
                       param(cfg.cluster_m, 1), param(cfg.cluster_n, 1), cols ? consumers : 1, consumer_k};
  const int64_t bm = tile.bm, bn = tile.bn, bk = tile.bk, cm = tile.cm, cn = tile.cn, cs = sm90_launch_cluster(cfg);
  const int64_t stages = param(cfg.stages, 2);
  const int64_t group_m = cfg.group_m.value_or(1);  // 0: the Hilbert walk
  const int64_t epilogue = cfg.epilogue.value_or(0), split = param(cfg.epi_split, 1);
  const ChipRates chip{*peak.tflops, std::max(1, profile.cores), profile.boost_clock_ghz * 1e9,
                       profile.smem_bytes_per_core_cycle, profile.l2_bytes_per_core_cycle};
  const int sms = chip.sms;
  const double clock = chip.clock;

  const Sm90Grid grid = grid_of(q, cfg, profile);
  c.occupancy = 1;
  c.occupancy_limit = "persistent grid: one CTA per SM";
  c.waves = plan::analyze_waves(q, sm90_resident_clusters(profile, cs) * cs, 1, bm, bn, bk);
  c.waves.max_tiles_per_core = grid.tiles_per_cta;
  c.overhead_s = kGpuLaunchSeconds;
  const InPlaceOff off = price_copies(c, q, profile, cfg.copy_ab.value_or(0), in, notes);
  if (grid.cluster_tiles == 0 || q.k == 0) {
    c.seconds = c.overhead_s;
    c.bound = "launch";
    return c;
  }
  const int64_t k_steps = cdiv(q.k, bk);
  // The busiest CTA's share under the config's schedule (sm90_schedule: whole tiles, split-K or stream-K): the
  // k-steps of its main loops, the tiles it finishes (epilogues), the partial tiles it stores and reads back.
  const Sm90Schedule sched = sm90_schedule(q, cfg, sm90_resident_clusters(profile, cs));
  const Sm90Share share = sm90_share(sched);
  const int64_t per_cta = share.finished;
  const double steps = double(share.k_steps);
  c.waves.max_tiles_per_core = share.units;

  // Row-major walk with more than one tile row in flight: the CTAs in flight spread over more A and B panels.
  const KStep step =
      k_step(chip, tile, consumers == 1, in, walk_slowdown(group_m, grid.clusters, cdiv(q.n, bn * cn)));
  c.compute_s = steps * step.seconds;
  const double tma_s = price_tma_rows(c, tile, off, step, steps, clock, notes);
  c.compute_share = q.flops() / c.compute_s / (*peak.tflops * 1e12);
  // A cluster launch places its CTAs together (the GPCs are filled in cluster-sized groups) and ends on a cluster
  // barrier: a fixed cost that small shapes notice.
  if (cs > 1) c.overhead_s += kClusterLaunchSeconds;
  if (notes) note_smem_bound(c, step, bn, chip.smem_rate);

  const L2Stream l2 = l2_stream(chip, tile, in, k_steps, grid.cluster_tiles, steps, q.m, q.n);
  const double l2_bw_sm = chip.l2_rate * clock;
  // DRAM: A and B panels as the persistent walk (consecutive tiles in flight at once, the grouped order) and the L2
  // let them through; C written (and read when beta != 0).
  const double operand_bytes = operand_dram_bytes(q, profile, bm, bn, cm, cn, group_m, cache);
  c.latency_s = latency_seconds(stages, l2, operand_bytes, steps);
  const bool reads_c = q.beta != 0.0;
  const double c_bytes = double(q.m) * double(q.n) * out * (reads_c ? 2.0 : 1.0);
  const double dram = operand_bytes + c_bytes;
  c.dram_bytes = dram;
  const double dram_bw = profile.mem_bandwidth_gbps * 1e9 * kDramEfficiency;
  const double dram_s = dram / dram_bw;

  c.levels = {{"HBM", dram, dram_bw, dram_s},
              {"L2", l2.total, l2_bw_sm * double(sms), l2.seconds},
              {"shared memory", step.smem_bytes * double(k_steps * grid.cluster_tiles * cs),
               chip.smem_rate * clock * double(sms), steps * step.smem_s}};
  // Shared memory: the wgmma operand reads bound each k-step above (in the compute term); as a stream they also
  // compete with the TMA writes of the next stages and the epilogue's staging, so they leak like the others.
  const double smem_s = steps * step.smem_s;
  const double top_s = plan::combine_terms(c, {{"compute", c.compute_s, true},
                                                {"HBM", dram_s, true},
                                                {"L2", l2.seconds, true},
                                                {"shared memory", smem_s, true},
                                                {"TMA rows", tma_s, true},
                                                {"latency", c.latency_s, false}});
  add_tma_coupling(c, tma_s, stages, notes);
  add_waits(c, {tile, sched, l2, stages, steps, operand_bytes}, top_s, notes);

  const double epi_s =
      epilogue_seconds(q, out, clock, bm, bn, sched, per_cta, epilogue, cfg.stmatrix.value_or(0), split);
  c.body_s += epi_s;
  if (notes && epi_s > 0.05 * c.body_s && !sched.shared_sum) {
    c.notes.push_back(fmt::format("epilogue {} on the busiest SM ({} tiles of {} each)", fmtx::time(epi_s), per_cta,
                                  fmtx::bytes(double(bm * bn) * out)));
  }
  if (share.partials_written > 0) {
    // CONSUMER_K: the first warpgroup alone holds the summed tile and reads the partials back.
    const Fixup fix = fixup_seconds(q, bm, bn, sched, share, consumer_k ? 1 : consumers, l2_bw_sm, cols);
    c.body_s += fix.seconds;
    if (notes) add_fixup_note(c, sched, share, fix);
  }
  if (sched.cluster_sum) add_cluster_sum(c, bm, bn, sched, share, chip.smem_rate * clock, notes);
  c.fill_s = fill_seconds(l2, l2_bw_sm);
  c.seconds = c.body_s + c.fill_s + c.overhead_s;
  return c;
}

}  // namespace

Cost sm90_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, Sm90CostCache* cache,
               bool notes) {
  const Sm90ConfigView cfg = kernel_view(config);
  if (cfg.swap_ab.value_or(0) == 0) return kernel_cost(problem.normalized(), profile, cfg, cache, notes);
  Cost c = kernel_cost(sm90_kernel_problem(problem, config), profile, cfg, cache ? &cache->transposed() : nullptr,
                       notes);
  if (notes && c.valid) {
    // A copy of a named string: g++ 12 warns (-Warray-bounds, a false positive) on moving the temporary in.
    static const std::string kNote =
        "SWAP_AB: priced as the kernel runs it, C^T = B^T A^T (BLOCK_M tiles N, BLOCK_N tiles M)";
    c.notes.push_back(kNote);
  }
  return c;
}

}  // namespace tileforge::cuda
