// tune(): checks its input, chooses the candidates from the plan, and runs the tuner's steps (tune_steps.hpp) in order.
#include "tune/tune.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/record.hpp"
#include "measure/host_load.hpp"
#include "measure/protocol.hpp"
#include "plan/planner.hpp"
#include "tune/compile.hpp"
#include "tune/tune_steps.hpp"

namespace tileforge::tune {

namespace detail {

std::string ms_text(double ms) {
  if (ms >= 100) return fmt::format("{:.1f} ms", ms);
  if (ms >= 1) return fmt::format("{:.3f} ms", ms);
  return fmt::format("{:.4f} ms", ms);
}

}  // namespace detail

namespace {

using detail::Clock;
using detail::since;

// The DB judges the records it stores by the contract's rules, restated there (db sits below measure); this file
// sees both, so the two copies cannot drift apart unnoticed.
static_assert(db::kSpreadIqrLimit == measure::kSpreadIqrLimit, "db::kSpreadIqrLimit must equal the contract's");
static_assert(db::kHostBusyCores == measure::kHostBusyCores, "db::kHostBusyCores must equal the contract's");

Status check_options(const TuneOptions& o) {
  if (!o.ranks.empty() && o.exhaustive) return invalid_argument("--ranks and --exhaustive exclude each other");
  for (int r : o.ranks) {
    if (r < 1) return invalid_argument(fmt::format("--ranks {} (allowed: planner ranks, 1 or more)", r));
  }
  if (!o.exhaustive && o.top < 1) return invalid_argument(fmt::format("--top {} (allowed: 1 or more)", o.top));
  if (o.tie_cap < 0) return invalid_argument(fmt::format("--ties {} (allowed: 0 for no cap, or 1 or more)", o.tie_cap));
  if (!(o.budget_s >= 0) || !std::isfinite(o.budget_s)) {
    return invalid_argument(fmt::format("--budget {} (allowed: seconds > 0, or 0 for none)", o.budget_s));
  }
  if (o.screen_reps < 1) return invalid_argument(fmt::format("screening reps {} (allowed: 1 or more)", o.screen_reps));
  if (o.screen_warmup_reps < 0) return invalid_argument("screening warm-up reps must be >= 0");
  if (o.screen_time_s < 0 || o.screen_cap_s <= 0) return invalid_argument("screening times must be >= 0 (cap > 0)");
  if (o.leaders < 1) return invalid_argument(fmt::format("--leaders {} (allowed: 1 or more)", o.leaders));
  if (o.early_stop_after < 1) return invalid_argument("early_stop_after must be >= 1");
  if (!(o.early_stop_slack >= 0) || o.early_stop_slack >= 1) return invalid_argument("early_stop_slack must be in [0, 1)");
  if (!(o.tie_floor >= 0) || o.tie_floor >= 1) return invalid_argument("tie_floor must be in [0, 1)");
  if (o.contract.min_reps < 1 || o.contract.max_time_s <= 0 || o.contract.min_time_s < 0) {
    return invalid_argument("the confirmation contract needs min reps >= 1, min time >= 0 and max time > 0");
  }
  if (o.write_db && o.db_path.empty()) return invalid_argument("no tuning DB path given (pass one, or --no-db)");
  return {};
}

// The device as it is, without a --profile override: what the measurements belong to.
Device running_device(const Device& device) {
  const std::string spec = device.kind == "cuda" ? fmt::format("cuda:{}", device.ordinal) : device.kind;
  auto d = open_device(spec, {}, device.threads);
  return d ? *d : device;
}

// Everything checked before anything runs: the options, the problem, the backend, and the plan (pins, family, a
// profile planned for another backend).
Expected<plan::Plan> plan_for(const Problem& p, const Device& device, const TuneOptions& options, Backend* backend,
                              const std::string& running_profile) {
  if (!backend) return not_available(fmt::format("tileforge has no backend for device kind '{}' in this build", device.kind));
  if (Support s = backend->available(); !s) return not_available(fmt::format("{} is not available: {}", backend->name(), s.reason));
  if (Support s = backend->supports(p, device); !s) {
    return unsupported(fmt::format("{} does not support {}: {}", backend->name(), p.describe(), s.reason));
  }
  plan::PlanOptions po;
  po.pins = options.pins;
  po.deterministic = options.deterministic;
  po.family = options.family;
  po.top_n = 0;
  po.threads = device.kind == "cpu" ? tileforge::effective_threads(device) : 0;
  po.running_profiles = {running_profile};
  auto plan = plan::make_plan(p, device.profile, po);
  if (!plan) return plan.status();
  if (!plan->served) {
    return unsupported(fmt::format("the planner serves no family for {} on {}: {}{}", p.describe(), device.profile.name,
                                   plan->unserved, plan->needed.empty() ? "" : fmt::format(" (needed: {})", plan->needed)));
  }
  if (plan->backend != backend->name()) {
    return invalid_argument(fmt::format("--profile {} plans family {} for the {} backend, but device {} runs the {} "
                                        "backend (pass a profile of the device that runs)",
                                        device.profile.name, plan->family, plan->backend, device.kind, backend->name()));
  }
  return plan;
}

}  // namespace

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::screened: return "screened";
    case Outcome::prepare_failed: return "prepare-failed";
    case Outcome::run_failed: return "run-failed";
    case Outcome::over_threshold: return "over-threshold";
    case Outcome::early_stopped: return "early-stop";
    case Outcome::over_budget: return "budget";
  }
  return "?";
}

namespace detail {

std::vector<std::size_t> top_with_tie_cap(const std::vector<plan::Candidate>& ranked, std::size_t n,
                                          std::size_t cap) {
  std::vector<std::size_t> taken, waiting;
  double band_start = -1;  // the predicted time of the first candidate of the current run of ties
  std::size_t in_band = 0;
  for (std::size_t i = 0; i < ranked.size() && taken.size() < n; ++i) {
    const double t = ranked[i].cost.valid ? ranked[i].cost.seconds : -1;
    const bool tie = t > 0 && band_start > 0 && t <= band_start * (1 + kTieBand);
    if (!tie) {
      band_start = t;
      in_band = 0;
    }
    if (t > 0 && in_band >= cap) {
      waiting.push_back(i);
      continue;
    }
    ++in_band;
    taken.push_back(i);
  }
  // Fewer distinct predictions than n: the waiting ties fill up, best first; the list stays in rank order.
  for (std::size_t i = 0; i < waiting.size() && taken.size() < n; ++i) taken.push_back(waiting[i]);
  std::sort(taken.begin(), taken.end());
  return taken;
}

Status select_candidates(Session& s, const plan::Plan& plan) {
  const TuneOptions& options = s.options;
  TuneResult& result = s.result;
  result.backend = std::string(s.backend->name());
  result.family = plan.family;
  result.coverage = plan.coverage;
  result.space_size = plan.ranked.size();
  std::size_t n = options.exhaustive ? plan.ranked.size()
                                     : std::min<std::size_t>(std::size_t(options.top), plan.ranked.size());
  auto add = [&](const plan::Candidate& ranked, bool heuristic) {
    CandidateResult c;
    c.rank = ranked.rank;
    c.config = ranked.config;
    c.predicted_ms = ranked.cost.valid ? ranked.cost.seconds * 1e3 : 0;
    c.heuristic = heuristic;
    if (c.rank == 1) result.planner_pick = result.candidates.size();
    result.candidates.push_back(std::move(c));
  };
  std::size_t passed_over_ties = 0;  // ranks above the last candidate left out as ties of a taken one
  std::vector<int>& ranks = s.ranks;
  ranks = options.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (!ranks.empty()) {
    if (std::size_t(ranks.back()) > plan.ranked.size()) {
      return invalid_argument(fmt::format("--ranks {}: the planner ranks {} legal configs for {} (allowed: 1 to {})",
                                          ranks.back(), plan.ranked.size(), s.problem().describe(),
                                          plan.ranked.size()));
    }
    for (int r : ranks) add(plan.ranked[std::size_t(r - 1)], false);
  } else if (options.exhaustive || options.tie_cap == 0) {
    for (std::size_t i = 0; i < n; ++i) add(plan.ranked[i], false);
  } else {
    const auto taken = top_with_tie_cap(plan.ranked, n, std::size_t(options.tie_cap));
    for (std::size_t i : taken) add(plan.ranked[i], false);
    if (!taken.empty()) passed_over_ties = taken.back() + 1 - taken.size();
  }
  // The backend's own pick (an analytic model or a heuristic) is a second opinion the cost model cannot
  // veto: where the model misprices a whole region (streaming B for skinny M, say) it ranks that pick far down.
  const bool reference_taken = std::any_of(result.candidates.begin(), result.candidates.end(),
                                           [&](const CandidateResult& c) { return c.rank == plan.reference_rank; });
  if (ranks.empty() && options.with_heuristic && plan.reference_rank > 0 && !reference_taken &&
      std::size_t(plan.reference_rank) <= plan.ranked.size()) {
    add(plan.ranked[std::size_t(plan.reference_rank - 1)], true);
    result.heuristic_name = plan.reference_name;
  }
  n = result.candidates.size();
  result.plan_s = since(s.t0);
  s.say("plan", 0, n,
        fmt::format("planned {} on {}: {} candidate{} of {} legal {} configs ({}{})", s.problem().describe(),
                    s.device.profile.name, n, n == 1 ? "" : "s", result.space_size, result.family,
                    options.exhaustive ? "exhaustive"
                    : !ranks.empty()   ? fmt::format("planner ranks {}", fmt::join(ranks, ", "))
                    : result.heuristic_name.empty()
                        ? fmt::format("the planner's top {}", options.top)
                        : fmt::format("the planner's top {} and {}'s own pick", options.top, result.heuristic_name),
                    options.budget_s > 0 ? fmt::format(", budget {:g} s", options.budget_s) : "")
        + (passed_over_ties ? fmt::format("; {} config{} priced alike to a taken one passed over (--ties {})",
                                          passed_over_ties, passed_over_ties == 1 ? "" : "s", options.tie_cap)
                            : ""));
  return {};
}

}  // namespace detail

Status check(const Problem& problem, const Device& device, const TuneOptions& options) {
  if (Status s = problem.validate(); !s) return s;
  if (Status s = check_options(options); !s) return s;
  Backend* backend = options.backend ? options.backend : own_backend(device.kind);
  auto plan = plan_for(problem.normalized(), device, options, backend, device.profile.name);
  return plan ? Status{} : plan.status();
}

Expected<TuneResult> tune(const Problem& problem, const Device& device, const TuneOptions& options,
                          const ProgressFn& progress) {
  const auto t0 = Clock::now();
  if (Status s = problem.validate(); !s) return s;
  if (Status s = check_options(options); !s) return s;
  detail::Session session{device, options, progress, t0};
  TuneResult& result = session.result;
  result.problem = problem.normalized();
  result.device = device.name;
  result.profile = device.profile.name;
  result.tool_version = std::string(version());
  result.seed = options.contract.seed;

  // ---- plan: the candidates and their predicted times
  session.backend = options.backend ? options.backend : own_backend(device.kind);
  const Device running = running_device(device);
  auto plan = plan_for(result.problem, device, options, session.backend, running.profile.name);
  if (!plan) return plan.status();
  if (Status s = detail::select_candidates(session, *plan); !s) return s;

  // ---- compile (run-time compiled families), then prepare every candidate
  if (compiled_at_run_time(plan->family) && session.backend->device_kind() == "cuda" && !result.candidates.empty()) {
    if (Status s = detail::compile_ahead(session, plan->family); !s) return s;
  }
  detail::prepare_kernels(session);

  // ---- operands, the reference and the error threshold
  const auto tr = Clock::now();
  auto bed = detail::Testbed::make(result.problem, device, options);
  if (!bed) return bed.status();
  detail::set_error_threshold(session, **bed);
  result.reference_s = since(tr);

  // ---- measure: screen, then confirm the leaders; the winner, and its record in the DB
  detail::screen_candidates(session, **bed);
  const auto picked = detail::confirm_leaders(session, **bed);
  detail::announce_winner(session, picked);
  detail::record_winner(session, running);
  result.total_s = since(t0);
  return std::move(session.result);
}

}  // namespace tileforge::tune
