// The triton family's host side: support, targets, Triton's resources per config, space, cost model, heuristic and
// compile request.
#include "backends/cuda/triton/triton_family.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "backends/cuda/sm80/sm80_cost_model.hpp"
#include "core/int_math.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda {
namespace {

// The cost model's constants. First estimates, to be fitted to the family's own sweep on the H200 (each says where
// its number comes from).
// The share of the chip's dense peak Triton's warpgroup MMA loop reaches on large tiles: its tutorial GEMM ran
// 645 TFLOP/s at 4096^3 on the H200 (../anchors: 0.65 of 989), launch and fill included.
constexpr double kWgmmaShare = 0.72;
// mma.sync on Hopper (fewer than 4 warps or 64-row tiles): tileforge's own sm80 family reached about 0.4 of the
// H200's peak with it; on sm_80 and sm_89 it is the native instruction.
constexpr double kMmaSyncShareHopper = 0.42;
constexpr double kMmaSyncShare = 0.75;
// Triton's wgmma loop at two stages: one k-step of loads ahead leaves the MMAs waiting (the H200 tune of the public
// suite, bench/results/h200/2026-12-03-triton-family: 128x128x64 w4 at 5120^3 538 us with 2 stages, 397 with 3 to 5).
constexpr double kTwoStageShare = 0.74;
// The wgmma's N is the tile's (Triton splits M over warpgroups): 128x256 tiles ran 6% faster than 256x128 at 4096^3
// (187 against 199 us) and at 8192^3 (1443 against 1543), the same work with half-width instructions.
double wgmma_width_share(int64_t n) { return n >= 256 ? 1.0 : n >= 128 ? 0.94 : n >= 64 ? 0.86 : 0.75; }
// 64x256 tiles on the warpgroup-MMA path ran 6-45% slower than 128x256 with 8 warps wherever both were measured
// (the H200 tune, call3: 5120^3 417-559 against 394 us, 3000^3 202-213 against 140, 16384x16384x1024 1119-1262
// against 850, 4096x4096x512 41-44 against 37), whatever the warps and stages: priced at 0.8 of the rate.
constexpr double kWide64RowShare = 0.8;
// GROUP_M = 1 (tile rows walked one at a time) ran 2-16% slower than grouped walks of the same tile in every pair
// the tune measured (16384x16384x1024: 990 us against 850 with 16; 128x4096x14336: 53.7 against 47.8), which the
// DRAM walk does not see where the L2 holds the operands anyway: priced 2% slower where there are rows to group.
constexpr double kUngroupedSlowdown = 1.02;
// Leading dimensions off 8 elements: Triton loads the rows two bytes at a time; the tune of 4095x4097x4093 streamed
// about 7 bytes per cycle into each SM that way (128x64x32 tiles, 1855 us).
constexpr double kNarrowLoadBytesPerCycle = 7.0;
// Of those two-byte loads, the operand whose rows run along M or N (B in RR) costs 3.7 times the one whose rows run
// along K: the H200 ran 4095x4097x4093 at 1.78 ms with 128x64x32 tiles and 2.58 ms with 64x128x32 (4 warps each,
// bench/results/h200/2026-12-03c-shared-workspace/call1), the same bytes. The weights keep the 128x64x32 tile that
// the rate above was fitted on at its price (measured in RR only; the other layouts are priced by the same rule).
constexpr double kNarrowKMajorWeight = 192.0 / (128.0 + 3.7 * 64.0), kNarrowMnMajorWeight = 3.7 * kNarrowKMajorWeight;
// AMD MFMA through Triton: an estimate until measured.
constexpr double kMfmaShare = 0.6;
// Loaded latency of a global load through the pipeline: Little's law turns the k-steps in flight into a bandwidth.
constexpr double kLoadLatencySeconds = 1.0e-6;
// Launch, first loads and the last tile's epilogue (the sm90 family's measured launch gap is 3 us under the
// benchmark's write scrub).
constexpr double kLaunchSeconds = 3.0e-6;
constexpr double kFillSeconds = 1.0e-6;
// The share of the chip record's HBM bandwidth a streaming GEMM reaches.
constexpr double kDramShare = 0.8;
// Static shared memory of a Triton cubin on sm_90 (cuobjdump of the sweep's kernels: 1024 bytes, barriers).
constexpr int64_t kStaticSmemBytes = 1024;
// Registers beyond the accumulator, fitted to the sweep's reports: the wgmma path needs about 40 for addresses,
// masks and the pipeline's indices; the mma.sync path holds its A and B fragments in registers too.
constexpr int64_t kWgmmaExtraRegisters = 40;
constexpr int64_t kMmaExtraRegisters = 48;
// No spills in the sweep up to these accumulators per thread (ptxas caps at 255 registers).
constexpr int64_t kMaxAccWgmma = 128;
constexpr int64_t kMaxAccMma = 64;
// Without async copies (leading dimensions off 16 elements) the sweep spilled whenever a k-step's staging took more
// than 24 registers per thread or the accumulator more than 64 (cuda:80 and cuda:90 alike).
constexpr int64_t kMaxAccUnpipelined = 64;
constexpr int64_t kMaxStagingUnpipelined = 24;
// Without async copies every element a thread loads keeps a 64-bit address and a value register across the k-loop:
// registers per thread fitted to the sweep's unspilled cuda:90 reports (cuda-90-unaligned.csv, least squares over
// the accumulator and the elements a thread loads per k-step; mean error 24 registers on the wgmma path, 14 on
// mma.sync). 128x128x32 with 8 warps reports 196 (the fit: 213), one program per SM, not the two the pipelined
// formula gives: the H200 ran it at 2.31 ms against 1.80 for 128x64x32 with 4 warps (two per SM).
constexpr double kUnpipelinedAccWeightWgmma = 1.70, kUnpipelinedLoadWeightWgmma = 3.24;
constexpr double kUnpipelinedAccWeightMma = 1.63, kUnpipelinedLoadWeightMma = 2.33, kUnpipelinedBaseMma = 28.0;
constexpr int64_t kMaxRegistersPerThread = 255;
// Rows a multiple of 8 elements but not of 16 (3000, 1000): 16-byte async copies, but every other row starts in the
// middle of a 32-byte sector. The H200's 3000^3 ran 128x128x64 in 159 us and 128x256x64 in 142-146 us where the
// L2 term at the chip record's rate gives 75 and 67 us: priced at half that rate (both within 3%).
constexpr double kRowsOffSectorL2Share = 0.5;

int64_t v(const Config& c, const char* name) { return c.at(name); }

int64_t round_up(int64_t x, int64_t m) { return cdiv(x, m) * m; }

bool fits_i32(int64_t x) { return x >= 0 && x <= INT32_MAX; }

}  // namespace

std::string triton_refusal(const Problem& problem) {
  const Problem q = problem.normalized();
  const Precision& pr = q.precision;
  if (pr.input != DType::f16 && pr.input != DType::bf16) {
    return fmt::format("the triton family takes f16 or bf16 inputs, not {}", to_string(pr.input));
  }
  if (pr.accum != DType::f32) return "the triton family accumulates in f32 (tl.dot with an f32 accumulator)";
  if (pr.output != DType::f16 && pr.output != DType::bf16 && pr.output != DType::f32) {
    return fmt::format("the triton family writes f16, bf16 or f32, not {}", to_string(pr.output));
  }
  if (q.m == 0 || q.n == 0 || q.k == 0) return "the triton family needs M, N and K of at least 1";
  if (!fits_i32(q.m) || !fits_i32(q.n) || !fits_i32(q.k) || !fits_i32(q.lda) || !fits_i32(q.ldb) ||
      !fits_i32(q.ldc)) {
    return "the triton family passes sizes and leading dimensions as 32-bit ints";
  }
  if (!std::isfinite(q.alpha) || !std::isfinite(q.beta)) return "the triton family needs finite alpha and beta";
  return {};
}

TritonTarget triton_target(const hw::HwProfile& p) {
  TritonTarget t;
  if (p.kind != "gpu") return t;
  if (p.vendor == "nvidia" && p.arch.rfind("sm_", 0) == 0) {
    const int sm = p.nvidia_sm();
    if (sm >= 80) {
      t.backend = "cuda";
      t.arch = std::to_string(sm);
      t.warp_size = 32;
      t.sm = sm;
    }
  } else if (p.vendor == "amd" && (p.arch == "gfx942" || p.arch == "gfx90a" || p.arch == "gfx950")) {
    t.backend = "hip";
    t.arch = p.arch;
    t.warp_size = 64;
  }
  return t;
}

std::string to_string(const TritonTarget& t) { return t.backend + ":" + t.arch; }

Expected<TritonTarget> parse_target(std::string_view text) {
  const std::size_t colon = text.find(':');
  TritonTarget t;
  if (colon != std::string_view::npos) {
    t.backend = std::string(text.substr(0, colon));
    t.arch = std::string(text.substr(colon + 1));
  } else if (text.rfind("sm_", 0) == 0) {  // an NVRTC-style arch ("sm_90a") from a caller that names the GPU's
    t.backend = "cuda";
    std::string_view digits = text.substr(3);
    if (!digits.empty() && digits.back() >= 'a' && digits.back() <= 'z') digits.remove_suffix(1);  // sm_90a's "a"
    t.arch = std::string(digits);
  }
  if (t.backend == "cuda") {
    // The whole arch is the SM number: "cuda:9x" or "cuda:90abc" is refused, not read as 9 or 90.
    const char* end = t.arch.data() + t.arch.size();
    const auto [stop, error] = std::from_chars(t.arch.data(), end, t.sm);
    t.warp_size = 32;
    if (error == std::errc() && stop == end && t.sm >= 80) return t;
  } else if (t.backend == "hip" && !t.arch.empty()) {
    t.warp_size = 64;
    return t;
  }
  return invalid_argument(fmt::format("triton target '{}': expected cuda:SM (cuda:90, cuda:80) or hip:GFX "
                                      "(hip:gfx942)",
                                      text));
}

bool triton_operands_aligned(const Problem& problem) {
  const Problem q = problem.normalized();
  // Triton's JIT hints an int argument only when it divides by 16 (its value): lda = 1000 gets none, and without it
  // A's rows are loaded neither 16 bytes at a time nor asynchronously (the sweep: one buffer, no pipeline; the H200:
  // 26.6 TFLOP/s at 1000^3). The family's request gives divisibility by 8 where that holds (the article's fix), which
  // is what 16-byte loads of f16 rows need.
  const auto div8 = [](int64_t x) { return x % 8 == 0; };
  return div8(q.lda) && div8(q.ldb) && (q.batch == 1 || (div8(q.stride_a) && div8(q.stride_b)));
}

TritonResources triton_resources(const Problem& problem, const TritonTarget& t, const Config& c) {
  const Problem q = problem.normalized();
  TritonResources r;
  const int64_t bm = v(c, "BLOCK_M"), bn = v(c, "BLOCK_N"), bk = v(c, "BLOCK_K"), w = v(c, "WARPS"),
                st = v(c, "STAGES");
  const int64_t in = int64_t(size_of(q.precision.input));
  r.wgmma = t.backend == "cuda" && t.sm == 90 && w % 4 == 0 && bm >= 64;
  r.pipelined = triton_operands_aligned(q);
  const int64_t lanes = w * t.warp_size;
  const int64_t step_bytes = (bm + bn) * bk * in;
  // The sweep (bench/results/triton-resources): with async copies the wgmma path allocates STAGES copies of a
  // k-step and the mma.sync path STAGES - 1; without them one copy, or the epilogue's layout conversion of the tile
  // in 16 bits where that is larger.
  r.buffers = !r.pipelined ? 1 : r.wgmma ? st : std::max<int64_t>(1, st - 1);
  r.smem_bytes = r.buffers * step_bytes;
  if (!r.pipelined) r.smem_bytes = std::max(r.smem_bytes, bm * bn * 2);
  // Triton's sm_90 cubins carry 1 KB of static shared memory (barriers); sm_80's none.
  if (t.backend == "cuda" && t.sm >= 90) r.smem_bytes += kStaticSmemBytes;
  r.acc_per_thread = cdiv(bm * bn, lanes);
  // Without async copies each k-step's A and B pass through registers first.
  r.staging_per_thread = r.pipelined ? 0 : cdiv(step_bytes, 4 * lanes);
  r.registers = r.acc_per_thread + r.staging_per_thread +
                (r.wgmma ? kWgmmaExtraRegisters : kMmaExtraRegisters + r.acc_per_thread / 2);
  if (!r.pipelined && t.backend == "cuda") {
    const double loads = double(bm + bn) * double(bk) / double(lanes);
    const double fit = r.wgmma ? kUnpipelinedAccWeightWgmma * double(r.acc_per_thread) + kUnpipelinedLoadWeightWgmma * loads
                               : kUnpipelinedAccWeightMma * double(r.acc_per_thread) + kUnpipelinedLoadWeightMma * loads +
                                     kUnpipelinedBaseMma;
    r.registers = std::min<int64_t>(kMaxRegistersPerThread, std::max<int64_t>(r.registers, std::llround(fit)));
  }
  return r;
}

ParamSpace triton_space(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  const TritonTarget t = triton_target(profile);
  ParamSpace s;
  s.family = "triton";
  s.version = kTritonVersion;
  s.params = {
      {"BLOCK_M", {16, 32, 64, 128, 256}, "hardware mapping", "rows of C per program (tl.constexpr)"},
      {"BLOCK_N", {16, 32, 64, 128, 256}, "hardware mapping", "columns of C per program"},
      {"BLOCK_K", {32, 64, 128}, "compute pipeline", "depth of one k-step of the dot"},
      {"GROUP_M", {1, 4, 8, 16}, "data scheduling", "tile rows walked together, so a wave shares B's panels in L2"},
      {"WARPS", {2, 4, 8}, "hardware mapping", "num_warps: warps per program"},
      {"STAGES", {2, 3, 4, 5}, "compute pipeline", "num_stages: k-steps of Triton's software pipeline"},
  };
  const int64_t smem_limit = profile.smem_per_block_bytes > 0 ? profile.smem_per_block_bytes : 48 * 1024;
  s.constraints.push_back({Layer::hardware_mapping, "shared memory per program within the chip record's limit",
                           [q, t, smem_limit](const Config& c) {
                             return triton_resources(q, t, c).smem_bytes <= smem_limit;
                           },
                           {"BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS", "STAGES"}});
  s.constraints.push_back({Layer::hardware_mapping, "accumulator registers per thread without spills",
                           [q, t](const Config& c) {
                             const TritonResources r = triton_resources(q, t, c);
                             if (!r.pipelined) {
                               return r.acc_per_thread <= kMaxAccUnpipelined &&
                                      r.staging_per_thread <= kMaxStagingUnpipelined;
                             }
                             return r.acc_per_thread <= (r.wgmma ? kMaxAccWgmma : kMaxAccMma);
                           },
                           {"BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS"}});
  const int64_t regs = profile.registers_per_core > 0 ? profile.registers_per_core : 65536;
  s.constraints.push_back({Layer::hardware_mapping, "registers of one program within an SM's",
                           [q, t, regs](const Config& c) {
                             return triton_resources(q, t, c).registers * v(c, "WARPS") * t.warp_size <= regs;
                           },
                           {"BLOCK_M", "BLOCK_N", "WARPS"}});
  // Each warp of the dot needs at least one MMA tile of the program's C (16 x 8 on NVIDIA): more warps than that
  // leave some idle (Triton then replicates work).
  s.constraints.push_back({Layer::hardware_mapping, "every warp owns at least a 16x16 piece of the tile",
                           [](const Config& c) { return v(c, "BLOCK_M") * v(c, "BLOCK_N") >= 256 * v(c, "WARPS"); },
                           {"BLOCK_M", "BLOCK_N", "WARPS"}});
  // A tile far larger than the problem computes mostly padding.
  s.constraints.push_back({Layer::parameter_adaptation, "tiles no larger than the problem rounded up to 16",
                           [q](const Config& c) {
                             return v(c, "BLOCK_M") <= std::max<int64_t>(16, round_up(q.m, 16)) &&
                                    v(c, "BLOCK_N") <= std::max<int64_t>(16, round_up(q.n, 16));
                           },
                           {"BLOCK_M", "BLOCK_N"}});
  return s;
}

ParamSpace triton_limits(const Problem& problem, const hw::HwProfile& profile) {
  ParamSpace s = triton_space(problem, profile);
  std::erase_if(s.constraints, [](const Constraint& c) { return c.layer == Layer::parameter_adaptation; });
  return s;
}

std::vector<Config> triton_tutorial_configs() {
  // (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps), as 03-matrix-multiplication.py lists them for CUDA.
  static constexpr int64_t kList[][5] = {
      {128, 256, 64, 3, 8}, {64, 256, 32, 4, 4},  {128, 128, 32, 4, 4}, {128, 64, 32, 4, 4}, {64, 128, 32, 4, 4},
      {128, 32, 32, 4, 4},  {64, 32, 32, 5, 2},   {32, 64, 32, 5, 2},   {128, 256, 64, 4, 8}, {256, 128, 64, 3, 8},
      {128, 128, 64, 4, 8}, {64, 64, 64, 4, 4},   {128, 128, 64, 3, 4}, {64, 128, 64, 4, 4},  {256, 128, 64, 4, 8},
      {128, 256, 64, 5, 8}, {128, 128, 128, 3, 8}};
  std::vector<Config> out;
  for (const auto& c : kList) {
    out.push_back(Config{"triton", {{"BLOCK_M", c[0]}, {"BLOCK_N", c[1]}, {"BLOCK_K", c[2]}, {"GROUP_M", 8},
                                    {"WARPS", c[4]}, {"STAGES", c[3]}}});
  }
  return out;
}

namespace {

// Programs of config `c` resident per SM, at least one, and what limits them; the record's limits where it has
// them, else those of the NVIDIA chips Triton targets.
struct TritonOccupancy {
  int64_t programs = 1;
  const char* limit = "blocks";
};
TritonOccupancy triton_occupancy(const hw::HwProfile& profile, const TritonResources& r, int64_t threads) {
  const int64_t smem_sm = profile.smem_per_core_bytes > 0 ? profile.smem_per_core_bytes : r.smem_bytes;
  const int64_t threads_sm = profile.max_threads_per_core > 0 ? profile.max_threads_per_core : 2048;
  const int64_t regs_sm = profile.registers_per_core > 0 ? profile.registers_per_core : 65536;
  const int64_t by_smem = smem_sm / std::max<int64_t>(1, r.smem_bytes);
  const int64_t by_regs = regs_sm / std::max<int64_t>(1, r.registers * threads);
  const int64_t by_threads = threads_sm / threads;
  const int64_t occ = std::min({by_smem, by_regs, by_threads, int64_t(profile.max_blocks_per_core)});
  TritonOccupancy o;
  o.limit = occ == by_smem ? "shared memory" : occ == by_regs ? "registers" : occ == by_threads ? "threads" : "blocks";
  o.programs = std::max<int64_t>(1, occ);
  return o;
}

// The share of the chip's dense peak the program's MMA loop reaches: by instruction (MFMA, warpgroup MMA at the
// tile's width, mma.sync), less for two-stage and 64-row-wide warpgroup tiles.
double mma_share(const TritonTarget& t, const TritonResources& r, int64_t bm, int64_t bn, int64_t stages) {
  double share = t.backend == "hip" ? kMfmaShare : r.wgmma ? kWgmmaShare * wgmma_width_share(bn)
                                                           : (t.sm >= 90 ? kMmaSyncShareHopper : kMmaSyncShare);
  if (r.wgmma && stages == 2) share *= kTwoStageShare;
  if (r.wgmma && bm == 64 && bn >= 256) share *= kWide64RowShare;
  return share;
}

// Shared-memory bytes of one tile over the whole (padded) K: each k-step's A tile is read by the warps along N and
// B's by the warps along M (the wgmma path splits M over warpgroups, each reading all of B).
double smem_tile_bytes(const TritonResources& r, int64_t bm, int64_t bn, int64_t bk, int64_t warps, double in,
                       double k_pad) {
  int64_t warps_m = 1, warps_n = 1;
  if (r.wgmma) {
    warps_m = std::min<int64_t>(warps / 4, std::max<int64_t>(1, bm / 64));
    warps_n = 1;
  } else {
    warps_m = std::min<int64_t>(warps, std::max<int64_t>(1, bm / 16));
    warps_n = std::max<int64_t>(1, warps / warps_m);
  }
  return 2.0 * double(bk) * in * 0.5 * double(bm * warps_n + bn * warps_m) * (k_pad / double(bk));
}

// Rows off 16 bytes: two-byte loads, which no async copy or vector load can take; the seconds of the busiest SM's
// `tiles` tiles, each operand weighted by whether its rows run along K.
// A program alone on its SM waits for its loads, then computes: two or more overlap one's loads with another's
// dot (128x128x32 with 8 warps, one per SM: 2.31 ms on 4095x4097x4093; 128x64x32 with 4, two per SM: 1.80 ms).
double narrow_load_seconds(const Problem& q, int64_t bm, int64_t bn, double k_pad, double in, double tiles,
                           int64_t occ, double clock) {
  const double narrow_rate = kNarrowLoadBytesPerCycle * clock * std::min(1.0, double(occ) / 2.0);
  const double a_weight = a_row_major(q.layout) ? kNarrowKMajorWeight : kNarrowMnMajorWeight;
  const double b_weight = b_row_major(q.layout) ? kNarrowMnMajorWeight : kNarrowKMajorWeight;
  const double narrow_tile = (double(bm) * a_weight + double(bn) * b_weight) * k_pad * in;
  return tiles * narrow_tile / narrow_rate;
}

}  // namespace

plan::Cost triton_cost(const Problem& problem, const hw::HwProfile& profile, const Config& c) {
  const Problem q = problem.normalized();
  const TritonTarget t = triton_target(profile);
  if (t.backend.empty()) return plan::invalid_cost(fmt::format("Triton has no backend for {}", profile.arch));
  const auto peak = profile.peak_tflops(q.precision.input, q.precision.accum);
  if (auto missing = plan::first_missing({{profile.cores > 0, "cores (the SM count)"},
                                          {peak.has_value() && *peak > 0, "peaks[] (the f16/bf16 MMA peak)"},
                                          {profile.mem_bandwidth_gbps > 0, "mem_bandwidth_gbps (HBM bandwidth)"},
                                          {profile.boost_clock_ghz > 0, "boost_clock_ghz (the SM clock)"},
                                          {profile.l2_bytes_per_core_cycle > 0, "l2_bytes_per_core_cycle"},
                                          {profile.smem_bytes_per_core_cycle > 0, "smem_bytes_per_core_cycle"},
                                          {profile.max_blocks_per_core > 0, "max_blocks_per_core"}})) {
    return plan::invalid_cost(*missing);
  }
  plan::Cost cost;
  const TritonResources r = triton_resources(q, t, c);
  const int64_t bm = v(c, "BLOCK_M"), bn = v(c, "BLOCK_N"), bk = v(c, "BLOCK_K"), w = v(c, "WARPS"),
                st = v(c, "STAGES"), gm = v(c, "GROUP_M");
  const int64_t sms = profile.cores;
  const TritonOccupancy occupancy = triton_occupancy(profile, r, w * t.warp_size);
  const int64_t occ = occupancy.programs;
  cost.occupancy_limit = occupancy.limit;
  cost.occupancy = int(occ);
  cost.waves = plan::analyze_waves(q, sms, int(occ), bm, bn, bk);
  const plan::WaveAnalysis& wv = cost.waves;

  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  const double clock = profile.boost_clock_ghz * 1e9;
  const double k_pad = double(round_up(q.k, bk));
  const double tile_flops = 2.0 * double(bm) * double(bn) * k_pad;
  const double share = mma_share(t, r, bm, bn, st);
  const double sm_rate = *peak * 1e12 / double(sms) * share;
  const double per_sm_tiles = double(wv.max_tiles_per_core);
  cost.compute_s = per_sm_tiles * tile_flops / sm_rate;
  cost.compute_share = share;

  const double smem_tile = smem_tile_bytes(r, bm, bn, bk, w, in, k_pad);
  const double smem_s = per_sm_tiles * smem_tile / (profile.smem_bytes_per_core_cycle * clock);
  // L2 into each SM: every tile reads its A panel and B panel once.
  const double l2_tile = double(bm + bn) * k_pad * in;
  const bool rows_off_sector = t.backend == "cuda" && r.pipelined && !(q.lda % 16 == 0 && q.ldb % 16 == 0);
  const double l2_rate = profile.l2_bytes_per_core_cycle * clock * (rows_off_sector ? kRowsOffSectorL2Share : 1.0);
  const double l2_s = per_sm_tiles * l2_tile / l2_rate;
  // DRAM: the grouped raster's panels over the L2, as the sm80 family's walk simulates them, and C.
  const int64_t slots = std::max<int64_t>(1, std::min<int64_t>(wv.tiles, sms * occ));
  const double ab = operand_dram_bytes_in_flight(q, profile, slots, bm, bn, gm, int(occ), nullptr);
  const double c_bytes = double(q.m) * double(q.n) * out * (q.beta != 0.0 ? 2.0 : 1.0) * double(q.batch);
  cost.dram_bytes = ab + c_bytes;
  const double bw = profile.mem_bandwidth_gbps * 1e9 * kDramShare;
  const double dram_s = cost.dram_bytes / bw;
  // The loads in flight: each resident program keeps STAGES - 1 k-steps ahead (one without async copies).
  const double ahead = r.pipelined ? double(std::max<int64_t>(1, st - 1)) : 0.5;
  const double in_flight = double(std::min<int64_t>(occ, cdiv(wv.tiles, sms))) * ahead * double(bm + bn) * double(bk) * in;
  cost.latency_s = per_sm_tiles * l2_tile / (in_flight / kLoadLatencySeconds);
  // Rows off 16 bytes (no async copies): two-byte loads.
  const double narrow_s = r.pipelined ? 0.0 : narrow_load_seconds(q, bm, bn, k_pad, in, per_sm_tiles, occ, clock);
  cost.levels = {{"HBM", cost.dram_bytes, bw, dram_s},
                 {"L2", l2_tile * double(wv.tiles), l2_rate * double(sms), l2_s},
                 {"shared memory", smem_tile * double(wv.tiles), profile.smem_bytes_per_core_cycle * clock * double(sms),
                  smem_s}};
  plan::combine_terms(cost, {{"compute", cost.compute_s, true},
                             {"HBM", dram_s, true},
                             {"L2", l2_s, true},
                             {"shared memory", smem_s, true},
                             {"narrow loads", narrow_s, true},
                             {"latency", cost.latency_s, false}});
  // Each wave's programs fill their pipeline before the first dot and write their tile after the last.
  const double epilogue = double(bm * bn) * out / (profile.l2_bytes_per_core_cycle * clock);
  cost.fill_s = double(wv.waves) * (kFillSeconds * 0.5 + epilogue) + kFillSeconds * 0.5;
  cost.overhead_s = kLaunchSeconds;
  if (rows_off_sector) {
    cost.notes.push_back(fmt::format("{}", "rows a multiple of 8 elements but not of 16: every other row starts inside "
                                           "a 32-byte sector, the L2 priced at half its rate"));
  }
  if (!r.pipelined) {
    // (fmt::format, not a literal: GCC 12 warns falsely on a long literal pushed into a vector of strings.)
    cost.notes.push_back(fmt::format("{}", "leading dimensions off 8 elements: Triton loads rows two bytes at a time, "
                                           "without async copies"));
  }
  cost.notes.push_back(fmt::format("{}: {} buffers, {} of shared memory, ~{} registers per thread, {} per SM ({})",
                                   r.wgmma ? "warpgroup MMA" : (t.backend == "hip" ? "MFMA" : "mma.sync"), r.buffers,
                                   plan::fmtx::bytes(double(r.smem_bytes)), r.registers, occ, cost.occupancy_limit));
  if (gm == 1 && wv.tiles_m > 1) cost.body_s *= kUngroupedSlowdown;
  cost.seconds = cost.body_s + cost.fill_s + cost.overhead_s;
  return cost;
}

Config triton_heuristic(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  const ParamSpace space = triton_space(q, profile);
  const int64_t sms = std::max(1, profile.cores);
  // From the largest tile down: the first legal one that gives most SMs a program; else the legal one that gives
  // the most programs.
  const std::pair<int64_t, int64_t> tiles[] = {{128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}, {64, 32},
                                               {32, 64},   {32, 32},   {16, 64},  {64, 16},  {16, 32}, {32, 16},
                                               {16, 16}};
  Config most;
  int64_t most_programs = 0;
  for (const auto& [bm, bn] : tiles) {
    const int64_t warps = bm * bn >= 128 * 128 ? 8 : bm * bn >= 64 * 64 ? 4 : 2;
    for (int64_t stages : {3, 4, 2}) {
      Config c{"triton", {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"WARPS", warps},
                          {"STAGES", stages}}};
      if (cdiv(q.m, bm) < 8) c.params["GROUP_M"] = 1;
      if (!space.admits(c)) c.params["BLOCK_K"] = 32;
      if (!space.admits(c)) continue;
      const int64_t programs = cdiv(q.m, bm) * cdiv(q.n, bn) * q.batch;
      if (programs >= sms * 3 / 4) return c;
      if (programs > most_programs) {
        most = c;
        most_programs = programs;
      }
      break;
    }
  }
  return most;
}

triton::Request triton_request(const Problem& problem, const Config& c, const TritonTarget& t,
                               bool pointers_aligned) {
  const Problem q = problem.normalized();
  const auto ty = [](DType d) -> std::string {
    switch (d) {
      case DType::f16: return "*fp16";
      case DType::bf16: return "*bf16";
      default: return "*fp32";
    }
  };
  triton::Request r;
  r.backend = t.backend;
  r.arch = t.arch;
  r.warp_size = t.warp_size;
  r.num_warps = int(v(c, "WARPS"));
  r.num_stages = int(v(c, "STAGES"));
  r.signature = {{"a_ptr", ty(q.precision.input)}, {"b_ptr", ty(q.precision.input)}, {"c_ptr", ty(q.precision.output)},
                 {"M", "i32"}, {"N", "i32"}, {"K", "i32"}, {"lda", "i32"}, {"ldb", "i32"}, {"ldc", "i32"},
                 {"stride_a", "i64"}, {"stride_b", "i64"}, {"stride_c", "i64"}, {"alpha", "fp32"}, {"beta", "fp32"}};
  const int64_t bm = v(c, "BLOCK_M"), bn = v(c, "BLOCK_N"), bk = v(c, "BLOCK_K");
  r.constexprs = {{"BLOCK_M", bm},
                  {"BLOCK_N", bn},
                  {"BLOCK_K", bk},
                  {"GROUP_M", v(c, "GROUP_M")},
                  {"A_ROW", a_row_major(q.layout) ? 1 : 0},
                  {"B_ROW", b_row_major(q.layout) ? 1 : 0},
                  {"EVEN_K", q.k % bk == 0 ? 1 : 0},
                  {"HINT_M", q.m % bm == 0 ? 1 : 0},
                  {"HINT_N", q.n % bn == 0 ? 1 : 0},
                  {"ALPHA_ONE", q.alpha == 1.0 ? 1 : 0},
                  {"HAS_BETA", q.beta != 0.0 ? 1 : 0}};
  for (const auto& [name, value] : r.constexprs) r.signature.emplace_back(name, "constexpr");
  // Divisibility: by 16 as Triton's JIT would specialise the same call, else by 8 where that holds (16 bytes of a
  // 16-bit row: the hint the article adds by hand), for sizes and leading dimensions by their value and pointers by
  // their address (the run checks the caller's).
  const auto divisor = [](int64_t x) { return x % 16 == 0 ? 16 : x % 8 == 0 ? 8 : 0; };
  if (pointers_aligned) r.divisible = {{"a_ptr", 16}, {"b_ptr", 16}, {"c_ptr", 16}};
  const std::pair<const char*, int64_t> ints[] = {{"M", q.m},     {"N", q.n},     {"K", q.k},
                                                  {"lda", q.lda}, {"ldb", q.ldb}, {"ldc", q.ldc}};
  for (const auto& [name, value] : ints) {
    if (int d = divisor(value)) r.divisible.emplace_back(name, d);
  }
  // Batch strides matter only with a batch (a single matrix passes 0, which any divisibility admits).
  const std::pair<const char*, int64_t> strides[] = {{"stride_a", q.stride_a}, {"stride_b", q.stride_b},
                                                     {"stride_c", q.stride_c}};
  for (const auto& [name, value] : strides) {
    if (q.batch == 1) {
      r.divisible.emplace_back(name, 16);
    } else if (int d = divisor(value)) {
      r.divisible.emplace_back(name, d);
    }
  }
  return r;
}

}  // namespace tileforge::cuda
