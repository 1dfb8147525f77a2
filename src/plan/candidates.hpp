// Candidate configs of a kernel family for a problem on a chip profile (no Device needed): the family's declared
// space, the values the planner tries, pins, and an enumeration that keeps every rejected config with its reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::plan {

using Pins = std::vector<std::pair<std::string, int64_t>>;

inline constexpr std::string_view kLayers[] = {"hardware mapping", "data scheduling", "compute pipeline",
                                               "parameter adaptation"};

// What the planner tries for one family: either the Cartesian product of `grid` (one list of values per
// declared parameter, in declaration order) or, when `list` is non-empty, exactly those configs.
struct FamilySpace {
  ParamSpace space;                         // declarations and constraints, as the backend declares them
  std::vector<std::vector<int64_t>> grid;   // product mode
  std::vector<Config> list;                 // list mode
  std::optional<Config> reference;          // the backend's own pick without a cost model (heuristic/analytic)
  std::string reference_name;               // "the sm80 heuristic", "the analytic BLIS model"
  std::vector<std::string> reference_reasons;
  std::string coverage;                     // "the full space", "a grid around the analytic choice: ..."
};

// The families the planner knows: "sm80", "cpu-avx512", "cpu-avx2", "cpu-generic".
const std::vector<std::string>& planner_families();

// The cpu backend's parameter space for a family (any family, whatever the host runs): the same declarations and
// constraint texts as the backend's space().
ParamSpace cpu_family_space(std::string_view family, const Problem& problem);

// The space the planner tries for `family` on `profile`. `threads` sizes the CPU's analytic model (0: all cores of
// the profile). Unknown families are refused with the list.
Expected<FamilySpace> family_space(std::string_view family, const Problem& problem, const hw::HwProfile& profile,
                                   int threads = 0);

// The rejected configs of one enumeration, stored compactly (a full sm80 space has ~200k combinations).
struct RejectedSet {
  std::string family;
  std::vector<std::string> names;   // parameter names, in declaration order
  std::vector<int64_t> values;      // names.size() values per rejected config
  std::vector<uint32_t> reason;     // index into `reasons`, per rejected config
  std::vector<std::string> reasons; // constraint texts (or "NAME = V is not legal ...")

  std::size_t size() const { return reason.size(); }
  Config config(std::size_t i) const;
  void add(const Config& config, const std::string& why);
};

struct Enumeration {
  std::vector<Config> legal;
  RejectedSet rejected;
  std::size_t combinations = 0;  // legal + rejected
};

// Applies the pins to the space (an unknown name or a value outside the declared ones is refused with the allowed
// ones), then checks every combination: legal ones are kept, every other one is kept with the first constraint it
// violates. When pins leave no legal config, the result is an error naming the constraint that rules them out.
Expected<Enumeration> enumerate_candidates(const FamilySpace& family, const Pins& pins,
                                           std::string_view profile_name);

// The first constraint (or undeclared value) a config violates, or nothing when it is legal.
std::optional<std::string> first_violation(const ParamSpace& space, const Config& config);

// The decision layer a constraint belongs to, from what it limits (shared memory and tiles: data scheduling;
// registers, warps, threads: parameter adaptation; vector loads, alignment, micro-kernels: hardware mapping;
// pipeline stages: compute pipeline).
std::string_view constraint_layer(std::string_view constraint_text);

// A constraint's text with the config's own numbers: "needs 196608 B > 166912 B of shared memory per block".
std::string violation_detail(std::string_view family, std::string_view constraint_text, const Config& config,
                             const hw::HwProfile& profile);

}  // namespace tileforge::plan
