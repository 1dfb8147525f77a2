// Host measurements kept across processes: the highest of each number wins, bad files are replaced, "off" keeps none.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/host_measurements.hpp"
#include "support/test_support.hpp"

namespace tileforge::hw {
namespace {

namespace fs = std::filesystem;

class HostMeasurementsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = testing::fresh_test_dir("tileforge_host_");
    file = (dir / "sub" / "host.json").string();
    if (const char* v = std::getenv("TILEFORGE_HOST_CACHE")) saved = v;
    setenv("TILEFORGE_HOST_CACHE", file.c_str(), 1);
  }
  void TearDown() override {
    if (saved) {
      setenv("TILEFORGE_HOST_CACHE", saved->c_str(), 1);
    } else {
      unsetenv("TILEFORGE_HOST_CACHE");
    }
    fs::remove_all(dir);
  }
  fs::path dir;
  std::string file;
  std::optional<std::string> saved;
};

TEST_F(HostMeasurementsTest, HighestOfEveryProcessIsKeptPerHost) {
  auto first = remember_host_measurements("cpu A | 2 cpus | avx2", 120.5, 14.0, "2026-11-01");
  EXPECT_DOUBLE_EQ(first.fma_gflops, 120.5);
  EXPECT_DOUBLE_EQ(first.bandwidth_gbps, 14.0);
  EXPECT_EQ(first.processes, 1);
  EXPECT_EQ(first.since, "2026-11-01");
  EXPECT_EQ(first.file, file);
  // A busy second process measures a lower peak and a higher bandwidth: each number keeps its highest.
  auto second = remember_host_measurements("cpu A | 2 cpus | avx2", 80.25, 16.5, "2026-11-02");
  EXPECT_DOUBLE_EQ(second.fma_gflops, 120.5);
  EXPECT_DOUBLE_EQ(second.bandwidth_gbps, 16.5);
  EXPECT_EQ(second.processes, 2);
  EXPECT_EQ(second.since, "2026-11-01");
  // Another host (a different core count) starts its own record.
  auto other = remember_host_measurements("cpu A | 4 cpus | avx2", 60.0, 9.0, "2026-11-03");
  EXPECT_DOUBLE_EQ(other.fma_gflops, 60.0);
  EXPECT_EQ(other.processes, 1);
  std::ifstream in(file);
  auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["hosts"].size(), 2u);
  EXPECT_DOUBLE_EQ(doc["hosts"]["cpu A | 2 cpus | avx2"]["fma_gflops"].get<double>(), 120.5);
  // No temporary file is left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(fs::path(file).parent_path())) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1);
}

TEST_F(HostMeasurementsTest, MalformedFileIsReplacedAndOffKeepsNothing) {
  fs::create_directories(fs::path(file).parent_path());
  std::ofstream(file) << "{\"hosts\": [1, 2";  // cut short
  auto m = remember_host_measurements("cpu B", 50.0, 5.0, "2026-11-04");
  EXPECT_DOUBLE_EQ(m.fma_gflops, 50.0);
  EXPECT_EQ(m.processes, 1);
  EXPECT_EQ(m.file, file);
  std::ifstream in(file);
  EXPECT_EQ(nlohmann::json::parse(in)["hosts"]["cpu B"]["processes"].get<int>(), 1);

  setenv("TILEFORGE_HOST_CACHE", "off", 1);
  EXPECT_EQ(host_measurements_file(), "");
  auto off = remember_host_measurements("cpu B", 10.0, 1.0, "2026-11-05");
  EXPECT_DOUBLE_EQ(off.fma_gflops, 10.0);  // this process's own numbers, nothing read or written
  EXPECT_EQ(off.file, "");
}

TEST_F(HostMeasurementsTest, UnwritableLocationLeavesTheProcessItsOwnNumbers) {
  // A regular file where the folder should be: the file cannot be created.
  fs::create_directories(dir);
  std::ofstream(dir / "blocker") << "x";
  setenv("TILEFORGE_HOST_CACHE", (dir / "blocker" / "host.json").c_str(), 1);
  auto m = remember_host_measurements("cpu C", 33.0, 3.0, "2026-11-06");
  EXPECT_DOUBLE_EQ(m.fma_gflops, 33.0);
  EXPECT_DOUBLE_EQ(m.bandwidth_gbps, 3.0);
  EXPECT_EQ(m.file, "");
}

}  // namespace
}  // namespace tileforge::hw
