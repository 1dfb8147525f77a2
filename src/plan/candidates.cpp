// Candidate spaces per family on a profile, pins, and the enumeration that records why each config was rejected.
#include "plan/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace tileforge::plan {
namespace {


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

FamilySpace full_product(ParamSpace space, std::optional<Config> reference, std::string reference_name,
                         std::string reference_reason) {
  FamilySpace f;
  f.space = std::move(space);
  std::size_t n = 1;
  for (const ParamDecl& d : f.space.params) {
    f.grid.push_back(d.values);
    n *= d.values.size();
  }
  f.reference = std::move(reference);
  f.reference_name = std::move(reference_name);
  f.reference_reasons.push_back(std::move(reference_reason));
  f.coverage = fmt::format("the full space: every combination of its {} parameters ({} combinations)",
                           f.space.params.size(), n);
  return f;
}

Config RejectedSet::config(std::size_t i) const {
  Config c{family, {}};
  for (std::size_t j = 0; j < names.size(); ++j) c.params[names[j]] = values[i * names.size() + j];
  return c;
}

void RejectedSet::add(const Config& config, const std::string& why, Layer layer) {
  for (const std::string& n : names) values.push_back(config.params.at(n));
  auto it = std::find(reasons.begin(), reasons.end(), why);
  if (it == reasons.end()) {
    reasons.push_back(why);
    reason_layers.push_back(layer);
    it = reasons.end() - 1;
  }
  reason.push_back(uint32_t(it - reasons.begin()));
}

Layer layer_named(std::string_view name) {
  for (int i = 0; i < 4; ++i)
    if (kLayerNames[i] == name) return Layer(i);
  return Layer::data_scheduling;
}

std::optional<Violation> first_violation(const ParamSpace& space, const Config& config) {
  for (const ParamDecl& d : space.params) {
    auto v = config.get(d.name);
    if (!v) return Violation{fmt::format("config lacks parameter {}", d.name), layer_named(d.layer)};
    if (std::find(d.values.begin(), d.values.end(), *v) == d.values.end()) {
      return Violation{fmt::format("{} = {} is not a declared value of family {}", d.name, *v, space.family),
                       layer_named(d.layer)};
    }
  }
  for (const Constraint& c : space.constraints)
    if (!c.holds(config)) return Violation{c.text, c.layer};
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
        e.rejected.add(c, why->text, why->layer);
      } else {
        e.legal.push_back(c);
      }
      return;
    }
    // Product values come from the declarations: only the constraints can fail.
    for (const Constraint& k : space.constraints) {
      if (!k.holds(c)) {
        e.rejected.add(c, k.text, k.layer);
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

}  // namespace tileforge::plan
