// The article's optimization ladder as a command: from a baseline config, one layer of decisions at a time, each
// step's candidates measured against the current config and the native library in one interleaved run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "bench/report.hpp"

namespace tileforge::bench {

struct LadderRow {
  std::string step;     // "baseline", "hardware mapping", ..., "dispatch", "FP16 accumulation"
  std::string change;   // "MR 6 -> 14, NR 32 -> 64", "kept (...)", or what the row is
  Config config;        // the config this row measures
  std::optional<Measured> ours;    // measured in this step's run
  std::optional<Measured> native;  // measured in the same run
  std::string native_missing;
  int measured = 0;     // configs of ours timed in this step (the current one and its candidates)
  double predicted_ms = 0;  // the cost model's time for `config` (0: not in the planner's ranking)
  double peak_tflops = 0;
  std::vector<std::string> notes;
  std::optional<Verdict> verdict;  // the bottleneck verdict of `ours` (harness.hpp)
  std::optional<double> ratio() const;  // native median / ours
};

struct Ladder {
  Problem problem;
  std::string family;
  std::vector<LadderRow> rows;
  // The last FP32-accumulation step's best config against the config bench dispatches, measured in one run:
  // best median / dispatch median - 1 (negative: the ladder's config is faster).
  std::optional<double> dispatch_gap;
  Environment environment;
};

struct LadderOptions {
  int candidates = 4;  // candidates per step besides the current config: the cost model's best of that layer
};

// The article's baseline for a family (BLOCK 128x128x32, 2 stages, 4 warps, the narrowest vectors on GPUs; the
// smallest register block with no cache blocking on CPUs), as the legal config nearest those values.
Expected<Config> ladder_baseline(const std::string& family, const ParamSpace& space, const std::vector<Config>& legal);

// Runs the ladder for `problem` on `device`: baseline, the four layers of DESIGN.md in order (each parameter of the
// family's space belongs to one), the config bench dispatches, and on f16 inputs the FP16-accumulation step.
Expected<Ladder> run_ladder(const Device& device, const Problem& problem, const Settings& settings, RepTimer& timer,
                            const LadderOptions& options = {});

std::string ladder_table(const Ladder& ladder, bool markdown);
std::string ladder_json(const Ladder& ladder);

}  // namespace tileforge::bench
