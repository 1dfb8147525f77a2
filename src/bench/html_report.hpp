// tileforge report: one self-contained HTML page (inline SVG, no scripts to fetch) from bench, ladder and tune JSON:
// a roofline with ours and native per shape, ratio-by-shape bars, the ladder as bars, and tuning convergence.
#pragma once

#include <string>
#include <vector>

#include "core/expected.hpp"

namespace tileforge::bench {

// One input file, already read: its path (for titles) and its text.
struct ReportInput {
  std::string path;
  std::string text;
};

// The page. Each chart is an <svg class="chart" data-kind="..." data-marks="N"> holding N elements of class "mark",
// one per data point or bar; a file that is none of bench, ladder or tune JSON is refused with its path.
Expected<std::string> html_report(const std::vector<ReportInput>& inputs);

// The charts alone, as standalone SVG documents ("roofline-1.svg", ...): what `report --svg-dir` writes.
Expected<std::vector<std::pair<std::string, std::string>>> svg_charts(const std::vector<ReportInput>& inputs);

}  // namespace tileforge::bench
