// The measurement protocol of docs/BENCHMARKING.md: interleaved warm-up and timed rounds, and their summary.
#include "measure/protocol.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace tileforge::measure {

Timing summarize(std::vector<double> samples) {
  Timing t;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  t.reps = int(n);
  t.min_ms = samples.front();
  t.max_ms = samples.back();
  t.median_ms = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  auto quantile = [&](double q) {
    const double at = q * double(n - 1);
    const std::size_t lo = std::size_t(at);
    const std::size_t hi = std::min(lo + 1, n - 1);
    return samples[lo] + (at - double(lo)) * (samples[hi] - samples[lo]);
  };
  t.q1_ms = quantile(0.25);
  t.q3_ms = quantile(0.75);
  return t;
}

Timing summarize_run(const Interleaved& run) {
  Timing t = summarize(run.samples);
  t.others_cores = run.others_cores;
  t.spare_cores = run.spare_cores;
  return t;
}

InterleaveOrder interleave_order() {
  static const InterleaveOrder order = [] {
    const char* env = std::getenv("TILEFORGE_INTERLEAVE");
    const std::string_view v = env ? env : "";
    return v == "fixed" ? InterleaveOrder::fixed : v == "repeat" ? InterleaveOrder::repeat : InterleaveOrder::serpentine;
  }();
  return order;
}

std::vector<Interleaved> time_interleaved(RepTimer& timer, const Contract& settings,
                                          const std::vector<std::function<Status()>>& calls) {
  return time_interleaved(timer, settings, calls, interleave_order());
}

std::vector<Interleaved> time_interleaved(RepTimer& timer, const Contract& settings,
                                          const std::vector<std::function<Status()>>& calls, InterleaveOrder order) {
  struct State {
    int warm_reps = 0;
    double warm_ms = 0, timed_ms = 0;
  };
  std::vector<Interleaved> out(calls.size());
  std::vector<State> state(calls.size());
  const double cap_ms = settings.max_time_s * 1e3;
  const int warm_reps = std::max(settings.warmup_reps, timer.min_warmup_reps());
  const double warm_ms = std::min(settings.warmup_time_s * 1e3, cap_ms);
  auto rep = [&](std::size_t i) -> std::optional<double> {
    auto t = timer.time(calls[i]);
    if (!t) {
      out[i].failure = t.status();
      return std::nullopt;
    }
    return *t;
  };
  auto failed = [&](std::size_t i) { return !out[i].failure.ok(); };
  // Warm after its reps, and once either its own timed reps or the whole interleaved warm-up (wall clock: scrubs,
  // launches and the other calls included) reach the warm-up time. What warms is the machine (clocks, caches,
  // pages), busy with these calls for that long; counting only a call's own timed time made a 7 us GPU kernel warm
  // up for 14,000 reps, each with its 120 MB scrub.
  const auto warm_start = std::chrono::steady_clock::now();
  bool wall_warm = false;
  auto warm = [&](std::size_t i) {
    return state[i].warm_reps >= warm_reps && (state[i].warm_ms >= warm_ms || wall_warm);
  };
  auto done = [&](std::size_t i) {
    const int n = int(out[i].samples.size());
    return failed(i) || (n >= settings.min_reps && state[i].timed_ms >= settings.min_time_s * 1e3) ||
           (n >= 1 && state[i].timed_ms >= cap_ms);
  };
  for (bool pending = true; pending;) {
    pending = false;
    wall_warm = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm_start).count() >=
                warm_ms;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (failed(i) || warm(i)) continue;
      if (auto t = rep(i)) {
        ++state[i].warm_reps;
        state[i].warm_ms += *t;
        pending = pending || !warm(i);
      }
    }
  }
  const HostLoadWindow window;
  const std::size_t n = calls.size();
  bool pending = true;
  for (std::size_t round = 0; pending; ++round) {
    pending = false;
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t i = order == InterleaveOrder::fixed || round % 2 == 0 ? j : n - 1 - j;
      if (done(i)) continue;
      if (order == InterleaveOrder::repeat && !rep(i)) continue;  // untimed, right before the timed one
      if (auto t = rep(i)) {
        out[i].samples.push_back(*t);
        state[i].timed_ms += *t;
      }
      pending = pending || !done(i);
    }
  }
  const double others = window.others_cores().value_or(-1.0);
  const double spare = std::max(0, HostLoadWindow::cores() - std::max(1, settings.own_threads));
  for (Interleaved& run : out) {
    run.others_cores = others;
    run.spare_cores = others >= 0 ? spare : -1.0;
  }
  return out;
}

}  // namespace tileforge::measure
