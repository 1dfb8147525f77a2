// ParamSpace: checking, pinning and enumerating Configs against declared parameters and constraints.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.hpp"

namespace tileforge {

const ParamDecl* ParamSpace::find(std::string_view name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {

std::string names_of(const std::vector<ParamDecl>& params) {
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

Status check_value(const ParamSpace& space, const ParamDecl& decl, int64_t value) {
  if (std::find(decl.values.begin(), decl.values.end(), value) != decl.values.end()) return {};
  return invalid_argument(fmt::format("{} = {} is not legal for family {} (allowed: {})", decl.name, value,
                                      space.family, values_text(decl.values)));
}

}  // namespace

std::string values_text(const std::vector<int64_t>& values) {
  // Runs of 5 or more values in one step read as "8 to 4096 in steps of 8": a CPU family's KC has 512 legal values.
  constexpr std::size_t kRun = 5;
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < values.size()) {
    std::size_t j = i + 1;
    if (j < values.size()) {
      const int64_t step = values[j] - values[i];
      while (j + 1 < values.size() && step > 0 && values[j + 1] - values[j] == step) ++j;
      if (step > 0 && j - i + 1 >= kRun) {
        parts.push_back(fmt::format("{} to {} in steps of {}", values[i], values[j], step));
        i = j + 1;
        continue;
      }
    }
    parts.push_back(fmt::format("{}", values[i]));
    ++i;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

Status ParamSpace::check(const Config& config) const {
  if (config.family != family) {
    return invalid_argument(fmt::format("config family '{}' does not match '{}'", config.family, family));
  }
  for (const auto& [name, value] : config.params) {
    const ParamDecl* decl = find(name);
    if (!decl) {
      return invalid_argument(
          fmt::format("'{}' is not a parameter of family {} (allowed: {})", name, family, names_of(params)));
    }
    if (Status s = check_value(*this, *decl, value); !s) return s;
  }
  // Every name the config holds is declared (above), and a map holds each once: as many names as declarations means
  // none is missing, and the lookups below are needed only when one is (the heuristics check many configs).
  if (config.params.size() != params.size()) {
    for (const auto& decl : params) {
      if (!config.get(decl.name)) {
        return invalid_argument(fmt::format("config of family {} lacks parameter {}", family, decl.name));
      }
    }
  }
  for (const auto& c : constraints) {
    if (!c.holds(config)) {
      return invalid_argument(fmt::format("{} violates the constraint {}", config.describe(), c.text));
    }
  }
  return {};
}

bool ParamSpace::admits(const Config& config) const {
  if (config.family != family) return false;
  for (const auto& [name, value] : config.params) {
    const ParamDecl* decl = find(name);
    if (!decl || std::find(decl->values.begin(), decl->values.end(), value) == decl->values.end()) return false;
  }
  // As in check(): every name is declared, so fewer names than declarations means one is missing.
  if (config.params.size() != params.size()) return false;
  return std::all_of(constraints.begin(), constraints.end(), [&](const Constraint& c) { return c.holds(config); });
}

Expected<Config> ParamSpace::pin(Config base, const std::vector<std::pair<std::string, int64_t>>& pins) const {
  for (const auto& [name, value] : pins) {
    const ParamDecl* decl = find(name);
    if (!decl) {
      return invalid_argument(
          fmt::format("--set {}: not a parameter of family {} (allowed: {})", name, family, names_of(params)));
    }
    if (Status s = check_value(*this, *decl, value); !s) return invalid_argument("--set " + s.message());
    base.params[name] = value;
  }
  if (Status s = check(base); !s) return invalid_argument("with the pinned values, " + s.message());
  return base;
}

std::vector<std::vector<std::size_t>> ParamSpace::constraint_levels() const {
  const std::size_t n = params.size();
  std::vector<std::vector<std::size_t>> at(n + 1);
  for (std::size_t k = 0; k < constraints.size(); ++k) {
    std::size_t level = constraints[k].reads.empty() ? 0 : n;
    for (const std::string& r : constraints[k].reads) {
      const ParamDecl* d = find(r);
      if (!d) {  // a name the space does not declare: checked with every parameter set
        level = 0;
        break;
      }
      level = std::min(level, std::size_t(d - params.data()));
    }
    at[level].push_back(k);
  }
  return at;
}

std::vector<Config> ParamSpace::enumerate(std::size_t limit) const {
  std::vector<std::vector<int64_t>> values;
  for (const ParamDecl& p : params) values.push_back(p.values.get());
  return enumerate(values, limit);
}

std::vector<Config> ParamSpace::enumerate(const std::vector<std::vector<int64_t>>& values, std::size_t limit) const {
  std::vector<Config> out;
  if (params.empty() || limit == 0) return out;
  for (const auto& v : values)
    if (v.empty()) return out;
  // One config updated in place, copied where legal; parameters set from the last to the first.
  Config c{family, {}};
  std::vector<int64_t*> slot;
  for (std::size_t j = 0; j < params.size(); ++j) slot.push_back(&(c.params[params[j].name] = values[j][0]));
  const std::vector<std::vector<std::size_t>> levels = constraint_levels();
  auto holds = [&](std::size_t j) {
    return std::all_of(levels[j].begin(), levels[j].end(), [&](std::size_t k) { return constraints[k].holds(c); });
  };
  // Returns false once `limit` configs are out.
  auto walk = [&](auto&& self, std::size_t j) -> bool {
    for (const int64_t v : values[j]) {
      *slot[j] = v;
      if (!holds(j)) continue;
      if (j > 0) {
        if (!self(self, j - 1)) return false;
      } else {
        out.push_back(c);
        if (out.size() >= limit) return false;
      }
    }
    return true;
  };
  walk(walk, params.size() - 1);
  return out;
}

}  // namespace tileforge
