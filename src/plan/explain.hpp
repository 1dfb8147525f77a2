// Renders a Plan for people (`tileforge plan --explain`) and as JSON (`--format json`).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/planner.hpp"

namespace tileforge::plan {

struct ExplainOptions {
  int top_n = -1;             // alternatives after the choice; -1: the plan's own top_n
  bool all_rejected = false;  // list every rejected config instead of a few examples per reason
  int examples = 3;           // examples per rejection reason when not all
};

// The full explanation: analysis (bound, ridge, roofline floor, waves, paths), the choice with its predicted time
// and the limit that bound it, the decision log under the four layers, the top alternatives, and the rejected
// candidates grouped by layer and reason.
std::string render_explain(const Plan& plan, const ExplainOptions& options = {});

// One line: "4096x4096x4096 f16 on a100-sxm (prediction): FAMILY BLOCK_M=128 ... predicted 532 us (258 TFLOP/s)".
std::string render_summary(const Plan& plan);

// `tileforge plan`'s default: the summary line, then the analysis in one line (intensity against the ridge, the
// roofline floor), the runner-up with its distance from the choice, and the binding limit.
std::string render_brief(const Plan& plan);

// The config in its family's declaration order: "FAMILY BLOCK_M=128 BLOCK_N=256 ...".
std::string describe_config(const Plan& plan, const Config& config);

// The plan as JSON: problem, profile, label, analysis, served/unserved, choice (config, prediction, cost terms,
// binding limit), alternatives, rejected groups (with every config when all_rejected) and the decisions.
nlohmann::json to_json(const Plan& plan, const ExplainOptions& options = {});

}  // namespace tileforge::plan
