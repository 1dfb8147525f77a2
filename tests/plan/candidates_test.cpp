// The enumeration of a product space (plan/candidates.cpp's, through plan/product_walk.cpp, and the family's own
// ParamSpace::enumerate) against a check of every combination: the walks that settle or count whole subtrees must
// give the same legal configs in the same order, the same count per reason (each combination under the first
// constraint it violates) and the same stored examples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "plan/candidates.hpp"

namespace tileforge::plan {
namespace {

// What checking every combination in for_each_product's order (the first parameter fastest) gives.
struct Expected {
  std::vector<Config> legal;
  std::map<std::string, std::size_t> counts;  // per reason text
  std::vector<std::pair<std::string, std::vector<int64_t>>> stored;
  std::size_t combinations = 0;
};

Expected check_every_combination(const ParamSpace& space, std::size_t keep) {
  Expected e;
  const std::size_t n = space.params.size();
  std::vector<std::size_t> index(n, 0);
  for (;;) {
    Config c{space.family, {}};
    std::vector<int64_t> values(n);
    for (std::size_t j = 0; j < n; ++j) c.params[space.params[j].name] = values[j] = space.params[j].values[index[j]];
    ++e.combinations;
    const Constraint* failed = nullptr;
    for (const Constraint& k : space.constraints) {
      if (!k.holds(c)) {
        failed = &k;
        break;
      }
    }
    if (!failed) {
      e.legal.push_back(c);
    } else if (e.counts[failed->text]++ < keep) {
      e.stored.emplace_back(failed->text, values);
    }
    std::size_t j = 0;
    for (; j < n && ++index[j] == space.params[j].values.size(); ++j) index[j] = 0;
    if (j == n) return e;
  }
}

// A space of 4 to 6 parameters of 2 to 5 values and 3 to 9 constraints, each reading 1 to 3 parameters (declared,
// or for some of them not: checked at the leaves) and failing on a random share of their value combinations.
ParamSpace random_space(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ParamSpace s;
  s.family = "test";
  const int n = pick(4, 6);
  for (int j = 0; j < n; ++j) {
    ParamDecl d;
    d.name = "P" + std::to_string(j);
    d.layer = "data scheduling";
    const int m = pick(2, 5);
    std::vector<int64_t> values;
    for (int v = 0; v < m; ++v) values.push_back(pick(1, 4) * 8 + v);  // distinct: one per residue mod 8
    d.values = values;
    s.params.push_back(d);
  }
  const int constraints = pick(3, 9);
  for (int k = 0; k < constraints; ++k) {
    std::vector<std::string> reads;
    const int r = pick(1, 3);
    for (int i = 0; i < r; ++i) {
      const std::string name = "P" + std::to_string(pick(0, n - 1));
      if (std::find(reads.begin(), reads.end(), name) == reads.end()) reads.push_back(name);
    }
    const uint64_t salt = rng();
    const int fail_percent = pick(5, 60);
    Constraint c{Layer::data_scheduling, "constraint " + std::to_string(k),
                 [reads, salt, fail_percent](const Config& config) {
                   uint64_t h = salt;
                   for (const std::string& name : reads) h = (h ^ uint64_t(config.at(name))) * 0x100000001b3ull;
                   h ^= h >> 29;
                   return int(h % 100) >= fail_percent;
                 },
                 pick(0, 4) == 0 ? std::vector<std::string>{} : reads};
    s.constraints.push_back(std::move(c));
  }
  return s;
}

TEST(Candidates, ProductWalkCountsAndStoresAsACheckOfEveryCombination) {
  std::mt19937 rng(20261206);
  for (int trial = 0; trial < 60; ++trial) {
    const ParamSpace space = random_space(rng);
    // The family's own enumeration (ParamSpace::enumerate, which skips below a failing value too): the same legal
    // configs in the same order, and the first of them under a limit.
    const std::vector<Config> legal = check_every_combination(space, 0).legal;
    EXPECT_EQ(space.enumerate(), legal) << "trial " << trial;
    const std::vector<Config> first(legal.begin(),
                                    legal.begin() + std::ptrdiff_t(std::min<std::size_t>(3, legal.size())));
    EXPECT_EQ(space.enumerate(3), first) << "trial " << trial;
    for (const std::size_t keep : {std::size_t(0), std::size_t(1), std::size_t(3), SIZE_MAX}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " keep " + std::to_string(keep));
      const Expected want = check_every_combination(space, keep);
      const auto got = enumerate_candidates(full_product(space, std::nullopt, "", ""), {}, "test", keep);
      if (want.legal.empty()) {
        EXPECT_TRUE(got.ok());  // without pins, nothing legal is still an enumeration
        if (!got.ok()) continue;
      }
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(got->combinations, want.combinations);
      EXPECT_EQ(got->legal, want.legal);
      std::map<std::string, std::size_t> counts;
      for (std::size_t i = 0; i < got->rejected.reasons.size(); ++i)
        counts[got->rejected.reasons[i]] = got->rejected.counts[i];
      EXPECT_EQ(counts, want.counts);
      ASSERT_EQ(got->rejected.stored(), want.stored.size());
      for (std::size_t i = 0; i < want.stored.size(); ++i) {
        EXPECT_EQ(got->rejected.reasons[got->rejected.reason[i]], want.stored[i].first) << "stored " << i;
        const std::vector<int64_t> values(got->rejected.values.begin() + std::ptrdiff_t(i * space.params.size()),
                                          got->rejected.values.begin() + std::ptrdiff_t((i + 1) * space.params.size()));
        EXPECT_EQ(values, want.stored[i].second) << "stored " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tileforge::plan
