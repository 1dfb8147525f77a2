// The analytic cost model: predicted time of one config from FLOPs at the compute unit's rate (with the tile's
// efficiency), bytes per memory level at that level's bandwidth, core balance, pipeline fill and fixed overheads.
// Pure functions of (Problem, HwProfile, Config); the constants and their reasons are in cost_constants.hpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hw/hw_profile.hpp"
#include "plan/analysis.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::plan {

// Bytes that cross one memory level and the time they take at its bandwidth.
struct LevelTime {
  std::string level;        // "HBM", "L2", "shared memory", "DRAM", "L3"
  double bytes = 0;
  double bandwidth = 0;     // bytes per second available to this problem
  double seconds = 0;
};

struct Cost {
  double seconds = 0;             // the prediction
  double compute_s = 0;           // FLOPs (with padding) at the tile's rate on the busiest core
  double compute_share = 0;       // rate of the compute term as a share of the chip's peak for this precision
  std::vector<LevelTime> levels;  // memory levels, outermost first
  double latency_s = 0;           // GPU: what the loads in flight allow (Little's law); 0 on CPUs
  double body_s = 0;              // max(compute, levels, latency) + the leak of the non-binding streams
  std::string bound;              // the term that set body_s: "compute", a level's name, or "latency"
  double fill_s = 0;              // pipeline prologues (GPU) or packing phases (CPU) that nothing overlaps
  double overhead_s = 0;          // launches, barriers, operand copies
  double dram_bytes = 0;          // bytes read and written at the outermost level
  int occupancy = 1;              // GPU: blocks per SM; CPU: 1
  std::string occupancy_limit;    // GPU: "shared memory", "registers", "threads", "blocks"
  WaveAnalysis waves;             // tiles over cores (CPU: MR x NR micro-tiles over threads)
  std::vector<std::string> notes; // facts the decision log quotes
  bool valid = true;              // false when the profile lacks a number the model needs (then seconds = inf)
};

// One term of a prediction: a flow of work or bytes (which leaks into the time when it does not bind), or a bound
// such as latency (which does not).
struct CostTerm {
  const char* name;
  double seconds;
  bool stream;
};
// Sets cost.body_s and cost.bound: the largest term plus kOverlapLeak x the streams other than the largest stream
// (a roofline with a soft corner). Returns the largest term's seconds (the binding one, named in cost.bound).
double combine_terms(Cost& cost, const std::vector<CostTerm>& terms);
// One number of the chip record a cost model needs: whether the record has it, and its field's name and meaning.
struct RequiredField {
  bool present;
  const char* field;  // "boost_clock_ghz (the SM clock)"
};
// "the profile records no <field>" for the first field absent, in the order given; nothing when all are there.
std::optional<std::string> first_missing(std::initializer_list<RequiredField> needed);

// A cost the model cannot give (the profile lacks a number it needs): seconds = inf, the reason in notes.
Cost invalid_cost(std::string why);

}  // namespace tileforge::plan
