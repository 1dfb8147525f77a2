// One GEMM on the GPU checked against the float64 reference computed on the device: random operands placed at an
// offset past an aligned base (to reach misaligned pointers), C filled with NaN first when beta = 0 (an element left
// unwritten shows), every element compared. Shared by the GPU tests of the CUDA families and backend.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "measure/timer.hpp"
#include "verify/verify.hpp"

namespace tileforge::testing {

struct GpuRun {
  std::string family;          // the family of the kernel that ran ("" when it did not)
  verify::ErrorReport error;
  Status check;                // verify::check's verdict
};

// Runs `config` (the backend's heuristic when null) through `backend` on `device`, reporting gtest failures for
// every step that goes wrong.
GpuRun run_on_gpu(Backend& backend, const Device& device, measure::RepTimer& timer, const Problem& problem,
                  const Config* config, int64_t offset_elems = 0, uint64_t seed = 1);

}  // namespace tileforge::testing
