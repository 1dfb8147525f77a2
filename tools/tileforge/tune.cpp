// `tileforge tune`: measures the planner's best candidates for a shape on this device and records the winner.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "core/parse.hpp"
#include "db/location.hpp"
#include "db/store.hpp"
#include "options.hpp"
#include "tune/report.hpp"
#include "tune/tune.hpp"
#include "tune_distributed.hpp"
#include "validators.hpp"

namespace tileforge::cli {
namespace {

const std::vector<std::string> kFormats = {"table", "json", "markdown"};

struct TuneArgs {
  ProblemArgs problem;
  DeviceArgs device;
  OutputArgs output;
  RunArgs run;
  // Typed and range-checked when parsed; the defaults are TuneOptions' own.
  int top = tune::TuneOptions{}.top;
  int ties = tune::TuneOptions{}.tie_cap;
  double budget = tune::TuneOptions{}.budget_s;
  int leaders = tune::TuneOptions{}.leaders;
  int screen_reps = tune::TuneOptions{}.screen_reps;
  std::string family, ranks;
  bool exhaustive = false;
  bool store_noisy = false;
  bool force = false;  // under an MPI launcher: tune shapes the DB holds already
};

// "1,5,17": planner ranks, re-measured side by side (an earlier tune's or exhaustive search's picks).
Expected<std::vector<int>> parse_ranks(const std::string& text) {
  std::vector<int> ranks;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    auto v = parse_int(item, "--ranks");
    if (!v || *v < 1 || *v > 100000000) {
      return invalid_argument(fmt::format("--ranks '{}' has '{}', not a rank (allowed: a comma-separated list of "
                                          "planner ranks, each 1 to 100000000)", text, item));
    }
    ranks.push_back(int(*v));
    start = comma + 1;
  }
  return ranks;
}

// Everything the user typed, checked before anything runs.
Expected<tune::TuneOptions> options_from(const TuneArgs& a, const bench::Settings& settings) {
  tune::TuneOptions o;
  o.exhaustive = a.exhaustive;
  o.contract = settings;
  o.pins = settings.pins;
  o.deterministic = settings.deterministic;
  o.family = a.family;
  o.top = a.top;
  o.tie_cap = a.ties;
  o.budget_s = a.budget;
  o.leaders = a.leaders;
  o.screen_reps = a.screen_reps;
  if (!a.ranks.empty()) {
    auto ranks = parse_ranks(a.ranks);
    if (!ranks) return ranks.status();
    o.ranks = std::move(*ranks);
  }
  auto request = db_request_from(a.run.db);
  if (!request) return request.status();
  auto where = db::resolve_location(*request);
  if (!where) return where.status();
  o.write_db = where->enabled;
  o.db_path = where->path;
  o.store_noisy = a.store_noisy;
  return o;
}

int run_tune(const TuneArgs& a) {
  constexpr std::string_view verb = "tune";
  if (a.problem.shapes.empty() && a.problem.suite.empty()) {
    return fail(verb, invalid_argument("--shape MxNxK is required (or --suite NAME|FILE to tune every shape of a suite)"));
  }
  auto settings = settings_from(a.run);
  if (!settings) return fail(verb, settings.status());
  auto options = options_from(a, *settings);
  if (!options) return fail(verb, options.status());
  // Under mpirun (or srun) the ranks share the shapes out; a plain run never touches MPI (only the environment is
  // read here).
  if (auto world = mpi_world_size_from_env()) {
    if (built_with_mpi()) {
      if (!options->write_db) {
        return fail(verb, invalid_argument("--no-db: a tune across MPI ranks collects its results in the tuning DB "
                                           "(rank 0 writes it); pass --db FILE instead"));
      }
      return run_distributed_tune({a.problem, a.device, a.output, *options, a.force});
    }
    if (*world > 1) {
      std::fprintf(stderr, "tileforge tune: warning: started by an MPI launcher with %d ranks, but this tileforge was "
                           "built without MPI: every rank tunes every shape by itself\n", *world);
    }
  }
  auto device = open_device_from(a.device);
  if (!device) return fail(verb, device.status());
  auto problems = problems_from(a.problem, *device);
  if (!problems) return fail(verb, problems.status());
  for (const Problem& p : *problems) {
    // Pins, family and profile are checked for every problem before the first one is measured.
    if (Status s = tune::check(p, *device, *options); !s && s.code() == Code::invalid_argument) return fail(verb, s);
  }
  // A DB that exists but cannot be written (a newer schema, another application's file, read-only, a disk error) is
  // refused now, not after minutes of measuring; opening it for writing is what recording the winner does anyway.
  std::error_code ec;
  if (options->write_db && std::filesystem::exists(options->db_path, ec)) {
    if (auto store = db::Store::open(options->db_path); !store) return fail(verb, store.status());
  }
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);

  const bool quiet = a.output.quiet;
  auto progress = [quiet](const tune::Progress& p) {
    if (!quiet) std::fprintf(stderr, "%s\n", p.line.c_str());
  };
  std::vector<tune::TuneResult> results;
  bool failed = false;
  for (const Problem& p : *problems) {
    auto r = tune::tune(p, *device, *options, progress);
    // A bad pin or family is the user's error and stops before anything is measured (exit 2); a problem this
    // device cannot run is reported and the next one goes on.
    if (!r) {
      if (r.status().code() == Code::invalid_argument) return fail(verb, r.status());
      std::fprintf(stderr, "tileforge tune: error: %s: %s\n", p.describe().c_str(), r.status().message().c_str());
      failed = true;
      continue;
    }
    for (const auto& w : r->warnings) std::fprintf(stderr, "tileforge tune: warning: %s\n", w.c_str());
    if (!r->winner || r->db_outcome.starts_with("error")) failed = true;
    results.push_back(std::move(*r));
  }
  const std::string text = a.output.format == "json" ? tune::to_json(results)
                                                      : tune::to_table(results, a.output.format == "markdown");
  if (int rc = emit(verb, out, text); rc != kExitOk) return rc;
  if (out) {
    // As bench: with --out the report goes to the file and the table for people still goes to stdout.
    const std::string table = tune::to_table(results);
    write_stdout(table);
  }
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

Command add_tune_command(CLI::App& parent) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* app = parent.add_subcommand(
      "tune", "Measure the planner's best candidates for a shape on this device (screen a few reps each, stop when "
              "the model says the rest cannot win, confirm the leaders under the benchmark contract), verify each, "
              "and record the winner in the tuning DB");
  add_problem_options(*app, a->problem, ProblemFlags::bench);
  add_device_options(*app, a->device);
  add_output_options(*app, a->output, kFormats);
  add_run_options(*app, a->run, true);
  auto* top = app->add_option("--top", a->top, "candidates from the planner's ranking (default: 16)")
                  ->type_name("N")
                  ->check(check::integer(1, 1000000, "1 to 1000000"));
  auto* exhaustive = app->add_flag("--exhaustive", a->exhaustive,
                                   "measure every config the planner ranks (the whole sm80 space; the CPU's coarse "
                                   "grid), without early stop");
  auto* ranks = app->add_option("--ranks", a->ranks,
                                 "measure exactly these planner ranks side by side, each confirmed (e.g. the top "
                                 "three of an exhaustive search and tune's pick: 1,4,9,23)")
                    ->type_name("R,R,...")
                    ->check(check::parsed_by("--ranks", [](const std::string& t) { return parse_ranks(t).status(); }));
  auto* ties = app->add_option("--ties", a->ties,
                                "of configs the cost model prices alike (within 0.1%), at most N count towards --top; "
                                "the rest wait until the ranking runs out (default: 2; 0: no cap)")
                   ->type_name("N")
                   ->check(check::integer(0, 1000000, "0 for no cap, or 1 to 1000000"));
  ties->excludes(exhaustive);
  ties->excludes(ranks);
  top->excludes(exhaustive);
  exhaustive->excludes(top);
  ranks->excludes(top);
  ranks->excludes(exhaustive);
  top->excludes(ranks);
  exhaustive->excludes(ranks);
  app->add_option("--budget", a->budget, "seconds for planning, compiling and screening (default: no limit)")
      ->type_name("S")
      ->check(check::seconds(false));
  app->add_option("--leaders", a->leaders, "screened leaders confirmed under the contract (default: 3)")
      ->type_name("N")
      ->check(check::integer(1, 1000, "1 to 1000"));
  app->add_option("--screen-reps", a->screen_reps, "timed reps per candidate when screening, at least (default: 3)")
      ->type_name("N")
      ->check(check::integer(1, 100000, "1 to 100000"));
  app->add_option("--family", a->family, "kernel family to tune (default: the profile's)")
      ->type_name("NAME")
      ->check(check::non_empty());
  app->add_flag("--force", a->force,
                "under mpirun: tune again the shapes the DB holds a record for (a rerun otherwise resumes, skipping "
                "them); a plain tune always tunes every shape");
  app->add_flag("--store-noisy", a->store_noisy,
                "record the winner even when its measurement still looks disturbed after the second one (a busy "
                "machine you cannot quieten); the report says it was noisy");
  return {app, [a] { return run_tune(*a); }};
}

}  // namespace tileforge::cli
