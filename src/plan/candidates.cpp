// Candidate spaces per family on a profile, pins, and the enumeration that records why each config was rejected.
#include "plan/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cpu/blocking.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/microkernel.hpp"
#include "backends/cuda/sm80_family.hpp"

namespace tileforge::plan {
namespace {


// The cpu backend reads f32 B in place (PACK_B = 0) only when it is contiguous along N; below this many rows of C
// its own heuristic does so (cpu_backend.cpp, kStreamBMaxRows).
bool can_stream_b(const Problem& p) { return p.precision.input == DType::f32 && b_row_major(p.layout); }
constexpr int64_t kStreamBMaxRows = 64;

// `v` rounded to the nearest multiple of `step` within [step, max rounded down to a multiple of step].
int64_t round_to(double v, int64_t step, int64_t max) {
  const int64_t hi = std::max<int64_t>(step, max / step * step);
  const int64_t r = int64_t(std::llround(v / double(step))) * step;
  return std::clamp<int64_t>(r, step, hi);
}

// The factors the CPU grid applies to the analytic KC, MC and NC.
constexpr double kKcFactors[] = {0.5, 0.75, 1.0, 1.5, 2.0};
constexpr double kMcFactors[] = {0.5, 1.0, 2.0};
constexpr double kNcFactors[] = {0.5, 1.0};

FamilySpace sm80_family(const Problem& q, const hw::HwProfile& profile) {
  FamilySpace f;
  f.space = cuda::sm80_space(q, profile);
  std::size_t n = 1;
  for (const ParamDecl& d : f.space.params) {
    f.grid.push_back(d.values);
    n *= d.values.size();
  }
  f.reference = cuda::sm80_heuristic(q, profile);
  f.reference_name = "the sm80 heuristic";
  f.reference_reasons.push_back(
      "the sm80 heuristic: the largest tile that still gives every SM a block, BLOCK_K 32, as many stages (up to 4) "
      "as shared memory holds, GROUP_M 8, the widest legal vector");
  f.coverage = fmt::format("the full space: every combination of its {} parameters ({} combinations)",
                           f.space.params.size(), n);
  return f;
}

FamilySpace cpu_family(std::string_view family, const Problem& q, const hw::HwProfile& profile, int threads) {
  FamilySpace f;
  f.space = cpu_family_space(family, q);
  const int t = threads > 0 ? threads : std::max(1, profile.cores);
  const cpu::BlockSizes base = cpu::analytic_block_sizes(profile, family, t);
  Config ref{std::string(family), {}};
  ref.params["MR"] = base.mr;
  ref.params["NR"] = base.nr;
  ref.params["KC"] = base.kc;
  ref.params["MC"] = base.mc;
  ref.params["NC"] = base.nc;
  ref.params["PACK_B"] = (can_stream_b(q) && q.m <= kStreamBMaxRows) ? 0 : 1;
  f.reference = ref;
  f.reference_name = "the analytic BLIS model";
  f.reference_reasons = base.reasons;

  const ParamDecl* mr_decl = f.space.find("MR");
  const ParamDecl* nr_decl = f.space.find("NR");
  const ParamDecl* pb_decl = f.space.find("PACK_B");
  std::set<std::vector<int64_t>> seen;
  for (int64_t mr : mr_decl->values) {
    for (int64_t nr : nr_decl->values) {
      for (double fk : kKcFactors) {
        for (double fm : kMcFactors) {
          for (double fn : kNcFactors) {
            for (int64_t pb : pb_decl->values) {
              const int64_t kc = round_to(double(base.kc) * fk, 8, 4096);
              const int64_t mc = round_to(double(base.mc) * fm, std::lcm<int64_t>(2, mr), 8192);
              const int64_t nc = round_to(double(base.nc) * fn, std::lcm<int64_t>(8, nr), 65536);
              if (!seen.insert({mr, nr, kc, mc, nc, pb}).second) continue;
              f.list.push_back(Config{std::string(family),
                                      {{"MR", mr}, {"NR", nr}, {"KC", kc}, {"MC", mc}, {"NC", nc}, {"PACK_B", pb}}});
            }
          }
        }
      }
    }
  }
  f.coverage = fmt::format(
      "a grid around the analytic choice: every MR x NR pair x KC {{0.5, 0.75, 1, 1.5, 2}}x x MC {{0.5, 1, 2}}x x "
      "NC {{0.5, 1}}x x PACK_B ({} configs)",
      f.list.size());
  return f;
}

std::string join_pins(const Pins& pins) {
  std::vector<std::string> s;
  for (const auto& [n, v] : pins) s.push_back(fmt::format("{}={}", n, v));
  return fmt::format("{}", fmt::join(s, " "));
}

// Walks the Cartesian product of `grid`, calling fn with one Config updated in place.
template <class Fn>
void for_each_product(const std::string& family, const std::vector<ParamDecl>& decls,
                      const std::vector<std::vector<int64_t>>& grid, Fn&& fn) {
  for (const auto& g : grid)
    if (g.empty()) return;
  Config c{family, {}};
  for (std::size_t i = 0; i < decls.size(); ++i) c.params[decls[i].name] = grid[i][0];
  std::vector<int64_t*> slot;
  for (const auto& d : decls) slot.push_back(&c.params[d.name]);
  std::vector<std::size_t> index(decls.size(), 0);
  while (true) {
    fn(c);
    std::size_t i = 0;
    for (; i < decls.size(); ++i) {
      if (++index[i] < grid[i].size()) {
        *slot[i] = grid[i][index[i]];
        break;
      }
      index[i] = 0;
      *slot[i] = grid[i][0];
    }
    if (i == decls.size()) break;
  }
}

}  // namespace

const std::vector<std::string>& planner_families() {
  static const std::vector<std::string> f = {"sm80", "cpu-avx512", "cpu-avx2", "cpu-generic"};
  return f;
}

ParamSpace cpu_family_space(std::string_view family, const Problem& p) { return cpu::family_space(family, p); }

Expected<FamilySpace> family_space(std::string_view family, const Problem& problem, const hw::HwProfile& profile,
                                   int threads) {
  const Problem q = problem.normalized();
  if (family == "sm80") return sm80_family(q, profile);
  if (family == "cpu-avx512" || family == "cpu-avx2" || family == "cpu-generic") {
    return cpu_family(family, q, profile, threads);
  }
  return invalid_argument(fmt::format("family '{}' is not known to the planner (allowed: {})", family,
                                      fmt::join(planner_families(), ", ")));
}

Config RejectedSet::config(std::size_t i) const {
  Config c{family, {}};
  for (std::size_t j = 0; j < names.size(); ++j) c.params[names[j]] = values[i * names.size() + j];
  return c;
}

void RejectedSet::add(const Config& config, const std::string& why) {
  for (const std::string& n : names) values.push_back(config.params.at(n));
  auto it = std::find(reasons.begin(), reasons.end(), why);
  if (it == reasons.end()) {
    reasons.push_back(why);
    it = reasons.end() - 1;
  }
  reason.push_back(uint32_t(it - reasons.begin()));
}

std::optional<std::string> first_violation(const ParamSpace& space, const Config& config) {
  for (const ParamDecl& d : space.params) {
    auto v = config.get(d.name);
    if (!v) return fmt::format("config lacks parameter {}", d.name);
    if (std::find(d.values.begin(), d.values.end(), *v) == d.values.end()) {
      return fmt::format("{} = {} is not a declared value of family {}", d.name, *v, space.family);
    }
  }
  for (const Constraint& c : space.constraints)
    if (!c.holds(config)) return c.text;
  return std::nullopt;
}

Expected<Enumeration> enumerate_candidates(const FamilySpace& family, const Pins& pins,
                                           std::string_view profile_name) {
  const ParamSpace& space = family.space;
  std::vector<std::string> names;
  for (const ParamDecl& d : space.params) names.push_back(d.name);
  for (const auto& [name, value] : pins) {
    const ParamDecl* d = space.find(name);
    if (!d) {
      return invalid_argument(fmt::format("--set {}: not a parameter of family {} (allowed: {})", name, space.family,
                                          fmt::join(names, ", ")));
    }
    if (std::find(d->values.begin(), d->values.end(), value) == d->values.end()) {
      const bool long_list = d->values.size() > 16;
      return invalid_argument(fmt::format(
          "--set {}={}: not a legal value of {} in family {} (allowed: {})", name, value, name, space.family,
          long_list ? fmt::format("{} .. {} in steps of {}", d->values.front(), d->values.back(),
                                  d->values[1] - d->values[0])
                    : fmt::format("{}", fmt::join(d->values, ", "))));
    }
  }

  Enumeration e;
  e.rejected.family = space.family;
  e.rejected.names = names;
  const bool list_mode = !family.list.empty();
  auto visit = [&](const Config& c) {
    ++e.combinations;
    if (list_mode) {
      // A listed config may hold a value outside the declaration: check everything.
      if (auto why = first_violation(space, c)) {
        e.rejected.add(c, *why);
      } else {
        e.legal.push_back(c);
      }
      return;
    }
    // Product values come from the declarations: only the constraints can fail.
    for (const Constraint& k : space.constraints) {
      if (!k.holds(c)) {
        e.rejected.add(c, k.text);
        return;
      }
    }
    e.legal.push_back(c);
  };

  // The combinations the pins leave, either as a product or as a list.
  std::vector<std::vector<int64_t>> grid = family.grid;
  std::vector<Config> list;
  if (list_mode) {
    std::set<std::vector<int64_t>> seen;
    for (Config c : family.list) {
      for (const auto& [name, value] : pins) c.params[name] = value;
      std::vector<int64_t> key;
      for (const auto& n : names) key.push_back(c.params.at(n));
      if (seen.insert(key).second) list.push_back(std::move(c));
    }
  } else {
    for (const auto& [name, value] : pins) {
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) grid[i] = {value};
    }
  }
  auto for_each = [&](auto&& fn) {
    if (list_mode) {
      for (const Config& c : list) fn(c);
    } else {
      for_each_product(space.family, space.params, grid, fn);
    }
  };
  for_each(visit);

  if (e.legal.empty() && !pins.empty()) {
    // Which constraints rule the pinned combinations out: one that every combination violates, or those the
    // nearest combinations (fewest violations) violate.
    std::map<std::string, std::size_t> every, nearest;
    std::size_t total = 0, fewest = SIZE_MAX;
    for_each([&](const Config& c) {
      ++total;
      std::vector<std::size_t> v;
      for (std::size_t i = 0; i < space.constraints.size(); ++i)
        if (!space.constraints[i].holds(c)) v.push_back(i);
      for (std::size_t i : v) ++every[space.constraints[i].text];
      if (v.size() < fewest) {
        fewest = v.size();
        nearest.clear();
      }
      if (v.size() == fewest)
        for (std::size_t i : v) ++nearest[space.constraints[i].text];
    });
    std::string why;
    for (const auto& [text, n] : every) {
      if (n == total) {
        why = fmt::format("every combination violates {}", text);
        break;
      }
    }
    if (why.empty()) {
      std::vector<std::string> parts;
      for (const auto& [text, n] : nearest) parts.push_back(fmt::format("{} ({} combination{})", text, n, n == 1 ? "" : "s"));
      why = fmt::format("the nearest combinations each violate {} constraint{}: {}", fewest, fewest == 1 ? "" : "s",
                        fmt::join(parts, "; "));
    }
    return invalid_argument(fmt::format("--set {}: no legal {} config on {}: {}", join_pins(pins), space.family,
                                        profile_name, why));
  }
  return e;
}

std::string_view constraint_layer(std::string_view t) {
  auto has = [&](std::string_view w) { return t.find(w) != std::string_view::npos; };
  if (has("chunks") || has("VEC") || has("align") || has("micro-kernel")) return kLayers[0];
  if (has("shared memory")) return kLayers[1];
  if (has("register")) return kLayers[3];
  if (has("WARPS") || has("threads")) return kLayers[3];
  if (has("STAGES")) return kLayers[2];
  return kLayers[1];
}

std::string violation_detail(std::string_view family, std::string_view t, const Config& c,
                             const hw::HwProfile& profile) {
  auto has = [&](std::string_view w) { return t.find(w) != std::string_view::npos; };
  if (family == "sm80") {
    if (has("shared memory")) {
      const int64_t limit = profile.smem_per_block_bytes > 0 ? profile.smem_per_block_bytes : 48 * 1024;
      return fmt::format("needs {} B > {} B of shared memory per block on {}", cuda::sm80_smem_bytes(c), limit,
                         profile.name);
    }
    if (has("registers") && has("per thread")) {
      return fmt::format("needs an estimated {} registers per thread > 255", cuda::sm80_register_estimate(c, profile.arch));
    }
    if (has("registers") && has("per SM")) {
      const int64_t regs = profile.registers_per_core > 0 ? profile.registers_per_core : 65536;
      return fmt::format("needs an estimated {} registers x {} threads = {} > {} registers per SM on {}",
                         cuda::sm80_register_estimate(c, profile.arch), cuda::sm80_threads(c),
                         int64_t(cuda::sm80_register_estimate(c, profile.arch)) * cuda::sm80_threads(c), regs, profile.name);
    }
    if (has("32 * WARPS_M * WARPS_N")) {
      return fmt::format("needs {} threads > 512 per block", cuda::sm80_threads(c));
    }
  }
  return fmt::format("violates {}", t);
}

}  // namespace tileforge::plan
