// `tileforge ladder`: the article's optimization ladder for one shape, each step measured against the native library.
#include <cstdio>

#include <fmt/format.h>

#include "bench/ladder.hpp"
#include "options.hpp"

namespace tileforge::cli {
namespace {

struct LadderArgs {
  ProblemArgs problem;
  DeviceArgs device;
  OutputArgs output;
  RunArgs run;
  int candidates = 4;
};

const std::vector<std::string> kFormats = {"table", "json", "markdown"};

int run_ladder_verb(const LadderArgs& a) {
  constexpr std::string_view verb = "ladder";
  if (a.problem.shapes.size() != 1 || !a.problem.suite.empty()) {
    return fail(verb, invalid_argument(fmt::format("{} shapes given (allowed: exactly one --shape MxNxK; no --suite)",
                                                   a.problem.shapes.size())));
  }
  auto settings = settings_from(a.run);
  if (!settings) return fail(verb, settings.status());
  auto device = open_device_from(a.device);
  if (!device) return fail(verb, device.status());
  auto problems = problems_from(a.problem, *device);
  if (!problems) return fail(verb, problems.status());
  if (problems->size() != 1) {
    return fail(verb, invalid_argument(fmt::format("{} problems from the arguments (allowed: one layout, not 'all')",
                                                   problems->size())));
  }
  auto timer = measure::make_timer(*device);
  if (!timer) return fail(verb, timer.status());
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);
  bench::LadderOptions options;
  options.candidates = a.candidates;
  auto ladder = bench::run_ladder(*device, problems->front(), *settings, **timer, options);
  if (!ladder) return fail(verb, ladder.status());
  const std::string table = bench::ladder_table(*ladder, a.output.format == "markdown");
  const std::string content = a.output.format == "json" ? bench::ladder_json(*ladder) : table;
  if (int rc = emit(verb, out, content); rc != kExitOk) return rc;
  if (out && !a.output.quiet) write_stdout(bench::ladder_table(*ladder, false));
  return kExitOk;
}

}  // namespace

Command add_ladder_command(CLI::App& parent) {
  auto args = std::make_shared<LadderArgs>();
  CLI::App* app = parent.add_subcommand(
      "ladder", "The article's optimization ladder for one shape: from its baseline config, one layer of decisions "
                "at a time (the cost model's best candidates of that layer measured against the current config and "
                "the native library in one run), then bench's dispatched config and FP16 accumulation");
  add_problem_options(*app, args->problem, ProblemFlags::bench);
  add_device_options(*app, args->device);
  add_run_options(*app, args->run, true, true);
  add_output_options(*app, args->output, kFormats);
  app->add_option("--candidates", args->candidates, "candidates measured per step besides the current config "
                                                    "(1 to 32; default 4)")
      ->check(check::integer(1, 32, "1 to 32"));
  return {app, [args] { return run_ladder_verb(*args); }};
}

}  // namespace tileforge::cli
