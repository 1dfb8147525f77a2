// make_plan: family by chip, candidates, ranking by the cost model, neighbours of the choice, decision log.
#include "plan/planner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/decisions.hpp"
#include "plan/format.hpp"

namespace tileforge::plan {
namespace {

// sm_80 -> 80, sm_90a -> 90; 0 when the arch is not an NVIDIA sm_ name.
int sm_number(std::string_view arch) {
  if (!arch.starts_with("sm_")) return 0;
  int n = 0;
  for (char ch : arch.substr(3)) {
    if (ch < '0' || ch > '9') break;
    n = n * 10 + (ch - '0');
  }
  return n;
}

bool has_avx512_family_isa(const hw::HwProfile& p) {
  return p.has("avx512f") && p.has("avx512bw") && p.has("avx512dq") && p.has("avx512vl");
}

// Checks an explicitly requested family against the profile.
Status check_family_for_profile(std::string_view family, const hw::HwProfile& p) {
  const auto& known = planner_families();
  if (std::find(known.begin(), known.end(), family) == known.end()) {
    return invalid_argument(
        fmt::format("family '{}' is not known to the planner (allowed: auto, {})", family, fmt::join(known, ", ")));
  }
  if (family == "sm80") {
    if (p.kind != "gpu" || p.vendor != "nvidia" || sm_number(p.arch) < 80) {
      return invalid_argument(fmt::format("family sm80 plans for NVIDIA GPUs of sm_80 or later; {} is a {} {} ({})",
                                          p.name, p.vendor, p.kind, p.arch));
    }
    return {};
  }
  if (p.kind != "cpu") {
    return invalid_argument(fmt::format("family {} plans for CPUs; {} is a {} {}", family, p.name, p.vendor, p.kind));
  }
  if (family == "cpu-avx512" && !has_avx512_family_isa(p)) {
    return invalid_argument(fmt::format("family cpu-avx512 needs AVX-512 F/BW/DQ/VL; profile {} does not list them", p.name));
  }
  if (family == "cpu-avx2" && !(p.has("avx2") && p.has("fma"))) {
    return invalid_argument(fmt::format("family cpu-avx2 needs AVX2 and FMA; profile {} does not list them", p.name));
  }
  return {};
}

// Distance of a config from the backend's own pick: ties in predicted time go to the nearer one.
double distance(const Config& a, const std::optional<Config>& ref) {
  if (!ref) return 0;
  double d = 0;
  for (const auto& [name, v] : a.params) {
    const auto r = ref->get(name);
    if (!r) continue;
    if (v > 0 && *r > 0) {
      d += std::abs(std::log2(double(v) / double(*r)));
    } else {
      d += std::abs(double(v - *r));
    }
  }
  return d;
}

std::string bound_text(const Plan& plan, const Cost& c) {
  if (c.bound == "compute") {
    return fmt::format("compute ({} of the {} peak with this tile)", fmtx::pct(c.compute_share),
                       plan.roofline.peak.tflops ? fmtx::peak(*plan.roofline.peak.tflops) : "?");
  }
  if (c.bound == "latency") return "load latency (the stages in flight do not cover it)";
  for (const LevelTime& l : c.levels) {
    if (l.level == c.bound) {
      return fmt::format("{} traffic ({} at {})", l.level, fmtx::bytes(l.bytes), fmtx::rate(l.bandwidth));
    }
  }
  return c.bound;
}

void find_neighbours(Plan& plan, const FamilySpace& fs, DramCache* cache) {
  const Candidate& best = plan.ranked.front();
  for (const ParamDecl& d : fs.space.params) {
    if (std::any_of(plan.pins.begin(), plan.pins.end(), [&](const auto& p) { return p.first == d.name; })) continue;
    // The values one step away: the declared ones (a full space), or those of listed configs that differ from the
    // choice in this parameter only (a grid, where MC and NC are rounded per micro-kernel).
    std::set<int64_t> domain;
    if (fs.list.empty()) {
      domain.insert(d.values.begin(), d.values.end());
    } else {
      for (const Config& c : fs.list) {
        bool others_equal = true;
        for (const auto& [name, v] : c.params) {
          const bool pinned = std::any_of(plan.pins.begin(), plan.pins.end(), [&](const auto& p) { return p.first == name; });
          if (name != d.name && !pinned && best.config.params.at(name) != v) others_equal = false;
        }
        if (others_equal) domain.insert(c.params.at(d.name));
      }
    }
    const int64_t mine = best.config.params.at(d.name);
    auto it = domain.find(mine);
    if (it == domain.end()) continue;
    std::vector<int64_t> around;
    if (it != domain.begin()) around.push_back(*std::prev(it));
    if (std::next(it) != domain.end()) around.push_back(*std::next(it));
    for (int64_t v : around) {
      Config c = best.config;
      c.params[d.name] = v;
      Neighbour n;
      n.param = d.name;
      n.value = v;
      const auto why = first_violation(fs.space, c);
      n.legal = !why;
      if (why) {
        n.constraint = *why;
        n.detail = violation_detail(fs.space.family, *why, c, plan.profile);
      }
      n.seconds = cost_of(plan.problem, plan.profile, c, plan.threads, cache).seconds;
      n.delta = n.seconds / best.cost.seconds - 1.0;
      plan.neighbours.push_back(std::move(n));
    }
  }

  // The binding limit: a rejected neighbour that would have been faster; otherwise the model's own bound.
  const Neighbour* binding = nullptr;
  for (const Neighbour& n : plan.neighbours) {
    if (!n.legal && n.delta < -1e-9 && (!binding || n.delta < binding->delta)) binding = &n;
  }
  auto limit_line = [&](const Neighbour& n) {
    const int64_t mine = best.config.params.at(n.param);
    if (n.param == "STAGES" && n.value == mine + 1) {
      return fmt::format("STAGES={}: {} stage {}", mine, ordinal(n.value), n.detail);
    }
    return fmt::format("{}={}: {}={} {}", n.param, mine, n.param, n.value, n.detail);
  };
  if (binding) {
    plan.binding = fmt::format("{} (it would be predicted {} faster)", limit_line(*binding),
                               fmtx::pct(-binding->delta));
  } else {
    plan.binding = fmt::format("no one-step change of a parameter is predicted faster; the time is bound by {}",
                               bound_text(plan, best.cost));
  }
  // Resource limits first (a larger value rejected), then the rest.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Neighbour& n : plan.neighbours) {
      if (n.legal) continue;
      const bool up = n.value > best.config.params.at(n.param);
      if ((pass == 0) == up) plan.limits.push_back(limit_line(n));
    }
  }
}

}  // namespace

FamilyChoice choose_family(const hw::HwProfile& p) {
  FamilyChoice f;
  if (p.kind == "cpu") {
    if (has_avx512_family_isa(p)) {
      f.family = "cpu-avx512";
      f.reason = fmt::format("{} lists AVX-512 F/BW/DQ/VL: the cpu-avx512 micro-kernels (16 f32 lanes, 32 registers)", p.name);
    } else if (p.has("avx2") && p.has("fma")) {
      f.family = "cpu-avx2";
      f.reason = fmt::format("{} lists AVX2 and FMA (no AVX-512): the cpu-avx2 micro-kernels (8 f32 lanes, 16 registers)", p.name);
    } else {
      f.family = "cpu-generic";
      f.reason = fmt::format("{} lists neither AVX2+FMA nor AVX-512: the portable cpu-generic micro-kernels", p.name);
    }
    return f;
  }
  const std::string what = fmt::format("{} ({} {}, {})", p.display_name.empty() ? p.name : p.display_name, p.vendor,
                                       p.kind, p.arch);
  if (p.kind == "gpu" && p.vendor == "nvidia") {
    const int sm = sm_number(p.arch);
    if (sm >= 80) {
      f.family = "sm80";
      f.reason = fmt::format("NVIDIA {}: cp.async, ldmatrix and mma.sync (sm_80 and later) run the sm80 family{}",
                             p.arch,
                             p.has("wgmma") ? "; this chip's TMA + wgmma path would need an sm90 family, not built yet"
                                            : "");
      return f;
    }
    f.reason = fmt::format("no tileforge backend serves {} yet", what);
    f.needed = fmt::format("a CUDA family for {} (the sm80 family needs cp.async and mma.sync.m16n8k16 of sm_80), or "
                           "a Triton backend",
                           p.arch);
    return f;
  }
  f.reason = fmt::format("no tileforge backend serves {} yet", what);
  if (p.vendor == "amd") {
    f.needed = fmt::format("a Triton backend compiling for {} (AMD), or a HIP kernel family on its matrix cores "
                           "({}); the profile is loaded and analysed: here is the roofline analysis",
                           p.arch, p.has("mfma") ? "MFMA" : "matrix instructions");
  } else if (p.kind == "npu" || p.vendor == "huawei") {
    f.needed = fmt::format("an Ascend C or Triton-Ascend backend for the {} cube unit; the profile is loaded and "
                           "analysed: here is the roofline analysis",
                           p.arch);
  } else {
    f.needed = fmt::format("a backend for {} {} ({}), e.g. through Triton; the profile is loaded and analysed: here "
                           "is the roofline analysis",
                           p.vendor, p.kind, p.arch);
  }
  return f;
}

SupportGap support_gap(std::string_view family, const Problem& p) {
  const Precision& pr = p.precision;
  if (family == "sm80") {
    if (pr.input != DType::f16 && pr.input != DType::bf16) {
      return {fmt::format("the sm80 family takes f16 or bf16 inputs (mma.sync.m16n8k16), not {}", to_string(pr.input)),
              "a TF32 (mma.sync.m16n8k8) or SIMT f32 family for NVIDIA GPUs"};
    }
    if (pr.accum != DType::f32) {
      return {"the sm80 family accumulates in f32, and the planner never changes the precision policy",
              "an f16-accumulator variant of the sm80 family (mma.sync with f16 accumulators)"};
    }
    // The kernel indexes with 32-bit ints and puts one batch entry per grid row (cuda_backend.cpp).
    if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) {
      return {"the sm80 family needs M, N and K to fit a 32-bit int", "64-bit indexing in the sm80 kernel"};
    }
    if (p.batch > 65535) {
      return {"the sm80 family runs at most 65535 batch entries (one grid row each)",
              "a batch loop in the sm80 launch"};
    }
    return {};
  }
  if (pr.accum != DType::f32) {
    return {"the cpu backend accumulates in f32 only, and the planner never changes the precision policy",
            "none planned: f16 accumulation is a GPU policy (use --accum f32 on CPUs)"};
  }
  return {};
}

Expected<Plan> make_plan(const Problem& problem, const hw::HwProfile& profile, const PlanOptions& options) {
  if (Status s = problem.validate(); !s) return s;
  if (options.top_n < 0) return invalid_argument(fmt::format("--top {} is negative (allowed: 0 or more)", options.top_n));
  if (options.threads < 0) {
    return invalid_argument(fmt::format("--threads {} is negative (allowed: 0 for all cores, or >= 1)", options.threads));
  }
  Plan plan;
  plan.problem = problem.normalized();
  plan.profile = profile;
  plan.pins = options.pins;
  plan.top_n = options.top_n;
  plan.roofline = analyze_roofline(plan.problem, profile);
  plan.paths = analyze_paths(plan.problem, profile);
  plan.nominal_waves = analyze_waves(plan.problem, std::max(1, profile.cores), 1, 128, 128, 32);
  const bool running = std::find(options.running_profiles.begin(), options.running_profiles.end(), profile.name) !=
                       options.running_profiles.end();
  plan.prediction = !running;
  plan.label = running ? fmt::format("running device (profile {})", profile.name)
                       : fmt::format("prediction (profile {} is not the running device)", profile.name);

  FamilyChoice fc;
  if (options.family.empty() || options.family == "auto") {
    fc = choose_family(profile);
  } else {
    if (Status s = check_family_for_profile(options.family, profile); !s) return s;
    fc.family = options.family;
    fc.reason = fmt::format("family {} requested", options.family);
  }
  plan.family_reason = fc.reason;
  if (fc.family.empty()) {
    plan.unserved = fc.reason;
    plan.needed = fc.needed;
    return plan;
  }
  plan.family = fc.family;
  plan.backend = fc.family == "sm80" ? "cuda" : "cpu";
  if (SupportGap gap = support_gap(fc.family, plan.problem); !gap.empty()) {
    plan.unserved = fmt::format("{} on {}: {}", fc.family, profile.name, gap.why);
    plan.needed = gap.needed;
    return plan;
  }
  plan.threads = plan.backend == "cpu" ? (options.threads > 0 ? options.threads : std::max(1, profile.cores)) : 0;

  auto fs = family_space(fc.family, plan.problem, profile, plan.threads);
  if (!fs) return fs.status();
  auto en = enumerate_candidates(*fs, options.pins, profile.name);
  if (!en) return en.status();
  plan.coverage = fs->coverage;
  plan.combinations = en->combinations;
  plan.rejected = std::move(en->rejected);
  plan.reference = fs->reference;
  plan.reference_name = fs->reference_name;
  plan.reference_reasons = fs->reference_reasons;
  if (en->legal.empty()) {
    std::vector<std::string> why;
    for (const std::string& r : plan.rejected.reasons) why.push_back(r);
    plan.unserved = fmt::format("no legal {} config for this problem on {} (violated: {})", fc.family, profile.name,
                                fmt::join(why, "; "));
    plan.needed = "a chip record with more on-chip memory or registers, or a family with smaller tiles";
    return plan;
  }

  DramCache cache;
  std::vector<std::pair<double, Candidate>> scored;
  scored.reserve(en->legal.size());
  for (Config& c : en->legal) {
    Candidate cand;
    cand.cost = cost_of(plan.problem, profile, c, plan.threads, &cache);
    cand.config = std::move(c);
    const double d = distance(cand.config, plan.reference);
    scored.emplace_back(d, std::move(cand));
  }
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    const double ta = a.second.cost.seconds, tb = b.second.cost.seconds;
    if (std::abs(ta - tb) > 1e-12 * std::max(std::abs(ta), std::abs(tb))) return ta < tb;
    if (a.first != b.first) return a.first < b.first;
    return a.second.config.params < b.second.config.params;
  });
  for (auto& [d, cand] : scored) {
    cand.rank = int(plan.ranked.size()) + 1;
    if (plan.reference && cand.config == *plan.reference) plan.reference_rank = cand.rank;
    plan.ranked.push_back(std::move(cand));
  }
  if (!plan.ranked.front().cost.valid) {
    plan.unserved = fmt::format("the cost model cannot price {} on {}: {}", fc.family, profile.name,
                                fmt::join(plan.ranked.front().cost.notes, "; "));
    plan.needed = "the missing numbers in the chip record";
    plan.ranked.clear();
    return plan;
  }
  plan.served = true;
  find_neighbours(plan, *fs, &cache);
  if (fc.family == "sm80") {
    record_sm80_decisions(plan);
  } else {
    record_cpu_decisions(plan);
  }
  return plan;
}

}  // namespace tileforge::plan
