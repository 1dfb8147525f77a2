// The `tileforge plan` verb as a function of already-parsed options, so that plan.cpp only registers the options
// and calls it (and tests run it without a process). Tool code: the exit codes and messages are the CLI's.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "db/location.hpp"

namespace tileforge::cli {

// Option values as the user typed them (parsed here, so that every error names the option in one style).
struct PlanCommandOptions {
  std::vector<std::string> shapes;  // --shape MxNxK (repeatable; at least one)
  std::string dtype;                // --dtype: input type of A and B (default f32)
  std::string out_dtype;            // --out-dtype (default: the input type)
  std::string accum;                // --accum (default f32)
  std::string layout;               // --layout RR|RC|CR|CC|all (default RR)
  std::string lda, ldb, ldc;        // --lda/--ldb/--ldc (default: tight)
  std::string batch;                // --batch (default 1)
  std::string device = "auto";      // --device cpu|cuda[:N]|auto: whose profile to plan for when --profile is absent
  std::string profile;              // --profile NAME|FILE: plan for this chip (present or not)
  std::string family;               // --family auto or a registered family's name
  std::vector<std::string> sets;    // --set NAME=VALUE (repeatable)
  std::string threads;              // --threads (CPU plans; default: all cores of the profile)
  bool explain = false;             // --explain: the full decision log
  std::string format = "text";      // --format text|table|json (text and table are the same)
  int top = 5;                      // --top N alternatives
  bool all_rejected = false;        // --all-rejected
  bool nondeterministic = false;    // --nondeterministic: float-atomic sums compete (PlanOptions::deterministic)
  // --compile: compile each served plan's choice for the chip's target into the kernel cache (families compiled at
  // run time, through their own compiler, which needs no GPU: a plan for a chip that is not present builds its
  // binary all the same), and say what the compiler reported.
  bool compile = false;
  // --db PATH / --no-db: the tuning DB whose record for each problem is reported beside the plan (read-only; a
  // missing --db file is an error, a missing default DB is skipped).
  db::LocationRequest db;
};

// Plans every shape x layout (and with `compile`, compiles each choice: a failed compile exits 1). Prints per plan
// the summary line, the analysis, the runner-up and the binding limit (or the explanation with --explain, or one JSON
// document {"tool", "version", "verb", "environment", "rows"} with --format json), and what the tuning DB holds for
// the problem when there is a DB, on `out`; errors as "tileforge plan: error: ..."
// on `err`. Returns 0 when every plan chose a config, 1 when a chip or precision is not served (the plans still
// print their analysis) or the device cannot be opened, 2 for bad options (nothing is planned).
int plan_command(const PlanCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace tileforge::cli
