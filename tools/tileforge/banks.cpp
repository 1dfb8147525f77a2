// `tileforge banks`: one warp's shared-memory bank conflicts, per instruction, for a family's layout at a config.
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "options.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"
#include "plan/bank_conflicts.hpp"

namespace tileforge::cli {

namespace {

// The library's options, and the output options every verb shares.
struct BanksArgs {
  plan::banks::BanksCommandOptions banks;
  OutputArgs output;
};

const std::vector<std::string> kFormats = {"table", "json"};

int run_banks(BanksArgs& a) {
  constexpr std::string_view verb = "banks";
  a.banks.format = a.output.format;
  // Collected, then written once: nothing reaches stdout or --out when the verb fails.
  std::ostringstream text;
  const int code = plan::banks::banks_command(a.banks, text, std::cerr);
  if (code == kExitUsage) return code;
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);
  const int written = emit(verb, out, text.str());
  return written != kExitOk ? written : code;
}

}  // namespace

Command add_banks_command(CLI::App& parent) {
  auto args = std::make_shared<BanksArgs>();
  plan::banks::BanksCommandOptions* o = &args->banks;
  CLI::App* app = parent.add_subcommand(
      "banks", "Simulate one warp's shared-memory accesses per instruction for a kernel family's layout and swizzle "
               "at a config (or an unswizzled teaching tile) and report each instruction's bank-conflict degree "
               "and wavefronts (docs/BANKS.md)");
  app->add_option("--family", o->family, "sm80 or sm90: the family whose shared-memory layout is simulated")
      ->check(check::one_of(plan::banks::bank_model_families(), "family with a bank model"));
  add_set_option(*app, o->sets, "pin a parameter: NAME=VALUE (repeatable); the planner fills the rest");
  app->add_option("--dtype", o->dtype, "input type of A and B: f16 or bf16 (default f16)")
      ->check(check::one_of({"f16", "bf16"}, "dtype for a bank model"));
  app->add_option("--layout", o->layout, "RR, RC, CR or CC (default RR)")
      ->check(check::one_of({"RR", "RC", "CR", "CC"}, "layout"));
  app->add_option("--shape", o->shape, "MxNxK the planner fills unpinned parameters for (default 4096x4096x4096)")
      ->type_name("MxNxK")
      ->check(check::parsed_by("--shape", [](const std::string& t) { return parse_shape(t, "--shape").status(); }));
  app->add_option("--profile", o->profile, "chip profile the planner plans for (default h200)")
      ->check(check::name_or_file(hw::builtin_profile_names, "profile"));
  app->add_option("--raw-row-bytes", o->raw_row_bytes,
                  "instead of a family: an unswizzled 16-bit tile with rows N bytes apart, thread t at row t")
      ->type_name("N")
      ->check(check::parsed_by("--raw-row-bytes", [](const std::string& t) -> Status {
        auto v = parse_int(t, "--raw-row-bytes");
        if (!v) return v.status();
        return plan::banks::raw_accesses(*v, "ldmatrix.x4").status();
      }));
  app->add_option("--instruction", o->instruction,
                  "with --raw-row-bytes: ldmatrix.x4 (default), ldmatrix.x2, ldmatrix.x1, ld.shared.b32, "
                  "ld.shared.v2.b32, ld.shared.v4.b32")
      ->check(check::one_of(plan::banks::raw_instructions(), "instruction"));
  add_output_options(*app, args->output, kFormats, kOutInsteadOfStdout);
  app->add_flag("--heatmap", o->heatmap, "for each instruction's worst issue: its phases as rows of 32 banks");
  return {app, [args] { return run_banks(*args); }};
}

}  // namespace tileforge::cli
