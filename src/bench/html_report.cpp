// tileforge report: bench, ladder and tune JSON drawn as inline SVG charts in one HTML page.
#include "bench/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tileforge::bench {
namespace {

using nlohmann::json;

constexpr double kW = 720, kH = 360, kLeft = 70, kRight = 20, kTop = 30, kBottom = 60;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  const double v = j[key].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string shape_of(const json& row) {
  if (!row.contains("shape") || !row["shape"].is_array() || row["shape"].size() != 3) return "?";
  return fmt::format("{}x{}x{} {} {}", row["shape"][0].get<long long>(), row["shape"][1].get<long long>(),
                     row["shape"][2].get<long long>(), row.value("dtype", std::string("?")),
                     row.value("layout", std::string("?")));
}

// A chart's frame: the svg element with its kind and mark count, a title and axis labels.
struct Chart {
  std::string kind, title, x_label, y_label;
  std::string body;
  int marks = 0;
  std::string svg(bool standalone) const {
    std::string s = fmt::format(
        "<svg class=\"chart\" data-kind=\"{}\" data-marks=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\"{}>\n",
        kind, marks, kW, kH, kW, kH, standalone ? " xmlns=\"http://www.w3.org/2000/svg\"" : "");
    s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", kW, kH);
    s += fmt::format("<text x=\"{}\" y=\"18\" font-size=\"14\" font-family=\"sans-serif\">{}</text>\n", kLeft,
                     escape(title));
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", kLeft, kTop, kH - kBottom);
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", kLeft, kH - kBottom,
                     kW - kRight);
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" font-family=\"sans-serif\">{}</text>\n", kLeft,
                     kH - 8, escape(x_label));
    s += fmt::format("<text x=\"12\" y=\"{}\" font-size=\"11\" font-family=\"sans-serif\" transform=\"rotate(-90 12 {})\">{}"
                     "</text>\n",
                     kH - kBottom, kH - kBottom, escape(y_label));
    return s + body + "</svg>\n";
  }
};

// Linear or logarithmic axis mapping onto [lo_px, hi_px].
struct Axis {
  double lo, hi;
  bool log;
  double lo_px, hi_px;
  double at(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return lo_px + std::clamp(t, 0.0, 1.0) * (hi_px - lo_px);
  }
};

std::string tick_labels(const Axis& a, bool vertical) {
  std::string s;
  if (a.log) {
    for (double v = std::pow(10, std::floor(std::log10(a.lo))); v <= a.hi * 1.0001; v *= 10) {
      if (v < a.lo) continue;
      const double px = a.at(v);
      s += vertical ? fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" "
                                  "font-family=\"sans-serif\">{:g}</text>\n",
                                  kLeft - 4, px + 3, v)
                    : fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" "
                                  "font-family=\"sans-serif\">{:g}</text>\n",
                                  px, kH - kBottom + 14, v);
    }
  } else {
    for (int i = 0; i <= 4; ++i) {
      const double v = a.lo + (a.hi - a.lo) * i / 4, px = a.at(v);
      s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" font-family=\"sans-serif\">{:.3g}"
                       "</text>\n",
                       kLeft - 4, px + 3, v);
    }
  }
  return s;
}

// Roofline: each row's ours and native at the row's arithmetic intensity (FLOPs over the compulsory bytes, from
// its GB/s and time), under the compute roof (rate / peak fraction) and, where the run measured it, the bandwidth.
Chart roofline(const json& doc, const std::string& name) {
  Chart c{"roofline", fmt::format("roofline: {}", name), "FLOP per byte (A, B, C once)", "TFLOP/s", "", 0};
  struct Point {
    double x, y;
    std::string cls, label;
  };
  std::vector<Point> points;
  double peak = 0;
  for (const json& row : doc["rows"]) {
    const auto t = number(row, "tflops"), g = number(row, "gbps"), pf = number(row, "peak_fraction");
    if (!t || !g || *g <= 0 || *t <= 0) continue;
    const double intensity = *t * 1e12 / (*g * 1e9);
    points.push_back({intensity, *t, "mark ours", "ours " + shape_of(row)});
    if (pf && *pf > 0) peak = std::max(peak, *t / *pf);
    const json& n = row.value("native", json());
    if (auto nt = number(n, "tflops"); nt && *nt > 0) {
      points.push_back({intensity, *nt, "mark native", n.value("backend", std::string("native")) + " " + shape_of(row)});
    }
  }
  if (points.empty()) return c;
  double x_lo = std::numeric_limits<double>::max(), x_hi = 0, y_hi = peak;
  for (const Point& p : points) {
    x_lo = std::min(x_lo, p.x);
    x_hi = std::max(x_hi, p.x);
    y_hi = std::max(y_hi, p.y);
  }
  const Axis x{std::pow(10, std::floor(std::log10(x_lo))), std::pow(10, std::ceil(std::log10(x_hi * 1.01))), true,
               kLeft, kW - kRight};
  const Axis y{std::pow(10, std::floor(std::log10(y_hi / 1000))), std::pow(10, std::ceil(std::log10(y_hi * 1.01))),
               true, kH - kBottom, kTop};
  c.body += tick_labels(x, false) + tick_labels(y, true);
  const double bw = number(doc["environment"].value("device_bandwidth", json()), "gbps").value_or(0);
  if (peak > 0) {
    // The roof: bandwidth x intensity up to the ridge, then the peak.
    std::string path = fmt::format("M {} {}", x.at(x.lo), y.at(bw > 0 ? std::max(y.lo, bw * 1e9 * x.lo / 1e12) : peak));
    if (bw > 0) {
      const double ridge = peak * 1e12 / (bw * 1e9);
      path += fmt::format(" L {} {}", x.at(std::clamp(ridge, x.lo, x.hi)), y.at(peak));
    }
    path += fmt::format(" L {} {}", x.at(x.hi), y.at(peak));
    c.body += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n", path);
  }
  for (const Point& p : points) {
    const bool ours = p.cls == "mark ours";
    c.body += fmt::format("<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{} {:.3g} TFLOP/s"
                          "</title></circle>\n",
                          p.cls, x.at(p.x), y.at(p.y), ours ? "#d62728" : "#1f77b4", escape(p.label), p.y);
    ++c.marks;
  }
  c.body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#d62728\" font-family=\"sans-serif\">ours"
                        "</text><text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#1f77b4\" font-family=\"sans-serif\">"
                        "native</text>\n",
                        kW - 120, kTop + 10, kW - 80, kTop + 10);
  return c;
}

// Horizontal-free bar chart: one bar per item, value on a linear axis from 0, an optional reference line.
Chart bars(std::string kind, std::string title, std::string y_label, const std::vector<std::pair<std::string, double>>& items,
           std::optional<double> reference) {
  Chart c{std::move(kind), std::move(title), "", std::move(y_label), "", 0};
  if (items.empty()) return c;
  double hi = reference.value_or(0);
  for (const auto& [label, v] : items) hi = std::max(hi, v);
  const Axis y{0, hi * 1.1, false, kH - kBottom, kTop};
  c.body += tick_labels(y, true);
  const double slot = (kW - kLeft - kRight) / double(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& [label, v] = items[i];
    const double x0 = kLeft + slot * double(i) + slot * 0.15, w = slot * 0.7;
    const bool good = !reference || v >= *reference;
    c.body += fmt::format("<rect class=\"mark\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
                          "<title>{}: {:.3g}</title></rect>\n",
                          x0, y.at(v), w, y.at(0) - y.at(v), good ? "#2ca02c" : "#ff7f0e", escape(label), v);
    if (items.size() <= 24) {
      c.body += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"9\" font-family=\"sans-serif\" "
                            "transform=\"rotate(30 {:.1f} {})\">{}</text>\n",
                            x0, kH - kBottom + 12, x0, kH - kBottom + 12, escape(label.substr(0, 28)));
    }
    ++c.marks;
  }
  if (reference) {
    c.body += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"black\" stroke-dasharray=\"3 3\"/>\n",
                          kLeft, y.at(*reference), kW - kRight, y.at(*reference));
  }
  return c;
}

// Tuning convergence: the best confirmed-or-screened median so far, candidate after candidate in rank order.
Chart convergence(const json& result, const std::string& name) {
  Chart c{"tune", fmt::format("tuning convergence: {}", name), "candidates measured", "best median so far (ms)", "", 0};
  std::vector<double> best;
  double so_far = std::numeric_limits<double>::max();
  for (const json& cand : result.value("candidates", json::array())) {
    const json& screen = cand.value("screen", json());
    const auto ms = number(screen, "median_ms");
    if (!ms) continue;
    so_far = std::min(so_far, *ms);
    best.push_back(so_far);
  }
  if (best.empty()) return c;
  const double hi = *std::max_element(best.begin(), best.end());
  const Axis x{0, double(std::max<std::size_t>(best.size(), 2) - 1), false, kLeft, kW - kRight};
  const Axis y{0, hi * 1.1, false, kH - kBottom, kTop};
  c.body += tick_labels(y, true);
  std::string path;
  for (std::size_t i = 0; i < best.size(); ++i) {
    path += fmt::format("{} {:.1f} {:.1f}", i ? " L" : "M", x.at(double(i)), y.at(best[i]));
    c.body += fmt::format("<circle class=\"mark\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#9467bd\"><title>candidate "
                          "{}: best {:.4g} ms</title></circle>\n",
                          x.at(double(i)), y.at(best[i]), i + 1, best[i]);
    ++c.marks;
  }
  c.body += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#9467bd\"/>\n", path);
  return c;
}

// A tune result's problem in one line: its own description when it carries one.
std::string problem_text(const json& problem) {
  if (problem.is_object() && problem.contains("describe") && problem["describe"].is_string()) {
    return problem["describe"].get<std::string>();
  }
  return problem.dump();
}

Expected<std::vector<std::pair<std::string, Chart>>> charts_of(const std::vector<ReportInput>& inputs) {
  std::vector<std::pair<std::string, Chart>> out;
  int index = 0;
  for (const ReportInput& in : inputs) {
    ++index;
    const json doc = json::parse(in.text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      return invalid_argument(fmt::format("{} is not JSON (allowed: bench, ladder or tune --format json output)", in.path));
    }
    const std::string name = in.path;
    // Every verb's JSON now shares one envelope and names its verb; files written before it (bench/results/ keeps
    // many) carry no "verb" and are told apart by their own keys: ladder's dispatch_gap, tune's "results".
    const std::string verb = doc.contains("verb") && doc["verb"].is_string() ? doc["verb"].get<std::string>()
                             : doc.contains("dispatch_gap")                   ? "ladder"
                             : doc.contains("results")                        ? "tune"
                             : doc.contains("environment")                    ? "bench"
                                                                              : "";
    const char* rows_key = doc.contains("results") && !doc.contains("rows") ? "results" : "rows";
    const bool has_rows = doc.contains(rows_key) && doc[rows_key].is_array();
    if (verb == "bench" && has_rows) {
      out.emplace_back(fmt::format("roofline-{}", index), roofline(doc, name));
      std::vector<std::pair<std::string, double>> ratios;
      for (const json& row : doc["rows"]) {
        if (auto r = number(row, "ratio")) ratios.emplace_back(shape_of(row), *r);
      }
      out.emplace_back(fmt::format("ratio-{}", index),
                       bars("ratio", fmt::format("ratio to native by shape: {}", name), "native time / ours", ratios, 1.0));
    } else if (verb == "ladder" && has_rows) {
      std::vector<std::pair<std::string, double>> steps;
      std::optional<double> native;
      for (const json& row : doc["rows"]) {
        if (auto t = number(row, "tflops")) steps.emplace_back(row.value("step", std::string("?")), *t);
        if (auto nt = number(row.value("native", json()), "tflops"); nt && !native) native = *nt;
      }
      out.emplace_back(fmt::format("ladder-{}", index),
                       bars("ladder", fmt::format("ladder: {} ({}; dashed: native)", doc.value("problem", std::string()), name),
                            "TFLOP/s", steps, native));
    } else if (verb == "tune" && has_rows) {
      int k = 0;
      for (const json& result : doc[rows_key]) {
        out.emplace_back(fmt::format("tune-{}-{}", index, ++k),
                         convergence(result, fmt::format("{} ({})", problem_text(result.value("problem", json())), name)));
      }
    } else {
      return invalid_argument(fmt::format("{} is neither a bench, a ladder nor a tune report (allowed: their --format "
                                          "json output)",
                                          in.path));
    }
  }
  return out;
}

}  // namespace

Expected<std::string> html_report(const std::vector<ReportInput>& inputs) {
  auto charts = charts_of(inputs);
  if (!charts) return charts.status();
  std::string page =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tileforge report</title>\n"
      "<style>body{font-family:sans-serif;margin:20px} svg{margin:10px 0;border:1px solid #ddd}</style></head>\n"
      "<body>\n<h1>tileforge report</h1>\n<p>From:";
  for (const ReportInput& in : inputs) page += " <code>" + escape(in.path) + "</code>";
  page += "</p>\n";
  for (const auto& [name, chart] : *charts) page += "<div id=\"" + name + "\">\n" + chart.svg(false) + "</div>\n";
  // Marks the page as drawn: a test reading the DOM sees that the page's own script ran without error.
  page += "<script>document.body.dataset.charts = document.querySelectorAll('svg.chart').length;</script>\n";
  page += "</body></html>\n";
  return page;
}

Expected<std::vector<std::pair<std::string, std::string>>> svg_charts(const std::vector<ReportInput>& inputs) {
  auto charts = charts_of(inputs);
  if (!charts) return charts.status();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, chart] : *charts) out.emplace_back(name + ".svg", chart.svg(true));
  return out;
}

}  // namespace tileforge::bench
