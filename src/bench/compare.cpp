// tileforge compare: bench reports read back, rows paired by what was run, each change judged against the noise band.
#include "bench/compare.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/columns.hpp"
#include "core/envelope.hpp"

namespace tileforge::bench {
namespace {

using nlohmann::json;

std::string join_ints(const json& v) {
  std::vector<long long> values;
  for (const auto& x : v) values.push_back(x.get<long long>());
  return fmt::format("{}", fmt::join(values, "/"));
}

// What was run, in one line: rows of two reports are the same case when this matches.
std::string key_of(const json& row) {
  const json& shape = row.at("shape");
  return fmt::format("{}x{}x{} {}->{} acc {} {} ld {} batch {}", shape.at(0).get<long long>(),
                     shape.at(1).get<long long>(), shape.at(2).get<long long>(), row.at("dtype").get<std::string>(),
                     row.at("out_dtype").get<std::string>(), row.at("accum").get<std::string>(),
                     row.at("layout").get<std::string>(), join_ints(row.at("ld")), row.value("batch", 1));
}

std::string config_of(const json& row) {
  if (!row.contains("config") || !row["config"].is_object()) return "-";
  const json& c = row["config"];
  std::string s = c.value("family", std::string("?"));
  for (const auto& [name, value] : c.items()) {
    if (name != "family") s += fmt::format(" {}={}", name, value.dump());
  }
  return s;
}

double relative_iqr(const RowTiming& r) { return r.median_ms > 0 ? r.iqr_ms / r.median_ms : 0; }

std::string percent(double x) { return fmt::format("{:+.1f}%", 100 * x); }

}  // namespace

Expected<std::vector<RowTiming>> read_bench_rows(std::string_view path) {
  const std::string p(path);
  std::ifstream in(p);
  if (!in) return Status(Code::io_error, fmt::format("{}: cannot be read", p));
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
    return invalid_argument(fmt::format("{} is not a bench JSON report (allowed: the output of `tileforge bench "
                                        "--format json`, an object with \"rows\")",
                                        p));
  }
  // Every verb's JSON has "rows" now: only bench's (or a file from before the envelope, with no "verb") pair up.
  if (doc.contains("verb") && doc["verb"] != "bench") {
    return invalid_argument(fmt::format("{} is a `tileforge {}` report, not a bench one (allowed: the output of "
                                        "`tileforge bench --format json`)",
                                        p, doc["verb"].is_string() ? doc["verb"].get<std::string>() : doc["verb"].dump()));
  }
  std::vector<RowTiming> rows;
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const json& row = doc["rows"][i];
    try {
      RowTiming r;
      r.key = key_of(row);
      r.config = config_of(row);
      if (!row.at("median_ms").is_number()) continue;  // a case that did not run: nothing to compare
      r.median_ms = row.at("median_ms").get<double>();
      r.iqr_ms = row.value("q3_ms", r.median_ms) - row.value("q1_ms", r.median_ms);
      if (row.contains("ratio") && row["ratio"].is_number()) r.ratio = row["ratio"].get<double>();
      r.busy = row.value("busy_flag", false);
      if (row.contains("native") && row["native"].is_object()) {
        const json& n = row["native"];
        r.native = n.value("backend", json()).is_string() ? n["backend"].get<std::string>() : std::string();
        if (n.contains("median_ms") && n["median_ms"].is_number()) {
          r.native_median_ms = n["median_ms"].get<double>();
          r.native_iqr_ms = n.value("q3_ms", r.native_median_ms) - n.value("q1_ms", r.native_median_ms);
        }
      }
      rows.push_back(std::move(r));
    } catch (const json::exception& e) {
      return invalid_argument(fmt::format("{}: rows[{}] is not a bench row ({})", p, i, e.what()));
    }
  }
  return rows;
}

std::vector<RowChange> compare_rows(const std::vector<RowTiming>& a, const std::vector<RowTiming>& b) {
  std::vector<RowChange> out;
  std::map<std::string, const RowTiming*> in_b;
  for (const RowTiming& r : b) in_b.emplace(r.key, &r);
  std::map<std::string, bool> seen;
  for (const RowTiming& ra : a) {
    RowChange c;
    c.key = ra.key;
    c.a = ra;
    seen[ra.key] = true;
    auto it = in_b.find(ra.key);
    if (it == in_b.end()) {
      c.verdict = "only in A";
      out.push_back(std::move(c));
      continue;
    }
    const RowTiming& rb = *it->second;
    c.b = rb;
    c.time_change = ra.median_ms > 0 ? rb.median_ms / ra.median_ms - 1 : 0;
    const double sa = relative_iqr(ra), sb = relative_iqr(rb);
    if (ra.ratio && rb.ratio && *ra.ratio > 0) c.ratio_change = *rb.ratio / *ra.ratio - 1;
    c.by_ratio = c.ratio_change && ra.native_median_ms > 0 && rb.native_median_ms > 0;
    if (ra.busy || rb.busy) {
      // Timed while other processes held part of the machine: an even slowdown the spreads cannot see.
      c.band = 0;
      c.verdict = fmt::format("not judged: machine busy in {}", ra.busy && rb.busy ? "A and B" : ra.busy ? "A" : "B");
    } else if (c.by_ratio) {
      const double na = ra.native_iqr_ms / ra.native_median_ms, nb = rb.native_iqr_ms / rb.native_median_ms;
      c.band = std::max(kCompareBandFloor, 2 * std::sqrt(sa * sa + sb * sb + na * na + nb * nb));
      const double fall = -*c.ratio_change;  // a lower ratio: ours slower against native
      c.verdict = fall > c.band ? "regression" : fall < -c.band ? "improvement" : "within noise";
    } else {
      c.band = std::max(kCompareBandFloor, 2 * std::sqrt(sa * sa + sb * sb));
      c.verdict = c.time_change > c.band ? "regression" : c.time_change < -c.band ? "improvement" : "within noise";
    }
    out.push_back(std::move(c));
  }
  for (const RowTiming& rb : b) {
    if (seen.count(rb.key)) continue;
    RowChange c;
    c.key = rb.key;
    c.b = rb;
    c.verdict = "only in B";
    out.push_back(std::move(c));
  }
  return out;
}

std::string format_changes(const std::vector<RowChange>& changes, std::string_view format, std::string_view a_name,
                           std::string_view b_name) {
  if (format == "json") {
    json rows = json::array();
    for (const RowChange& c : changes) {
      json r = {{"case", c.key}, {"verdict", c.verdict}};
      if (c.a) r["a"] = {{"median_ms", c.a->median_ms}, {"iqr_ms", c.a->iqr_ms}, {"config", c.a->config},
                         {"ratio", c.a->ratio ? json(*c.a->ratio) : json(nullptr)}};
      if (c.b) r["b"] = {{"median_ms", c.b->median_ms}, {"iqr_ms", c.b->iqr_ms}, {"config", c.b->config},
                         {"ratio", c.b->ratio ? json(*c.b->ratio) : json(nullptr)}};
      if (c.a && c.b) {
        r["time_change"] = c.time_change;
        r["band"] = c.band;
        r["judged_by"] = c.by_ratio ? "ratio" : "time";
        r["ratio_change"] = c.ratio_change ? json(*c.ratio_change) : json(nullptr);
      }
      rows.push_back(std::move(r));
    }
    // The envelope every verb's JSON shares (schemas/envelope.schema.json); nothing is measured here, so the
    // environment only says which build compared and when (each run's own is in its file).
    nlohmann::ordered_json doc = envelope<nlohmann::ordered_json>("compare");
    doc["environment"] = {{"tool_version", std::string(version())}, {"date", iso_date_now()}};
    doc["a"] = std::string(a_name);
    doc["b"] = std::string(b_name);
    doc["band_floor"] = kCompareBandFloor;
    doc["rows"] = rows;
    return doc.dump(2) + "\n";
  }
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"case", "A ms", "B ms", "time", "A ratio", "B ratio", "ratio", "noise band", "judged by", "verdict",
                   "config (B)"});
  int regressions = 0, improvements = 0, paired = 0;
  for (const RowChange& c : changes) {
    auto ms = [](const std::optional<RowTiming>& r) { return r ? fmt::format("{:.4g}", r->median_ms) : std::string("-"); };
    auto ratio = [](const std::optional<RowTiming>& r) {
      return r && r->ratio ? fmt::format("{:.3f}", *r->ratio) : std::string("-");
    };
    const bool both = c.a && c.b;
    paired += both;
    regressions += c.verdict == "regression";
    improvements += c.verdict == "improvement";
    cells.push_back({c.key, ms(c.a), ms(c.b), both ? percent(c.time_change) : "-", ratio(c.a), ratio(c.b),
                     c.ratio_change ? percent(*c.ratio_change) : "-",
                     both && c.band > 0 ? fmt::format("+/-{:.1f}%", 100 * c.band) : "-", both ? (c.by_ratio ? "ratio" : "time") : "-",
                     c.verdict == "regression" ? "REGRESSION" : c.verdict,
                     c.b ? c.b->config : (c.a ? c.a->config : "-")});
  }
  const std::vector<bool> right = {false, true, true, true, true, true, true, true, false, false, false};
  std::string out = format == "markdown" ? columns::format_markdown(cells, right) : columns::format_columns(cells, right);
  out += fmt::format("{}A = {}, B = {}: {} rows paired, {} regression(s), {} improvement(s); time = B's median / A's "
                     "- 1 of our kernel; ratio = the same for native time / ours (judged by it where both runs have "
                     "native: a machine that drifts moves ours and native alike); noise band = max({:.0f}%, 2 sqrt(sum "
                     "of s^2)), s = IQR / median of each median involved\n",
                     format == "markdown" ? "\n" : "", a_name, b_name, paired, regressions, improvements,
                     100 * kCompareBandFloor);
  return out;
}

}  // namespace tileforge::bench
