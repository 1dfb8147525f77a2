// Helpers shared by the tests: random operands for a Problem, and checking a result against float64.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hw/hw_profile.hpp"
#include "tileforge/tileforge.hpp"
#include "verify/verify.hpp"

namespace tileforge {
// Readable failure messages for configs ("cpu-avx2 MR=8 NR=8 ...").
inline void PrintTo(const Config& c, std::ostream* os) { *os << c.describe(); }
}  // namespace tileforge

namespace tileforge::testing {

// Buffers for A, B and C of a (normalized) problem over all batch entries, filled with random values;
// C is filled with random values too, so beta != 0 has something to scale.
struct Operands {
  Problem problem;  // normalized
  std::vector<unsigned char> a, b, c;
};
Operands make_operands(const Problem& problem, uint64_t seed);

// Reference for the operands as they are now (call before running the kernel, since C is overwritten).
verify::Reference reference_for(const Operands& ops);

// A problem with the given shape, layout and precision, tight leading dimensions.
Problem make_problem(int64_t m, int64_t n, int64_t k, Layout layout = Layout::RR, DType input = DType::f32,
                     DType output = DType::f32);

// An empty folder for the running test: the test temp dir / `prefix` + the test's name ('/' of parameterized names
// made '_'), removed first if an earlier run left it. The caller removes it when done.
std::filesystem::path fresh_test_dir(std::string_view prefix);

// A builtin chip record ("h200", "generic-avx2", ...) or a JSON file; a test failure and an empty record when it
// cannot be loaded.
hw::HwProfile profile(std::string_view name);

// Runs body(t) on `threads` threads at once and returns what each reported ("" when all went well), in thread order.
std::vector<std::string> run_in_threads(int threads, const std::function<std::string(int)>& body);

// The whole file as bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

// With TILEFORGE_TEST_PTX_DIR set, writes `ptx` there as NAME.ptx (nothing otherwise, nor for an empty one, a
// cache hit's): the NVRTC tests keep their configs' PTX so that a change to the kernels' code that must not change
// what they compile to can be checked by comparing the files of a run before it with those of a run after it.
void keep_ptx(std::string_view name, std::string_view ptx);

}  // namespace tileforge::testing
