// Helpers shared by the tests: random operands for a Problem, and checking a result against float64.
#include "support/test_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "hw/hw.hpp"

namespace tileforge::testing {
namespace {

// Tests never read the user's tuning DB: dispatch in gemm() and bench, and every CLI run a test starts (it inherits
// the environment), looks at a scratch path that does not exist. Tests that need a DB pass their own.
const bool kScratchDb = [] {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tileforge-tests-no-db-" + std::to_string(getpid())) / "tune.db";
  setenv("TILEFORGE_DB", path.c_str(), 1);
  return true;
}();

}  // namespace

Operands make_operands(const Problem& problem, uint64_t seed) {
  Operands ops;
  ops.problem = problem.normalized();
  const Problem& p = ops.problem;
  auto bytes = [&](int64_t stride, int64_t span, DType t) {
    return std::size_t((p.batch - 1) * stride + span) * size_of(t);
  };
  ops.a.resize(bytes(p.stride_a, p.span_a(), p.precision.input));
  ops.b.resize(bytes(p.stride_b, p.span_b(), p.precision.input));
  ops.c.resize(bytes(p.stride_c, p.span_c(), p.precision.output));
  verify::fill_random(ops.a.data(), p.precision.input, int64_t(ops.a.size() / size_of(p.precision.input)), seed);
  verify::fill_random(ops.b.data(), p.precision.input, int64_t(ops.b.size() / size_of(p.precision.input)),
                      seed * 7919 + 1);
  verify::fill_random(ops.c.data(), p.precision.output, int64_t(ops.c.size() / size_of(p.precision.output)),
                      seed * 104729 + 2);
  return ops;
}

verify::Reference reference_for(const Operands& ops) {
  return verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
}

Problem make_problem(int64_t m, int64_t n, int64_t k, Layout layout, DType input, DType output) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.layout = layout;
  p.precision = {input, output, DType::f32};
  return p;
}

std::filesystem::path fresh_test_dir(std::string_view prefix) {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / (std::string(prefix) + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void keep_ptx(std::string_view name, std::string_view ptx) {
  const char* dir = std::getenv("TILEFORGE_TEST_PTX_DIR");
  if (!dir || !*dir || ptx.empty()) return;  // empty: a cache hit, which keeps no PTX
  std::filesystem::create_directories(dir);
  std::ofstream out(std::filesystem::path(dir) / (std::string(name) + ".ptx"), std::ios::binary);
  out.write(ptx.data(), std::streamsize(ptx.size()));
  if (!out) ADD_FAILURE() << "could not write " << name << ".ptx in " << dir;
}

hw::HwProfile profile(std::string_view name) {
  auto p = hw::load_profile(name);
  if (!p.ok()) {
    ADD_FAILURE() << "profile " << name << ": " << p.status().to_string();
    return hw::HwProfile{};
  }
  return *p;
}

std::vector<std::string> run_in_threads(int threads, const std::function<std::string(int)>& body) {
  std::vector<std::string> reports(std::size_t(std::max(0, threads)));
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t) team.emplace_back([&, t] { reports[std::size_t(t)] = body(t); });
  for (auto& th : team) th.join();
  return reports;
}

}  // namespace tileforge::testing
