// `tileforge banks`: one warp's shared-memory bank conflicts, per instruction, for a family's layout at a config.
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "options.hpp"
#include "plan/bank_conflicts.hpp"

namespace tileforge::cli {

Command add_banks_command(CLI::App& parent) {
  auto o = std::make_shared<plan::banks::BanksCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "banks", "Simulate one warp's shared-memory accesses per instruction for a kernel family's layout and swizzle "
               "at a config (or an unswizzled teaching tile) and report each instruction's bank-conflict degree "
               "and wavefronts (docs/BANKS.md)");
  app->add_option("--family", o->family, "sm80 or sm90: the family whose shared-memory layout is simulated");
  app->add_option("--set", o->sets, "pin a parameter: NAME=VALUE (repeatable); the planner fills the rest")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--dtype", o->dtype, "input type of A and B: f16 or bf16 (default f16)");
  app->add_option("--layout", o->layout, "RR, RC, CR or CC (default RR)");
  app->add_option("--shape", o->shape, "MxNxK the planner fills unpinned parameters for (default 4096x4096x4096)")
      ->type_name("MxNxK");
  app->add_option("--profile", o->profile, "chip profile the planner plans for (default h200)");
  app->add_option("--raw-row-bytes", o->raw_row_bytes,
                  "instead of a family: an unswizzled 16-bit tile with rows N bytes apart, thread t at row t")
      ->type_name("N");
  app->add_option("--instruction", o->instruction,
                  "with --raw-row-bytes: ldmatrix.x4 (default), ldmatrix.x2, ldmatrix.x1, ld.shared.b32, "
                  "ld.shared.v2.b32, ld.shared.v4.b32");
  app->add_option("--format", o->format, "table or json (default table)");
  app->add_flag("--heatmap", o->heatmap, "for each instruction's worst issue: its phases as rows of 32 banks");
  return {app, [o] {
    // Collected, then written once: nothing reaches stdout when the verb fails.
    std::ostringstream out;
    const int code = plan::banks::banks_command(*o, out, std::cerr);
    write_stdout(out.str());
    return code;
  }};
}

}  // namespace tileforge::cli
