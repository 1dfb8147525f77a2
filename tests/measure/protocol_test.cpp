// The contract's summary of timed reps: median, quartiles, and the spread rule on the interquartile range, which one
// outlying rep does not trip and a disturbed run does.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "measure/protocol.hpp"
#include "measure/timer.hpp"

namespace tileforge::measure {
namespace {

TEST(MeasureProtocol, SummaryHasTheMedianAndQuartilesOfTheReps) {
  std::vector<double> reps;
  for (int i = 1; i <= 100; ++i) reps.push_back(double(i));
  std::shuffle(reps.begin(), reps.end(), std::mt19937(7));  // the order they were timed in does not matter
  const Timing t = summarize(reps);
  EXPECT_EQ(t.reps, 100);
  EXPECT_DOUBLE_EQ(t.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(t.max_ms, 100.0);
  EXPECT_DOUBLE_EQ(t.median_ms, 50.5);
  // Linear interpolation between order statistics: positions 0.25 x 99 and 0.75 x 99.
  EXPECT_DOUBLE_EQ(t.q1_ms, 25.75);
  EXPECT_DOUBLE_EQ(t.q3_ms, 75.25);
  EXPECT_DOUBLE_EQ(t.iqr_share(), 49.5 / 50.5);
  const Timing one = summarize({3.0});
  EXPECT_DOUBLE_EQ(one.q1_ms, 3.0);
  EXPECT_DOUBLE_EQ(one.q3_ms, 3.0);
  EXPECT_FALSE(one.spread());
  EXPECT_FALSE(summarize({}).spread());
}

TEST(MeasureProtocol, OneOutlyingRepIsNotASpreadButADisturbedRunIs) {
  // 99 reps within 2% and one rep descheduled for 10x: max/min is 10, the quartiles do not move.
  std::vector<double> quiet;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> jitter(1.0, 1.02);
  for (int i = 0; i < 99; ++i) quiet.push_back(jitter(rng));
  quiet.push_back(10.0);
  const Timing q = summarize(quiet);
  EXPECT_GT(q.max_ms / q.min_ms, 9.0);
  EXPECT_FALSE(q.spread()) << q.iqr_share();
  // A third of the reps slowed by half (a neighbour taking a core part of the time): flagged.
  std::vector<double> loaded;
  for (int i = 0; i < 100; ++i) loaded.push_back(i % 3 == 0 ? 1.5 * jitter(rng) : jitter(rng));
  const Timing l = summarize(loaded);
  EXPECT_TRUE(l.spread()) << l.iqr_share();
}

// Every other rep slower, whatever the call: what the H200 showed for runs of different split-K kernels.
class AlternatingTimer final : public RepTimer {
 public:
  std::string_view cache_state() const override { return "warm"; }
  int min_warmup_reps() const override { return 2; }
  Expected<double> time(const std::function<Status()>& call) override {
    if (Status s = call(); !s) return s;
    return ++reps_ % 2 ? 1.0 : 1.07;
  }

 private:
  long reps_ = 0;
};

TEST(MeasureProtocol, NoCallKeepsOneParityOfTheRepsInAnyOrderButTheOldOne) {
  Contract contract;
  contract.min_reps = 40;
  contract.min_time_s = 0;
  contract.warmup_time_s = 0;
  for (int n : {2, 3, 4, 12}) {
    std::vector<int> runs(std::size_t(n), 0);
    std::vector<std::function<Status()>> calls;
    for (int i = 0; i < n; ++i) calls.push_back([&runs, i] { ++runs[std::size_t(i)]; return Status::Ok(); });
    for (InterleaveOrder order : {InterleaveOrder::serpentine, InterleaveOrder::repeat, InterleaveOrder::fixed}) {
      AlternatingTimer timer;
      const std::vector<Interleaved> timed = time_interleaved(timer, contract, calls, order);
      ASSERT_EQ(int(timed.size()), n);
      double lo = 1e9, hi = 0;
      for (const Interleaved& t : timed) {
        ASSERT_TRUE(t.failure.ok()) << t.failure.to_string();
        EXPECT_GE(int(t.samples.size()), contract.min_reps);
        const double median = summarize(t.samples).median_ms;
        lo = std::min(lo, median), hi = std::max(hi, median);
      }
      if (order != InterleaveOrder::fixed) {
        // Each call's reps fall on both parities alike: the same median for all.
        EXPECT_NEAR(hi / lo, 1.0, 1e-9) << n << " calls, order " << int(order);
      } else if (n % 2 == 0) {
        EXPECT_GT(hi / lo, 1.05) << n << " calls in the fixed order: each keeps its parity";
      }
    }
  }
}

TEST(MeasureProtocol, RepeatRunsAnUntimedRepBeforeEachTimedOne) {
  Contract contract;
  contract.min_reps = 30;
  contract.min_time_s = 0;
  contract.warmup_time_s = 0;
  int runs = 0;
  AlternatingTimer timer;
  const auto timed =
      time_interleaved(timer, contract, {[&runs] { ++runs; return Status::Ok(); }}, InterleaveOrder::repeat);
  ASSERT_EQ(timed.size(), 1u);
  const int warm = timer.min_warmup_reps();
  EXPECT_EQ(runs, warm + 2 * int(timed[0].samples.size()));
}

// Reports a tiny time for each rep while the rep takes much longer on the wall clock: a few-microsecond GPU kernel
// with its scrub and synchronization around it.
class ShortKernelTimer final : public RepTimer {
 public:
  std::string_view cache_state() const override { return "cold-l2"; }
  int min_warmup_reps() const override { return 2; }
  Expected<double> time(const std::function<Status()>& call) override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (Status s = call(); !s) return s;
    return 0.001;
  }
};

TEST(MeasureProtocol, WarmUpEndsOnTheWallClockOfTheInterleavedRounds) {
  Contract contract;
  contract.min_reps = 3;
  contract.min_time_s = 0;
  contract.warmup_reps = 0;
  contract.warmup_time_s = 0.02;
  std::vector<int> runs(4, 0);
  std::vector<std::function<Status()>> calls;
  for (std::size_t i = 0; i < runs.size(); ++i) calls.push_back([&runs, i] { ++runs[i]; return Status::Ok(); });
  ShortKernelTimer timer;
  const auto timed = time_interleaved(timer, contract, calls, InterleaveOrder::serpentine);
  ASSERT_EQ(timed.size(), runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const int warm = runs[i] - int(timed[i].samples.size());
    EXPECT_GE(warm, timer.min_warmup_reps()) << "call " << i;
    // 20 ms of rounds of four 0.2 ms reps: about 25 each, where counting the reported 0.001 ms would take 20,000.
    EXPECT_LT(warm, 200) << "call " << i;
  }
}

}  // namespace
}  // namespace tileforge::measure
