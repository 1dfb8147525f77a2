// One GEMM on the GPU checked against the float64 reference computed on the device: random operands placed at an
// offset past an aligned base (to reach misaligned pointers), C filled with NaN first when beta = 0 (an element left
// unwritten shows), every element compared. Shared by the GPU tests of the CUDA families and backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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
// every step that goes wrong. `prepared_for_beta_zero`: the kernel is prepared for the problem with beta 0 and then
// run with the problem's own beta, as a caller that prepared once and calls with another beta does.
GpuRun run_on_gpu(Backend& backend, const Device& device, measure::RepTimer& timer, const Problem& problem,
                  const Config* config, int64_t offset_elems = 0, uint64_t seed = 1,
                  bool prepared_for_beta_zero = false);

// A fixture for tests on a CUDA device: the device, a timer on it (its stream, buffers and the device reference) and
// the cuda backend; skips visibly without a GPU.
class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // run_on_gpu through the cuda backend (or the backend named `backend`); the family of the kernel that ran.
  std::string run(const Problem& problem, const Config* config, int64_t offset_elems = 0, uint64_t seed = 1,
                  const std::string& backend = "cuda") {
    return run_on_gpu(*find_backend(backend), device_, *timer_, problem, config, offset_elems, seed).family;
  }

  // Host bytes in a fresh device buffer.
  std::unique_ptr<measure::OperandBuffer> upload(const std::vector<unsigned char>& host);
  // `kernel` run on `args` (whose C is `c`), the context synchronized, C read back: for run-to-run comparisons.
  // Empty, with a test failure, when a step fails.
  std::vector<unsigned char> run_and_read(const Kernel& kernel, const Problem& problem, const GemmArgs& args,
                                          measure::OperandBuffer& c);
  // Bit-identical: `config` prepared once, run on the same operands three times, the third on another stream (its
  // own workspace); C must be written and the same to the bit each time.
  void expect_same_bits(const Problem& problem, const Config& config, uint64_t seed);

  Device device_;
  std::unique_ptr<measure::RepTimer> timer_;
  Backend* cuda_ = nullptr;
};

}  // namespace tileforge::testing
