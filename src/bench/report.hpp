// Bench reports: the environment of a run and its rows as JSON (schemas/bench.schema.json), a table, or CSV.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "bench/harness.hpp"
#include "measure/bandwidth.hpp"

namespace tileforge::bench {

// What every result records about where and how it was measured (DESIGN.md: chip, driver, toolkit, clocks,
// tool version, ...). Fields that a device cannot tell are empty and become null in JSON.
struct Environment {
  std::string tool_version;
  std::string date;             // ISO 8601, UTC
  std::string device;           // "cpu" or the GPU's name
  std::string device_kind;      // "cpu" or "cuda": decides GFLOP/s or TFLOP/s in the table
  std::string profile;          // the HwProfile name used for peaks and planning
  std::string host;             // "hostname (CPU brand)"
  std::string compiler;         // what built the library: "GNU 12.2.0"
  std::optional<std::string> driver, toolkit;
  std::string cache_state = "warm";
  int threads = 0;
  uint64_t seed = 0;
  std::vector<std::string> backends;  // "cpu (ours)", "openblas (vendor)", ...
  // The vendor libraries of this device kind: which build ran and its thread settings (so rows are comparable).
  struct Library {
    std::string name, version, threads, file, why_not;
    bool loaded = false;
  };
  std::vector<Library> libraries;
  // The device's memory bandwidth measured in this run (measure_device_bandwidth, GPU runs only): rows report their
  // GB/s as a fraction of it. Empty on a CPU, where it is not measured, and when the measurement failed
  // (bandwidth_missing says why).
  std::optional<measure::CopyBandwidth> bandwidth;
  std::string bandwidth_missing;
};

Environment collect_environment(const Device& device, std::string_view cache_state, uint64_t seed);

struct Report {
  Environment environment;
  std::vector<CaseResult> rows;
};

std::string to_json(const Report& report);    // the bench schema, indented
// The report's environment object (the schema's, plus the device bandwidth measured in the run), which ladder and
// verify reports carry too.
nlohmann::ordered_json environment_json(const Environment& environment);
// For people: GFLOP/s on the CPU, TFLOP/s and GB/s on GPUs; `markdown`: the rows as a Markdown table.
std::string to_table(const Report& report, bool markdown = false);
std::string to_csv(const Report& report);     // one line per row, header first
// "compute 82%", "HBM 45% !" (below kVerdictFlag), or "-".
std::string verdict_text(const std::optional<Verdict>& verdict);
// JSON Lines of a run in progress (bench --out FILE writes FILE.partial as rows finish): the environment as
// {"environment": {...}} first, then each row as the JSON report holds it (bandwidth_fraction null on GPUs, where
// the device bandwidth is measured after the rows).
std::string partial_header_line(const Environment& environment);
std::string partial_row_line(const CaseResult& row, const Environment& environment);

}  // namespace tileforge::bench
