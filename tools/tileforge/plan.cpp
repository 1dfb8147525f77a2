// `tileforge plan`: the planner's analysis, choice, alternatives and rejections for a shape on any chip profile, and
// the tuning DB's record beside them.
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "options.hpp"
#include "plan/kernel_family.hpp"
#include "plan_command.hpp"

namespace tileforge::cli {
namespace {

// The shared problem, device and output options, and plan's own.
struct PlanArgs {
  ProblemArgs problem;
  DeviceArgs device;
  OutputArgs output;
  DbArgs db;
  std::vector<std::string> sets;
  PlanCommandOptions own;  // --family, --explain, --top, --all-rejected, --compile
};

// "table" is what the other verbs call plan's text form.
const std::vector<std::string> kFormats = {"text", "table", "json"};

// The library's options from the parsed ones: values the validators passed, as the library takes them.
PlanCommandOptions command_options(const PlanArgs& a) {
  PlanCommandOptions o = a.own;
  const ProblemArgs& p = a.problem;
  o.shapes = p.shapes;
  o.dtype = p.dtype;
  o.out_dtype = p.out_dtype;
  o.accum = p.accum;
  o.layout = p.layout;
  auto given = [](int64_t v, int64_t fallback) { return v == fallback ? std::string() : fmt::format("{}", v); };
  o.lda = given(p.lda, 0);
  o.ldb = given(p.ldb, 0);
  o.ldc = given(p.ldc, 0);
  o.batch = given(p.batch, 1);
  o.device = a.device.device;
  o.profile = a.device.profile;
  o.threads = given(a.device.threads, 0);
  o.sets = a.sets;
  o.format = a.output.format;
  return o;
}

int run_plan(const PlanArgs& a) {
  // Collected, then written once (to --out or stdout): nothing is written when the options are refused.
  std::ostringstream text;
  PlanCommandOptions o = command_options(a);
  auto db = db_request_from(a.db);
  if (!db) return fail("plan", db.status());
  o.db = *db;
  const int code = plan_command(o, text, std::cerr);
  if (code == kExitUsage) return code;
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail("plan", s);
  const int written = emit("plan", out, text.str());
  return written != kExitOk ? written : code;
}

}  // namespace

Command add_plan_command(CLI::App& parent) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* app = parent.add_subcommand(
      "plan", "Plan a GEMM for a chip (present or not): the analysis, the chosen config with its predicted time, "
              "the runner-up and the binding limit; --explain adds the decision log, the top alternatives and every "
              "rejected candidate with its reason");
  add_problem_options(*app, a->problem, ProblemFlags::plan);
  // Plans may target another chip: --threads is bounded by any chip's count, not this host's cores.
  add_device_options(*app, a->device, ThreadBound::any_chip);
  std::vector<std::string> families = plan::family_names();
  families.insert(families.begin(), "auto");
  app->add_option("--family", a->own.family,
                  "auto or a registered family: sm90, sm80, sm80_skinny, triton, cpu-avx512, cpu-avx2, cpu-generic "
                  "(default auto)")
      ->check(check::one_of(families, "family"));
  add_set_option(*app, a->sets, "pin a parameter: NAME=VALUE (repeatable)");
  add_nondeterministic_flag(*app, a->own.nondeterministic);
  app->add_flag("--explain", a->own.explain, "print the whole decision log, grouped by the four layers");
  add_output_options(*app, a->output, kFormats, kOutInsteadOfStdout);
  // The DB's record for each problem is reported beside the plan; plan only reads it (a missing --db is an error).
  add_db_options(*app, a->db, true);
  app->add_option("--top", a->own.top, "alternatives to show (default 5)")
      ->check(check::integer(0, 1000000, "0 to 1000000"));
  app->add_flag("--all-rejected", a->own.all_rejected, "list every rejected candidate, not a few per reason");
  app->add_flag("--compile", a->own.compile,
                "compile each choice for the chip's target into the kernel cache and report it (no GPU needed; "
                "the triton family builds for gfx942 with --profile mi300x)");
  return {app, [a] { return run_plan(*a); }};
}

}  // namespace tileforge::cli
