// `tileforge compare A.json B.json`: two bench reports row by row, our time's change judged against the runs' noise.
#include <cstdio>

#include <fmt/format.h>

#include "bench/compare.hpp"
#include "options.hpp"

namespace tileforge::cli {
namespace {

struct CompareArgs {
  std::string a, b;
  OutputArgs output;
  bool fail_on_regression = false;
};

const std::vector<std::string> kFormats = {"table", "json", "markdown"};

int run_compare(const CompareArgs& args) {
  constexpr std::string_view verb = "compare";
  auto a = bench::read_bench_rows(args.a);
  if (!a) return fail(verb, a.status());
  auto b = bench::read_bench_rows(args.b);
  if (!b) return fail(verb, b.status());
  std::optional<OutputFile> out;
  if (Status s = open_output(args.output.out, out); !s) return fail(verb, s);
  const auto changes = bench::compare_rows(*a, *b);
  if (int rc = emit(verb, out, bench::format_changes(changes, args.output.format, args.a, args.b)); rc != kExitOk) {
    return rc;
  }
  bool regressed = false;
  for (const auto& c : changes) regressed = regressed || c.verdict == "regression";
  return args.fail_on_regression && regressed ? kExitFailure : kExitOk;
}

}  // namespace

Command add_compare_command(CLI::App& parent) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* app = parent.add_subcommand(
      "compare", "Compare two bench JSON reports row by row: the change of our time and of the ratio to native, "
                 "flagged as a regression or an improvement where it leaves the runs' noise band");
  app->add_option("A", args->a, "the earlier bench report (bench --format json)")
      ->required()
      ->check(check::existing_file());
  app->add_option("B", args->b, "the later bench report")->required()->check(check::existing_file());
  add_output_options(*app, args->output, kFormats);
  app->add_flag("--fail-on-regression", args->fail_on_regression, "exit 1 when a row regressed (for CI)");
  return {app, [args] { return run_compare(*args); }};
}

}  // namespace tileforge::cli
