// The cpu-avx512, cpu-avx2 and cpu-generic kernel families (see cpu_family.hpp): which chips and problems they
// take, the candidates the planner tries, their cost model and their decision log; registered at load time.
#include "backends/cpu/cpu_family.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cpu/blocking.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_cost.hpp"
#include "backends/cpu/cpu_cost_constants.hpp"
#include "backends/cpu/gemm_driver.hpp"
#include "backends/cpu/microkernel.hpp"
#include "core/int_math.hpp"
#include "plan/analysis.hpp"
#include "plan/cost_constants.hpp"
#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"
#include "plan/planner.hpp"

namespace tileforge::cpu {
namespace {

using namespace constants;
namespace fmtx = plan::fmtx;
using plan::combine_terms;
using plan::Cost;
using plan::invalid_cost;

// The families' order among those that fit a chip: the widest vectors first (the sm80 family, for GPUs, is 100).
int preference_of(std::string_view family) {
  if (family == "cpu-avx512") return 30;
  if (family == "cpu-avx2") return 20;
  if (family == "cpu-generic") return 10;
  throw std::invalid_argument(fmt::format("unknown cpu family '{}' (allowed: cpu-avx512, cpu-avx2, cpu-generic)", family));
}

bool lists_avx512(const hw::HwProfile& p) {
  return p.has("avx512f") && p.has("avx512bw") && p.has("avx512dq") && p.has("avx512vl");
}
bool lists_avx2_fma(const hw::HwProfile& p) { return p.has("avx2") && p.has("fma"); }

// `v` rounded to the nearest multiple of `step` within [step, max rounded down to a multiple of step].
int64_t round_to(double v, int64_t step, int64_t max) {
  const int64_t hi = std::max<int64_t>(step, max / step * step);
  const int64_t r = int64_t(std::llround(v / double(step))) * step;
  return std::clamp<int64_t>(r, step, hi);
}

// The first core rate the cost model needs that the profile does not record, named; nothing when all are there.
// (l3_bytes_per_core_cycle is needed only with an L3, and checked where the model knows.)
std::optional<std::string> missing_field(const hw::HwProfile& p) {
  return plan::first_missing({
      {p.fma_pipes > 0, "fma_pipes (vector FMA instructions per core per cycle)"},
      {p.fma_latency_cycles > 0, "fma_latency_cycles (FMA latency)"},
      {p.load_ports_per_cycle > 0, "load_ports_per_cycle (vector loads per core per cycle)"},
      {p.l2_bytes_per_core_cycle > 0, "l2_bytes_per_core_cycle (L2 bytes per core per cycle)"},
      {p.mem_bandwidth_gbps > 0, "mem_bandwidth_gbps (memory bandwidth)"},
  });
}

// What cost() needs of its (problem, profile) whatever the config: worked out at the first cost() of a plan and kept
// for the others, which price the same problem on the same profile (kernel_family.hpp's CostScratch).
struct CostMemo final : plan::CostScratch {
  bool ready = false;
  Problem q;  // normalized
  plan::PeakChoice peak;
  std::optional<std::string> missing;  // the first number the model needs that the profile lacks
  CacheGeometry g1, g2, g3;
  int l3_shared_by = 0;  // the L3 record's shared_by; 0 when there is none or it does not say

  void fill(const Problem& problem, const hw::HwProfile& profile) {
    q = problem.normalized();
    peak = plan::peak_for(q, profile);
    missing = missing_field(profile);
    g1 = cache_geometry(profile, 1);
    g2 = cache_geometry(profile, 2);
    g3 = cache_geometry(profile, 3);
    const hw::CacheLevel* l3 = profile.cache(3);
    l3_shared_by = l3 && l3->shared_by > 0 ? l3->shared_by : 0;
    ready = true;
  }
};

// The parameters cost() reads, in the order of their names (a Config's map order), and their positions there.
constexpr std::array<std::string_view, 6> kParamNames = {"KC", "MC", "MR", "NC", "NR", "PACK_B"};
static_assert(std::is_sorted(kParamNames.begin(), kParamNames.end()));
enum ParamIndex : std::size_t { kKC, kMC, kMR, kNC, kNR, kPACK_B };

// The values of kParamNames in a config, 0 for one it lacks, in one walk over its map: cost() prices every candidate,
// and a lookup per name was a fifth of its time.
std::array<int64_t, 6> params_of(const Config& cfg) {
  std::array<int64_t, 6> v{};
  std::size_t k = 0;
  for (const auto& [name, value] : cfg.params) {
    while (k < kParamNames.size() && kParamNames[k] < name) ++k;
    if (k == kParamNames.size()) break;
    if (kParamNames[k] == name) v[k] = value;
  }
  return v;
}

// The factors the planner's grid applies to the analytic KC, MC and NC.
constexpr double kKcFactors[] = {0.5, 0.75, 1.0, 1.5, 2.0};
constexpr double kMcFactors[] = {0.5, 1.0, 2.0};
constexpr double kNcFactors[] = {0.5, 1.0};

}  // namespace

CpuFamily::CpuFamily(std::string_view isa_family) : name_(isa_family), preference_(preference_of(isa_family)) {}

int CpuFamily::version() const { return kFamilyVersion; }

plan::FamilyFit CpuFamily::fit(const hw::HwProfile& p) const {
  plan::FamilyFit f;
  if (p.kind != "cpu") {
    // Not this family's kind of chip: another backend's families give the reason when none fits.
    f.refusal = fmt::format("family {} plans for CPUs; {} is a {} {}", name_, p.name, p.vendor, p.kind);
    return f;
  }
  const bool avx512 = lists_avx512(p), avx2 = lists_avx2_fma(p);
  const int lanes = vector_floats(name_), regs = vector_registers(name_);
  f.relevant = true;
  if (name_ == "cpu-avx512") {
    if (avx512) {
      return plan::FamilyFit::yes(fmt::format(
          "{} lists AVX-512 F/BW/DQ/VL: the cpu-avx512 micro-kernels ({} f32 lanes, {} registers)", p.name, lanes, regs));
    }
    f.reason = fmt::format("{} does not list AVX-512 F/BW/DQ/VL", p.name);
    f.refusal = fmt::format("family cpu-avx512 needs AVX-512 F/BW/DQ/VL; profile {} does not list them", p.name);
    f.needed = "a chip record that lists avx512f, avx512bw, avx512dq and avx512vl";
    return f;
  }
  if (name_ == "cpu-avx2") {
    if (avx2) {
      // "(no AVX-512)" is why this family, not cpu-avx512, serves the chip when nobody asked for one.
      return plan::FamilyFit::yes(fmt::format("{} lists AVX2 and FMA{}: the cpu-avx2 micro-kernels ({} f32 lanes, {} "
                                              "registers)",
                                              p.name, avx512 ? "" : " (no AVX-512)", lanes, regs));
    }
    f.reason = fmt::format("{} does not list AVX2 and FMA", p.name);
    f.refusal = fmt::format("family cpu-avx2 needs AVX2 and FMA; profile {} does not list them", p.name);
    f.needed = "a chip record that lists avx2 and fma";
    return f;
  }
  // cpu-generic runs on any CPU.
  if (!avx512 && !avx2) {
    return plan::FamilyFit::yes(
        fmt::format("{} lists neither AVX2+FMA nor AVX-512: the portable cpu-generic micro-kernels", p.name));
  }
  return plan::FamilyFit::yes(
      fmt::format("{}: the portable cpu-generic micro-kernels ({} f32 lanes), which run on any CPU", p.name, lanes));
}

Support CpuFamily::runs_on(const Device& device) const {
  if (device.kind != "cpu") return Support::no(fmt::format("family {} runs on the CPU, not on {}", name_, device.kind));
  return family_runs_here(name_);
}

plan::SupportGap CpuFamily::supports(const Problem& p) const {
  if (p.precision.accum != DType::f32) {
    return {"the cpu backend accumulates in f32 only, and the planner never changes the precision policy",
            "none planned: f16 accumulation is a GPU policy (use --accum f32 on CPUs)"};
  }
  return {};
}

plan::FamilySpace CpuFamily::candidates(const Problem& problem, const hw::HwProfile& profile, int threads) const {
  return grid(problem, profile, threads, false);
}

plan::FamilySpace CpuFamily::choice_candidates(const Problem& problem, const hw::HwProfile& profile,
                                               int threads) const {
  return grid(problem, profile, threads, true);
}

plan::FamilySpace CpuFamily::grid(const Problem& problem, const hw::HwProfile& profile, int threads,
                                  bool micro_kernels_only) const {
  const Problem q = problem.normalized();
  const std::string_view family = name_;
  plan::FamilySpace f;
  f.space = family_space(family, q);
  const int t = threads > 0 ? threads : std::max(1, profile.cores);
  const BlockSizes base = analytic_block_sizes(profile, family, t);
  f.reference = analytic_config(family, q, base);
  f.reference_name = "the analytic BLIS model";
  f.reference_reasons = base.reasons;

  const ParamDecl* mr_decl = f.space.find("MR");
  const ParamDecl* nr_decl = f.space.find("NR");
  const ParamDecl* pb_decl = f.space.find("PACK_B");
  // KC, MC and NC are declared as the multiples of a step up to a bound: the grid rounds to the same ones.
  const std::vector<int64_t>& kcs = f.space.find("KC")->values;
  const std::vector<int64_t>& mcs = f.space.find("MC")->values;
  const std::vector<int64_t>& ncs = f.space.find("NC")->values;
  // The grid walks MR, NR, the KC, MC and NC factors, then PACK_B. KC's rounding depends on its factor only, MC's on
  // its factor and MR, NC's on its factor and NR: a combination repeats an earlier one exactly when one of its
  // roundings repeats an earlier factor's. Walking each parameter's distinct roundings in first-seen order lists
  // every config once, in the order that skipping repeats would.
  auto distinct = [](const std::vector<int64_t>& v) {
    std::vector<int64_t> out;
    for (int64_t x : v)
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    return out;
  };
  auto rounded = [&](std::span<const double> factors, int64_t base_value, int64_t step, int64_t max) {
    std::vector<int64_t> v;
    for (double fac : factors) v.push_back(round_to(double(base_value) * fac, step, max));
    return distinct(v);
  };
  const std::vector<int64_t> kc_values = rounded(kKcFactors, base.kc, kcs.front(), kcs.back());
  const std::vector<int64_t> pb_values = distinct(pb_decl->values);
  const std::size_t most = mr_decl->values.size() * nr_decl->values.size() * kc_values.size() *
                           std::size(kMcFactors) * std::size(kNcFactors) * pb_values.size();
  // Dispatch's choice reads the grid flat (FamilySpace::flat_values), in the map's order of the names.
  if (micro_kernels_only) {
    f.flat_family = std::string(family);
    f.flat_names.assign(kParamNames.begin(), kParamNames.end());
    f.flat_values.reserve(most * kParamNames.size());
  } else {
    f.list.reserve(most);
  }
  // Each config copies one that holds the six names (a map's copy allocates its nodes without comparing names), then
  // takes its values in the map's order: slot[k] is the position in {MR, NR, KC, MC, NC, PACK_B} of the k-th name.
  const Config proto{std::string(family), {{"MR", 0}, {"NR", 0}, {"KC", 0}, {"MC", 0}, {"NC", 0}, {"PACK_B", 0}}};
  constexpr std::array<std::string_view, 6> kNames = {"MR", "NR", "KC", "MC", "NC", "PACK_B"};
  std::array<std::size_t, 6> slot{};
  std::transform(proto.params.begin(), proto.params.end(), slot.begin(), [&](const auto& entry) {
    return std::size_t(std::find(kNames.begin(), kNames.end(), entry.first) - kNames.begin());
  });
  for (int64_t mr : distinct(mr_decl->values)) {
    const std::vector<int64_t> mc_values = rounded(kMcFactors, base.mc, std::lcm<int64_t>(mcs.front(), mr), mcs.back());
    for (int64_t nr : distinct(nr_decl->values)) {
      if (micro_kernels_only && !find_microkernel(family, int(mr), int(nr))) continue;
      const std::vector<int64_t> nc_values =
          rounded(kNcFactors, base.nc, std::lcm<int64_t>(ncs.front(), nr), ncs.back());
      for (int64_t kc : kc_values) {
        for (int64_t mc : mc_values) {
          for (int64_t nc : nc_values) {
            for (int64_t pb : pb_values) {
              const std::array<int64_t, 6> values{mr, nr, kc, mc, nc, pb};
              std::size_t k = 0;
              if (micro_kernels_only) {
                for (; k < 6; ++k) f.flat_values.push_back(values[slot[k]]);
                continue;
              }
              for (auto& [name, value] : f.list.emplace_back(proto).params) value = values[slot[k++]];
            }
          }
        }
      }
    }
  }
  f.list_legal = micro_kernels_only;  // MC, NC rounded to MR, NR and their steps; KC to its step; micro-kernels only
  f.coverage = fmt::format(
      "a grid around the analytic choice: every {} x KC {{0.5, 0.75, 1, 1.5, 2}}x x MC {{0.5, 1, 2}}x x "
      "NC {{0.5, 1}}x x PACK_B ({} configs)",
      micro_kernels_only ? "micro-kernel's MR x NR" : "MR x NR pair",
      micro_kernels_only ? f.flat_values.size() / kParamNames.size() : f.list.size());
  return f;
}

std::unique_ptr<plan::CostScratch> CpuFamily::make_scratch() const { return std::make_unique<CostMemo>(); }

Cost CpuFamily::cost(const Problem& problem, const hw::HwProfile& profile, const Config& cfg, int threads,
                     plan::CostScratch* scratch) const {
  CostMemo own;
  CostMemo* memo = dynamic_cast<CostMemo*>(scratch);
  if (!memo) memo = &own;
  if (!memo->ready) memo->fill(problem, profile);
  // Dispatch's plans read only the price and the bound: the notes' text is left out (kernel_family.hpp).
  const bool notes = memo->notes;
  const Problem& q = memo->q;
  const plan::PeakChoice& peak = memo->peak;
  if (!peak.tflops || *peak.tflops <= 0) return invalid_cost(peak.note);
  if (memo->missing) return invalid_cost(*memo->missing);
  Cost c;
  const std::string& family = cfg.family;
  const std::array<int64_t, 6> value = params_of(cfg);
  const int64_t mr = std::max<int64_t>(1, value[kMR]), nr = std::max<int64_t>(1, value[kNR]);
  const int64_t kc = std::max<int64_t>(1, value[kKC]), mc = std::max<int64_t>(1, value[kMC]);
  const int64_t nc = std::max<int64_t>(1, value[kNC]);
  const bool pack_b = value[kPACK_B] != 0 || !can_stream_b(q);
  const int lanes = vector_floats(family);
  const int hw_lanes = profile.vector_bits >= 128 ? profile.vector_bits / 32 : lanes;
  const int cores = std::max(1, profile.cores);
  const int t = threads > 0 ? threads : cores;
  const double in = double(size_of(q.precision.input));
  // The recorded peak implies the clock the FMA pipes run at under all-core load.
  const double core_peak = *peak.tflops * 1e12 / cores;
  const double clock = core_peak / (2.0 * hw_lanes * double(profile.fma_pipes));
  const double batch = double(q.batch);
  c.overhead_s = t > 1 ? kCpuCallSeconds : 0.0;
  c.waves = plan::analyze_waves(q, t, 1, mr, nr, std::min(kc, std::max<int64_t>(1, q.k)));
  if (q.m == 0 || q.n == 0 || q.k == 0) {
    c.seconds = c.overhead_s;
    c.bound = "call";
    return c;
  }

  const CostBlocks b = cost_blocks(q, mr, nr, kc, mc, nc, pack_b, t);
  const int64_t kc_eff = b.kc_eff, mc_eff = b.mc_eff, nc_eff = b.nc_eff;
  const double padded_flops = 2.0 * b.mp * b.np * b.k * batch;
  c.compute_s = padded_flops / (double(t) * micro_kernel_flops_per_cycle(profile, mr, nr, lanes) * clock *
                                b.split.balance_m * b.split.balance_n);
  c.compute_share = q.flops() / c.compute_s / (*peak.tflops * 1e12);

  const CacheGeometry &g1 = memo->g1, &g2 = memo->g2, &g3 = memo->g3;
  const CacheFit fit = cache_fit(b, g1, g2, g3, memo->l3_shared_by);
  const bool has_l3 = fit.has_l3;
  const InPlaceRows in_place = in_place_rows(q, b, g1, g2, g3);
  if (notes && in_place.level > 1) {
    const char* where = in_place.level == 2 ? "L2" : in_place.level == 3 ? "L3" : "DRAM";
    c.notes.push_back(fmt::format("B read in place: its {} rows at a stride of {} B do not stay in L1 (set conflicts "
                                  "included); every MR-panel of A re-reads the micro-panel from {}",
                                  kc_eff, in_place.stride_bytes, where));
  }
  const Traffic tr = memory_traffic(q, b, fit, in_place.level, g1, g2, g3);
  double dram_bytes = tr.dram_bytes;
  const double l2_bytes = tr.l2_bytes, l3_bytes = tr.l3_bytes, in_place_dram_bytes = tr.in_place_dram_bytes;

  const double vec_bytes = double(hw_lanes) * 4.0;
  const double l2_bw = double(t) * profile.l2_bytes_per_core_cycle * clock;
  const double dram_bw = profile.mem_bandwidth_gbps * 1e9 * plan::constants::kDramEfficiency;
  if (has_l3 && profile.l3_bytes_per_core_cycle <= 0)
    return invalid_cost("the profile records no l3_bytes_per_core_cycle (L3 bytes per core per cycle)");
  const double l3_bw = has_l3 ? double(t) * profile.l3_bytes_per_core_cycle * clock : dram_bw;
  const double in_place_bw = std::min(dram_bw, double(t) * kInPlaceDramBytesPerCycle * clock);
  const double l2_s = l2_bytes / l2_bw, l3_s = l3_bytes / l3_bw;
  const double dram_s = dram_bytes / dram_bw + in_place_dram_bytes / in_place_bw;
  if (notes && in_place_dram_bytes > 0) {
    c.notes.push_back(fmt::format("B read in place from DRAM: {:.0f} MB at {:.1f} GB/s ({} thread(s), rows {} B apart: "
                                  "latency-bound per core)",
                                  in_place_dram_bytes / 1e6, in_place_bw / 1e9, t, double(q.ldb) * in));
  }
  dram_bytes += in_place_dram_bytes;
  c.levels = {{"DRAM", dram_bytes, dram_s > 0 ? dram_bytes / dram_s : dram_bw, dram_s}, {"L3", l3_bytes, l3_bw, l3_s}, {"L2", l2_bytes, l2_bw, l2_s}};
  combine_terms(c, {{"compute", c.compute_s, true}, {"DRAM", dram_s, true}, {"L3", l3_s, true}, {"L2", l2_s, true}});

  const Packing pack = packing_cost(q, b, has_l3, g3, memo->l3_shared_by, cores, {clock, vec_bytes, dram_bw, l3_bw});
  c.fill_s = pack.fill_s;
  c.dram_bytes = dram_bytes + pack.a_dram_bytes + pack.b_dram_bytes;

  // A team waits once per (chunk, K block) for B's packing pieces others hold.
  const double passes_k = double(cdiv(q.k, kc_eff));
  if (b.split.row_blocks > 1 && pack_b) c.overhead_s += double(b.split.chunks) * passes_k * batch * kTeamWaitSeconds;
  c.seconds = c.body_s + c.fill_s + c.overhead_s + c.latency_s;
  if (notes && !fit.b_in_l1 && pack_b) c.notes.push_back(fmt::format("the {} x {} B micro-panel ({} KB) does not stay in L1", kc_eff, nr, kc_eff * nr * 4 / 1024));
  if (notes && !fit.a_in_l2) c.notes.push_back(fmt::format("the {} x {} block of A ({} KB) spills from L2", mc_eff, kc_eff, mc_eff * kc_eff * 4 / 1024));
  if (notes && has_l3 && !fit.b_in_l3) c.notes.push_back(fmt::format("the {} x {} panel of B ({} KB) spills from L3", kc_eff, nc_eff, kc_eff * nc_eff * 4 / 1024));
  return c;
}

namespace {

// The compute pipeline's split of the work over the team: row units, one thread, or column chunks.
void explain_work_split(plan::Plan& plan, const WorkSplit& split, int64_t mr, int64_t nr) {
  const Cost& cost = plan.ranked.front().cost;
  const Problem& q = plan.problem;
  const std::string L2(plan::kLayers[2]);
  if (split.row_blocks > 1) {
    plan.log.add(L2, fmt::format("work units of {} rows x 1/{} of the columns", split.rows, split.col_parts),
                 fmt::format("{} units over {} thread(s), claimed as threads run, each through every K block of its "
                             "columns: a thread the OS takes away delays the team by the unit it holds, not by a "
                             "phase; as the backend's driver splits the work",
                             split.row_units * split.col_parts * split.chunks, plan.threads),
                 fmt::format("{} x {} micro-tiles of {}x{}; balance {} over rows, {} over units; tail waste M {}, N {}",
                             cost.waves.tiles_m, cost.waves.tiles_n, mr, nr, fmtx::pct(split.balance_m),
                             fmtx::pct(split.balance_n), fmtx::pct(cost.waves.waste_m), fmtx::pct(cost.waves.waste_n)));
  } else if (plan.threads <= 1) {
    plan.log.add(L2, "one thread", "the whole loop nest on the calling thread",
                 fmt::format("{} x {} micro-tiles of {}x{}; tail waste M {}, N {}", cost.waves.tiles_m,
                             cost.waves.tiles_n, mr, nr, fmtx::pct(cost.waves.waste_m), fmtx::pct(cost.waves.waste_n)));
  } else {
    plan.log.add(L2, fmt::format("columns split {} ways", split.col_parts),
                 fmt::format("too few rows ({} MR-panels) to split: threads claim column chunks, each packing its own "
                             "A and B; as the backend's driver splits the work",
                             cdiv(q.m, mr)),
                 fmt::format("{} x {} micro-tiles of {}x{}; balance {} over columns; tail waste M {}, N {}",
                             cost.waves.tiles_m, cost.waves.tiles_n, mr, nr, fmtx::pct(split.balance_n),
                             fmtx::pct(cost.waves.waste_m), fmtx::pct(cost.waves.waste_n)));
  }
}

}  // namespace

void CpuFamily::explain(plan::Plan& plan) const {
  const plan::Candidate& best = plan.ranked.front();
  const Config& c = best.config;
  const Cost& cost = best.cost;
  const hw::HwProfile& hw = plan.profile;
  const Problem& q = plan.problem;
  const std::string L0(plan::kLayers[0]), L1(plan::kLayers[1]), L2(plan::kLayers[2]), L3(plan::kLayers[3]);
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
  for (const plan::Candidate& cand : plan.ranked) {
    const auto key = std::make_pair(cand.config.at("MR"), cand.config.at("NR"));
    if (!seen.insert(key).second) continue;
    kernels.push_back(fmt::format("{} x {} at best {} (rank {})", key.first, key.second,
                                  fmtx::delta(cand.cost.seconds / best.cost.seconds - 1), cand.rank));
  }
  // The register-level numbers the cost model prices the micro-kernel with.
  const int lanes = vector_floats(c.family);
  const double latency = double(hw.fma_latency_cycles);
  const double fma_k = double(mr * nr / lanes) / double(hw.fma_pipes),
               load_k = double(mr + nr / lanes) / double(hw.load_ports_per_cycle);
  const std::string regs = fmt::format(
      "the model: {} accumulators take {:g} FMA cycles per k-step, {} broadcasts + {} B vectors {:g} load-port cycles, "
      "the FMA latency chain {:g}: {} of the FMA peak",
      mr * nr / lanes, fma_k, mr, nr / lanes, load_k, latency, fmtx::pct(fma_k / std::max({fma_k, load_k, latency})));
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
               plan::neighbours_of(plan, {"KC"}));
  plan.log.add(L1, fmt::format("MC={}", c.at("MC")), fmt::format("{}; {}", reason_at(2), versus("MC")),
               plan::neighbours_of(plan, {"MC"}));
  plan.log.add(L1, fmt::format("NC={}", c.at("NC")), fmt::format("{}; {}", reason_at(3), versus("NC")),
               plan::neighbours_of(plan, {"NC"}));
  plan.log.add(L1, fmt::format("PACK_B={}", c.at("PACK_B")),
               c.at("PACK_B") ? "B is packed into KC x NR micro-panels shared by the team (each packed element is "
                                "reused by every MR-panel of A)"
                              : "B (f32, contiguous along N) is read in place: too few rows of C to repay packing it",
               plan::neighbours_of(plan, {"PACK_B"}));

  // ---- compute pipeline
  const bool packs_b = c.at("PACK_B") != 0 || !can_stream_b(q);
  const WorkSplit split = work_split(q, mr, nr, c.at("MC"), c.at("NC"), packs_b, plan.threads);
  explain_work_split(plan, split, mr, nr);
  plan.log.add(L2, "packing beside the micro-kernel",
               fmt::format("A is packed once per work unit and K block ({}x in all), B once per (chunk, KC) block by "
                           "the first threads to need it; the others wait only for pieces already claimed",
                           split.a_packs),
               fmt::format("packing {}, waits and call {} ({} of the prediction)", fmtx::time(cost.fill_s),
                           fmtx::time(cost.overhead_s), fmtx::pct((cost.fill_s + cost.overhead_s) / cost.seconds)));

  // ---- parameter adaptation
  plan.log.add(L3, fmt::format("threads={}", plan.threads),
               plan.threads == hw.cores ? fmt::format("all {} cores of {}", hw.cores, hw.name)
                                        : fmt::format("--threads {} of {} cores", plan.threads, hw.cores));
  plan.log.add(L3, fmt::format("accumulate in {}", to_string(q.precision.accum)),
               "the problem's precision policy: the planner never changes it");
  for (const std::string& note : cost.notes) plan.log.add(L1, "cache fit", note);
}

namespace {

const plan::FamilyRegistration kAvx512{std::make_unique<CpuFamily>("cpu-avx512")};
const plan::FamilyRegistration kAvx2{std::make_unique<CpuFamily>("cpu-avx2")};
const plan::FamilyRegistration kGeneric{std::make_unique<CpuFamily>("cpu-generic")};

}  // namespace

}  // namespace tileforge::cpu
