// `tileforge report`: a self-contained HTML page (and, with --svg-dir, SVG files) from bench, ladder and tune JSON.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "bench/html_report.hpp"
#include "options.hpp"

namespace tileforge::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  OutputArgs output;
  std::string svg_dir;
};

// One page format: --format is accepted as every verb's is, and says so.
const std::vector<std::string> kFormats = {"html"};

int run_report(const ReportArgs& a) {
  constexpr std::string_view verb = "report";
  std::vector<bench::ReportInput> inputs;
  for (const std::string& path : a.inputs) {
    std::ifstream in(path);
    if (!in) return fail(verb, Status(Code::io_error, fmt::format("{}: cannot be read", path)));
    std::stringstream text;
    text << in.rdbuf();
    inputs.push_back({path, text.str()});
  }
  auto page = bench::html_report(inputs);
  if (!page) return fail(verb, page.status());
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);
  if (!a.svg_dir.empty()) {
    auto charts = bench::svg_charts(inputs);
    if (!charts) return fail(verb, charts.status());
    std::error_code ec;
    std::filesystem::create_directories(a.svg_dir, ec);
    for (const auto& [name, svg] : *charts) {
      auto file = OutputFile::create((std::filesystem::path(a.svg_dir) / name).string(), "--svg-dir");
      if (!file) return fail(verb, file.status());
      if (Status s = file->commit(svg); !s) return fail(verb, s);
    }
  }
  return emit(verb, out, *page);
}

}  // namespace

Command add_report_command(CLI::App& parent) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* app = parent.add_subcommand(
      "report", "Draw bench, ladder and tune JSON reports as one self-contained HTML page: a roofline with ours and "
                "native per shape, ratio-by-shape bars, the ladder as bars, tuning convergence");
  app->add_option("FILE", args->inputs, "bench, ladder or tune reports (--format json)")
      ->required()
      ->check(check::existing_file());
  add_output_options(*app, args->output, kFormats, "write the page to FILE (atomically); default stdout");
  app->add_option("--svg-dir", args->svg_dir, "also write each chart as an SVG file into this folder")
      ->check(check::non_empty());
  return {app, [args] { return run_report(*args); }};
}

}  // namespace tileforge::cli
