// tileforge's own CPU backend: families cpu-avx512, cpu-avx2 and cpu-generic behind the Backend interface.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "backends/cpu/blocking.hpp"

namespace tileforge::cpu {

// The best family the host can run: cpu-avx512 (AVX-512F/BW/DQ/VL + OS state), cpu-avx2 (AVX2 + FMA), else
// cpu-generic.
std::string host_family();
// Whether the host can run a family, with the missing ISA named when not.
Support family_runs_here(std::string_view family);
// The families in preference order.
const std::vector<std::string>& all_families();

// The version of the cpu families (ParamSpace::version): bump when a change makes old tuned records invalid.
inline constexpr int kFamilyVersion = 1;

// Whether B can be read in place (PACK_B = 0): its elements are f32 and contiguous along N.
bool can_stream_b(const Problem& problem);

// The backend's own pick without a cost model: the analytic block sizes `blocks` of `family`, and PACK_B = 0 when B
// can be read in place and C has so few rows that packing B would not repay itself. The backend's heuristic and
// the planner's reference config are both this.
Config analytic_config(std::string_view family, const Problem& problem, const BlockSizes& blocks);

// The parameter space of a family for a problem (MR, NR, KC, MC, NC, PACK_B with their constraints), whether or
// not the host runs that family: the planner plans for CPUs that are not present.
const ParamSpace& family_space(std::string_view family, const Problem& problem);

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace tileforge::cpu
