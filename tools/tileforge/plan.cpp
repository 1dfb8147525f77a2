// `tileforge plan`: the planner's analysis, choice, alternatives and rejections for a shape on any chip profile.
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "options.hpp"
#include "plan/plan_command.hpp"

namespace tileforge::cli {

Command add_plan_command(CLI::App& parent) {
  auto o = std::make_shared<plan::PlanCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "plan", "Plan a GEMM for a chip (present or not): roofline analysis, the chosen config with its predicted time "
              "and binding limit, the top alternatives and every rejected candidate with its reason");
  app->add_option("--shape", o->shapes, "MxNxK (repeatable)")->type_name("MxNxK")->multi_option_policy(
      CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--dtype", o->dtype, "input type of A and B: f32, f16, bf16 (default f32)");
  app->add_option("--out-dtype", o->out_dtype, "type of C (default: the input type)");
  app->add_option("--accum", o->accum, "accumulator: f32, f16 (default f32)");
  app->add_option("--layout", o->layout, "RR, RC, CR, CC or all (default RR)");
  app->add_option("--lda", o->lda, "leading dimension of A (default: tight)");
  app->add_option("--ldb", o->ldb, "leading dimension of B (default: tight)");
  app->add_option("--ldc", o->ldc, "leading dimension of C (default: tight)");
  app->add_option("--batch", o->batch, "batch count (default 1)");
  app->add_option("--device", o->device, "cpu, cuda[:N] or auto: the chip to plan for without --profile");
  app->add_option("--profile", o->profile, "a chip profile name or JSON file: plan for this chip, present or not");
  app->add_option("--family", o->family,
                  "auto or a registered family: sm90, sm80, sm80_skinny, triton, cpu-avx512, cpu-avx2, cpu-generic "
                  "(default auto)");
  app->add_option("--set", o->sets, "pin a parameter: NAME=VALUE (repeatable)")->multi_option_policy(
      CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--threads", o->threads, "CPU threads the plan is for (default: all cores of the profile)");
  app->add_flag("--explain", o->explain, "print the whole decision log, grouped by the four layers");
  app->add_option("--format", o->format, "text, table or json (default text)");
  app->add_option("--top", o->top, "alternatives to show (default 5)");
  app->add_flag("--all-rejected", o->all_rejected, "list every rejected candidate, not a few per reason");
  app->add_flag("--compile", o->compile,
                "compile each choice for the chip's target into the kernel cache and report it (no GPU needed; "
                "the triton family builds for gfx942 with --profile mi300x)");
  return {app, [o] {
    // Collected, then written once: write_stdout keeps the cause of a failed write for main's check.
    std::ostringstream out;
    const int code = plan::plan_command(*o, out, std::cerr);
    write_stdout(out.str());
    return code;
  }};
}

}  // namespace tileforge::cli
