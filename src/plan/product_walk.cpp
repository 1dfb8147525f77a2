// The walk of a family's product space (plan/product_walk.hpp): constraint tables over the grid, and the walk that
// settles or counts whole subtrees.
#include "plan/product_walk.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace tileforge::plan {

// Sets `c` to the first combination of `grid` and returns where each declared parameter's value lives in it (in
// declaration order), for walks of the product that update one config in place.
std::vector<int64_t*> first_combination(Config& c, const std::vector<ParamDecl>& decls,
                                        const std::vector<std::vector<int64_t>>& grid) {
  std::vector<int64_t*> slot;
  for (std::size_t i = 0; i < decls.size(); ++i) slot.push_back(&(c.params[decls[i].name] = grid[i][0]));
  return slot;
}

namespace {

// The constraints of a product walk as tables over the grid indices of the parameters each reads (Constraint::reads,
// which ProductWalk relies on too): each is evaluated once per combination of its own parameters' values rather than
// once per combination of the whole space, where the config's map lookups cost most of a full plan's time (a full
// plan of a GPU shape walks millions of combinations). A constraint without declared reads, or with too many value
// combinations to tabulate, is evaluated on the config.
class ConstraintTables {
 public:
  ConstraintTables(const ParamSpace& space, const std::vector<std::vector<int64_t>>& grid) : space_(space) {
    for (const Constraint& k : space.constraints) tables_.push_back(tabulate(k, grid));
  }
  // Whether constraint k is looked up in a table (else evaluated on the config), and the parameters it reads then.
  bool tabulated(std::size_t k) const { return !tables_[k].ok.empty(); }
  std::vector<std::size_t> reads(std::size_t k) const {
    std::vector<std::size_t> params;
    for (const auto& term : tables_[k].terms) params.push_back(term.first);
    return params;
  }
  // Whether constraint k holds for config `c`, whose values are at grid indices `index`.
  bool holds(std::size_t k, const std::size_t* index, const Config& c) const {
    const Table& t = tables_[k];
    if (t.ok.empty()) return space_.constraints[k].holds(c);
    std::size_t at = 0;
    for (const auto& [param, stride] : t.terms) at += index[param] * stride;
    return t.ok[at] != 0;
  }

 private:
  static constexpr std::size_t kMaxEntries = std::size_t(1) << 16;
  struct Table {
    std::vector<std::pair<std::size_t, std::size_t>> terms;  // (parameter, stride)
    std::vector<char> ok;                                    // empty: evaluated on the config
  };
  Table tabulate(const Constraint& k, const std::vector<std::vector<int64_t>>& grid) const {
    Table t;
    std::size_t size = 1;
    for (const std::string& r : k.reads) {
      const ParamDecl* d = space_.find(r);
      if (!d) return {};
      const std::size_t j = std::size_t(d - space_.params.data());
      if (std::any_of(t.terms.begin(), t.terms.end(), [&](const auto& term) { return term.first == j; })) continue;
      t.terms.emplace_back(j, size);
      size *= grid[j].size();
      if (size > kMaxEntries) return {};
    }
    if (t.terms.empty()) return {};
    // Each entry: a config with the parameters read at the entry's values, the others at their first ones.
    Config c{space_.family, {}};
    const std::vector<int64_t*> slot = first_combination(c, space_.params, grid);
    t.ok.resize(size);
    for (std::size_t at = 0; at < size; ++at) {
      for (const auto& [j, stride] : t.terms) *slot[j] = grid[j][(at / stride) % grid[j].size()];
      t.ok[at] = k.holds(c) ? 1 : 0;
    }
    return t;
  }

  const ParamSpace& space_;
  std::vector<Table> tables_;  // one per constraint, in order
};

// The walk of a product space in for_each_product's order (the first parameter varying fastest), setting the
// parameters from the last to the first and checking each constraint that declares its reads (Constraint::reads) as
// soon as the first of them is set, the others at the leaves, so that a failing value settles every combination
// below it at once. `combinations` counts every combination, legal or not, and each rejected one is counted under
// the first constraint in declaration order that it violates, as a check of every combination would: a subtree is
// settled at once only when every constraint before its failing one has been checked at its level or above (and so
// holds throughout it); otherwise the walk goes on down, checking only the constraints before the failing one, since
// an earlier one may fail first. A settled
// subtree's first configs are stored (up to the reason's `keep`) in walk order, so the counts and the stored
// configs are those of the combination-by-combination walk.
class ProductWalk {
 public:
  ProductWalk(const ParamSpace& space, const std::vector<std::vector<int64_t>>& grid)
      : space_(space), grid_(grid), tables_(space, grid), n_(grid.size()), k_(space.constraints.size()),
        at_level_(space.constraint_levels()), below_(grid.size() + 1, 1),
        settled_before_(space.constraints.size() + 1, n_), index_(grid.size(), 0), values_(grid.size(), 0) {
    for (std::size_t j = 0; j < n_; ++j) below_[j + 1] = below_[j] * grid[j].size();
    std::vector<std::size_t> level(k_, n_);
    for (std::size_t j = 0; j <= n_; ++j)
      for (const std::size_t k : at_level_[j]) level[k] = j;
    std::size_t lowest = n_;  // the lowest level of the constraints before k
    for (std::size_t k = 0; k < k_; ++k) {
      settled_before_[k] = lowest;
      lowest = std::min(lowest, level[k]);
    }
    settled_before_[k_] = lowest;
  }

  void run(std::vector<Config>& legal, std::size_t& combinations, RejectedSet& rejected) {
    for (const auto& g : grid_)
      if (g.empty()) return;
    config_ = Config{space_.family, {}};
    slot_ = first_combination(config_, space_.params, grid_);
    for (std::size_t j = 0; j < n_; ++j) values_[j] = grid_[j][0];
    legal_ = &legal;
    combinations_ = &combinations;
    rejected_ = &rejected;
    reason_of_.assign(k_, SIZE_MAX);
    if (n_ == 0) {
      ++combinations;
      const std::size_t failed = first_failing(0, k_);
      if (failed == k_) {
        legal.push_back(config_);
      } else {
        rejected.add(values_.data(), reason_of(failed));
      }
      return;
    }
    walk(n_ - 1, k_);
  }

 private:
  bool holds(std::size_t k) const {
    return tables_.holds(k, index_.data(), config_);
  }
  // The first constraint checked at `level` that fails, of those before `failed` (k_: none yet); else `failed`.
  std::size_t first_failing(std::size_t level, std::size_t failed) const {
    for (const std::size_t k : at_level_[level]) {
      if (k >= failed) break;
      if (!holds(k)) return k;
    }
    return failed;
  }
  std::size_t reason_of(std::size_t k) {
    if (reason_of_[k] == SIZE_MAX) {
      const Constraint& rule = space_.constraints[k];
      reason_of_[k] = rejected_->reason_index(rule.text, rule.layer);
    }
    return reason_of_[k];
  }
  void walk(std::size_t j, std::size_t failed_above) {
    for (std::size_t i = 0; i < grid_[j].size(); ++i) {
      *slot_[j] = values_[j] = grid_[j][i];
      index_[j] = i;
      const std::size_t failed = first_failing(j, failed_above);
      if (failed < k_ && settled_before_[failed] >= j) {
        settle(j, failed);
      } else if (failed < k_ && count_below(j, failed)) {
        // counted without the walk below
      } else if (j > 0) {
        walk(j - 1, failed);
      } else {
        ++*combinations_;
        legal_->push_back(config_);
      }
    }
  }
  // Every combination below level j (parameters 0..j-1 free) rejected for constraint k.
  void settle(std::size_t j, std::size_t k) {
    *combinations_ += below_[j];
    const std::size_t reason = reason_of(k);
    std::size_t& count = rejected_->counts[reason];
    const std::size_t stored = count >= rejected_->keep ? 0 : std::min(below_[j], rejected_->keep - count);
    if (stored > 0) {
      std::vector<int64_t> v = values_;
      for (std::size_t t = 0; t < stored; ++t) {
        for (std::size_t p = 0; p < j; ++p) v[p] = grid_[p][(t / below_[p]) % grid_[p].size()];
        rejected_->add(v.data(), reason);
      }
    }
    count += below_[j] - stored;
  }

  // The constraints before k checked below level j (those that may fail before k there), and the free parameters
  // (below j) they read: when every such constraint is tabulated and its reads span few combinations, a subtree
  // rejected for k is counted over those parameters alone, each outcome standing for the combinations of the other
  // free parameters. Worked out once per (j, k).
  struct Pending {
    bool countable = false;
    std::vector<std::size_t> before;  // constraint indices, ascending
    std::vector<std::size_t> params;  // free parameters they read, ascending
    std::size_t combinations = 1;     // of `params`
  };
  static constexpr std::size_t kMaxCounted = 4096;
  const Pending& pending(std::size_t j, std::size_t k) {
    auto [it, fresh] = pending_.try_emplace(j * (k_ + 1) + k);
    Pending& p = it->second;
    if (!fresh) return p;
    p.countable = true;
    for (std::size_t level = 0; level < j; ++level) {
      for (const std::size_t c : at_level_[level]) {
        if (c >= k) break;
        if (!tables_.tabulated(c)) p.countable = false;
        p.before.push_back(c);
        for (const std::size_t r : tables_.reads(c))
          if (r < j && std::find(p.params.begin(), p.params.end(), r) == p.params.end()) p.params.push_back(r);
      }
    }
    std::sort(p.before.begin(), p.before.end());
    std::sort(p.params.begin(), p.params.end());
    for (const std::size_t r : p.params) {
      p.combinations *= grid_[r].size();
      if (p.combinations > kMaxCounted) p.countable = false;
    }
    return p;
  }
  // Counts a subtree below level j (parameters 0..j-1 free) whose combinations violate constraint k, each under the
  // first constraint it violates, when that needs no walk: the pending constraints are countable and every reason
  // the subtree gives has been seen and has its `keep` stored configs already (so nothing in it would be stored,
  // and no reason is first seen in it). Otherwise false, and the caller walks on down.
  bool count_below(std::size_t j, std::size_t k) {
    const Pending& p = pending(j, k);
    if (!p.countable) return false;
    tally_.assign(k_, 0);
    for (std::size_t t = 0; t < p.combinations; ++t) {
      std::size_t rest = t;
      for (const std::size_t r : p.params) {
        index_[r] = rest % grid_[r].size();
        rest /= grid_[r].size();
      }
      std::size_t first = k;
      for (const std::size_t c : p.before) {
        if (!tables_.holds(c, index_.data(), config_)) {
          first = c;
          break;
        }
      }
      ++tally_[first];
    }
    for (std::size_t c = 0; c < k_; ++c) {
      if (tally_[c] > 0 && (reason_of_[c] == SIZE_MAX || rejected_->counts[reason_of_[c]] < rejected_->keep))
        return false;
    }
    const std::size_t each = below_[j] / p.combinations;  // combinations of the free parameters no pending one reads
    for (std::size_t c = 0; c < k_; ++c)
      if (tally_[c] > 0) rejected_->counts[reason_of_[c]] += tally_[c] * each;
    *combinations_ += below_[j];
    return true;
  }

  const ParamSpace& space_;
  const std::vector<std::vector<int64_t>>& grid_;
  const ConstraintTables tables_;
  std::size_t n_, k_;
  std::vector<std::vector<std::size_t>> at_level_;  // [j]: the constraints checked once parameters j..n-1 are set
  std::vector<std::size_t> below_;                  // [j]: combinations of parameters 0..j-1
  std::vector<std::size_t> settled_before_;         // [k]: the lowest level of constraints 0..k-1 (n: none)
  std::vector<std::size_t> index_;                  // the walked combination's grid indices
  std::vector<int64_t> values_;                     // and its values, in declaration order
  std::vector<std::size_t> reason_of_;              // each constraint's index in rejected_->reasons (SIZE_MAX: not yet)
  std::map<std::size_t, Pending> pending_;          // by j * (constraints + 1) + k
  std::vector<std::size_t> tally_;                  // count_below's outcomes per constraint
  Config config_;
  std::vector<int64_t*> slot_;
  std::vector<Config>* legal_ = nullptr;
  std::size_t* combinations_ = nullptr;
  RejectedSet* rejected_ = nullptr;
};

}  // namespace

void walk_product_space(const ParamSpace& space, const std::vector<std::vector<int64_t>>& grid,
                        std::vector<Config>& legal, std::size_t& combinations, RejectedSet& rejected) {
  ProductWalk(space, grid).run(legal, combinations, rejected);
}

}  // namespace tileforge::plan
