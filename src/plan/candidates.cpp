// Candidate spaces per family on a profile, pins, and the enumeration that records why each config was rejected.
#include "plan/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/product_walk.hpp"

namespace tileforge::plan {
namespace {

std::string join_pins(const Pins& pins) {
  std::vector<std::string> s;
  for (const auto& [n, v] : pins) s.push_back(fmt::format("{}={}", n, v));
  return fmt::format("{}", fmt::join(s, " "));
}

// Walks the Cartesian product of `grid`, calling fn with one Config updated in place and its values in declaration
// order (read from the config, so that a rejected one is recorded without a lookup per name).
template <class Fn>
void for_each_product(const std::string& family, const std::vector<ParamDecl>& decls,
                      const std::vector<std::vector<int64_t>>& grid, Fn&& fn) {
  for (const auto& g : grid)
    if (g.empty()) return;
  Config c{family, {}};
  const std::vector<int64_t*> slot = first_combination(c, decls, grid);
  std::vector<int64_t> values(decls.size());
  walk_product(slot, grid, [&](const std::size_t*) {
    for (std::size_t j = 0; j < decls.size(); ++j) values[j] = *slot[j];
    fn(c, values.data());
    return true;
  });
}

// How to tell whether a value is declared: in O(1) when the declaration is an arithmetic progression (the CPU
// families declare thousands of multiples for KC, MC and NC, and enumeration checks every listed config), by a
// binary search when it ascends, else by a scan.
class DeclaredValues {
 public:
  explicit DeclaredValues(const std::vector<int64_t>& values) : values_(values) {
    arithmetic_ = values.size() >= 2 && values[1] > values[0];
    for (std::size_t i = 2; arithmetic_ && i < values.size(); ++i)
      arithmetic_ = values[i] - values[i - 1] == values[1] - values[0];
    sorted_ = arithmetic_ || std::is_sorted(values.begin(), values.end());
  }
  bool has(int64_t v) const {
    if (arithmetic_) {
      const int64_t first = values_.front(), step = values_[1] - values_[0];
      return v >= first && v <= values_.back() && (v - first) % step == 0;
    }
    if (sorted_) return std::binary_search(values_.begin(), values_.end(), v);
    return std::find(values_.begin(), values_.end(), v) != values_.end();
  }

 private:
  const std::vector<int64_t>& values_;
  bool sorted_ = false, arithmetic_ = false;
};

// The values of `names` in a config, in that order; std::out_of_range (map::at's) when one is missing. A config that
// holds exactly those names is read in one walk over its map rather than one lookup per name.
class ValueReader {
 public:
  explicit ValueReader(const std::vector<std::string>& names) : names_(names), by_name_(names.size()) {
    std::iota(by_name_.begin(), by_name_.end(), std::size_t(0));
    std::sort(by_name_.begin(), by_name_.end(), [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
  }
  void read(const Config& c, int64_t* out) const {
    if (c.params.size() == names_.size()) {
      auto it = c.params.begin();
      std::size_t k = 0;
      for (; k < by_name_.size() && it->first == names_[by_name_[k]]; ++k, ++it) out[by_name_[k]] = it->second;
      if (k == by_name_.size()) return;
    }
    for (std::size_t j = 0; j < names_.size(); ++j) out[j] = c.params.at(names_[j]);
  }

 private:
  const std::vector<std::string>& names_;
  std::vector<std::size_t> by_name_;  // indices into names_, in the map's (name) order
};

// The indices of the listed configs without repeats, each at its first occurrence, in order, given their `keys`
// (`w` values each, flat): an index sorted by key rather than a set of vectors, so no allocation per config.
std::vector<std::size_t> distinct_configs(const std::vector<int64_t>& keys, std::size_t n, std::size_t w) {
  auto key = [&](std::size_t i) { return keys.begin() + std::ptrdiff_t(i * w); };
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  // Equal keys end up adjacent, the first occurrence first (ties go by index).
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto [ma, mb] = std::mismatch(key(a), key(a) + std::ptrdiff_t(w), key(b));
    if (ma != key(a) + std::ptrdiff_t(w)) return *ma < *mb;
    return a < b;
  });
  std::vector<char> keep(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    keep[order[i]] = i == 0 || !std::equal(key(order[i]), key(order[i]) + std::ptrdiff_t(w), key(order[i - 1]));
  }
  std::vector<std::size_t> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (keep[i]) out.push_back(i);
  return out;
}

// A constraint that reads pinned parameters only holds for every combination or for none: when it fails on the pins
// alone, the refusal says so before a walk of a product whose every combination it rejects (a refused REDUCE=1 under
// the deterministic policy walked 14M combinations twice, 40 s).
Status pins_break_a_constraint(const ParamSpace& space, const Pins& pins, std::string_view profile_name) {
  if (pins.empty()) return {};
  Config pinned_only{space.family, {}};
  for (const auto& [name, value] : pins) pinned_only.params[name] = value;
  for (const Constraint& c : space.constraints) {
    const bool reads_pins_only = !c.reads.empty() && std::all_of(c.reads.begin(), c.reads.end(), [&](const std::string& r) {
      return pinned_only.params.count(r) != 0;
    });
    if (reads_pins_only && !c.holds(pinned_only)) {
      return invalid_argument(fmt::format("--set {}: no legal {} config on {}: every combination violates {}",
                                          join_pins(pins), space.family, profile_name, c.text));
    }
  }
  return {};
}

// The pins name declared parameters and values they declare, and break no constraint that reads pins alone;
// otherwise the refusal, with what is allowed.
Status check_pins(const ParamSpace& space, const std::vector<std::string>& names, const Pins& pins,
                  std::string_view profile_name) {
  for (const auto& [name, value] : pins) {
    const ParamDecl* d = space.find(name);
    if (!d) {
      return invalid_argument(fmt::format("--set {}: not a parameter of family {} (allowed: {})", name, space.family,
                                          fmt::join(names, ", ")));
    }
    if (std::find(d->values.begin(), d->values.end(), value) == d->values.end()) {
      return invalid_argument(fmt::format("--set {}={}: not a legal value of {} in family {} (allowed: {})", name,
                                          value, name, space.family, values_text(d->values)));
    }
  }
  return pins_break_a_constraint(space, pins, profile_name);
}

// What a listed config violates first: a listed config may hold a value outside the declaration, so every value is
// checked against it (in declaration order) before the constraints, as first_violation does. `values` are the
// config's values of the declared parameters, in declaration order.
std::optional<Violation> listed_violation(const ParamSpace& space, const std::vector<DeclaredValues>& declared,
                                          const int64_t* values, const Config& config) {
  for (std::size_t j = 0; j < space.params.size(); ++j) {
    const ParamDecl& d = space.params[j];
    if (!declared[j].has(values[j])) {
      return Violation{fmt::format("{} = {} is not a declared value of family {}", d.name, values[j], space.family),
                       layer_named(d.layer)};
    }
  }
  for (const Constraint& c : space.constraints)
    if (!c.holds(config)) return Violation{c.text, c.layer};
  return std::nullopt;
}

// Which constraints rule the pinned combinations out, walked by `for_each` (enumerate's walk of the list or the
// product): one that every combination violates, or else those the nearest combinations (fewest violations) violate,
// so that the refusal names what to change.
template <class ForEach>
std::string why_pins_rule_out_all(const ParamSpace& space, ForEach&& for_each) {
  std::map<std::string, std::size_t> every, nearest;
  std::size_t total = 0, fewest = SIZE_MAX;
  for_each([&](const Config& c, const int64_t*) {
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
  for (const auto& [text, n] : every)
    if (n == total) return fmt::format("every combination violates {}", text);
  std::vector<std::string> parts;
  for (const auto& [text, n] : nearest) parts.push_back(fmt::format("{} ({} combination{})", text, n, n == 1 ? "" : "s"));
  return fmt::format("the nearest combinations each violate {} constraint{}: {}", fewest, fewest == 1 ? "" : "s",
                     fmt::join(parts, "; "));
}

// enumerate_candidates; `consumable`, when given, is family.list itself, whose legal configs may be moved out.
Expected<Enumeration> enumerate(const FamilySpace& family, std::vector<Config>* consumable, const Pins& pins,
                                std::string_view profile_name, bool record_rejected, std::size_t keep_per_reason) {
  const ParamSpace& space = family.space;
  std::vector<std::string> names;
  for (const ParamDecl& d : space.params) names.push_back(d.name);
  if (Status refused = check_pins(space, names, pins, profile_name); !refused.ok()) return refused;

  Enumeration e;
  e.rejected.family = space.family;
  e.rejected.names = names;
  e.rejected.keep = keep_per_reason;
  const bool list_mode = !family.list.empty();

  // The combinations the pins leave, either as a product or as a list.
  std::vector<std::vector<int64_t>> grid = family.grid;
  std::vector<Config> pinned;  // the listed configs with the pins applied (copied only when there are pins)
  const std::vector<Config>& listed = pins.empty() ? family.list : pinned;
  std::vector<Config>* movable = pins.empty() ? consumable : &pinned;  // where legal configs may be moved from
  std::vector<std::size_t> list;  // indices into `listed`
  std::vector<int64_t> keys;      // the values of `names` of each listed config, flat
  if (list_mode) {
    if (!pins.empty()) {
      pinned = family.list;
      for (Config& c : pinned)
        for (const auto& [name, value] : pins) c.params[name] = value;
    }
    const ValueReader reader(names);
    keys.resize(listed.size() * names.size());
    for (std::size_t i = 0; i < listed.size(); ++i) reader.read(listed[i], keys.data() + i * names.size());
    list = distinct_configs(keys, listed.size(), names.size());
  } else {
    for (const auto& [name, value] : pins) {
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) grid[i] = {value};
    }
  }
  auto for_each = [&](auto&& fn) {
    if (list_mode) {
      for (std::size_t i : list) fn(listed[i], keys.data() + i * names.size());
    } else {
      for_each_product(space.family, space.params, grid, fn);
    }
  };

  if (!record_rejected && !list_mode) {
    // The family's own walk, which skips below a failing value; every combination is counted all the same.
    e.legal = space.enumerate(grid, SIZE_MAX);
    e.combinations = std::accumulate(grid.begin(), grid.end(), std::size_t(1),
                                     [](std::size_t n, const std::vector<int64_t>& g) { return n * g.size(); });
    if (!e.legal.empty()) return e;
    // Nothing legal: the full enumeration below names what rules the combinations out.
    e.combinations = 0;
  }

  if (list_mode) {
    // A listed config may hold a value outside the declaration: check everything (as first_violation does; every
    // declared parameter is present, or reading the keys failed).
    std::vector<DeclaredValues> declared;
    declared.reserve(space.params.size());
    for (const ParamDecl& d : space.params) declared.emplace_back(d.values);
    e.legal.reserve(list.size());
    for (std::size_t i : list) {
      ++e.combinations;
      const int64_t* values = keys.data() + i * names.size();
      const std::optional<Violation> why = listed_violation(space, declared, values, listed[i]);
      if (why) {
        if (record_rejected) e.rejected.add(values, why->text, why->layer);
      } else if (movable) {
        e.legal.push_back(std::move((*movable)[i]));
      } else {
        e.legal.push_back(listed[i]);
      }
    }
    // Nothing legal and nothing listed: again with the rejections, which name what rules the configs out.
    if (!record_rejected && e.legal.empty())
      return enumerate(family, consumable, pins, profile_name, true, keep_per_reason);
  } else {
    walk_product_space(space, grid, e.legal, e.combinations, e.rejected);
  }

  if (e.legal.empty() && !pins.empty()) {
    return invalid_argument(fmt::format("--set {}: no legal {} config on {}: {}", join_pins(pins), space.family,
                                        profile_name, why_pins_rule_out_all(space, for_each)));
  }
  return e;
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

std::size_t RejectedSet::reason_index(const std::string& why, Layer layer) {
  // The reason's text is stored once.
  auto it = std::find(reasons.begin(), reasons.end(), why);
  if (it != reasons.end()) return std::size_t(it - reasons.begin());
  reasons.push_back(why);
  reason_layers.push_back(layer);
  counts.push_back(0);
  return reasons.size() - 1;
}

std::size_t RejectedSet::size() const { return std::accumulate(counts.begin(), counts.end(), std::size_t(0)); }

void RejectedSet::add(const int64_t* config_values, std::size_t index) {
  // Every config is counted; it is stored while its reason has fewer than `keep`.
  if (counts[index]++ >= keep) return;
  reason.push_back(uint32_t(index));
  values.insert(values.end(), config_values, config_values + names.size());
}

void RejectedSet::add(const int64_t* config_values, const std::string& why, Layer layer) {
  add(config_values, reason_index(why, layer));
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

std::vector<Config> listed_configs(const FamilySpace& family) {
  if (family.flat_values.empty()) return family.list;
  std::vector<Config> out;
  const std::size_t width = family.flat_names.size();
  for (std::size_t i = 0; i + width <= family.flat_values.size(); i += width) {
    Config& c = out.emplace_back(Config{family.flat_family, {}});
    for (std::size_t j = 0; j < width; ++j) c.params.emplace(family.flat_names[j], family.flat_values[i + j]);
  }
  return out;
}

std::size_t for_each_legal_listed(FamilySpace& family, const Pins& pins,
                                  const std::function<void(const Config&)>& legal) {
  // A list legal as built is priced unchecked when nothing is pinned: no reader, nor the declared values' index (a
  // walk over the CPU families' 13,000 block sizes) is built then.
  const bool unchecked = family.list_legal && pins.empty();
  const ParamSpace& space = family.space;
  std::vector<std::string> names;
  std::vector<DeclaredValues> declared;
  if (!unchecked) {
    declared.reserve(space.params.size());
    for (const ParamDecl& d : space.params) {
      names.push_back(d.name);
      declared.emplace_back(d.values);
    }
  }
  const ValueReader reader(names);
  std::vector<int64_t> values(names.size());
  auto offer = [&](Config& c) {
    if (unchecked) return legal(c);
    for (const auto& [name, value] : pins) c.params[name] = value;
    // As the enumeration checks a listed config: every value declared, then every constraint.
    reader.read(c, values.data());
    bool ok = true;
    for (std::size_t j = 0; j < values.size() && ok; ++j) ok = declared[j].has(values[j]);
    for (std::size_t k = 0; k < space.constraints.size() && ok; ++k) ok = space.constraints[k].holds(c);
    if (ok) legal(c);
  };
  if (family.flat_values.empty()) {
    for (Config& c : family.list) offer(c);
    return family.list.size();
  }
  // The flat list: one Config whose map's nodes take each listed config's values in turn (flat_names is in the
  // map's own order); pins name declared parameters, so they add no node.
  const std::size_t width = family.flat_names.size(), count = family.flat_values.size() / width;
  Config c{family.flat_family, {}};
  for (const std::string& n : family.flat_names) c.params.emplace(n, 0);
  for (std::size_t i = 0; i < count; ++i) {
    const int64_t* v = family.flat_values.data() + i * width;
    std::size_t j = 0;
    for (auto& entry : c.params) entry.second = v[j++];
    offer(c);
  }
  return count;
}

Expected<Enumeration> enumerate_candidates(const FamilySpace& family, const Pins& pins,
                                           std::string_view profile_name, std::size_t keep_per_reason) {
  return enumerate(family, nullptr, pins, profile_name, true, keep_per_reason);
}

Expected<Enumeration> enumerate_candidates_moving(FamilySpace& family, const Pins& pins,
                                                  std::string_view profile_name, bool record_rejected,
                                                  std::size_t keep_per_reason) {
  return enumerate(family, &family.list, pins, profile_name, record_rejected, keep_per_reason);
}

}  // namespace tileforge::plan
