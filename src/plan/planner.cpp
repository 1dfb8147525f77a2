// make_plan: family by chip, candidates, ranking by the cost model, neighbours of the choice, decision log.
#include "plan/planner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"
#include "plan/neighbours.hpp"

namespace tileforge::plan {
namespace {

// The family an explicit --family names, checked against the profile.
Expected<const KernelFamily*> requested_family(std::string_view name, const hw::HwProfile& p) {
  const KernelFamily* f = find_family(name);
  if (!f) {
    return invalid_argument(fmt::format("family '{}' is not known to the planner (allowed: auto, {})", name,
                                        fmt::join(family_names(), ", ")));
  }
  if (FamilyFit fit = f->fit(p); !fit.ok) return invalid_argument(fit.refusal);
  return f;
}

// Distance of a config from the backend's own pick: ties in predicted time go to the nearer one.
double distance(const Config& a, const std::optional<Config>& ref) {
  if (!ref) return 0;
  double d = 0;
  // Both maps are in name order: one walk over the reference finds each of a's names (no lookup per name).
  auto r = ref->params.begin();
  for (const auto& [name, v] : a.params) {
    while (r != ref->params.end() && r->first < name) ++r;
    if (r == ref->params.end() || r->first != name) continue;
    if (v > 0 && r->second > 0) {
      d += std::abs(std::log2(double(v) / double(r->second)));
    } else {
      d += std::abs(double(v - r->second));
    }
  }
  return d;
}

// Puts items[order[k]] at position k, moving each item once along the permutation's cycles.
template <class T>
void permute(std::vector<T>& items, const std::vector<std::size_t>& order) {
  std::vector<char> placed(items.size(), 0);
  for (std::size_t start = 0; start < items.size(); ++start) {
    if (placed[start]) continue;
    T first = std::move(items[start]);
    std::size_t k = start;
    while (order[k] != start) {
      items[k] = std::move(items[order[k]]);
      placed[k] = 1;
      k = order[k];
    }
    items[k] = std::move(first);
    placed[k] = 1;
  }
}

// The comparison of the ranking: the lower predicted time, ties (within 1e-12 relative) to the config nearer the
// backend's own pick, then to the lesser parameters. `da` and `db` give each config's distance when first needed.
template <class DistanceA, class DistanceB>
bool ranks_before(const Config& a, double ta, DistanceA&& da, const Config& b, double tb, DistanceB&& db) {
  if (std::abs(ta - tb) > 1e-12 * std::max(std::abs(ta), std::abs(tb))) return ta < tb;
  if (const double x = da(), y = db(); x != y) return x < y;
  return a.params < b.params;
}

// The least candidate seen so far under the ranking's comparison (the full ranking's first, whatever the order the
// candidates come in), and the threshold above which no candidate can rank before it: the ranking's tie tolerance
// (1e-12) with a wide margin.
class BestSoFar {
 public:
  explicit BestSoFar(const std::optional<Config>& reference) : reference_(reference) {}

  double threshold() const { return found ? best.cost.seconds * (1 + 1e-9) : std::numeric_limits<double>::infinity(); }
  void offer(const Config& config, Cost cost) {
    std::optional<double> dist;
    auto mine = [&] {
      if (!dist) dist = distance(config, reference_);
      return *dist;
    };
    auto theirs = [&] {
      if (!best_distance_) best_distance_ = distance(best.config, reference_);
      return *best_distance_;
    };
    if (found && !ranks_before(config, cost.seconds, mine, best.config, best.cost.seconds, theirs)) return;
    best.config = config;
    best.cost = std::move(cost);
    best_distance_ = dist;
    found = true;
  }

  Candidate best;
  bool found = false;

 private:
  const std::optional<Config>& reference_;
  std::optional<double> best_distance_;
};

// Dispatch's choice in a product space whose family bounds its cost (PlanOptions::best_only): the parameters are set
// in the family's search order, each constraint checked as soon as the parameters it reads are set, and a partial
// config whose cost_bound() exceeds the best price found so far is dropped with every completion of it. Siblings
// are tried in the order of their bounds, so that a good price is found early. The bound never exceeds a
// completion's price, and the margin (1e-9, far above the ranking's tie tolerance of 1e-12) keeps every config that
// could rank before the best one: the choice is the full ranking's first.
class BoundSearch {
 public:
  BoundSearch(const KernelFamily& family, const Plan& plan, const FamilySpace& fs, const Pins& pins,
              CostScratch* scratch, BestSoFar& best)
      : family_(family), plan_(plan), scratch_(scratch), best_(best) {
    const std::size_t n = fs.space.params.size();
    if (fs.search_order.size() != n || fs.grid.size() != n || n == 0) return;
    std::vector<std::size_t> depth_of(n, n);
    for (std::size_t d = 0; d < n; ++d) {
      const ParamDecl* decl = fs.space.find(fs.search_order[d]);
      if (!decl) return;
      const std::size_t i = std::size_t(decl - fs.space.params.data());
      if (depth_of[i] != n) return;  // named twice
      depth_of[i] = d;
      order_.push_back(i);
      asks_bound_.push_back(std::find(fs.bound_skips.begin(), fs.bound_skips.end(), decl->name) ==
                            fs.bound_skips.end());
      values_.push_back(fs.grid[i]);
      for (const auto& [name, value] : pins)
        if (name == decl->name) values_.back() = {value};
      if (values_.back().empty()) return;
    }
    checks_.resize(n);
    for (const Constraint& k : fs.space.constraints) {
      Check check{&k, {}, {}};
      std::size_t level = k.reads.empty() ? n - 1 : 0, cells = 1;
      bool declared = !k.reads.empty();
      for (const std::string& r : k.reads) {
        const ParamDecl* decl = fs.space.find(r);
        if (!decl) {
          level = n - 1;
          declared = false;
          break;
        }
        const std::size_t d = depth_of[std::size_t(decl - fs.space.params.data())];
        level = std::max(level, d);
        if (std::none_of(check.digits.begin(), check.digits.end(), [&](const auto& g) { return g.first == d; })) {
          check.digits.emplace_back(d, cells);
          cells = std::min(cells * values_[d].size(), kMostVerdicts + 1);  // past the most kept: asked every time
        }
      }
      if (declared && cells <= kMostVerdicts) check.verdicts.assign(cells, -1);
      checks_[level].push_back(std::move(check));
    }
    index_.assign(n, 0);
    open_.resize(n);
    // One map node per parameter, put into the config when its parameter is set and taken out again after: the walk
    // allocates nothing.
    Config full{fs.space.family, {}};
    for (std::size_t d = 0; d < n; ++d) full.params[fs.space.params[order_[d]].name] = values_[d][0];
    for (std::size_t d = 0; d < n; ++d) nodes_.push_back(full.params.extract(fs.space.params[order_[d]].name));
    config_.family = fs.space.family;
    usable_ = true;
  }

  bool usable() const { return usable_; }

  // Walks the space, offering what it prices to `best`.
  void run() {
    combinations = 1;
    for (const auto& v : values_) combinations *= v.size();
    walk(0, 0.0);
  }

  std::size_t combinations = 0;
  std::size_t priced = 0;

 private:
  bool holds(std::size_t depth) {
    for (Check& check : checks_[depth]) {
      if (check.verdicts.empty()) {
        if (!check.constraint->holds(config_)) return false;
        continue;
      }
      std::size_t cell = 0;
      for (const auto& [d, stride] : check.digits) cell += index_[d] * stride;
      signed char& verdict = check.verdicts[cell];
      if (verdict < 0) verdict = check.constraint->holds(config_) ? 1 : 0;
      if (verdict == 0) return false;
    }
    return true;
  }
  void price() {
    ++priced;
    best_.offer(config_, family_.cost(plan_.problem, plan_.profile, config_, plan_.threads, scratch_));
  }

  // `inherited`: the bound of the partial config above, which a parameter in FamilySpace::bound_skips keeps.
  void walk(std::size_t depth, double inherited) {
    auto& node = nodes_[depth];
    auto at = config_.params.insert(std::move(node)).position;
    const bool leaf = depth + 1 == values_.size();
    // The values that pass (their indices), with their bounds; one list per depth, kept for the next walk there.
    std::vector<std::pair<double, std::size_t>>& open = open_[depth];
    open.clear();
    for (std::size_t j = 0; j < values_[depth].size(); ++j) {
      at->second = values_[depth][j];
      index_[depth] = j;
      if (!holds(depth)) continue;
      if (leaf) {
        price();
        continue;
      }
      const double bound = asks_bound_[depth] ? family_.cost_bound(plan_.problem, plan_.profile, config_,
                                                                   plan_.threads, scratch_, best_.threshold())
                                              : inherited;
      if (bound <= best_.threshold()) open.emplace_back(bound, j);
    }
    // By bound, equal bounds in the order of the values (the indices break the tie).
    std::sort(open.begin(), open.end());
    for (const auto& [bound, j] : open) {
      if (bound > best_.threshold()) break;
      at->second = values_[depth][j];
      index_[depth] = j;
      walk(depth + 1, bound);
    }
    node = config_.params.extract(at);
  }

  const KernelFamily& family_;
  const Plan& plan_;
  CostScratch* scratch_;
  BestSoFar& best_;
  bool usable_ = false;
  std::vector<std::size_t> order_;                         // [depth]: the declared parameter set there
  std::vector<char> asks_bound_;                           // [depth]: whether setting it may change the bound
  std::vector<std::vector<int64_t>> values_;               // [depth]: its values (the pinned one, if pinned)
  // A constraint answers from the values of its reads alone (Constraint::reads), so a search asks it once per
  // combination of them and keeps the verdict, where they are declared and their combinations few.
  static constexpr std::size_t kMostVerdicts = 1 << 14;
  struct Check {
    const Constraint* constraint;
    std::vector<std::pair<std::size_t, std::size_t>> digits;  // (depth of a read, its stride in `verdicts`)
    std::vector<signed char> verdicts;                         // -1: not asked yet; empty: asked every time
  };
  std::vector<std::vector<Check>> checks_;                 // [depth]: constraints whose reads are all set there
  std::vector<std::size_t> index_;                         // [depth]: the index of its value now set
  std::vector<std::vector<std::pair<double, std::size_t>>> open_;  // [depth]: walk()'s list there
  std::vector<std::map<std::string, int64_t>::node_type> nodes_;
  Config config_;
};

// Whether every pin names a declared parameter and one of its values (else the enumeration refuses them, in its words).
bool pins_declared(const ParamSpace& space, const Pins& pins) {
  for (const auto& [name, value] : pins) {
    const ParamDecl* d = space.find(name);
    if (!d || std::find(d->values.begin(), d->values.end(), value) == d->values.end()) return false;
  }
  return true;
}

}  // namespace

FamilyChoice choose_family(const hw::HwProfile& p) {
  FamilyChoice f;
  const FamilyFit* near = nullptr;
  std::vector<FamilyFit> misses;
  misses.reserve(families().size());
  for (const KernelFamily* k : families()) {
    if (k->specialist()) continue;
    FamilyFit fit = k->fit(p);
    if (fit.ok) {
      f.family = std::string(k->name());
      f.reason = std::move(fit.reason);
      return f;
    }
    misses.push_back(std::move(fit));
    if (misses.back().relevant && !near) near = &misses.back();
  }
  // No family fits: the words of one made for this kind of chip, else what would serve it.
  if (near) {
    f.reason = near->reason;
    f.needed = near->needed;
    return f;
  }
  const std::string what = fmt::format("{} ({} {}, {})", p.display_name.empty() ? p.name : p.display_name, p.vendor,
                                       p.kind, p.arch);
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

FamilyChoice choose_family(const hw::HwProfile& p, const Problem& problem) {
  // A specialist that fits the chip and takes the problem ranks above the chip's general family (by preference),
  // unless it yields the problem to it on this chip.
  std::string yielded;
  for (const KernelFamily* k : families()) {
    if (!k->specialist()) continue;
    FamilyFit fit = k->fit(p);
    if (!fit.ok || !k->supports(problem).empty()) continue;
    if (std::string why = k->yields(p, problem); !why.empty()) {
      if (yielded.empty()) yielded = fmt::format("{} yields this problem: {}", k->name(), why);
      continue;
    }
    FamilyChoice f;
    f.family = std::string(k->name());
    f.reason = std::move(fit.reason);
    return f;
  }
  FamilyChoice first = choose_family(p);
  if (first.family.empty()) return first;
  if (!yielded.empty()) first.reason = fmt::format("{}; {}", first.reason, yielded);
  const SupportGap gap = find_family(first.family)->supports(problem);
  if (gap.empty()) return first;
  // The first family refuses the problem (its precision policy or its limits): a lower-preference family that fits
  // the chip and takes the problem serves it; when none does, the first family's refusal stands.
  bool after = false;
  for (const KernelFamily* k : families()) {
    if (!after) {
      after = k->name() == first.family;
      continue;
    }
    FamilyFit fit = k->fit(p);
    if (!fit.ok || !k->supports(problem).empty()) continue;
    FamilyChoice f;
    f.family = std::string(k->name());
    f.reason = fmt::format("{} does not take this problem ({}); {}", first.family, gap.why, fit.reason);
    return f;
  }
  return first;
}

namespace {

// Dispatch's own case (PlanOptions::best_only): the choice alone, from every listed config or by the family's cost
// bound. True when that served the plan; false when nothing is legal or the model cannot price the choice, and the
// enumeration then says why, as for any plan.
bool choose_alone(Plan& plan, const KernelFamily& family, FamilySpace& space, const PlanOptions& options) {
  const hw::HwProfile& profile = plan.profile;
  plan.reference = space.reference;
  const std::unique_ptr<CostScratch> scratch = family.make_scratch();
  if (scratch) scratch->notes = false;
  BestSoFar best(plan.reference);
  if (space.listed()) {
    plan.combinations = for_each_legal_listed(space, options.pins, [&](const Config& c) {
      ++plan.priced;
      best.offer(c, family.cost(plan.problem, profile, c, plan.threads, scratch.get()));
    });
  } else if (BoundSearch search(family, plan, space, options.pins, scratch.get(), best); search.usable()) {
    // The backend's own pick, priced first when legal with the pins, prunes from the start (the walk meets it
    // again, which changes nothing).
    const bool pinned_alike =
        plan.reference && std::all_of(options.pins.begin(), options.pins.end(), [&](const auto& pin) {
          return plan.reference->get(pin.first) == pin.second;
        });
    if (pinned_alike && !first_violation(space.space, *plan.reference)) {
      ++plan.priced;
      best.offer(*plan.reference, family.cost(plan.problem, profile, *plan.reference, plan.threads, scratch.get()));
    }
    search.run();
    plan.combinations = search.combinations;
    plan.priced += search.priced;
  }
  if (best.found && best.best.cost.valid) {
    plan.coverage = std::move(space.coverage);
    plan.reference_name = std::move(space.reference_name);
    plan.reference_reasons = std::move(space.reference_reasons);
    plan.choice_only = true;
    best.best.rank = 1;
    plan.reference_rank = plan.reference && best.best.config == *plan.reference ? 1 : 0;
    plan.ranked.push_back(std::move(best.best));
    plan.served = true;
    return true;
  }
  plan.combinations = 0;
  plan.priced = 0;
  return false;
}

// Prices every legal config and ranks them (PlanOptions::pick_only: only the choice first and the reference at
// its rank's place, no sort). Returns the family's scratch, which the neighbour search reuses.
std::unique_ptr<CostScratch> rank_candidates(Plan& plan, const KernelFamily& family, std::vector<Config>& legal,
                                             const PlanOptions& options) {
  const hw::HwProfile& profile = plan.profile;
  std::unique_ptr<CostScratch> scratch = family.make_scratch();
  if (scratch && options.pick_only && options.legal_only) scratch->notes = false;
  const std::size_t n = legal.size();
  std::vector<Candidate>& ranked = plan.ranked;
  ranked.resize(n);
  plan.priced = n;
  for (std::size_t i = 0; i < n; ++i) {
    ranked[i].cost = family.cost(plan.problem, profile, legal[i], plan.threads, scratch.get());
    ranked[i].config = std::move(legal[i]);
  }
  // The distance from the reference only breaks ties in predicted time: worked out when a tie first needs it.
  std::vector<std::optional<double>> dist(n);
  auto distance_of = [&](std::size_t i) {
    if (!dist[i]) dist[i] = distance(ranked[i].config, plan.reference);
    return *dist[i];
  };
  auto before = [&](std::size_t i, std::size_t j) {
    return ranks_before(ranked[i].config, ranked[i].cost.seconds, [&] { return distance_of(i); }, ranked[j].config,
                        ranked[j].cost.seconds, [&] { return distance_of(j); });
  };
  if (options.pick_only) {
    // Dispatch reads the choice, the list's size and the reference's rank and entry: the choice is the least
    // candidate and the reference's rank one more than the candidates before it, so no sort. The choice goes first
    // and the reference to its rank's place; the rest stay in enumeration order (their ranks are not set).
    std::size_t best = 0, ref = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0 && before(i, best)) best = i;
      if (ref == n && plan.reference && ranked[i].config == *plan.reference) ref = i;
    }
    std::size_t ref_rank = 0;
    if (ref < n) {
      ref_rank = 1;
      for (std::size_t i = 0; i < n; ++i)
        if (i != ref && before(i, ref)) ++ref_rank;
    }
    std::swap(ranked[0], ranked[best]);
    if (ref == best) {
      ref = 0;
    } else if (ref == 0) {
      ref = best;  // the swap moved it
    }
    ranked[0].rank = 1;
    if (ref_rank > 0) {
      if (ref_rank > 1) std::swap(ranked[ref_rank - 1], ranked[ref]);
      ranked[ref_rank - 1].rank = int(ref_rank);
      plan.reference_rank = int(ref_rank);
    }
  } else {
    // Indices are sorted rather than the candidates themselves (a Candidate is costly to move); std::sort makes the
    // same comparisons either way, so the order is the same.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::sort(order.begin(), order.end(), before);
    permute(ranked, order);
    for (std::size_t i = 0; i < n; ++i) {
      ranked[i].rank = int(i) + 1;
      if (plan.reference && ranked[i].config == *plan.reference) plan.reference_rank = ranked[i].rank;
    }
  }
  return scratch;
}

}  // namespace

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
  if (!options.pick_only) {
    plan.roofline = analyze_roofline(plan.problem, profile);
    plan.paths = analyze_paths(plan.problem, profile);
    plan.nominal_waves = analyze_waves(plan.problem, std::max(1, profile.cores), 1, 128, 128, 32);
  }
  const bool running = std::find(options.running_profiles.begin(), options.running_profiles.end(), profile.name) !=
                       options.running_profiles.end();
  plan.prediction = !running;
  plan.label = running ? fmt::format("running device (profile {})", profile.name)
                       : fmt::format("prediction (profile {} is not the running device)", profile.name);

  FamilyChoice fc;
  if (options.family.empty() || options.family == "auto") {
    fc = choose_family(profile, plan.problem);
  } else {
    auto requested = requested_family(options.family, profile);
    if (!requested) return requested.status();
    fc.family = options.family;
    fc.reason = fmt::format("family {} requested", options.family);
  }
  plan.family_reason = fc.reason;
  if (fc.family.empty()) {
    plan.unserved = fc.reason;
    plan.needed = fc.needed;
    return plan;
  }
  const KernelFamily& family = *find_family(fc.family);
  plan.family = fc.family;
  plan.backend = std::string(family.backend());
  if (SupportGap gap = family.supports(plan.problem); !gap.empty()) {
    plan.unserved = fmt::format("{} on {}: {}", fc.family, profile.name, gap.why);
    plan.needed = gap.needed;
    return plan;
  }
  plan.threads = family.plans_threads() ? (options.threads > 0 ? options.threads : std::max(1, profile.cores)) : 0;

  const bool best_only = options.best_only && options.pick_only && options.legal_only;
  FamilySpace space = best_only ? family.choice_candidates(plan.problem, profile, plan.threads)
                                : family.candidates(plan.problem, profile, plan.threads);
  with_determinism(space, options.deterministic);
  if (best_only && pins_declared(space.space, options.pins) &&
      (space.listed() || !space.search_order.empty())) {
    if (choose_alone(plan, family, space, options)) return plan;
    space = family.candidates(plan.problem, profile, plan.threads);
    with_determinism(space, options.deterministic);
  }
  // Only the neighbour search looks at the list again: without it, the legal configs are moved out, not copied.
  auto en = options.pick_only
                ? enumerate_candidates_moving(space, options.pins, profile.name, !options.legal_only,
                                              options.rejected_examples)
                : enumerate_candidates(space, options.pins, profile.name, options.rejected_examples);
  if (!en) return en.status();
  plan.coverage = std::move(space.coverage);
  plan.combinations = en->combinations;
  plan.rejected = std::move(en->rejected);
  plan.reference = std::move(space.reference);
  plan.reference_name = std::move(space.reference_name);
  plan.reference_reasons = std::move(space.reference_reasons);
  // Without the neighbour search nothing reads the space again: its memory (a CPU family declares thousands of
  // block sizes) goes back before the candidates are priced, which then reuse it.
  if (options.pick_only) space = FamilySpace();
  if (en->legal.empty()) {
    std::vector<std::string> why;
    for (const std::string& r : plan.rejected.reasons) why.push_back(r);
    plan.unserved = fmt::format("no legal {} config for this problem on {} (violated: {})", fc.family, profile.name,
                                fmt::join(why, "; "));
    plan.needed = "a chip record with more on-chip memory or registers, or a family with smaller tiles";
    return plan;
  }

  const std::unique_ptr<CostScratch> scratch = rank_candidates(plan, family, en->legal, options);
  if (!plan.ranked.front().cost.valid) {
    plan.unserved = fmt::format("the cost model cannot price {} on {}: {}", fc.family, profile.name,
                                fmt::join(plan.ranked.front().cost.notes, "; "));
    plan.needed = "the missing numbers in the chip record";
    plan.ranked.clear();
    return plan;
  }
  plan.served = true;
  if (options.pick_only) return plan;
  find_neighbours(plan, family, space, scratch.get());
  family.explain(plan);
  return plan;
}

}  // namespace tileforge::plan
