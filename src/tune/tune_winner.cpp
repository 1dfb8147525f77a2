// The tuner's winner: the tie rule and the noise guard that pick it, and the record it becomes in the tuning DB.
#include <algorithm>
#include <cmath>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/store.hpp"
#include "dispatch/dispatch.hpp"
#include "plan/kernel_family.hpp"
#include "tune/tune_steps.hpp"

namespace tileforge::tune {

using detail::ms_text;

double median_uncertainty(const CandidateResult& c) {
  // Half-width of the ~95% interval of a median (the notch of a box plot, McGill, Tukey and Larsen 1978):
  // 1.57 x IQR / sqrt(n). The spread of single reps says how noisy one call is; two medians of a few hundred
  // interleaved reps each are known far more precisely than that.
  return c.confirm.reps > 0 ? 1.57 * c.noise / std::sqrt(double(c.confirm.reps)) : c.noise;
}

std::string noisy_reason(const measure::Timing& t, double predicted_ms) {
  if (t.reps == 0) return {};
  std::vector<std::string> why;
  if (t.spread()) {
    why.push_back(fmt::format("reps spread {:.2f} of the median (limit {:.2f})", t.iqr_share(), measure::kSpreadIqrLimit));
  }
  if (t.busy()) {
    why.push_back(fmt::format("other processes used {:.2f} cores while it was timed, {:.0f} spare (limit {:.2f} beyond "
                              "the spare)",
                              t.others_cores, std::max(0.0, t.spare_cores), measure::kHostBusyCores));
  }
  if (t.min_ms > 0 && t.median_ms > kWinnerMedianOverMin * t.min_ms) {
    why.push_back(fmt::format("median {} is {:.1f}x its fastest rep {} (limit {:g}x)", ms_text(t.median_ms),
                              t.median_ms / t.min_ms, ms_text(t.min_ms), kWinnerMedianOverMin));
  }
  if (predicted_ms > 0 && t.median_ms > kWinnerMedianOverPredicted * predicted_ms &&
      t.median_ms - predicted_ms > kWinnerPredictionFloorMs) {
    why.push_back(fmt::format("median {} is {:.1f}x its prediction {} (limit {:g}x)", ms_text(t.median_ms),
                              t.median_ms / predicted_ms, ms_text(predicted_ms), kWinnerMedianOverPredicted));
  }
  return fmt::format("{}", fmt::join(why, "; "));
}

double relative_iqr(std::vector<double> s) {
  if (s.size() < 2) return 0;
  std::sort(s.begin(), s.end());
  auto quantile = [&](double q) {
    const double pos = q * double(s.size() - 1);
    const std::size_t lo = std::size_t(pos);
    const std::size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (pos - double(lo)) * (s[hi] - s[lo]);
  };
  const double median = quantile(0.5);
  return median > 0 ? (quantile(0.75) - quantile(0.25)) / median : 0;
}

std::optional<std::pair<std::size_t, std::string>> pick_winner(const std::vector<CandidateResult>& cs,
                                                               double tie_floor) {
  std::vector<std::size_t> order;  // confirmed candidates, fastest median first
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (cs[i].confirmed && cs[i].outcome == Outcome::screened && cs[i].confirm.reps > 0) order.push_back(i);
  if (order.empty()) return std::nullopt;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (cs[a].confirm.median_ms != cs[b].confirm.median_ms) return cs[a].confirm.median_ms < cs[b].confirm.median_ms;
    return cs[a].rank < cs[b].rank;
  });
  const std::size_t fastest = order.front();
  const CandidateResult& f = cs[fastest];
  // The ties are a run from the fastest on: a candidate is tied only if everything faster is too. A noisy
  // candidate slower than an untied one never wins on its noise, so the winner is never slower than any
  // candidate that lost, and the planner's pick, when tied, wins (its rank is the lowest).
  std::size_t winner = fastest;
  double winner_tol = 0;
  for (std::size_t k = 1; k < order.size(); ++k) {
    const CandidateResult& c = cs[order[k]];
    const double tol = std::max({tie_floor, median_uncertainty(f), median_uncertainty(c)});
    if (c.confirm.median_ms > f.confirm.median_ms * (1 + tol)) break;
    if (c.rank < cs[winner].rank) {
      winner = order[k];
      winner_tol = tol;
    }
  }
  if (winner == fastest) return std::pair{winner, fmt::format("fastest median ({})", ms_text(f.confirm.median_ms))};
  const CandidateResult& w = cs[winner];
  return std::pair{winner,
                   fmt::format("tie: its median {} is within {:.1f}% of the fastest, rank {} ({}), inside the "
                               "uncertainty of the medians ({:.1f}%); ties go to the planner's rank",
                               ms_text(w.confirm.median_ms), 100 * (w.confirm.median_ms / f.confirm.median_ms - 1),
                               f.rank, ms_text(f.confirm.median_ms), 100 * winner_tol)};
}

namespace detail {

namespace {

// The DB record of the winner, under the running device's fingerprint.
db::Record winner_record(const TuneResult& result, const CandidateResult& win, const Device& running) {
  db::Record r;
  r.device = dispatch::running_fingerprint(running);
  r.backend = result.backend;
  const auto versions = dispatch::current_family_versions();
  const auto v = versions.find(win.config.family);
  r.family_version = v == versions.end() ? 0 : v->second;
  r.problem = db::signature_of(result.problem);
  r.config = win.config;
  // A winner that sums by float atomics (allowed under --nondeterministic) is stored beside the problem's
  // deterministic record, not over it: deterministic callers keep theirs.
  r.deterministic = plan::deterministic_config(win.config);
  r.time.median_ms = win.confirm.median_ms;
  r.time.min_ms = win.confirm.min_ms;
  r.time.max_ms = win.confirm.max_ms;
  r.time.reps = win.confirm.reps;
  // The spread and the host load go with it, so that dispatch can pass over a record measured noisy or on a busy
  // host (--store-noisy stores those). The host load only where the counters were read (-1: unknown).
  r.time.q1_ms = win.confirm.q1_ms;
  r.time.q3_ms = win.confirm.q3_ms;
  if (win.confirm.others_cores >= 0) {
    r.time.others_cores = win.confirm.others_cores;
    if (win.confirm.spare_cores >= 0) r.time.spare_cores = win.confirm.spare_cores;
  }
  r.tflops = result.winner_tflops;
  r.rel_error = win.error ? win.error->rel_error : 0;
  r.max_scaled_error = win.error ? win.error->max_scaled_error : 0;
  r.tool_version = result.tool_version;
  r.source = db::Source::tuned;
  // Which machine and device measured it: a DB merged from a pool of devices (an MPI tune) says where each number
  // came from. The CPU is device 0.
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) r.host = host;
  r.device_index = running.kind == "cpu" ? 0 : running.ordinal;
  return r;
}

// Upserts the record into the DB at options.db_path, or hands it to options.record_sink; db_outcome says what
// happened.
void store_record(TuneResult& result, const db::Record& r, const TuneOptions& options) {
  const std::string& db_path = options.db_path;
  if (options.record_sink) {
    auto sent = options.record_sink(r);
    result.db_outcome = sent ? *sent : "error: " + sent.status().message();
  } else if (auto store = db::Store::open(db_path); !store) {
    result.db_outcome = "error: " + store.status().message();
  } else if (auto u = store->upsert(r); !u) {
    result.db_outcome = "error: " + u.status().message();
  } else {
    result.db_path = db_path;
    result.db_outcome = std::string(db::to_string(*u));
  }
  if (result.db_outcome.starts_with("error")) result.warnings.push_back("the winner was not recorded: " + result.db_outcome);
}

}  // namespace

// The winner, and how the planner's pick compares with it.
void announce_winner(Session& s, const std::optional<std::pair<std::size_t, std::string>>& picked) {
  TuneResult& result = s.result;
  const auto& cands = result.candidates;
  if (const auto& w = picked) {
    result.winner = w->first;
    result.winner_reason = w->second;
    const CandidateResult& win = cands[w->first];
    result.winner_tflops = s.problem().flops() / (win.confirm.median_ms * 1e-3) / 1e12;
    if (result.planner_pick && cands[*result.planner_pick].confirmed) {
      result.planner_fraction = win.confirm.median_ms / cands[*result.planner_pick].confirm.median_ms;
    }
    s.say("done", 0, 0,
          fmt::format("winner: rank {} {}: median {} ({:.1f} GFLOP/s), {}", win.rank, win.config.describe(),
                      ms_text(win.confirm.median_ms), result.winner_tflops * 1e3, result.winner_reason));
  } else {
    result.warnings.push_back(fmt::format("no candidate could run and pass verification for {}", s.problem().describe()));
  }
}

// The winner into the DB, unless the DB is off or the winner stayed noisy (then db_outcome and a warning say why).
void record_winner(Session& s, const Device& running) {
  const TuneOptions& options = s.options;
  TuneResult& result = s.result;
  const Problem& p = s.problem();
  if (!options.write_db) {
    result.db_outcome = "disabled";
    if (!result.noisy.empty()) {
      result.warnings.push_back(fmt::format("the winner's {} after a second measurement (it would not be recorded)",
                                            result.noisy));
    }
  } else if (result.winner && !result.noisy.empty() && !options.store_noisy) {
    // Not an error: the tune did its job and says why it keeps the result out of the DB (exit status 0).
    result.db_outcome = fmt::format("not stored: the winner's {} after a second measurement", result.noisy);
    result.warnings.push_back(fmt::format("{} was not recorded: the winner's {} after a second measurement; tune "
                                          "again on a quieter machine",
                                          p.describe(), result.noisy));
  } else if (result.winner) {
    if (!result.noisy.empty()) {
      result.warnings.push_back(fmt::format("{} was recorded although the winner's {} after a second measurement "
                                            "(--store-noisy)",
                                            p.describe(), result.noisy));
    }
    store_record(result, winner_record(result, result.candidates[*result.winner], running), options);
  } else {
    result.db_outcome = "nothing to record";
  }
}

}  // namespace detail

}  // namespace tileforge::tune
