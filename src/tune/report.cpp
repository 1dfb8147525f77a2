// Tuning reports as a table and as JSON.
#include "tune/report.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/columns.hpp"
#include "core/envelope.hpp"

namespace tileforge::tune {
namespace {

using ojson = nlohmann::ordered_json;

// JSON has no NaN or Inf (a kernel writing NaN): a huge finite number keeps the document valid, as bench does.
double finite(double v) { return std::isfinite(v) ? v : 1.0e300; }

ojson config_json(const Config& c) {
  ojson j;
  j["family"] = c.family;
  for (const auto& [name, value] : c.params) j[name] = value;
  return j;
}

ojson timing_json(const measure::Timing& t) {
  if (t.reps == 0) return nullptr;
  ojson j{{"median_ms", finite(t.median_ms)}, {"min_ms", finite(t.min_ms)}, {"max_ms", finite(t.max_ms)},
          {"reps", t.reps}, {"iqr_share", finite(t.iqr_share())}, {"spread_flag", t.spread()}};
  j["others_cores"] = t.others_cores >= 0 ? ojson(finite(t.others_cores)) : ojson(nullptr);
  j["busy_flag"] = t.busy();
  return j;
}

// "MR=6 NR=16 ...": the family is in the header.
std::string params_text(const Config& c) {
  std::string s;
  for (const auto& [name, value] : c.params) s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, value);
  return s;
}

std::string ms(double v) {
  if (v <= 0) return "-";
  if (v >= 100) return fmt::format("{:.1f} ms", v);
  if (v >= 1) return fmt::format("{:.3f} ms", v);
  return fmt::format("{:.4f} ms", v);
}

// GFLOP/s on the CPU (numbers in the hundreds), TFLOP/s on GPUs, as bench tables print them.
std::string rate(const TuneResult& r, double tflops) {
  return r.backend == "cpu" ? fmt::format("{:.1f} GFLOP/s", tflops * 1e3) : fmt::format("{:.2f} TFLOP/s", tflops);
}

std::string table_of(const TuneResult& r, bool markdown) {
  std::string out = fmt::format("tileforge {} tune | {} | device {} | profile {} | backend {} family {} | seed {}\n",
                                r.tool_version, r.problem.describe(), r.device, r.profile, r.backend, r.family, r.seed);
  out += fmt::format("candidates: {} of {} legal configs ({}); measured {} of the space ({:.1f}%)\n", r.candidates.size(),
                     r.space_size, r.coverage, r.measured,
                     r.space_size ? 100.0 * double(r.measured) / double(r.space_size) : 0.0);
  out += fmt::format("threshold: {} (native: {}{})\n", r.threshold ? fmt::format("{:.1e}", *r.threshold) : "none",
                     r.native, r.native_error ? fmt::format(", error {:.1e}", *r.native_error) : "");

  std::vector<std::vector<std::string>> cells;
  cells.push_back({"rank", "config", "predicted", "screen", "ratio", "confirm median", "min-max", "reps", "IQR",
                   "error", "outcome"});
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    std::string outcome(to_string(c.outcome));
    if (c.confirmed) outcome = "confirmed";
    if (r.winner && *r.winner == i) outcome = "WINNER";
    cells.push_back({fmt::format("{}{}", c.rank, c.heuristic ? "*" : ""), params_text(c.config), ms(c.predicted_ms),
                     c.screen.reps ? ms(c.screen.median_ms) : "-", c.ratio > 0 ? fmt::format("{:.2f}", c.ratio) : "-",
                     c.confirm.reps ? ms(c.confirm.median_ms) : "-",
                     c.confirm.reps ? fmt::format("{:.4g}-{:.4g}", c.confirm.min_ms, c.confirm.max_ms) : "-",
                     c.confirm.reps ? fmt::format("{}", c.confirm.reps) : "-",
                     c.confirm.reps ? fmt::format("{:.1f}%", 100 * c.noise) : "-",
                     c.error ? fmt::format("{:.1e}", c.error->rel_error) : "-", outcome});
  }
  const std::vector<bool> right = {true, false, true, true, true, true, true, true, true, true, false};
  out += markdown ? "\n" + columns::format_markdown(cells, right) + "\n" : columns::format_columns(cells, right);
  if (!r.heuristic_name.empty()) {
    out += fmt::format("  * {}'s own pick, ranked below the top {} by the cost model: measured as a second opinion\n",
                       r.heuristic_name, r.candidates.size() - 1);
  }
  // Reasons, grouped: one line per candidate that was skipped or failed, except the early-stopped and budget ones,
  // which the summary line covers.
  for (const CandidateResult& c : r.candidates) {
    if (c.outcome == Outcome::screened || c.outcome == Outcome::early_stopped || c.outcome == Outcome::over_budget) continue;
    out += fmt::format("  rank {} {}: {}\n", c.rank, to_string(c.outcome), c.reason);
  }
  if (!r.early_stop.empty()) out += fmt::format("early stop: {}\n", r.early_stop);
  if (r.budget_hit) {
    std::size_t left = 0;
    for (const CandidateResult& c : r.candidates) left += c.outcome == Outcome::over_budget;
    out += fmt::format("budget: spent; {} candidate{} not measured\n", left, left == 1 ? "" : "s");
  }
  if (const CandidateResult* w = r.best()) {
    out += fmt::format("winner: rank {} {}: median {} ({}), {}\n", w->rank, w->config.describe(), ms(w->confirm.median_ms),
                       rate(r, r.winner_tflops), r.winner_reason);
    if (r.planner_fraction) {
      out += fmt::format("planner's pick (rank 1, zero measurements): {:.3f} of the tuned best\n", *r.planner_fraction);
    } else {
      out += "planner's pick (rank 1): not confirmed (see its outcome)\n";
    }
  } else {
    out += "winner: none (no candidate ran and passed verification)\n";
  }
  if (r.remeasured) {
    out += fmt::format("guard: the first confirmation looked disturbed (the winner's {}); measured again: {}\n",
                       r.first_noise, r.noisy.empty() ? "clean" : "still noisy, " + r.noisy);
  }
  out += fmt::format("time: total {:.1f} s = plan {:.2f} + compile {:.1f}{} + prepare {:.2f} + reference {:.1f} + screen "
                     "{:.1f} + confirm {:.1f}\n",
                     r.total_s, r.plan_s, r.compile_s,
                     r.compile_threads ? fmt::format(" ({} threads)", r.compile_threads) : "", r.prepare_s,
                     r.reference_s, r.screen_s, r.confirm_s);
  out += fmt::format("db: {}{}\n", r.db_outcome, r.db_path.empty() ? "" : fmt::format(" ({})", r.db_path));
  for (const std::string& w : r.warnings) out += fmt::format("warning: {}\n", w);
  return out;
}

ojson json_of(const TuneResult& r) {
  const Problem& p = r.problem;
  ojson j;
  j["problem"] = {{"shape", {p.m, p.n, p.k}},         {"batch", p.batch},
                  {"dtype", to_string(p.precision.input)}, {"out_dtype", to_string(p.precision.output)},
                  {"accum", to_string(p.precision.accum)}, {"layout", to_string(p.layout)},
                  {"ld", {p.lda, p.ldb, p.ldc}},        {"describe", p.describe()}};
  j["device"] = r.device;
  j["profile"] = r.profile;
  j["backend"] = r.backend;
  j["family"] = r.family;
  j["seed"] = r.seed;
  j["coverage"] = r.coverage;
  j["space_size"] = r.space_size;
  j["candidates_considered"] = r.candidates.size();
  j["measured"] = r.measured;
  j["threshold"] = r.threshold ? ojson(*r.threshold) : ojson(nullptr);
  j["native"] = {{"backend", r.native}, {"rel_error", r.native_error ? ojson(finite(*r.native_error)) : ojson(nullptr)}};
  j["candidates"] = ojson::array();
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    ojson cj;
    cj["rank"] = c.rank;
    cj["heuristic"] = c.heuristic;
    cj["config"] = config_json(c.config);
    cj["predicted_ms"] = finite(c.predicted_ms);
    cj["outcome"] = to_string(c.outcome);
    cj["reason"] = c.reason.empty() ? ojson(nullptr) : ojson(c.reason);
    cj["compile_s"] = c.compile_s;
    cj["cache_hit"] = c.cache_hit;
    if (c.error) {
      cj["rel_error"] = finite(c.error->rel_error);
      cj["max_scaled_error"] = finite(c.error->max_scaled_error);
    } else {
      cj["rel_error"] = nullptr;
      cj["max_scaled_error"] = nullptr;
    }
    cj["screen"] = timing_json(c.screen);
    cj["ratio"] = c.ratio > 0 ? ojson(c.ratio) : ojson(nullptr);
    cj["confirmed"] = c.confirmed;
    cj["confirm"] = timing_json(c.confirm);
    cj["noise"] = c.confirm.reps ? ojson(c.noise) : ojson(nullptr);
    cj["winner"] = r.winner && *r.winner == i;
    j["candidates"].push_back(std::move(cj));
  }
  if (const CandidateResult* w = r.best()) {
    j["winner"] = {{"rank", w->rank},
                   {"config", config_json(w->config)},
                   {"median_ms", finite(w->confirm.median_ms)},
                   {"min_ms", finite(w->confirm.min_ms)},
                   {"max_ms", finite(w->confirm.max_ms)},
                   {"reps", w->confirm.reps},
                   {"tflops", finite(r.winner_tflops)},
                   {"rel_error", w->error ? ojson(finite(w->error->rel_error)) : ojson(nullptr)},
                   {"reason", r.winner_reason}};
  } else {
    j["winner"] = nullptr;
  }
  j["planner_fraction"] = r.planner_fraction ? ojson(*r.planner_fraction) : ojson(nullptr);
  j["early_stop"] = r.early_stop.empty() ? ojson(nullptr) : ojson(r.early_stop);
  j["budget_hit"] = r.budget_hit;
  j["seconds"] = {{"total", r.total_s},     {"plan", r.plan_s},         {"compile", r.compile_s},
                  {"prepare", r.prepare_s}, {"reference", r.reference_s}, {"screen", r.screen_s},
                  {"confirm", r.confirm_s}};
  j["compile_threads"] = r.compile_threads;
  // The guard on the winner (docs/TUNING.md, "Noisy winners"): null fields when the first confirmation was clean.
  j["guard"] = {{"remeasured", r.remeasured},
                {"first", r.first_noise.empty() ? ojson(nullptr) : ojson(r.first_noise)},
                {"noisy", r.noisy.empty() ? ojson(nullptr) : ojson(r.noisy)}};
  j["db"] = {{"outcome", r.db_outcome}, {"path", r.db_path.empty() ? ojson(nullptr) : ojson(r.db_path)}};
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace

std::string to_table(const std::vector<TuneResult>& results, bool markdown) {
  std::string out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (i) out += "\n";
    out += table_of(results[i], markdown);
  }
  return out;
}

std::string to_json(const std::vector<TuneResult>& results) {
  // The envelope every verb's JSON shares (schemas/envelope.schema.json): one row per tuned problem.
  ojson j = envelope<ojson>("tune");
  ojson env;
  env["tool_version"] = std::string(version());
  env["date"] = iso_date_now();
  // One run tunes on one device: the first result says which (none when nothing was tuned).
  env["device"] = results.empty() ? ojson(nullptr) : ojson(results.front().device);
  env["profile"] = results.empty() ? ojson(nullptr) : ojson(results.front().profile);
  env["seed"] = results.empty() ? ojson(nullptr) : ojson(results.front().seed);
  j["environment"] = std::move(env);
  j["rows"] = ojson::array();
  for (const TuneResult& r : results) j["rows"].push_back(json_of(r));
  return j.dump(2) + "\n";
}

}  // namespace tileforge::tune
