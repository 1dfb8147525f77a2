// tileforge ladder: the article's method (one variable at a time, measured against the native library) over the
// layers of DESIGN.md, each step's candidates chosen by the cost model and measured in one interleaved run.
#include "bench/ladder.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/columns.hpp"
#include "core/envelope.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"

namespace tileforge::bench {
namespace {

// A time ratio minus one in words, against `other` when named: "11.4% longer (than X)", "3.0% less time (than X)",
// "the same time (as X)".
std::string gap_words(double gap, std::string_view other = {}) {
  const bool same = std::abs(gap) < 0.0005;
  const std::string words = same      ? std::string("the same time")
                            : gap > 0 ? fmt::format("{:.1f}% longer", 100 * gap)
                                      : fmt::format("{:.1f}% less time", -100 * gap);
  return other.empty() ? words : fmt::format("{} {} {}", words, same ? "as" : "than", other);
}

// The article's baseline values (its section 3.3: 128x128x32 tiles, two stages, four warps, the narrowest vector
// width) per GPU family; the CPU's is the smallest register block with no cache blocking (blocks as large as legal).
// A parameter not named here starts at its smallest legal value (the feature off, the narrowest choice).
enum class Aim { smallest, largest, value };
struct Target {
  Aim aim = Aim::smallest;
  int64_t value = 0;
};

std::map<std::string, Target> baseline_targets(const std::string& family) {
  if (family.starts_with("cpu")) {
    return {{"KC", {Aim::largest}}, {"MC", {Aim::largest}}, {"NC", {Aim::largest}}};
  }
  return {{"BLOCK_M", {Aim::value, 128}}, {"BLOCK_N", {Aim::value, 128}}, {"BLOCK_K", {Aim::value, 32}},
          {"STAGES", {Aim::value, 2}},    {"WARPS_M", {Aim::value, 2}},   {"WARPS_N", {Aim::value, 2}},
          {"CONSUMERS", {Aim::value, 1}}, {"SPLIT_K", {Aim::value, 1}},   {"CLUSTER_M", {Aim::value, 1}},
          {"CLUSTER_N", {Aim::value, 1}}};
}

// How far `config` is from the targets: per parameter, the distance in positions of its legal value list,
// normalized by the list's length, summed.
double baseline_distance(const Config& config, const ParamSpace& space, const std::map<std::string, Target>& targets) {
  double d = 0;
  for (const ParamDecl& p : space.params) {
    if (p.values.size() < 2) continue;
    std::vector<int64_t> values = p.values;
    std::sort(values.begin(), values.end());
    const auto v = config.get(p.name);
    if (!v) continue;
    const auto at = [&](int64_t x) {
      return double(std::lower_bound(values.begin(), values.end(), x) - values.begin());
    };
    double want = 0;
    auto t = targets.find(p.name);
    if (t != targets.end() && t->second.aim == Aim::largest) want = double(values.size() - 1);
    if (t != targets.end() && t->second.aim == Aim::value) want = at(t->second.value);
    d += std::abs(at(*v) - want) / double(values.size() - 1);
  }
  return d;
}

// "MR 6 -> 14, NR 32 -> 64".
std::string change_text(const Config& from, const Config& to) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : to.params) {
    const auto old = from.get(name);
    if (!old || *old != value) parts.push_back(fmt::format("{} {} -> {}", name, old ? fmt::format("{}", *old) : "-", value));
  }
  return parts.empty() ? std::string("no change") : fmt::format("{}", fmt::join(parts, ", "));
}

bool same_outside(const Config& a, const Config& b, const std::vector<std::string>& layer_params) {
  for (const auto& [name, value] : a.params) {
    if (std::find(layer_params.begin(), layer_params.end(), name) != layer_params.end()) continue;
    const auto other = b.get(name);
    if (!other || *other != value) return false;
  }
  return true;
}

// The cost model's time for a config, in ms; nullopt when the chip record lacks a number the model needs.
using Predict = std::function<std::optional<double>(const Config&)>;

// The cost model's best configs that differ from `current` only in this layer's parameters: every combination of
// their legal values when there are few enough (others held where `current` has them), else the planner's ranked
// list filtered the same way; plus, for this layer's values that need other later-layer parameters to be legal or
// good, the planner's best config with them (`later`: the parameters of the layers after this one); priced by the
// family's cost model, best first.
std::vector<Config> layer_candidates(const ParamSpace& space, const std::vector<std::string>& names,
                                     const std::vector<std::string>& later, const Config& current,
                                     const plan::Plan& plan, const Predict& predict, int count) {
  constexpr std::size_t kMaxCombinations = 4096;
  std::vector<Config> pool;
  std::size_t combinations = 1;
  std::vector<const ParamDecl*> decls;
  for (const ParamDecl& d : space.params) {
    if (std::find(names.begin(), names.end(), d.name) == names.end()) continue;
    decls.push_back(&d);
    combinations = std::min(kMaxCombinations + 1, combinations * d.values.size());
  }
  if (combinations <= kMaxCombinations) {
    std::vector<std::size_t> at(decls.size(), 0);
    for (std::size_t n = 0; n < combinations; ++n) {
      Config c = current;
      for (std::size_t i = 0; i < decls.size(); ++i) c.params[decls[i]->name] = decls[i]->values[at[i]];
      if (!(c == current) && space.check(c)) pool.push_back(std::move(c));
      for (std::size_t i = 0; i < decls.size(); ++i) {  // odometer over the layer's value lists
        if (++at[i] < decls[i]->values.size()) break;
        at[i] = 0;
      }
    }
  }
  for (const plan::Candidate& c : plan.ranked) {
    if (c.config == current || !same_outside(current, c.config, names) || !space.check(c.config)) continue;
    if (std::find(pool.begin(), pool.end(), c.config) == pool.end()) pool.push_back(c.config);
  }
  // This layer's values that no config with the current later layers admits (a 128x256 tile with the 7 stages that
  // fit 128x128), taken with the later layers' parameters the planner ranks best for them: without this coordinate
  // descent never leaves a tile whose better neighbour needs fewer stages. Earlier layers stay as they are.
  std::vector<std::string> refit = names;
  refit.insert(refit.end(), later.begin(), later.end());
  auto layer_values = [&](const Config& c) {
    std::vector<int64_t> v;
    for (const std::string& n : names) v.push_back(c.get(n).value_or(0));
    return v;
  };
  std::vector<std::vector<int64_t>> seen;
  for (const Config& c : pool) seen.push_back(layer_values(c));
  seen.push_back(layer_values(current));
  for (const plan::Candidate& c : plan.ranked) {  // best first: the first config of each new value set is its refit
    if (!same_outside(current, c.config, refit) || !space.check(c.config)) continue;
    auto values = layer_values(c.config);
    if (std::find(seen.begin(), seen.end(), values) != seen.end()) continue;
    seen.push_back(std::move(values));
    pool.push_back(c.config);
  }
  std::vector<std::pair<double, Config>> priced;
  for (Config& c : pool) {
    if (const auto ms = predict(c)) priced.emplace_back(*ms, std::move(c));
  }
  std::stable_sort(priced.begin(), priced.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> out;
  for (auto& [seconds, c] : priced) {
    if (int(out.size()) >= count) break;
    out.push_back(std::move(c));
  }
  return out;
}

// One step: `current` and `candidates` measured together with the native library; the fastest verified one wins.
LadderRow measure_step(const Device& device, const CasePlan& base, const Config& current,
                       const std::vector<Config>& candidates, const Settings& settings, RepTimer& timer,
                       std::string step, const Predict& predict, Config& best) {
  CasePlan cp = base;
  cp.config = current;
  cp.variants = candidates;
  const CaseResult r = run_case(device, cp, settings, timer);
  LadderRow row;
  row.step = std::move(step);
  row.peak_tflops = r.peak_tflops;
  row.native = r.native;
  row.native_missing = r.native_missing;
  for (const auto& w : r.warnings) row.notes.push_back(w);
  const Measured* winner = r.ours && r.check && r.ours->timing.reps > 0 ? &*r.ours : nullptr;
  row.measured = winner ? 1 : 0;
  for (const auto& v : r.variants) {
    if (!v) {
      row.notes.push_back(v.status().message());
      continue;
    }
    if (v->timing.reps == 0) continue;
    ++row.measured;
    if (!winner || v->timing.median_ms < winner->timing.median_ms) winner = &*v;
  }
  if (!winner) {
    row.config = current;
    row.change = r.ours_failure.empty() ? "nothing measured" : fmt::format("failed: {}", r.ours_failure);
    best = current;
    return row;
  }
  row.ours = *winner;
  row.verdict = verdict_for(device, base.problem, *winner);
  row.config = winner->config;
  row.predicted_ms = predict(row.config).value_or(0);
  row.change = row.config == current
                   ? fmt::format("kept: none of {} candidates measured faster", candidates.size())
                   : change_text(current, row.config);
  best = row.config;
  return row;
}

std::string rate_text(double tflops, bool cpu) {
  return cpu ? fmt::format("{:.1f}", tflops * 1e3) : fmt::format("{:.2f}", tflops);
}

}  // namespace

std::optional<double> LadderRow::ratio() const {
  if (!ours || !native || ours->timing.median_ms <= 0 || native->timing.reps == 0) return std::nullopt;
  return native->timing.median_ms / ours->timing.median_ms;
}

Expected<Config> ladder_baseline(const std::string& family, const ParamSpace& space, const std::vector<Config>& legal) {
  if (legal.empty()) return unsupported(fmt::format("family {} has no legal config for this problem", family));
  const auto targets = baseline_targets(family);
  const Config* best = nullptr;
  double best_d = 0;
  for (const Config& c : legal) {
    const double d = baseline_distance(c, space, targets);
    if (!best || d < best_d) {
      best = &c;
      best_d = d;
    }
  }
  return *best;
}

namespace {

// The config bench dispatches (DB record, planner, heuristic), measured beside the ladder's last config
// (`current`); `dispatch_gap` gets how far apart they ran.
LadderRow dispatch_row(const Device& device, const CasePlan& dispatched, const Config& current,
                       const Settings& settings, RepTimer& timer, const Predict& predict,
                       std::optional<double>& dispatch_gap) {
  const Problem& p = dispatched.problem;
  std::vector<Config> variants;
  if (!(dispatched.config == current)) variants.push_back(dispatched.config);
  CasePlan cp = dispatched;
  cp.config = current;
  cp.variants = variants;
  const CaseResult r = run_case(device, cp, settings, timer);
  LadderRow row;
  row.step = fmt::format("bench's dispatch ({})", dispatched.config_source);
  row.config = dispatched.config;
  row.peak_tflops = r.peak_tflops;
  row.native = r.native;
  row.native_missing = r.native_missing;
  row.measured = 1 + int(variants.size());
  row.predicted_ms = predict(row.config).value_or(0);
  const Measured* ladder_best = r.ours && r.ours->timing.reps ? &*r.ours : nullptr;
  const Measured* dispatch = variants.empty() ? ladder_best
                                              : (!r.variants.empty() && r.variants[0] && r.variants[0]->timing.reps
                                                     ? &*r.variants[0]
                                                     : nullptr);
  if (dispatch) {
    row.ours = *dispatch;
    row.verdict = verdict_for(device, p, *dispatch);
  }
  if (ladder_best && dispatch && dispatch->timing.median_ms > 0) {
    dispatch_gap = ladder_best->timing.median_ms / dispatch->timing.median_ms - 1;
    row.change = variants.empty()
                     ? "the same config as the ladder's last step"
                     : fmt::format("the ladder's last config takes {} in this run", gap_words(*dispatch_gap));
  } else {
    row.change = "not measured";
  }
  return row;
}

// The article's mixed-accumulation step: FP16 accumulation, against the vendor's FP16-accumulating call.
LadderRow f16_accumulation_row(const Device& device, const Problem& p, const Settings& settings, RepTimer& timer) {
  Problem q = p;
  q.precision.accum = DType::f16;
  LadderRow row;
  row.step = "FP16 accumulation";
  auto acc = plan_case(device, q, settings);
  if (!acc || !acc->ours_unavailable.empty()) {
    row.change = fmt::format("not offered: {}", acc ? acc->ours_unavailable : acc.status().message());
  } else {
    const CaseResult r = run_case(device, *acc, settings, timer);
    row.config = acc->config;
    row.peak_tflops = r.peak_tflops;
    row.native = r.native;
    row.native_missing = r.native_missing;
    if (r.ours && r.ours->timing.reps) row.ours = *r.ours;
    row.verdict = r.verdict;
    row.measured = row.ours ? 1 : 0;
    row.change = fmt::format("accumulate in f16 (errors: ours {}, native {})",
                             r.ours ? fmt::format("{:.1e}", r.ours->error.rel_error) : "-",
                             r.native ? fmt::format("{:.1e}", r.native->error.rel_error) : "-");
    for (const auto& w : r.warnings) row.notes.push_back(w);
  }
  return row;
}

}  // namespace

Expected<Ladder> run_ladder(const Device& device, const Problem& problem, const Settings& settings, RepTimer& timer,
                            const LadderOptions& options) {
  if (options.candidates < 1 || options.candidates > 32) {
    return invalid_argument(fmt::format("--candidates {} (allowed: 1 to 32)", options.candidates));
  }
  if (!settings.pins.empty()) {
    return invalid_argument("--set with ladder (allowed: none; the ladder chooses every parameter step by step)");
  }
  auto planned = plan_case(device, problem, settings);
  if (!planned) return planned.status();
  const CasePlan dispatched = *planned;
  if (!dispatched.ours_unavailable.empty()) return unsupported(dispatched.ours_unavailable);
  const Problem& p = dispatched.problem;
  const ParamSpace space = dispatched.ours->space(p, device);
  plan::PlanOptions po;
  po.family = space.family;
  po.deterministic = settings.deterministic;
  po.top_n = 0;
  po.threads = device.kind == "cpu" ? effective_threads(device) : 0;
  po.running_profiles = {device.profile.name};
  auto made = plan::make_plan(p, device.profile, po);
  if (!made) return made.status();
  if (!made->served || made->ranked.empty()) {
    return unsupported(fmt::format("the planner has no {} config for {}: {}", space.family, p.describe(), made->unserved));
  }
  std::vector<Config> legal;
  for (const plan::Candidate& c : made->ranked) {
    if (space.check(c.config)) legal.push_back(c.config);
  }
  auto baseline = ladder_baseline(space.family, space, legal);
  if (!baseline) return baseline.status();

  Ladder ladder;
  ladder.problem = p;
  ladder.family = space.family;
  ladder.environment = collect_environment(device, timer.cache_state(), settings.seed);
  // make_plan served this family, so it is registered.
  const plan::KernelFamily& family = *plan::find_family(space.family);
  const auto scratch = family.make_scratch();
  const Predict predict = [&](const Config& c) -> std::optional<double> {
    const plan::Cost cost = family.cost(p, device.profile, c, po.threads, scratch.get());
    if (!cost.valid) return std::nullopt;
    return cost.seconds * 1e3;
  };
  Config current = *baseline;
  Config best;
  LadderRow first = measure_step(device, dispatched, current, {}, settings, timer, "baseline", predict, best);
  if (first.ours) {
    first.change = space.family.starts_with("cpu")
                       ? "the article's baseline: the smallest register block, no cache blocking"
                       : "the article's baseline: 128x128x32 tiles, 2 stages, 4 warps, narrowest vectors";
  }
  ladder.rows.push_back(std::move(first));
  current = best;

  // The layers in DESIGN.md's order, then again while a pass still changes something (a register block that lost
  // under the baseline's cache blocking may win under the blocking found after it): coordinate descent, each row
  // one layer's change. Later passes show only the steps that changed the config.
  constexpr int kMaxPasses = 3;
  for (int pass = 1; pass <= kMaxPasses; ++pass) {
    bool changed = false;
    for (std::size_t li = 0; li < std::size(kLayerNames); ++li) {
      const std::string_view layer = kLayerNames[li];
      std::vector<std::string> names, later;
      for (const ParamDecl& d : space.params) {
        if (d.values.size() < 2) continue;
        const auto at = std::find(std::begin(kLayerNames), std::end(kLayerNames), d.layer) - std::begin(kLayerNames);
        if (std::size_t(at) == li) names.push_back(d.name);
        if (std::size_t(at) > li && std::size_t(at) < std::size(kLayerNames)) later.push_back(d.name);
      }
      if (names.empty()) continue;
      const std::vector<Config> candidates =
          layer_candidates(space, names, later, current, *made, predict, options.candidates);
      const std::string step = pass == 1 ? fmt::format("{} ({})", layer, fmt::join(names, ", "))
                                         : fmt::format("{} ({}), pass {}", layer, fmt::join(names, ", "), pass);
      LadderRow row = measure_step(device, dispatched, current, candidates, settings, timer, step, predict, best);
      const bool moved = !(best == current);
      changed = changed || moved;
      if (pass == 1 || moved) ladder.rows.push_back(std::move(row));
      current = best;
    }
    if (!changed) break;
  }

  ladder.rows.push_back(dispatch_row(device, dispatched, current, settings, timer, predict, ladder.dispatch_gap));
  if (p.precision.input == DType::f16) ladder.rows.push_back(f16_accumulation_row(device, p, settings, timer));
  return ladder;
}

std::string ladder_table(const Ladder& ladder, bool markdown) {
  const bool cpu = ladder.environment.device_kind == "cpu";
  const char* unit = cpu ? "GFLOP/s" : "TFLOP/s";
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"step", "change", fmt::format("ours {}", unit), "of peak", fmt::format("native {}", unit), "ratio",
                   "error", "verdict", "timed", "predicted ms", "config"});
  for (const LadderRow& r : ladder.rows) {
    const auto ratio = r.ratio();
    cells.push_back({r.step, r.change, r.ours ? rate_text(r.ours->tflops, cpu) : "-",
                     r.ours && r.peak_tflops > 0 ? fmt::format("{:.1f}%", 100 * r.ours->tflops / r.peak_tflops) : "-",
                     r.native && r.native->timing.reps ? fmt::format("{} {}", r.native->backend,
                                                                      rate_text(r.native->tflops, cpu))
                                                        : "none",
                     ratio ? fmt::format("{:.2f}", *ratio) : "-",
                     r.ours ? fmt::format("{:.1e}", r.ours->error.rel_error) : "-", verdict_text(r.verdict),
                     fmt::format("{}", r.measured),
                     r.predicted_ms > 0 ? fmt::format("{:.4g}", r.predicted_ms) : "-", r.config.describe()});
  }
  const std::vector<bool> right = {false, false, true, true, true, true, true, false, true, true, false};
  const Environment& e = ladder.environment;
  std::string out = fmt::format("tileforge {} ladder | {} | device {} | host {} | profile {} | {} threads | {}\n",
                                e.tool_version, ladder.problem.describe(), e.device, e.host, e.profile, e.threads, e.date);
  out += markdown ? "\n" + columns::format_markdown(cells, right) + "\n" : columns::format_columns(cells, right);
  out += "Each step measures the current config and the cost model's best candidates of one layer (timed), with the "
         "native library in the same interleaved run; the fastest verified one is kept. ratio = native time / ours.\n";
  if (ladder.dispatch_gap) {
    out += fmt::format("The ladder's last FP32-accumulation config takes {}, measured in one run.\n",
                       gap_words(*ladder.dispatch_gap, "bench's dispatched config"));
  }
  return out;
}

std::string ladder_json(const Ladder& ladder) {
  using nlohmann::ordered_json;
  ordered_json rows = ordered_json::array();
  for (const LadderRow& r : ladder.rows) {
    ordered_json row;
    row["step"] = r.step;
    row["change"] = r.change;
    ordered_json config = {{"family", r.config.family}};
    for (const auto& [k, v] : r.config.params) config[k] = v;
    row["config"] = config;
    row["measured_configs"] = r.measured;
    row["predicted_ms"] = r.predicted_ms > 0 ? ordered_json(r.predicted_ms) : ordered_json(nullptr);
    row["median_ms"] = r.ours ? ordered_json(r.ours->timing.median_ms) : ordered_json(nullptr);
    row["tflops"] = r.ours ? ordered_json(r.ours->tflops) : ordered_json(nullptr);
    row["peak_fraction"] =
        r.ours && r.peak_tflops > 0 ? ordered_json(r.ours->tflops / r.peak_tflops) : ordered_json(nullptr);
    row["rel_error"] = r.ours ? ordered_json(r.ours->error.rel_error) : ordered_json(nullptr);
    row["verdict"] = r.verdict ? ordered_json{{"bound", r.verdict->bound},
                                              {"limit_fraction", r.verdict->fraction},
                                              {"below_70", r.verdict->below}}
                               : ordered_json(nullptr);
    if (r.native) {
      row["native"] = {{"backend", r.native->backend},
                       {"median_ms", r.native->timing.median_ms},
                       {"tflops", r.native->tflops},
                       {"rel_error", r.native->error.rel_error}};
    } else {
      row["native"] = nullptr;
      row["native_missing"] = r.native_missing;
    }
    const auto ratio = r.ratio();
    row["ratio"] = ratio ? ordered_json(*ratio) : ordered_json(nullptr);
    row["notes"] = r.notes;
    rows.push_back(std::move(row));
  }
  // The envelope every verb's JSON shares (schemas/envelope.schema.json), with bench's environment object.
  ordered_json doc = envelope<ordered_json>("ladder");
  doc["environment"] = environment_json(ladder.environment);
  doc["problem"] = ladder.problem.describe();
  doc["family"] = ladder.family;
  doc["dispatch_gap"] = ladder.dispatch_gap ? ordered_json(*ladder.dispatch_gap) : ordered_json(nullptr);
  doc["rows"] = rows;
  return doc.dump(1) + "\n";
}

}  // namespace tileforge::bench
