// The command line's limits: --threads within the CPUs this process may run on, and an empty option value refused
// by the option's name (it used to read as "not given" and fall back to the default without a word).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hw/hw.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using tileforge::testing::run_cli;

class CliLimits : public ::testing::Test {
 protected:
  void SetUp() override { dir = tileforge::testing::fresh_test_dir("tileforge_cli_limits_"); }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(CliLimits, ThreadsBeyondTheCpusAreRefused) {
  const std::string cpus = std::to_string(tileforge::hw::usable_cpu_count());
  const std::string one_more = std::to_string(tileforge::hw::usable_cpu_count() + 1);
  for (const std::string& threads : {one_more, std::string("100000000")}) {
    for (const char* verb : {"bench", "verify", "devices"}) {
      std::vector<std::string> args = {verb, "--threads", threads};
      if (std::string(verb) != "devices") args.insert(args.end(), {"--shape", "8x8x8", "--quiet"});
      const auto r = run_cli(args, dir);
      EXPECT_EQ(r.exit_code, 2) << verb << " --threads " << threads << ": " << r.err;
      EXPECT_EQ(r.out, "");
      for (const std::string& m : {std::string("--threads"), threads, "1 to " + cpus})
        EXPECT_NE(r.err.find(m), std::string::npos) << m << " in: " << r.err;
    }
  }
}

TEST_F(CliLimits, EmptyValuesAreRefusedByName) {
  const std::vector<std::string> bench_options = {
      "--suite",    "--dtype",   "--out-dtype", "--accum",  "--layout", "--lda",      "--ldb",      "--ldc",
      "--batch",    "--device",  "--profile",   "--threads", "--format", "--out",     "--set",      "--seed",
      "--min-reps", "--min-time", "--max-time", "--max-memory"};
  for (const std::string& option : bench_options) {
    std::vector<std::string> args = {"bench", option, ""};
    if (option != "--suite") args.insert(args.end(), {"--shape", "8x8x8"});
    args.push_back("--quiet");
    const auto r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.err;
    EXPECT_EQ(r.out, "") << option;
    EXPECT_NE(r.err.find(option + ": is empty"), std::string::npos) << option << ": " << r.err;
  }
  for (const std::string option : {"--shape", "--alpha", "--beta"}) {
    std::vector<std::string> args = {"verify", option, ""};
    if (option != "--shape") args.insert(args.end(), {"--shape", "8x8x8"});
    const auto r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.err;
    EXPECT_NE(r.err.find(option + ": is empty"), std::string::npos) << option << ": " << r.err;
  }
}

}  // namespace
