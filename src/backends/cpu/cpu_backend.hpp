// tileforge's own CPU backend: families cpu-avx512, cpu-avx2 and cpu-generic behind the Backend interface.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backends/backend.hpp"

namespace tileforge::cpu {

// The best family the host can run: cpu-avx512 (AVX-512F/BW/DQ/VL + OS state), cpu-avx2 (AVX2 + FMA), else
// cpu-generic.
std::string host_family();
// Whether the host can run a family, with the missing ISA named when not.
Support family_runs_here(std::string_view family);
// The families in preference order.
const std::vector<std::string>& all_families();

// The parameter space of a family for a problem (MR, NR, KC, MC, NC, PACK_B with their constraints), whether or
// not the host runs that family: the planner plans for CPUs that are not present.
ParamSpace family_space(std::string_view family, const Problem& problem);

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace tileforge::cpu
