// The sm80_skinny family's host side: support, space, cost model, heuristic, workspace and generated source.
#include "backends/cuda/sm80_skinny/sm80_skinny_family.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "backends/cuda/common/elem_tag.hpp"
#include "core/int_math.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda {
namespace {

// The cost model's constants, fitted to bench/results/h200/2026-12-01-skinny (the probe under the benchmark
// contract's cold L2: a write scrub of twice the L2 before every rep).
// A launch that reads nothing still costs this much from event to event once a write scrub has left the L2 full
// of dirty lines: its reads evict them, and their write-back shares HBM with B. A plain 16-byte read of 32 MiB takes
// 13.8 us after the scrub, 11.6 us after a read-only scrub (l2-probe.md).
constexpr double kFixedSeconds = 7.5e-6;
// The share of the chip record's HBM bandwidth that B's stream reaches when enough loads are in flight.
constexpr double kDramShare = 0.75;
// Loaded latency of a 16-byte cp.async from HBM with the whole chip streaming: Little's law turns the resident
// warps' pipelines (STAGES - 1 steps of B in flight each) into a bandwidth. A stream term, not a bound: in the probe
// and the sweep of gpu-skinny, configs with more steps in flight ran faster even where the HBM term binds (16 warps x
// 4 stages and 8 x 8 at 15.8-16.0 us on 1x4096x4096, 8 x 6 at 17.7, 8 x 4 at 19.4).
constexpr double kLoadedLatencySeconds = 1.5e-6;
// Steps ahead of a warp that add to the bytes in flight (see skinny_cost).
constexpr int64_t kUsefulStepsAhead = 3;
// Each further wave of CTAs pays its own ramp (the probe: 16 warps x SPLIT_K 4 on 64 strips, two waves, 21.7 us
// against 18.8 in one).
constexpr double kWaveSeconds = 2.5e-6;
// Split-K: the counter, fence and the last CTA's ordered read of every slice.
constexpr double kSplitFixupSeconds = 0.4e-6;
// What one SM's loads stream at most (the probe: 32 CTAs of 16 warps on 32 SMs read 8.4 MB in 3.7 us beyond the
// fixed cost, about 70 GB/s each): few strips without split-K leave the rest of the SMs idle.
constexpr double kSmBytesPerSecond = 70e9;
// A's rows are re-read from L2 by every strip; the L2 share of that traffic.
constexpr double kL2BytesPerSecond = 7e12;
// Registers per thread of one m16 tile per warp (ptxas: 64 to 76).
constexpr int kRegisters = 80;

int64_t v(const Config& c, const char* name) { return c.at(name); }

int64_t m_tiles(const Problem& q) { return std::max<int64_t>(1, cdiv(q.m, 16)); }

}  // namespace

std::string skinny_refusal(const Problem& problem) {
  const Problem q = problem.normalized();
  const Precision& pr = q.precision;
  if (pr.input != DType::f16 && pr.input != DType::bf16) {
    return fmt::format("the sm80_skinny family takes f16 or bf16 inputs (mma.sync.m16n8k16), not {}",
                       to_string(pr.input));
  }
  if (pr.accum != DType::f32) return "the sm80_skinny family accumulates in f32";
  if (q.m > kSkinnyMaxM) {
    return fmt::format("the sm80_skinny family takes M up to {} (one m16 tile per warp), not {}", kSkinnyMaxM, q.m);
  }
  if (q.batch > 1) return fmt::format("the sm80_skinny family runs one matrix per launch, not a batch of {}", q.batch);
  if (q.layout != Layout::RR) {
    return fmt::format("the sm80_skinny family reads A and B row-major (RR), not {}: with B column-major each step "
                       "reads 32 bytes of 64 rows, which the probe measured at 0.6-0.8x cuBLAS",
                       to_string(q.layout));
  }
  if (q.k == 0 || q.alpha == 0.0) return "the sm80_skinny family needs K >= 1 and alpha != 0";
  if (q.n > INT32_MAX || q.k > INT32_MAX) return "the sm80_skinny family needs N and K to fit a 32-bit int";
  if (q.lda % 8 != 0 || q.ldb % 8 != 0 || q.n % 8 != 0) {
    return fmt::format("the sm80_skinny family reads whole 16-byte chunks: lda, ldb and N must be multiples of 8 "
                       "(lda {}, ldb {}, N {})",
                       q.lda, q.ldb, q.n);
  }
  return {};
}

SkinnyGrid skinny_grid(const Problem& problem, const Config& c) {
  const Problem q = problem.normalized();
  SkinnyGrid g;
  g.strips = cdiv(q.n, int64_t(kSkinnyStripN));
  g.split_k = std::max<int64_t>(1, c.get("SPLIT_K").value_or(1));
  g.k_per_split = cdiv(cdiv(q.k, g.split_k), int64_t(kSkinnyStepK)) * kSkinnyStepK;
  if (g.split_k > 1) {
    g.counter_bytes = cdiv(g.strips * 4, 256) * 256;
    g.workspace_bytes = g.counter_bytes + g.strips * g.split_k * q.m * kSkinnyStripN * 4;
  }
  return g;
}

int skinny_threads(const Config& c) { return int(32 * v(c, "WARPS")); }

int64_t skinny_smem_bytes(const Problem& problem, const Config& c) {
  const int64_t rows = 16 * m_tiles(problem.normalized());
  const int64_t stage = rows * kSkinnyStepK * 2 + kSkinnyStepK * kSkinnyStripN * 2;
  const int64_t pipe = v(c, "WARPS") * v(c, "STAGES") * stage;
  const int64_t red = v(c, "WARPS") * rows * (kSkinnyStripN + 8) * 4;
  return std::max(pipe, red);
}

ParamSpace skinny_space(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  ParamSpace s;
  s.family = "sm80_skinny";
  s.version = kSkinnyVersion;
  s.params = {
      {"WARPS", {8, 16}, "hardware mapping",
       "warps per CTA, all on the CTA's 64 columns, taking turns over its K range (16 rows a step)"},
      {"STAGES", {2, 3, 4, 6, 8}, "compute pipeline", "steps of A and B in each warp's own shared-memory ring"},
      {"SPLIT_K", {1, 2, 3, 4, 6, 8, 12, 16}, "data scheduling",
       "slices of K over CTAs, summed in slice order by the CTA that finishes last (deterministic)"},
  };
  const int64_t smem_limit = profile.smem_per_block_bytes > 0 ? profile.smem_per_block_bytes : 48 * 1024;
  s.constraints.push_back({Layer::hardware_mapping, "shared memory per block within the chip record's limit",
                           [q, smem_limit](const Config& c) { return skinny_smem_bytes(q, c) <= smem_limit; }});
  const int64_t regs = profile.registers_per_core > 0 ? profile.registers_per_core : 65536;
  s.constraints.push_back({Layer::hardware_mapping, "registers of one CTA within an SM's",
                           [regs](const Config& c) { return int64_t(kRegisters) * skinny_threads(c) <= regs; }});
  s.constraints.push_back({Layer::data_scheduling, "every K slice holds at least one 16-row step",
                           [q](const Config& c) {
                             const SkinnyGrid g = skinny_grid(q, c);
                             return g.k_per_split * (g.split_k - 1) < q.k;
                           }});
  return s;
}

plan::Cost skinny_cost(const Problem& problem, const hw::HwProfile& profile, const Config& c) {
  const Problem q = problem.normalized();
  if (auto missing = plan::first_missing({{profile.mem_bandwidth_gbps > 0, "mem_bandwidth_gbps (HBM bandwidth)"},
                                          {profile.cores > 0, "cores (the SM count)"}})) {
    return plan::invalid_cost(*missing);
  }
  plan::Cost cost;
  const SkinnyGrid g = skinny_grid(q, c);
  const int64_t sms = profile.cores, warps = v(c, "WARPS"), stages = v(c, "STAGES");
  const int64_t threads = skinny_threads(c);
  const int64_t smem = skinny_smem_bytes(q, c);
  const int64_t smem_sm = profile.smem_per_core_bytes > 0 ? profile.smem_per_core_bytes : smem;
  const int64_t threads_sm = profile.max_threads_per_core > 0 ? profile.max_threads_per_core : 2048;
  const int64_t blocks_sm = profile.max_blocks_per_core > 0 ? profile.max_blocks_per_core : 32;
  int64_t per_sm = std::min({smem_sm / std::max<int64_t>(1, smem), threads_sm / threads, blocks_sm});
  cost.occupancy_limit = per_sm == smem_sm / std::max<int64_t>(1, smem) ? "shared memory" : "threads";
  per_sm = std::max<int64_t>(1, per_sm);
  cost.occupancy = int(per_sm);
  const int64_t ctas = g.strips * g.split_k, capacity = sms * per_sm;
  const int64_t waves = cdiv(ctas, capacity);
  cost.waves.tile_m = 16 * m_tiles(q);
  cost.waves.tile_n = kSkinnyStripN;
  cost.waves.tile_k = g.k_per_split;
  cost.waves.tiles_m = 1;
  cost.waves.tiles_n = g.strips;
  cost.waves.k_steps = cdiv(g.k_per_split, int64_t(kSkinnyStepK));
  cost.waves.tiles = ctas;
  cost.waves.cores = sms;
  cost.waves.occupancy = int(per_sm);
  cost.waves.slots = capacity;
  cost.waves.waves = waves;
  cost.waves.waves_exact = double(ctas) / double(capacity);
  cost.waves.last_wave_fill = double(ctas - (waves - 1) * capacity) / double(capacity);
  cost.waves.wave_efficiency = double(ctas) / double(waves * capacity);
  cost.waves.max_tiles_per_core = cdiv(ctas, sms);
  cost.waves.core_balance = double(ctas) / double(sms * cost.waves.max_tiles_per_core);

  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  const double b_bytes = double(q.k) * double(q.n) * in;
  const double c_bytes = double(q.m) * double(q.n) * out * (q.beta != 0.0 ? 2.0 : 1.0);
  const double a_l2 = double(g.strips) * double(q.m) * double(q.k) * in;
  const double dram = b_bytes + double(q.m) * double(q.k) * in + c_bytes;
  cost.dram_bytes = dram;
  const double bw = profile.mem_bandwidth_gbps * 1e9 * kDramShare;
  // Little's law: B bytes in flight over the resident warps, each with STAGES - 1 steps ahead, of which no more than
  // kUsefulStepsAhead count: a warp waits for its oldest step whatever is behind it, so more warps beat deeper rings
  // (the sweep of gpu-skinny: 16 warps x 4 stages 15.8-18.1 us where 8 x 8 ran 16.0-18.9).
  const double resident_warps = double(std::min(ctas, capacity) * warps);
  const double ahead = double(std::min<int64_t>(stages - 1, kUsefulStepsAhead));
  const double in_flight = resident_warps * ahead * kSkinnyStepK * kSkinnyStripN * in;
  const double dram_s = dram / bw;
  cost.latency_s = b_bytes / (in_flight / kLoadedLatencySeconds);
  const double l2_s = a_l2 / kL2BytesPerSecond;
  const double active_sms = double(std::min(ctas, sms));
  const double sm_s = (b_bytes + a_l2) / (active_sms * kSmBytesPerSecond);
  cost.levels = {{"HBM", dram, bw, dram_s}, {"L2", a_l2, kL2BytesPerSecond, l2_s}};
  plan::combine_terms(cost, {{"HBM", dram_s, true},
                             {"L2", l2_s, true},
                             {"SM loads", sm_s, false},
                             {"latency", cost.latency_s, true}});
  // f32 partials written and read back once per slice, and the fix-up's fence and ordered read.
  if (g.split_k > 1) {
    const double part = 2.0 * double(g.split_k) * double(q.m) * double(g.strips * kSkinnyStripN) * 4.0;
    const double fix = part / kL2BytesPerSecond + kSplitFixupSeconds;
    cost.body_s += fix;
    cost.notes.push_back(fmt::format("split-K {}: {} of f32 partials and the last CTA's ordered sum: {}", g.split_k,
                                     plan::fmtx::bytes(part), plan::fmtx::time(fix)));
  }
  cost.overhead_s = kFixedSeconds + double(waves - 1) * kWaveSeconds;
  if (waves > 1) {
    cost.notes.push_back(fmt::format("{} CTAs in {} waves of {} ({} per SM)", ctas, waves, capacity, per_sm));
  }
  // The tensor cores do M x N x K (M padded to 16) at a small share of their rate: never the bound here.
  const auto peak = profile.peak_tflops(q.precision.input, q.precision.accum);
  if (peak && *peak > 0) {
    cost.compute_s = 2.0 * double(16 * m_tiles(q)) * double(q.n) * double(q.k) / (*peak * 1e12 * 0.25);
    cost.compute_share = 0.25;
  }
  cost.seconds = cost.body_s + cost.fill_s + cost.overhead_s;
  return cost;
}

Config skinny_heuristic(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  const ParamSpace space = skinny_space(q, profile);
  const int64_t strips = cdiv(q.n, int64_t(kSkinnyStripN)), sms = std::max(1, profile.cores);
  for (int64_t split : {1, 2, 3, 4, 6, 8}) {
    Config c{"sm80_skinny", {{"WARPS", 8}, {"STAGES", 4}, {"SPLIT_K", split}}};
    if (strips * split >= sms || split == 8) {
      // The largest split that still leaves every slice a step.
      while (!space.admits(c) && c.params["SPLIT_K"] > 1) c.params["SPLIT_K"] /= 2;
      return c;
    }
  }
  return Config{"sm80_skinny", {{"WARPS", 8}, {"STAGES", 4}, {"SPLIT_K", 1}}};
}

SkinnySource skinny_source(const Problem& problem, const Config& c) {
  const Problem q = problem.normalized();
  SkinnySource k;
  const int64_t mt = m_tiles(q), w = v(c, "WARPS"), st = v(c, "STAGES"), split = v(c, "SPLIT_K");
  k.threads = skinny_threads(c);
  k.smem_bytes = skinny_smem_bytes(q, c);
  const bool b_row = b_row_major(q.layout);
  k.entry = fmt::format("sm80_skinny_gemm_{}_{}_{}_m{}_w{}_s{}_k{}", to_string(q.precision.input),
                        to_string(q.precision.output), to_string(q.layout), mt, w, st, split);
  k.source = fmt::format(
      "// Generated by tileforge for {config}\n"
      "#include \"sm80_skinny/gemm.cuh\"\n"
      "using Cfg = tf::skinny::Config<{mt}, {w}, {st}, {split}, {brow}, {in}, {out}>;\n"
      "extern \"C\" __global__ void __launch_bounds__(Cfg::THREADS) {entry}(const tf::skinny::Params p) {{\n"
      "  tf::skinny::gemm<Cfg>(p);\n"
      "}}\n",
      fmt::arg("config", c.describe()), fmt::arg("mt", mt), fmt::arg("w", w), fmt::arg("st", st),
      fmt::arg("split", split), fmt::arg("brow", b_row ? "true" : "false"), fmt::arg("in", elem_tag(q.precision.input)),
      fmt::arg("out", elem_tag(q.precision.output)), fmt::arg("entry", k.entry));
  return k;
}

}  // namespace tileforge::cuda
