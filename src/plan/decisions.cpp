// The decision log of a served plan, entry by entry, for the sm80 and cpu families (see decisions.hpp).
#include "plan/decisions.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cpu/microkernel.hpp"
#include "backends/cuda/sm80_family.hpp"
#include "plan/cost_constants.hpp"
#include "plan/format.hpp"

namespace tileforge::plan {
namespace {

using namespace constants;

int64_t cdiv(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

// "BLOCK_K=64: needs ... (predicted -3.1% if allowed); BLOCK_K=16: +8.2% (bound by L2)"
std::string neighbours_of(const Plan& plan, std::initializer_list<const char*> params) {
  std::vector<std::string> parts;
  for (const char* p : params) {
    if (std::any_of(plan.pins.begin(), plan.pins.end(), [&](const auto& pin) { return pin.first == p; })) {
      parts.push_back(fmt::format("{} pinned by --set", p));
      continue;
    }
    for (const Neighbour& n : plan.neighbours) {
      if (n.param != p) continue;
      if (n.legal) {
        parts.push_back(fmt::format("{}={}: {}", n.param, n.value, fmtx::delta(n.delta)));
      } else {
        parts.push_back(fmt::format("{}={}: rejected, {}{}", n.param, n.value, n.detail,
                                    n.delta < -1e-9 ? fmt::format(" (would be {})", fmtx::delta(n.delta)) : ""));
      }
    }
  }
  if (parts.empty()) return {};
  return fmt::format("one step away: {}", fmt::join(parts, "; "));
}

std::string waves_text(const WaveAnalysis& w, int64_t batch, const char* core_name) {
  return fmt::format(
      "{} x {}{} = {} tiles of {}x{} over {} {} x {} = {} slots: {:.2f} waves, last wave {} full; the busiest "
      "one runs {} tiles (balance {}); tail waste M {}, N {}",
      w.tiles_m, w.tiles_n, batch > 1 ? fmt::format(" x {}", batch) : "", w.tiles, w.tile_m, w.tile_n, w.cores,
      core_name, w.occupancy, w.slots, w.waves_exact, fmtx::pct(w.last_wave_fill), w.max_tiles_per_core,
      fmtx::pct(w.core_balance), fmtx::pct(w.waste_m), fmtx::pct(w.waste_n));
}

const LevelTime* level(const Cost& c, std::string_view name) {
  for (const LevelTime& l : c.levels)
    if (l.level == name) return &l;
  return nullptr;
}

}  // namespace

std::string ordinal(int64_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return fmt::format("a {}{}", n, suffix);
}

void record_sm80_decisions(Plan& plan) {
  const Candidate& best = plan.ranked.front();
  const Config& c = best.config;
  const Cost& cost = best.cost;
  const hw::HwProfile& hw = plan.profile;
  const Problem& q = plan.problem;
  const int64_t bm = c.at("BLOCK_M"), bn = c.at("BLOCK_N"), bk = c.at("BLOCK_K"), wm = c.at("WARPS_M"),
                wn = c.at("WARPS_N"), st = c.at("STAGES"), gm = c.at("GROUP_M");
  const double in = double(size_of(q.precision.input));
  const double clock = hw.boost_clock_ghz > 0 ? hw.boost_clock_ghz * 1e9 : 1.4e9;
  const bool hopper = hw.has("wgmma");
  const double share = hopper ? kMmaSyncShareWithWgmma : kMmaSyncShareNative;
  const double peak = plan.roofline.peak.tflops.value_or(0);
  const std::string L0(kLayers[0]), L1(kLayers[1]), L2(kLayers[2]), L3(kLayers[3]);

  // ---- hardware mapping
  plan.log.add(L0, fmt::format("mma.sync.m16n8k16 ({} inputs, f32 accumulators), fragments by ldmatrix",
                               to_string(q.precision.input)),
               hopper ? fmt::format("the sm80 family's tensor-core path; {}'s {:g} TFLOP/s dense peak assumes wgmma, "
                                    "and mma.sync reaches about {} of it (an sm90 family would use wgmma)",
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
               fmt::format("{}; the sm80 family loads with cp.async (TMA belongs to a later sm90 family)",
                           plan.paths.tma_reason));
  if (const LevelTime* s = level(cost, "shared memory")) {
    plan.log.add(L0, "shared-memory tiles in a 128-byte XOR swizzle of 16-byte chunks",
                 "ldmatrix reads eight rows of one 16-byte column per phase; the swizzle puts them in eight disjoint "
                 "groups of four banks, so reads are conflict-free (fixed by the family)",
                 fmt::format("shared-memory term {} at {:g} B/cycle/SM ({} of the body)", fmtx::time(s->seconds),
                             kSmemBytesPerSmCycle, fmtx::pct(s->seconds / cost.body_s)));
  }

  // ---- data scheduling
  const WaveAnalysis& w = cost.waves;
  plan.log.add(L1, fmt::format("BLOCK_M={}, BLOCK_N={}", bm, bn), waves_text(w, q.batch, "SMs"),
               neighbours_of(plan, {"BLOCK_M", "BLOCK_N"}));
  const double stage_bytes = double((bm + bn) * bk) * in;
  const LevelTime* l2 = level(cost, "L2");
  plan.log.add(L1, fmt::format("BLOCK_K={}", bk),
               fmt::format("{} k-steps of {} (tail waste K {}); one stage holds {} of A and B; each block reads "
                           "{} per k-step from L2 ({} in all: {})",
                           w.k_steps, bk, fmtx::pct(w.waste_k), fmtx::bytes(stage_bytes), fmtx::bytes(stage_bytes),
                           l2 ? fmtx::bytes(l2->bytes) : "?", l2 ? fmtx::time(l2->seconds) : "?"),
               neighbours_of(plan, {"BLOCK_K"}));
  const double min_ab = plan.roofline.bytes_a + plan.roofline.bytes_b;
  const LevelTime* hbm = level(cost, "HBM");
  const hw::CacheLevel* l2c = hw.cache(2);
  plan.log.add(L1, fmt::format("GROUP_M={}", gm),
               fmt::format("group-M raster: {} row-blocks walked column by column, so blocks resident together share A "
                           "rows and B columns in L2 ({} usable of {}); DRAM traffic {} (A and B once: {})",
                           gm, l2c ? fmtx::bytes(double(l2c->size_bytes) * kL2UsableShare) : "?",
                           l2c ? fmtx::bytes(double(l2c->size_bytes)) : "?", hbm ? fmtx::bytes(hbm->bytes) : "?",
                           fmtx::bytes(min_ab)),
               neighbours_of(plan, {"GROUP_M"}));
  if (w.waves == 1 && w.last_wave_fill < 0.5) {
    plan.log.add(L1, "SPLIT_K: not offered by the sm80 family",
                 fmt::format("only {} tiles for {} SMs: a split-K or stream-K family (later) would put the idle SMs "
                             "to work along K",
                             w.tiles, w.cores),
                 fmt::format("{} of the SMs stay idle", fmtx::pct(1.0 - double(w.tiles) / double(w.cores))));
  }

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
  plan.log.add(L3,
               fmt::format("WARPS_M={}, WARPS_N={}: {} threads, warp tile {}x{}", wm, wn, cuda::sm80_threads(c), bm / wm,
                           bn / wn),
               fmt::format("an estimated {} registers per thread ({} accumulators); {} block(s) per SM, limited by {}",
                           cuda::sm80_register_estimate(c, plan.profile.arch), (bm / wm) * (bn / wn) / 32, cost.occupancy,
                           cost.occupancy_limit),
               neighbours_of(plan, {"WARPS_M", "WARPS_N"}));
  plan.log.add(L3, fmt::format("accumulate in {}", to_string(q.precision.accum)),
               "the problem's precision policy: the planner never changes it");
  (void)clock;
}

void record_cpu_decisions(Plan& plan) {
  const Candidate& best = plan.ranked.front();
  const Config& c = best.config;
  const Cost& cost = best.cost;
  const hw::HwProfile& hw = plan.profile;
  const Problem& q = plan.problem;
  const std::string L0(kLayers[0]), L1(kLayers[1]), L2(kLayers[2]), L3(kLayers[3]);
  const int64_t mr = c.at("MR"), nr = c.at("NR");
  const std::optional<Config>& ref = plan.reference;
  auto reason_at = [&](std::size_t i) {
    return i < plan.reference_reasons.size() ? plan.reference_reasons[i] : std::string("(no analytic reason)");
  };
  auto versus = [&](const char* p) {
    if (!ref) return std::string();
    const int64_t r = ref->at(p), v = c.at(p);
    if (r == v) return fmt::format("chosen {}={}, the analytic value", p, v);
    return fmt::format("chosen {}={} ({:.2g}x the analytic {})", p, v, double(v) / double(r), r);
  };

  // ---- hardware mapping
  // The other micro-kernels: the best-ranked config of each (MR, NR) pair.
  std::vector<std::string> kernels;
  std::set<std::pair<int64_t, int64_t>> seen{{mr, nr}};
  for (const Candidate& cand : plan.ranked) {
    const auto key = std::make_pair(cand.config.at("MR"), cand.config.at("NR"));
    if (!seen.insert(key).second) continue;
    kernels.push_back(fmt::format("{} x {} at best {} (rank {})", key.first, key.second,
                                  fmtx::delta(cand.cost.seconds / best.cost.seconds - 1), cand.rank));
  }
  // The register-level numbers the cost model prices the micro-kernel with.
  const int lanes = cpu::vector_floats(c.family);
  const double fma_k = double(mr * nr / lanes) / kFmaPipes, load_k = double(mr + nr / lanes) / kLoadPortsPerCycle;
  const std::string regs = fmt::format(
      "the model: {} accumulators take {:g} FMA cycles per k-step, {} broadcasts + {} B vectors {:g} load-port cycles, "
      "the FMA latency chain {:g}: {} of the FMA peak",
      mr * nr / lanes, fma_k, mr, nr / lanes, load_k, kFmaLatencyCycles,
      fmtx::pct(fma_k / std::max({fma_k, load_k, kFmaLatencyCycles})));
  plan.log.add(L0, fmt::format("MR={}, NR={}: the {} micro-kernel", mr, nr, c.family),
               fmt::format("{}; {}; {}", reason_at(0), regs, versus("MR") + ", " + versus("NR")),
               kernels.empty() ? std::string("the only micro-kernel left by the pins")
                               : fmt::format("the other micro-kernels: {}", fmt::join(kernels, "; ")));
  plan.log.add(L0, fmt::format("{}-bit SIMD, {} inputs{}", hw.vector_bits, to_string(q.precision.input),
                               q.precision.input == DType::f32 ? "" : " converted to f32 while packing"),
               plan.paths.vector_reason,
               fmt::format("compute term {} ({} of the FMA peak)", fmtx::time(cost.compute_s),
                           fmtx::pct(cost.compute_share)));

  // ---- data scheduling
  plan.log.add(L1, fmt::format("KC={}", c.at("KC")), fmt::format("{}; {}", reason_at(1), versus("KC")),
               neighbours_of(plan, {"KC"}));
  plan.log.add(L1, fmt::format("MC={}", c.at("MC")), fmt::format("{}; {}", reason_at(2), versus("MC")),
               neighbours_of(plan, {"MC"}));
  plan.log.add(L1, fmt::format("NC={}", c.at("NC")), fmt::format("{}; {}", reason_at(3), versus("NC")),
               neighbours_of(plan, {"NC"}));
  plan.log.add(L1, fmt::format("PACK_B={}", c.at("PACK_B")),
               c.at("PACK_B") ? "B is packed into KC x NR micro-panels shared by the team (each packed element is "
                                "reused by every MR-panel of A)"
                              : "B (f32, contiguous along N) is read in place: too few rows of C to repay packing it",
               neighbours_of(plan, {"PACK_B"}));

  // ---- compute pipeline
  const auto [tm, tn] = cpu_thread_grid(q.m, int(mr), plan.threads);
  plan.log.add(L2, fmt::format("thread grid {} x {}", tm, tn),
               fmt::format("rows of C go to {} thread(s) ({} MR-panels), columns of each NC panel to {}; as the "
                           "backend's driver splits the work",
                           tm, cdiv(q.m, mr), tn),
               fmt::format("{} x {} micro-tiles of {}x{}; balance {} over rows of threads, {} over columns; tail "
                           "waste M {}, N {}",
                           cost.waves.tiles_m, cost.waves.tiles_n, mr, nr,
                           fmtx::pct(double(cdiv(q.m, mr)) / double(tm * cdiv(cdiv(q.m, mr), tm))),
                           fmtx::pct(double(cdiv(std::min(c.at("NC"), q.n), nr)) /
                                     double(tn * cdiv(cdiv(std::min(c.at("NC"), q.n), nr), tn))),
                           fmtx::pct(cost.waves.waste_m), fmtx::pct(cost.waves.waste_n)));
  plan.log.add(L2, "packing phases between micro-kernel phases",
               fmt::format("A is packed once per NC panel ({}x), B once per (NC, KC) panel; the team waits at a "
                           "barrier after packing B, so packing does not overlap the micro-kernel",
                           cdiv(q.n, c.at("NC"))),
               fmt::format("packing {}, barriers and call {} ({} of the prediction)", fmtx::time(cost.fill_s),
                           fmtx::time(cost.overhead_s), fmtx::pct((cost.fill_s + cost.overhead_s) / cost.seconds)));

  // ---- parameter adaptation
  plan.log.add(L3, fmt::format("threads={}", plan.threads),
               plan.threads == hw.cores ? fmt::format("all {} cores of {}", hw.cores, hw.name)
                                        : fmt::format("--threads {} of {} cores", plan.threads, hw.cores));
  plan.log.add(L3, fmt::format("accumulate in {}", to_string(q.precision.accum)),
               "the problem's precision policy: the planner never changes it");
  for (const std::string& note : cost.notes) plan.log.add(L1, "cache fit", note);
}

}  // namespace tileforge::plan
