// Host measurements kept across processes: the highest of each number wins, numbers outside the plausible bounds are
// dropped, bad files are replaced, "off" keeps none, and only a regular file is ever replaced (a link stays a link).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/host_measurements.hpp"
#include "support/test_support.hpp"
#include "support/unprivileged.hpp"

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
  // The cache file as another process left it: one host's entry.
  void store(const nlohmann::json& entry) {
    fs::create_directories(fs::path(file).parent_path());
    std::ofstream(file) << nlohmann::json{{"version", 1}, {"hosts", {{"cpu A", entry}}}}.dump();
  }
  nlohmann::json stored() {
    std::ifstream in(file);
    return nlohmann::json::parse(in)["hosts"]["cpu A"];
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

TEST_F(HostMeasurementsTest, ALinkToARegularFileStaysALink) {
  fs::create_directories(fs::path(file).parent_path());
  const fs::path real = dir / "real-host.json";
  std::ofstream(real) << "{}";
  fs::create_symlink(real, file);
  auto m = remember_host_measurements("cpu D", 40.0, 4.0, "2026-11-07");
  EXPECT_EQ(m.file, file);
  EXPECT_TRUE(fs::is_symlink(file));
  std::ifstream in(real);
  EXPECT_EQ(nlohmann::json::parse(in)["hosts"]["cpu D"]["processes"].get<int>(), 1);
  // The temporary file was made beside the target, and is gone.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 2);  // sub/ and real-host.json
}

TEST_F(HostMeasurementsTest, ALinkToAnythingElseOrADeviceIsNeverReplaced) {
  fs::create_directories(fs::path(file).parent_path());
  // NOTE: links to a folder, to nothing and to /dev/null; a FIFO is not among them because the code before this
  // rule opened it for reading and waited for ever (core/output_path_test.cpp checks that FIFOs are refused).
  for (const fs::path& points_at : {dir / "folder", dir / "missing.json", fs::path("/dev/null")}) {
    if (points_at.filename() == "folder") fs::create_directories(points_at);
    fs::remove(file);
    fs::create_symlink(points_at, file);
    auto m = remember_host_measurements("cpu E", 20.0, 2.0, "2026-11-08");
    EXPECT_DOUBLE_EQ(m.fma_gflops, 20.0) << points_at;
    EXPECT_EQ(m.file, "") << points_at;
    EXPECT_TRUE(fs::is_symlink(file)) << points_at;
    EXPECT_EQ(fs::read_symlink(file), points_at);
  }
  EXPECT_FALSE(fs::exists(dir / "missing.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(fs::path(file).parent_path()), {}), 1);  // only the link
  // The device itself, as some set TILEFORGE_HOST_CACHE=/dev/null to keep nothing; in an unprivileged child, as
  // run as root the code before the rule renamed a regular file over /dev/null.
  struct stat st {};
  if (lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
    const std::string kept = testing::in_unprivileged_child([] {
      setenv("TILEFORGE_HOST_CACHE", "/dev/null", 1);
      return remember_host_measurements("cpu E", 20.0, 2.0, "2026-11-08").file;
    });
    EXPECT_EQ(kept, "");
    const dev_t rdev = st.st_rdev;
    ASSERT_EQ(lstat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, rdev);
  }
}

// Outside the bounds of hw_profile.hpp: dropped with a warning, never kept (under "the highest value wins" a stored
// 1e30 would otherwise be every later process's peak forever).
TEST_F(HostMeasurementsTest, StoredValuesOutsideTheBoundsAreDroppedWithAWarning) {
  store({{"fma_gflops", 1e30}, {"bandwidth_gbps", 1e-300}, {"processes", 1e30}, {"since", "2026-11-01"}});
  ::testing::internal::CaptureStderr();
  const HostMeasurements m = remember_host_measurements("cpu A", 120.5, 14.0, "2026-12-01");
  const std::string err = ::testing::internal::GetCapturedStderr();
  // This process's numbers are used, and they replace the dropped ones in the file.
  EXPECT_DOUBLE_EQ(m.fma_gflops, 120.5);
  EXPECT_DOUBLE_EQ(m.bandwidth_gbps, 14.0);
  EXPECT_EQ(m.processes, 1);
  EXPECT_DOUBLE_EQ(stored()["fma_gflops"].get<double>(), 120.5);
  EXPECT_DOUBLE_EQ(stored()["bandwidth_gbps"].get<double>(), 14.0);
  // Each drop says which number of which file, its value and the allowed range.
  for (const char* text : {"fma_gflops is 1e+30", "0.1 to 100000000 GFLOP/s", "bandwidth_gbps is 1e-300",
                           "0.1 to 1000000 GB/s", "processes is 1e+30", "dropped", "cpu A"})
    EXPECT_NE(err.find(text), std::string::npos) << text << " in: " << err;
  EXPECT_NE(err.find(file), std::string::npos) << err;

  // The next process meets only plausible numbers: no warning.
  ::testing::internal::CaptureStderr();
  const HostMeasurements next = remember_host_measurements("cpu A", 100.0, 15.0, "2026-12-02");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_DOUBLE_EQ(next.fma_gflops, 120.5);
  EXPECT_DOUBLE_EQ(next.bandwidth_gbps, 15.0);
  EXPECT_EQ(next.processes, 2);
}

TEST_F(HostMeasurementsTest, AnImplausibleMeasurementOfThisProcessIsNotKept) {
  store({{"fma_gflops", 120.5}, {"bandwidth_gbps", 14.0}, {"processes", 3}, {"since", "2026-11-01"}});
  ::testing::internal::CaptureStderr();
  const HostMeasurements m = remember_host_measurements("cpu A", 1e30, -5.0, "2026-12-01");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_DOUBLE_EQ(m.fma_gflops, 120.5);
  EXPECT_DOUBLE_EQ(m.bandwidth_gbps, 14.0);
  EXPECT_DOUBLE_EQ(stored()["fma_gflops"].get<double>(), 120.5);
  EXPECT_NE(err.find("fma_gflops is 1e+30"), std::string::npos) << err;
  EXPECT_NE(err.find("bandwidth_gbps is -5"), std::string::npos) << err;
}

TEST_F(HostMeasurementsTest, ZeroMeansNotMeasuredAndPassesSilently) {
  store({{"fma_gflops", 120.5}, {"bandwidth_gbps", 0}, {"processes", 1}, {"since", "2026-11-01"}});
  ::testing::internal::CaptureStderr();
  const HostMeasurements m = remember_host_measurements("cpu A", 100.0, 0.0, "2026-12-01");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_DOUBLE_EQ(m.fma_gflops, 120.5);
  EXPECT_DOUBLE_EQ(m.bandwidth_gbps, 0.0);
  EXPECT_EQ(m.processes, 2);
}

}  // namespace
}  // namespace tileforge::hw
