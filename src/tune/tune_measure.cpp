// The tuner's measurements: screening in the planner's order with the early stop, then confirming the leaders.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "measure/protocol.hpp"
#include "tune/tune_steps.hpp"

namespace tileforge::tune::detail {

namespace {

// Where screening stands: the best measured time and the best measured/predicted ratio so far, and the early stop
// once it fires.
struct Screening {
  double best_ms = std::numeric_limits<double>::infinity(), best_ratio = std::numeric_limits<double>::infinity();
  std::size_t best_i = 0, ratio_i = 0, verified = 0;
  double keep = 1;        // 1 - the early stop's slack
  std::string stop_line;  // set when the early stop fires
  double stop_ratio = 0, stop_best = 0;
  std::size_t stopped = 0, stopped_after = 0;
};

// The early stop (docs/TUNING.md): candidates come in order of predicted time, so this one is the most promising
// left. Scaled by the smallest measured/predicted ratio seen (the model's most optimistic error so far), and given
// the slack (the model cannot tell apart configs it predicts within a few percent), if even that cannot beat the
// best measured time, none of the rest can. The backend's own pick is exempt: it is there because the model may be
// wrong about it. Sets st.stop_line when the rule fires at this candidate.
void check_early_stop(const Session& s, Screening& st, const CandidateResult& c) {
  const TuneOptions& options = s.options;
  if (!st.stop_line.empty() || c.heuristic || !options.early_stop || options.exhaustive || !s.ranks.empty() ||
      st.verified < std::size_t(options.early_stop_after) || !(c.predicted_ms > 0) || !std::isfinite(st.best_ratio)) {
    return;
  }
  const double bound = c.predicted_ms * st.best_ratio * st.keep;
  if (!(bound >= st.best_ms)) return;
  const auto& cands = s.result.candidates;
  st.stop_line = fmt::format(
      "rank {} is predicted {}; scaled by the best measured/predicted ratio so far ({:.3f}, rank {}) and less the "
      "{:.0f}% slack it would take {}, no faster than the best measured {} (rank {})",
      c.rank, ms_text(c.predicted_ms), st.best_ratio, cands[st.ratio_i].rank, 100 * options.early_stop_slack,
      ms_text(bound), ms_text(st.best_ms), cands[st.best_i].rank);
  st.stop_ratio = st.best_ratio;
  st.stop_best = st.best_ms;
  st.stopped_after = st.verified;
}

void mark_early_stopped(Screening& st, CandidateResult& c) {
  c.outcome = Outcome::early_stopped;
  c.reason = fmt::format("early stop: predicted {} x best ratio {:.3f} x {:.2f} = {} >= best measured {}",
                         ms_text(c.predicted_ms), st.stop_ratio, st.keep,
                         ms_text(c.predicted_ms * st.stop_ratio * st.keep), ms_text(st.stop_best));
  ++st.stopped;
}

// Once one candidate is screened and the budget is spent, the rest are not screened: true when that happened.
bool stop_for_budget(Session& s, const Screening& st, std::size_t i) {
  if (!(st.verified >= 1 && s.spent())) return false;
  auto& cands = s.candidates();
  const std::size_t n = cands.size();
  for (std::size_t j = i; j < n; ++j) {
    if (cands[j].outcome != Outcome::screened) continue;
    cands[j].outcome = Outcome::over_budget;
    cands[j].reason = fmt::format("not screened: the budget of {:g} s was spent", s.options.budget_s);
  }
  s.result.budget_hit = true;
  s.say("screen", i + 1, n, fmt::format("budget of {:g} s spent after {} screened", s.options.budget_s, st.verified));
  return true;
}

// Verifies candidate i, then times a few reps of it (after the warm-up); false, with the outcome and reason set,
// when it fails to run or fails verification.
bool screen_one(Session& s, Testbed& bed, std::size_t i) {
  const TuneOptions& options = s.options;
  CandidateResult& c = s.candidates()[i];
  const std::size_t n = s.candidates().size();
  const Kernel& k = *s.kernels[i];
  auto fail = [&](Outcome o, std::string why) {
    c.outcome = o;
    c.reason = std::move(why);
    s.say("screen", i + 1, n, fmt::format("[{}/{}] {} {}: {}", i + 1, n, to_string(o), c.config.describe(), c.reason));
  };
  auto error = bed.verify_once(s.backend, k);
  if (!error) {
    fail(Outcome::run_failed, error.status().message());
    return false;
  }
  c.error = *error;
  if (Status st = verify::check(s.problem(), *error, s.result.native_error); !st) {
    fail(Outcome::over_threshold, fmt::format("fails verification: {}", st.message()));
    return false;
  }
  const double cap_ms = options.screen_cap_s * 1e3, min_ms = options.screen_time_s * 1e3;
  std::vector<double> samples;
  double timed = 0;
  // The screening time is the candidate's timed reps or the wall clock they took (a GPU rep's scrub and
  // synchronization included), whichever reaches it first: a 7 us kernel otherwise ran 2,900 reps, 130 ms apiece.
  const auto started = Clock::now();
  for (int w = 0; w < options.screen_warmup_reps; ++w) {
    auto t = bed.timer().time([&] { return bed.run(s.backend, k); });
    if (!t) {
      fail(Outcome::run_failed, fmt::format("run failed while screening: {}", t.status().message()));
      return false;
    }
  }
  while (!((int(samples.size()) >= options.screen_reps && (timed >= min_ms || 1e3 * since(started) >= min_ms)) ||
           (!samples.empty() && timed >= cap_ms))) {
    auto t = bed.timer().time([&] { return bed.run(s.backend, k); });
    if (!t) {
      fail(Outcome::run_failed, fmt::format("run failed while screening: {}", t.status().message()));
      return false;
    }
    samples.push_back(*t);
    timed += *t;
  }
  c.screen = measure::summarize(samples);
  return true;
}

// Counts a screened candidate and keeps the best time and ratio.
void note_screened(Session& s, Screening& st, std::size_t i) {
  CandidateResult& c = s.candidates()[i];
  const std::size_t n = s.candidates().size();
  ++st.verified;
  ++s.result.measured;
  if (c.predicted_ms > 0) {
    c.ratio = c.screen.median_ms / c.predicted_ms;
    if (c.ratio < st.best_ratio) {
      st.best_ratio = c.ratio;
      st.ratio_i = i;
    }
  }
  if (c.screen.median_ms < st.best_ms) {
    st.best_ms = c.screen.median_ms;
    st.best_i = i;
  }
  s.say("screen", i + 1, n,
        fmt::format("[{}/{}] screening {} ... {} (predicted {}, {} reps)", i + 1, n, c.config.describe(),
                    ms_text(c.screen.median_ms), ms_text(c.predicted_ms), c.screen.reps));
}

// The fastest screened candidates (all of them with --ranks, the point being to measure them side by side), and
// the planner's pick, so that its ratio to the winner is fair.
std::vector<std::size_t> choose_leaders(Session& s) {
  const auto& cands = s.result.candidates;
  std::vector<std::size_t> leaders;
  for (std::size_t i = 0; i < cands.size(); ++i)
    if (cands[i].outcome == Outcome::screened && cands[i].screen.reps > 0) leaders.push_back(i);
  std::stable_sort(leaders.begin(), leaders.end(), [&](std::size_t x, std::size_t y) {
    if (cands[x].screen.median_ms != cands[y].screen.median_ms) return cands[x].screen.median_ms < cands[y].screen.median_ms;
    return cands[x].rank < cands[y].rank;
  });
  if (s.ranks.empty() && leaders.size() > std::size_t(s.options.leaders)) leaders.resize(std::size_t(s.options.leaders));
  if (s.options.confirm_planner_pick && s.result.planner_pick) {
    const std::size_t pick = *s.result.planner_pick;
    if (cands[pick].outcome == Outcome::screened && cands[pick].screen.reps > 0 &&
        std::find(leaders.begin(), leaders.end(), pick) == leaders.end()) {
      leaders.push_back(pick);
    }
  }
  return leaders;
}

// One confirmation round of the leaders, interleaved under the contract; `label` tells the rounds apart.
void confirm_round(Session& s, Testbed& bed, const std::vector<std::size_t>& leaders, const std::string& label) {
  auto& cands = s.candidates();
  std::string names;
  for (std::size_t i : leaders) names += fmt::format("{}rank {}", names.empty() ? "" : ", ", cands[i].rank);
  s.say("confirm", 0, leaders.size(),
        fmt::format("{} {} leader{} under the contract ({}), interleaved", label, leaders.size(),
                    leaders.size() == 1 ? "" : "s", names));
  std::vector<std::function<Status()>> calls;
  for (std::size_t i : leaders) calls.push_back([&, i] { return bed.run(s.backend, *s.kernels[i]); });
  measure::Contract contract = s.options.contract;
  contract.own_threads = s.device.kind == "cpu" ? tileforge::effective_threads(s.device) : 1;
  const std::vector<measure::Interleaved> timed = measure::time_interleaved(bed.timer(), contract, calls);
  for (std::size_t k = 1; k <= leaders.size(); ++k) {
    CandidateResult& c = cands[leaders[k - 1]];
    const measure::Interleaved& run = timed[k - 1];
    if (!run.failure.ok()) {
      c.outcome = Outcome::run_failed;
      c.confirmed = false;
      c.reason = fmt::format("run failed while confirming: {}", run.failure.message());
      s.say("confirm", k, leaders.size(), fmt::format("[confirm {}/{}] rank {} {}: {}", k, leaders.size(), c.rank,
                                                      c.config.describe(), c.reason));
      continue;
    }
    c.confirmed = true;
    c.confirm = measure::summarize_run(run);
    c.noise = relative_iqr(run.samples);
    s.say("confirm", k, leaders.size(),
          fmt::format("[confirm {}/{}] rank {} {}: median {} (min {}, max {}, {} reps, IQR {:.1f}%)", k, leaders.size(),
                      c.rank, c.config.describe(), ms_text(c.confirm.median_ms), ms_text(c.confirm.min_ms),
                      ms_text(c.confirm.max_ms), c.confirm.reps, 100 * c.noise));
  }
}

}  // namespace

void screen_candidates(Session& s, Testbed& bed) {
  const auto ts = Clock::now();
  auto& cands = s.candidates();
  const std::size_t n = cands.size();
  Screening st;
  st.keep = 1 - s.options.early_stop_slack;
  for (std::size_t i = 0; i < n; ++i) {
    CandidateResult& c = cands[i];
    if (c.outcome != Outcome::screened) continue;
    check_early_stop(s, st, c);
    if (!st.stop_line.empty() && !c.heuristic) {
      mark_early_stopped(st, c);
      continue;
    }
    if (stop_for_budget(s, st, i)) break;
    if (screen_one(s, bed, i)) {
      note_screened(s, st, i);
    } else if (const std::string lost = bed.timer().device_lost(); !lost.empty()) {
      // A kernel faulted and took the GPU's context with it: every later candidate would fail the same way, and
      // read as a fault of its own.
      std::size_t left = 0;
      for (std::size_t j = i + 1; j < n; ++j) {
        if (cands[j].outcome != Outcome::screened) continue;
        cands[j].outcome = Outcome::run_failed;
        cands[j].reason = fmt::format("not run: the GPU's context was lost (first reported as \"{}\")", lost);
        ++left;
      }
      s.say("screen", i + 1, n,
            fmt::format("the GPU's context was lost while rank {} ran (first reported as \"{}\"); the {} candidate{} left "
                        "{} not run",
                        c.rank, lost, left, left == 1 ? "" : "s", left == 1 ? "is" : "are"));
      break;
    }
  }
  if (!st.stop_line.empty()) {
    s.result.early_stop = fmt::format("stopped after {} screened: {}; the {} left {} predicted slower still",
                                      st.stopped_after, st.stop_line, st.stopped, st.stopped == 1 ? "is" : "are");
    s.say("screen", n, n, s.result.early_stop);
  }
  s.result.screen_s = since(ts);
}

std::optional<std::pair<std::size_t, std::string>> confirm_leaders(Session& s, Testbed& bed) {
  const auto tc = Clock::now();
  auto& cands = s.candidates();
  TuneResult& result = s.result;
  std::vector<std::size_t> leaders = choose_leaders(s);
  if (!leaders.empty()) confirm_round(s, bed, leaders, "confirming");
  // The guard (noisy_reason): a winner whose reps disagree, whose median is far from its own fastest rep or from
  // its prediction was measured in a disturbed moment. The whole round runs once more (the winner may change with
  // it, since the others were disturbed too); a winner still noisy after that is reported but not recorded.
  auto picked = pick_winner(cands, s.options.tie_floor);
  if (picked) {
    const CandidateResult& first = cands[picked->first];
    result.first_noise = noisy_reason(first.confirm, first.predicted_ms);
    if (!result.first_noise.empty()) {
      result.remeasured = true;
      s.say("confirm", 0, leaders.size(),
            fmt::format("the winner, rank {}, looks disturbed: its {}; measuring again", first.rank, result.first_noise));
      // Leaders that failed to run are not run again.
      std::erase_if(leaders, [&](std::size_t i) { return cands[i].outcome != Outcome::screened; });
      confirm_round(s, bed, leaders, "re-confirming");
      picked = pick_winner(cands, s.options.tie_floor);
      if (picked) {
        const CandidateResult& second = cands[picked->first];
        result.noisy = noisy_reason(second.confirm, second.predicted_ms);
      }
    }
  }
  result.confirm_s = since(tc);
  return picked;
}

}  // namespace tileforge::tune::detail
