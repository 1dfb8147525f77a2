// The choice's neighbours and the binding limit (neighbours.hpp).
#include "plan/neighbours.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plan/explain_helpers.hpp"
#include "plan/format.hpp"

namespace tileforge::plan {
namespace {

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

}  // namespace

void find_neighbours(Plan& plan, const KernelFamily& family, const FamilySpace& fs, CostScratch* scratch) {
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
          // NOTE: an init-capture, since clang before 16 cannot capture a structured binding.
          const bool pinned = std::any_of(plan.pins.begin(), plan.pins.end(),
                                          [&name = name](const auto& p) { return p.first == name; });
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
        n.constraint = why->text;
        n.detail = family.violation_detail(why->text, c, plan.profile);
      }
      n.seconds = family.cost(plan.problem, plan.profile, c, plan.threads, scratch).seconds;
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

}  // namespace tileforge::plan
