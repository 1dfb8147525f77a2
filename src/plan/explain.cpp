// Text and JSON renderings of a Plan (see explain.hpp).
#include "plan/explain.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/format.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::plan {
namespace {

// The family's word for the phases no stream overlaps ("fill", "packing").
std::string_view fill_word(const Plan& plan) {
  const KernelFamily* f = find_family(plan.family);
  return f ? f->fill_word() : std::string_view("fill");
}

std::string core_name(const hw::HwProfile& p) {
  if (p.kind == "cpu") return "cores";
  if (p.vendor == "nvidia") return "SMs";
  if (p.vendor == "amd") return "CUs";
  if (p.kind == "npu") return "AI cores";
  return "cores";
}

// Rejected configs grouped by reason: count and the indices of the first few (or all).
struct Group {
  std::size_t reason = 0;
  std::size_t count = 0;
  std::vector<std::size_t> rows;
};

std::vector<Group> group_rejected(const RejectedSet& r, std::size_t keep) {
  std::vector<Group> groups(r.reasons.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    groups[i].reason = i;
    groups[i].count = r.counts[i];
  }
  for (std::size_t i = 0; i < r.stored(); ++i) {
    Group& g = groups[r.reason[i]];
    if (g.rows.size() < keep) g.rows.push_back(i);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.count > b.count; });
  return groups;
}

std::string indent_wrap(const std::string& label, const std::string& text, std::size_t width = 12) {
  return fmt::format("  {:<{}} {}\n", label, width, text);
}

nlohmann::json config_json(const Plan& plan, const Config& c) {
  nlohmann::json j;
  j["family"] = c.family;
  for (const auto& [k, v] : c.params) j[k] = v;
  (void)plan;
  return j;
}

nlohmann::json cost_json(const Cost& c) {
  nlohmann::json j;
  j["predicted_s"] = c.seconds;
  j["body_s"] = c.body_s;
  j["bound"] = c.bound;
  j["compute_s"] = c.compute_s;
  j["compute_share"] = c.compute_share;
  j["latency_s"] = c.latency_s;
  j["fill_s"] = c.fill_s;
  j["overhead_s"] = c.overhead_s;
  j["dram_bytes"] = c.dram_bytes;
  j["occupancy"] = c.occupancy;
  if (!c.occupancy_limit.empty()) j["occupancy_limit"] = c.occupancy_limit;
  j["levels"] = nlohmann::json::array();
  for (const LevelTime& l : c.levels) {
    j["levels"].push_back({{"level", l.level}, {"bytes", l.bytes}, {"bandwidth_bps", l.bandwidth}, {"seconds", l.seconds}});
  }
  const WaveAnalysis& w = c.waves;
  j["waves"] = {{"tile_m", w.tile_m},       {"tile_n", w.tile_n},         {"tile_k", w.tile_k},
                {"tiles", w.tiles},         {"cores", w.cores},           {"occupancy", w.occupancy},
                {"waves", w.waves},         {"waves_exact", w.waves_exact}, {"last_wave_fill", w.last_wave_fill},
                {"wave_efficiency", w.wave_efficiency}, {"core_balance", w.core_balance},
                {"waste_m", w.waste_m},     {"waste_n", w.waste_n},       {"waste_k", w.waste_k},
                {"padded_work_share", w.padded_work_share}};
  if (!c.notes.empty()) j["notes"] = c.notes;
  return j;
}

}  // namespace

std::string describe_config(const Plan& plan, const Config& config) {
  std::string s = config.family;
  std::vector<std::string> done;
  for (const std::string& n : plan.rejected.names) {
    if (auto v = config.get(n)) {
      s += fmt::format(" {}={}", n, *v);
      done.push_back(n);
    }
  }
  for (const auto& [n, v] : config.params)
    if (std::find(done.begin(), done.end(), n) == done.end()) s += fmt::format(" {}={}", n, v);
  return s;
}

std::string render_summary(const Plan& plan) {
  const std::string head = fmt::format("{} on {} ({})", plan.problem.describe(), plan.profile.name,
                                       plan.prediction ? "prediction" : "running device");
  if (!plan.served) return fmt::format("{}: not served: {}", head, plan.unserved);
  const Candidate& c = *plan.choice();
  return fmt::format("{}: {} predicted {} ({}), bound by {}", head, describe_config(plan, c.config),
                     fmtx::time(c.cost.seconds), fmtx::tflops(plan.roofline.flops, c.cost.seconds), c.cost.bound);
}

std::string render_brief(const Plan& plan) {
  std::string out = render_summary(plan) + "\n";
  const Roofline& r = plan.roofline;
  const std::string bound = !r.ridge ? fmt::format("no ridge: {}", r.peak.note)
                                     : fmt::format("against a ridge of {:.4g} FLOP/B: {}", *r.ridge,
                                                   r.compute_bound ? "compute-bound" : "memory-bound");
  out += fmt::format("  analysis   {:.4g} GFLOP, {} moved at least: {:.4g} FLOP/B {}; roofline floor {} ({})\n",
                     r.flops / 1e9, fmtx::bytes(r.min_bytes), r.intensity, bound, fmtx::time(r.floor_s),
                     fmtx::tflops(r.flops, r.floor_s));
  if (!plan.served) {
    if (!plan.needed.empty()) out += fmt::format("  needed: {}\n", plan.needed);
    return out;
  }
  const Candidate& c = *plan.choice();
  if (plan.ranked.size() > 1) {
    const Candidate& next = plan.ranked[1];
    out += fmt::format("  runner-up  {} {} ({}, bound by {}): {}\n", fmtx::delta(next.cost.seconds / c.cost.seconds - 1),
                       fmtx::time(next.cost.seconds), fmtx::tflops(r.flops, next.cost.seconds), next.cost.bound,
                       describe_config(plan, next.config));
  } else {
    out += fmt::format("  runner-up  none: {}\n", plan.choice_only ? "only the choice was ranked"
                                                                    : "the choice is the only legal config");
  }
  out += fmt::format("  binding    {}\n", plan.binding.empty() ? std::string("-") : plan.binding);
  return out;
}

namespace {

// The analysis: work, bytes, intensity against the ridge, the roofline floor, waves and load paths.
std::string analysis_text(const Plan& plan) {
  const hw::HwProfile& hw = plan.profile;
  const Roofline& r = plan.roofline;
  std::string out;
  out += "\nAnalysis\n";
  out += indent_wrap("work", fmt::format("{:.4g} GFLOP (2*M*N*K{})", r.flops / 1e9, plan.problem.batch > 1 ? "*batch" : ""));
  out += indent_wrap("min bytes",
                     fmt::format("{}: A {} + B {} read once, C {} written once{}", fmtx::bytes(r.min_bytes),
                                 fmtx::bytes(r.bytes_a), fmtx::bytes(r.bytes_b), fmtx::bytes(r.bytes_c_write),
                                 r.bytes_c_read > 0 ? fmt::format(" and read once (beta != 0)") : ""));
  if (r.ridge) {
    out += indent_wrap("intensity",
                       fmt::format("{:.4g} FLOP/B against a ridge of {:.4g} FLOP/B ({}, {} / {:g} GB/s): {}",
                                   r.intensity, *r.ridge, fmtx::peak(*r.peak.tflops), r.peak.note, r.bandwidth_gbps,
                                   r.compute_bound ? "compute-bound" : "memory-bound"));
  } else {
    out += indent_wrap("intensity", fmt::format("{:.4g} FLOP/B; no ridge: {}", r.intensity, r.peak.note));
  }
  out += indent_wrap("roofline", fmt::format("floor {} (compute {}, memory {}); at the floor: {}", fmtx::time(r.floor_s),
                                             fmtx::time(r.compute_floor_s), fmtx::time(r.memory_floor_s),
                                             fmtx::tflops(r.flops, r.floor_s)));
  const WaveAnalysis& nw = plan.nominal_waves;
  if (hw.kind != "cpu") {
    out += indent_wrap("waves", fmt::format("at 128x128 tiles: {} tiles over {} {}: {:.2f} waves, last wave {} full; "
                                            "tail waste M {}, N {}",
                                            nw.tiles, nw.cores, core_name(hw), nw.waves_exact,
                                            fmtx::pct(nw.last_wave_fill), fmtx::pct(nw.waste_m), fmtx::pct(nw.waste_n)));
    out += indent_wrap("TMA", plan.paths.tma_reason);
  }
  out += indent_wrap("loads", plan.paths.vector_reason);
  return out;
}

// The family, the candidates, and the choice with its predicted time, binding limit and the reference's rank.
std::string choice_text(const Plan& plan) {
  const Roofline& r = plan.roofline;
  std::string out;
  const Candidate& best = *plan.choice();
  const Cost& c = best.cost;
  out += fmt::format("\nFamily: {} ({} backend): {}\n", plan.family, plan.backend, plan.family_reason);
  out += fmt::format("Candidates: {}: {} legal, {} rejected{}\n", plan.coverage, plan.ranked.size(), plan.rejected.size(),
                     plan.pins.empty() ? "" : fmt::format(" (with --set {})", [&] {
                       std::vector<std::string> p;
                       for (const auto& [n, v] : plan.pins) p.push_back(fmt::format("{}={}", n, v));
                       return fmt::format("{}", fmt::join(p, " "));
                     }()));

  out += fmt::format("\nChoice: {}\n", describe_config(plan, best.config));
  const double peak = r.peak.tflops.value_or(0);
  out += indent_wrap("predicted", fmt::format("{} = {} ({} of peak; {:.2f}x the roofline floor)", fmtx::time(c.seconds),
                                              fmtx::tflops(r.flops, c.seconds),
                                              peak > 0 ? fmtx::pct(r.flops / c.seconds / (peak * 1e12)) : "n/a",
                                              r.floor_s > 0 ? c.seconds / r.floor_s : 0.0));
  std::vector<std::string> terms{fmt::format("compute {}", fmtx::time(c.compute_s))};
  for (const LevelTime& l : c.levels) terms.push_back(fmt::format("{} {}", l.level, fmtx::time(l.seconds)));
  if (c.latency_s > 0) terms.push_back(fmt::format("latency {}", fmtx::time(c.latency_s)));
  out += indent_wrap("time", fmt::format("body {} (bound by {}; {}) + {} {} + overhead {}", fmtx::time(c.body_s), c.bound,
                                         fmt::join(terms, ", "), fill_word(plan),
                                         fmtx::time(c.fill_s), fmtx::time(c.overhead_s)));
  out += indent_wrap("binding", plan.binding);
  for (std::size_t i = 0; i < plan.limits.size(); ++i) out += indent_wrap(i == 0 ? "limits" : "", plan.limits[i]);
  if (plan.reference) {
    if (plan.reference_rank > 0) {
      const Candidate& ref = plan.ranked[std::size_t(plan.reference_rank - 1)];
      out += indent_wrap("reference", fmt::format("{} picks {}: rank {} of {}, {}", plan.reference_name,
                                                  describe_config(plan, ref.config), plan.reference_rank,
                                                  plan.ranked.size(), fmtx::delta(ref.cost.seconds / c.seconds - 1)));
    } else {
      out += indent_wrap("reference", fmt::format("{} picks {}: not among the legal candidates here", plan.reference_name,
                                                  describe_config(plan, *plan.reference)));
    }
  }
  return out;
}

// The decision log, layer by layer.
std::string decisions_text(const Plan& plan) {
  std::string out;
  out += "\nDecisions\n";
  for (std::string_view layer : kLayers) {
    const auto entries = plan.log.in_layer(layer);
    if (entries.empty()) continue;
    out += fmt::format("  {}\n", layer);
    for (const Decision* d : entries) {
      out += fmt::format("    * {}\n", d->decision);
      if (!d->reason.empty()) out += fmt::format("        why:    {}\n", d->reason);
      if (!d->effect.empty()) out += fmt::format("        effect: {}\n", d->effect);
    }
  }
  return out;
}

// The next configs of the ranking, against the choice.
std::string alternatives_text(const Plan& plan, const ExplainOptions& options) {
  const Candidate& best = *plan.choice();
  const Cost& c = best.cost;
  std::string out;
  const int top = options.top_n >= 0 ? options.top_n : plan.top_n;
  const std::size_t shown = std::min<std::size_t>(std::size_t(std::max(0, top)), plan.ranked.size() - 1);
  out += fmt::format("\nTop alternatives ({} of {} other legal configs)\n", shown, plan.ranked.size() - 1);
  for (std::size_t i = 1; i <= shown; ++i) {
    const Candidate& a = plan.ranked[i];
    out += fmt::format("  #{:<4} {:>7}  {:>10}  {:<8} {}\n", a.rank, fmtx::delta(a.cost.seconds / c.seconds - 1),
                       fmtx::time(a.cost.seconds), a.cost.bound, describe_config(plan, a.config));
  }
  return out;
}

// The rejected configs, grouped by layer and reason, with examples (all of them with --all-rejected).
std::string rejected_text(const Plan& plan, const ExplainOptions& options) {
  std::string out;
  const std::size_t keep = options.all_rejected ? SIZE_MAX : std::size_t(std::max(0, options.examples));
  const auto groups = group_rejected(plan.rejected, keep);
  out += fmt::format("\nRejected: {} of {} combinations, by layer and reason{}\n", plan.rejected.size(),
                     plan.combinations, options.all_rejected ? "" : " (a few examples each; --all-rejected lists all)");
  for (std::string_view layer : kLayers) {
    bool header = false;
    for (const Group& g : groups) {
      if (g.count == 0) continue;
      const std::string& text = plan.rejected.reasons[g.reason];
      if (layer_name(plan.rejected.reason_layers[g.reason]) != layer) continue;
      if (!header) {
        out += fmt::format("  {}\n", layer);
        header = true;
      }
      out += fmt::format("    {:>7}  {}\n", g.count, text);
      for (std::size_t row : g.rows) {
        out += fmt::format("             {} {}\n", options.all_rejected ? "-" : "e.g.",
                           describe_config(plan, plan.rejected.config(row)));
      }
    }
  }
  return out;
}

}  // namespace

std::string render_explain(const Plan& plan, const ExplainOptions& options) {
  const hw::HwProfile& hw = plan.profile;
  std::string out;
  out += fmt::format("tileforge plan: {}\n", plan.problem.describe());
  out += fmt::format("chip: {} - {} ({} {}, {}, {} {})\n", hw.name, hw.display_name.empty() ? hw.name : hw.display_name,
                     hw.vendor, hw.kind, hw.arch, hw.cores, core_name(hw));
  out += plan.label + "\n";
  if (!plan.served) {
    out += fmt::format("\nNot served: {}\n", plan.unserved);
    if (!plan.needed.empty()) out += fmt::format("Needed: {}\n", plan.needed);
  }

  out += analysis_text(plan);
  if (!plan.served) return out;
  out += choice_text(plan);
  out += decisions_text(plan);
  out += alternatives_text(plan, options);
  out += rejected_text(plan, options);
  return out;
}

namespace {

// The analysis's numbers: roofline, load paths and the nominal waves.
nlohmann::json analysis_json(const Plan& plan) {
  using nlohmann::json;
  const Roofline& r = plan.roofline;
  json a = {{"flops", r.flops},
            {"min_bytes", r.min_bytes},
            {"bytes_a", r.bytes_a},
            {"bytes_b", r.bytes_b},
            {"bytes_c_read", r.bytes_c_read},
            {"bytes_c_write", r.bytes_c_write},
            {"intensity", r.intensity},
            {"bandwidth_gbps", r.bandwidth_gbps},
            {"bound", r.ridge ? (r.compute_bound ? "compute" : "memory") : "unknown"},
            {"compute_floor_s", r.compute_floor_s},
            {"memory_floor_s", r.memory_floor_s},
            {"roofline_floor_s", r.floor_s},
            {"peak_note", r.peak.note},
            {"tma_on_chip", plan.paths.tma_on_chip},
            {"tma_legal", plan.paths.tma_legal},
            {"tma_reason", plan.paths.tma_reason},
            {"vector_bytes", plan.paths.vector_bytes},
            {"vector_reason", plan.paths.vector_reason}};
  a["peak_tflops"] = r.peak.tflops ? json(*r.peak.tflops) : json(nullptr);
  a["ridge_flops_per_byte"] = r.ridge ? json(*r.ridge) : json(nullptr);
  const WaveAnalysis& nw = plan.nominal_waves;
  a["nominal_waves"] = {{"tile_m", nw.tile_m}, {"tile_n", nw.tile_n}, {"tiles", nw.tiles}, {"cores", nw.cores},
                        {"waves", nw.waves}, {"waves_exact", nw.waves_exact}, {"last_wave_fill", nw.last_wave_fill}};
  return a;
}

// The rejected configs, grouped by reason, with examples (all of them with --all-rejected).
nlohmann::json rejected_json(const Plan& plan, const ExplainOptions& options) {
  using nlohmann::json;
  const std::size_t keep = options.all_rejected ? SIZE_MAX : std::size_t(std::max(0, options.examples));
  json rejected = json::array();
  for (const Group& g : group_rejected(plan.rejected, keep)) {
    if (g.count == 0) continue;
    const std::string& text = plan.rejected.reasons[g.reason];
    json e = {{"reason", text}, {"layer", std::string(layer_name(plan.rejected.reason_layers[g.reason]))}, {"count", g.count}};
    json ex = json::array();
    for (std::size_t row : g.rows) ex.push_back(config_json(plan, plan.rejected.config(row)));
    e[options.all_rejected ? "configs" : "examples"] = ex;
    rejected.push_back(e);
  }
  return rejected;
}

// The choice's neighbours, each one parameter a step away.
nlohmann::json neighbours_json(const Plan& plan) {
  using nlohmann::json;
  json neigh = json::array();
  for (const Neighbour& n : plan.neighbours) {
    json e = {{"param", n.param}, {"value", n.value}, {"legal", n.legal}, {"predicted_s", n.seconds}, {"relative", 1.0 + n.delta}};
    if (!n.legal) {
      e["constraint"] = n.constraint;
      e["detail"] = n.detail;
    }
    neigh.push_back(e);
  }
  return neigh;
}

}  // namespace

nlohmann::json to_json(const Plan& plan, const ExplainOptions& options) {
  using nlohmann::json;
  const Problem& q = plan.problem;
  const hw::HwProfile& hw = plan.profile;
  const Roofline& r = plan.roofline;
  json j;
  j["problem"] = {{"m", q.m},         {"n", q.n},
                  {"k", q.k},         {"batch", q.batch},
                  {"input", std::string(to_string(q.precision.input))},
                  {"output", std::string(to_string(q.precision.output))},
                  {"accum", std::string(to_string(q.precision.accum))},
                  {"layout", std::string(to_string(q.layout))},
                  {"lda", q.lda},     {"ldb", q.ldb},
                  {"ldc", q.ldc},     {"alpha", q.alpha},
                  {"beta", q.beta}};
  j["profile"] = {{"name", hw.name}, {"display_name", hw.display_name}, {"kind", hw.kind},
                  {"vendor", hw.vendor}, {"arch", hw.arch}, {"cores", hw.cores}};
  j["prediction"] = plan.prediction;
  j["label"] = plan.label;
  j["analysis"] = analysis_json(plan);
  j["served"] = plan.served;
  if (!plan.served) {
    j["unserved_reason"] = plan.unserved;
    j["needed"] = plan.needed;
  }
  j["backend"] = plan.backend.empty() ? json(nullptr) : json(plan.backend);
  j["family"] = plan.family.empty() ? json(nullptr) : json(plan.family);
  j["family_reason"] = plan.family_reason;
  json pins = json::object();
  for (const auto& [n, v] : plan.pins) pins[n] = v;
  j["pins"] = pins;
  if (!plan.served) return j;

  const Candidate& best = *plan.choice();
  j["candidates"] = {{"coverage", plan.coverage},
                     {"combinations", plan.combinations},
                     {"legal", plan.ranked.size()},
                     {"rejected", plan.rejected.size()}};
  if (const KernelFamily* f = find_family(plan.family); f && f->plans_threads()) j["threads"] = plan.threads;
  j["choice"] = {{"config", config_json(plan, best.config)},
                 {"describe", describe_config(plan, best.config)},
                 {"predicted_s", best.cost.seconds},
                 {"predicted_tflops", r.flops / best.cost.seconds / 1e12},
                 {"cost", cost_json(best.cost)},
                 {"binding_limit", plan.binding},
                 {"limits", plan.limits}};
  if (plan.reference) {
    j["reference"] = {{"name", plan.reference_name},
                      {"config", config_json(plan, *plan.reference)},
                      {"rank", plan.reference_rank > 0 ? json(plan.reference_rank) : json(nullptr)}};
  }
  const int top = options.top_n >= 0 ? options.top_n : plan.top_n;
  json alts = json::array();
  for (std::size_t i = 1; i < plan.ranked.size() && i <= std::size_t(std::max(0, top)); ++i) {
    const Candidate& c = plan.ranked[i];
    alts.push_back({{"rank", c.rank},
                    {"config", config_json(plan, c.config)},
                    {"predicted_s", c.cost.seconds},
                    {"relative", c.cost.seconds / best.cost.seconds},
                    {"bound", c.cost.bound}});
  }
  j["alternatives"] = alts;
  j["rejected"] = rejected_json(plan, options);
  j["neighbours"] = neighbours_json(plan);
  json decisions = json::array();
  for (const Decision& d : plan.log.entries()) {
    decisions.push_back({{"layer", d.layer}, {"decision", d.decision}, {"reason", d.reason}, {"effect", d.effect}});
  }
  j["decisions"] = decisions;
  return j;
}

}  // namespace tileforge::plan
