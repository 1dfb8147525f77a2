// A record's measurement quality (the contract's spread and busy rules on what the record knows) and the checks of
// its quartiles and host load.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "db/db_fixtures.hpp"
#include "db/record.hpp"
#include "measure/host_load.hpp"
#include "measure/protocol.hpp"

namespace tileforge::db {
namespace {

using namespace dbtest;

// The DB restates the contract's limits (it sits below measure/); they must be the same numbers.
TEST(DbRecord, LimitsAreTheContracts) {
  EXPECT_EQ(kSpreadIqrLimit, measure::kSpreadIqrLimit);
  EXPECT_EQ(kHostBusyCores, measure::kHostBusyCores);
}

// On random measurements, known or not, quality() says noisy exactly when measure::Timing::spread() would and busy
// exactly when busy() would; unknown fields count as clean.
TEST(DbRecord, QualityFollowsTheContractsRules) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  int noisy = 0, busy = 0, clean = 0;
  for (int i = 0; i < 4000; ++i) {
    measure::Timing m;
    m.median_ms = std::exp(std::log(1e-4) + u(rng) * std::log(1e6));  // 0.1 us .. 100 ms
    m.q1_ms = m.median_ms * (1 - 0.3 * u(rng));
    m.q3_ms = m.median_ms * (1 + 0.3 * u(rng));
    m.min_ms = m.q1_ms * (1 - 0.1 * u(rng));
    m.max_ms = m.q3_ms * (1 + u(rng));
    m.reps = 30 + int(rng() % 300);
    const bool host_known = u(rng) < 0.7;
    m.others_cores = host_known ? 3 * u(rng) : -1;
    m.spare_cores = host_known ? double(rng() % 6) : -1;
    const bool quartiles_known = u(rng) < 0.8;

    Timing d(m.median_ms, m.min_ms, m.max_ms, m.reps);
    if (quartiles_known) {
      d.q1_ms = m.q1_ms;
      d.q3_ms = m.q3_ms;
    }
    if (host_known) {
      d.others_cores = m.others_cores;
      d.spare_cores = m.spare_cores;
    }
    const Quality q = d.quality();
    SCOPED_TRACE(fmt::format("median {} q1 {} q3 {} others {} spare {}", m.median_ms, m.q1_ms, m.q3_ms,
                             m.others_cores, m.spare_cores));
    EXPECT_EQ(q.noisy, quartiles_known && m.spread());
    EXPECT_EQ(q.busy, host_known && m.busy());
    EXPECT_EQ(q.clean(), !q.noisy && !q.busy);
    EXPECT_EQ(q.why.empty(), q.clean()) << q.why;
    if (quartiles_known) {
      ASSERT_TRUE(d.iqr_share());
      EXPECT_EQ(*d.iqr_share(), m.iqr_share());
    } else {
      EXPECT_FALSE(d.iqr_share());
    }
    if (q.noisy) {
      const std::string want = fmt::format("measured noisy (reps spread {:.2f} of the median, limit 0.30)",
                                           m.iqr_share());
      EXPECT_NE(q.why.find(want), std::string::npos) << q.why;
    }
    if (q.busy) {
      const std::string want = fmt::format("measured on a busy host (other processes used {:.2f} cores, {:.0f} spare",
                                           m.others_cores, m.spare_cores);
      EXPECT_NE(q.why.find(want), std::string::npos) << q.why;
    }
    noisy += q.noisy;
    busy += q.busy;
    clean += q.clean();
  }
  // The random values reached every verdict.
  EXPECT_GT(noisy, 0);
  EXPECT_GT(busy, 0);
  EXPECT_GT(clean, 0);
}

TEST(DbRecord, UnknownMeasurementsCountAsClean) {
  std::mt19937_64 rng(test_seed());
  Record r = random_record(rng, h200(), sig(512, 512, 512));
  EXPECT_FALSE(r.time.q1_ms || r.time.q3_ms || r.time.others_cores || r.time.spare_cores);
  EXPECT_TRUE(r.time.quality().clean());
  EXPECT_TRUE(r.time.quality().why.empty());
  // Other processes' load known without the spare count: no core is counted spare, as measure's busy() does.
  r.time.others_cores = kHostBusyCores + 0.05;
  EXPECT_TRUE(r.time.quality().busy);
  r.time.spare_cores = 1;
  EXPECT_FALSE(r.time.quality().busy);
  // A spare count alone says nothing.
  r.time.others_cores.reset();
  EXPECT_TRUE(r.time.quality().clean());
}

// describe() names the spread where the quartiles are known.
TEST(DbRecord, DescribeShowsTheSpreadWhereKnown) {
  std::mt19937_64 rng(test_seed());
  Record r = random_record(rng, h200(), sig(256, 512, 128));
  EXPECT_EQ(describe(r).find("spread"), std::string::npos) << describe(r);
  add_quartiles(rng, r);
  const std::string want = fmt::format("{} reps, spread {:.2f})", r.time.reps, *r.time.iqr_share());
  EXPECT_NE(describe(r).find(want), std::string::npos) << describe(r);
}

// Quartiles: both or neither, positive, in order with min, median and max; host load finite and >= 0. Each bad
// value is refused naming its field as the JSON export names it.
TEST(DbRecord, QuartilesAndHostLoadAreChecked) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  Record base = random_record(rng, h200(), sig(1024, 768, 512));
  add_quartiles(rng, base);
  ASSERT_FALSE(check_record(base)) << check_record(base)->field << ": " << check_record(base)->why;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double median = base.time.median_ms;
  struct Case {
    const char* what;
    std::function<void(Timing&)> edit;
    std::string field, says;
  };
  const std::vector<Case> cases = {
      {"q1 alone", [](Timing& t) { t.q3_ms.reset(); }, "time_ms.q3", "both quartiles or neither"},
      {"q3 alone", [](Timing& t) { t.q1_ms.reset(); }, "time_ms.q1", "both quartiles or neither"},
      {"q1 NaN", [&](Timing& t) { t.q1_ms = nan; }, "time_ms.q1", "positive"},
      {"q3 negative", [&](Timing& t) { t.q3_ms = -median; }, "time_ms.q3", "positive"},
      {"q1 above the median", [&](Timing& t) { t.q1_ms = median * 1.01; }, "time_ms", "q1"},
      {"q3 below the median", [&](Timing& t) { t.q3_ms = median * 0.99; }, "time_ms", "q3"},
      {"q1 below the min", [&](Timing& t) { t.q1_ms = t.min_ms * 0.9; }, "time_ms", "min"},
      {"q3 above the max", [&](Timing& t) { t.q3_ms = t.max_ms * 1.1; }, "time_ms", "max"},
      {"q3 below q1", [&](Timing& t) { std::swap(t.q1_ms, t.q3_ms); }, "time_ms", "q1"},
      {"others negative", [](Timing& t) { t.others_cores = -0.5; }, "time_ms.others_cores", ">= 0"},
      {"others infinite", [&](Timing& t) { t.others_cores = inf; }, "time_ms.others_cores", "finite"},
      {"spare NaN", [&](Timing& t) { t.spare_cores = nan; }, "time_ms.spare_cores", "finite"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Record r = base;
    c.edit(r.time);
    const auto e = check_record(r);
    ASSERT_TRUE(e) << "accepted";
    EXPECT_EQ(e->field, c.field) << e->why;
    EXPECT_NE(e->why.find(c.says), std::string::npos) << e->why;
  }
  // Equal quartiles (every rep the same) and zero host load are fine.
  Record flat = base;
  flat.time.q1_ms = flat.time.q3_ms = median;
  flat.time.others_cores = 0;
  flat.time.spare_cores = 0;
  EXPECT_FALSE(check_record(flat));
}

}  // namespace
}  // namespace tileforge::db
