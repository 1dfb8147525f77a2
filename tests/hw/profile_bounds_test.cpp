// Physical plausibility of chip records: every builtin record is within the bounds of hw_profile.hpp, and a
// record with a number no chip has (1e9 cores, a 2^62-byte cache, 1e30 TFLOP/s) is refused naming the field, the
// value and the allowed range.
#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/hw.hpp"

namespace tileforge::hw {
namespace {

using json = nlohmann::json;

TEST(ProfileBounds, EveryBuiltinRecordIsPlausible) {
  for (const std::string& name : builtin_profile_names()) {
    auto p = load_profile(name);
    ASSERT_TRUE(p) << p.status().to_string();
    auto bad = find_implausible(*p);
    EXPECT_FALSE(bad) << name << ": " << bad->field << " " << bad->what;
  }
  for (const std::string& name : builtin_uarch_names()) {
    auto r = load_uarch(name);
    EXPECT_TRUE(r) << r.status().to_string();
  }
}

TEST(ProfileBounds, RangesReadAsTheyAreChecked) {
  EXPECT_EQ(bounds::cores.range(), "1 to 65536");
  EXPECT_EQ(bounds::boost_clock_ghz.range(), "0, or 0.1 to 20 GHz");
  EXPECT_EQ(bounds::cache_size_bytes.range(), "1024 to 17179869184 bytes (1 KiB to 16 GiB)");
  EXPECT_TRUE(bounds::boost_clock_ghz.admits(0));
  EXPECT_FALSE(bounds::cores.admits(0));
  EXPECT_FALSE(bounds::peak_tflops.admits(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(bounds::peak_tflops.admits(std::numeric_limits<double>::infinity()));
}

// A builtin record as JSON, changed by `edit`, then parsed: the error message, or "" when it was accepted.
std::string refusal_of(const char* base, void (*edit)(json&)) {
  auto p = load_profile(base);
  EXPECT_TRUE(p) << p.status().to_string();
  json j = json::parse(to_json(*p));
  edit(j);
  auto parsed = parse_profile(j.dump(), "edited.json");
  return parsed ? std::string() : parsed.status().message();
}

struct Implausibility {
  const char* label;
  const char* base;  // the builtin record edited
  void (*edit)(json&);
  std::vector<std::string> mentions;  // the field, the value and the range
};

std::vector<Implausibility> implausibilities() {
  return {
      {"a billion cores", "generic-avx2", [](json& j) { j["cores"]["value"] = 1000000000; },
       {"cores.value", "1000000000", "1 to 65536"}},
      {"a 2^62-byte cache", "generic-avx2", [](json& j) { j["caches"][2]["size_bytes"] = int64_t(1) << 62; },
       {"caches[2].size_bytes", "4611686018427387904", "1 KiB to 16 GiB"}},
      {"a cache below 1 KiB", "generic-avx2", [](json& j) { j["caches"][0]["size_bytes"] = 256; },
       {"caches[0].size_bytes", "256", "1 KiB to 16 GiB"}},
      {"a cache smaller than ways x line", "generic-avx2",
       [](json& j) {
         j["caches"][0]["size_bytes"] = 2048;
         j["caches"][0]["ways"] = 64;
       },
       {"caches[0].size_bytes", "2048", "ways x line_bytes = 64 x 64", "4096"}},
      {"1 MiB lines", "generic-avx2", [](json& j) { j["caches"][1]["line_bytes"] = 1 << 20; },
       {"caches[1].line_bytes", "1048576", "16 to 4096"}},
      {"a peak of 1e30", "h200", [](json& j) { j["peaks"][0]["tflops"] = 1e30; },
       {"peaks[0].tflops", "1e+30", "0.0001 to 100000 TFLOP/s"}},
      {"a peak of 1e-300", "h200", [](json& j) { j["peaks"][1]["tflops"] = 1e-300; },
       {"peaks[1].tflops", "1e-300", "0.0001 to 100000 TFLOP/s"}},
      {"a bandwidth of 1e30", "h200", [](json& j) { j["mem_bandwidth_gbps"]["value"] = 1e30; },
       {"mem_bandwidth_gbps.value", "1e+30", "0.1 to 1000000 GB/s"}},
      {"a bandwidth of 1e-300", "generic-avx512", [](json& j) { j["mem_bandwidth_gbps"]["value"] = 1e-300; },
       {"mem_bandwidth_gbps.value", "1e-300", "0.1 to 1000000 GB/s"}},
      {"a clock of 1e30 GHz", "h200", [](json& j) { j["boost_clock_ghz"]["value"] = 1e30; },
       {"boost_clock_ghz.value", "1e+30", "0, or 0.1 to 20 GHz"}},
      {"a billion threads per SM", "h200", [](json& j) { j["max_threads_per_core"]["value"] = 1000000000; },
       {"max_threads_per_core.value", "1000000000", "1 to 65536"}},
      {"a 1e30 L2 rate", "generic-avx2", [](json& j) { j["l2_bytes_per_core_cycle"]["value"] = 1e30; },
       {"l2_bytes_per_core_cycle.value", "1e+30", "0, or 0.01 to 65536"}},
      {"a million FMA pipes", "generic-avx2", [](json& j) { j["fma_pipes"]["value"] = 1000000; },
       {"fma_pipes.value", "1000000", "0, or 1 to 64"}},
      {"a matrix unit a million wide", "h200", [](json& j) { j["matrix_units"][0]["n"] = 1000000; },
       {"matrix_units[0].n", "1000000", "1 to 4096"}},
      {"a terabyte of shared memory", "h200",
       [](json& j) {
         j["smem_per_core_bytes"]["value"] = int64_t(1) << 40;
         j["smem_per_block_bytes"]["value"] = int64_t(1) << 40;
       },
       {"smem_per_core_bytes.value", "1099511627776", "1 KiB to 1 GiB"}},
  };
}

class ProfileBoundsRefuses : public ::testing::TestWithParam<Implausibility> {};

TEST_P(ProfileBoundsRefuses, NamingTheFieldTheValueAndTheRange) {
  const Implausibility& c = GetParam();
  const std::string message = refusal_of(c.base, c.edit);
  ASSERT_NE(message, "") << c.label << " was accepted";
  EXPECT_NE(message.find("edited.json"), std::string::npos) << message;
  for (const std::string& m : c.mentions) EXPECT_NE(message.find(m), std::string::npos) << m << " in: " << message;
}

INSTANTIATE_TEST_SUITE_P(Each, ProfileBoundsRefuses, ::testing::ValuesIn(implausibilities()),
                         [](const auto& info) {
                           std::string name;
                           for (char ch : std::string(info.param.label))
                             name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

TEST(ProfileBounds, TheLargestRealChipsAreAdmitted) {
  // The bounds' own edges pass: they are meant to admit every real chip for years.
  const std::string message = refusal_of("generic-avx512", [](json& j) {
    j["cores"]["value"] = 65536;
    j["caches"][2]["size_bytes"] = int64_t(16) << 30;
    j["peaks"][0]["tflops"] = 1e5;
    j["mem_bandwidth_gbps"]["value"] = 1e6;
  });
  EXPECT_EQ(message, "");
}

TEST(ProfileBounds, MicroarchitectureRatesAreBounded) {
  const char* record = R"({
    "name": "bogus", "display_name": "Bogus",
    "rates": [{"vector_bits": 256,
               "fma_pipes": {"value": 1000000, "source": "a typo"},
               "fma_latency_cycles": {"value": 4, "source": "s"},
               "load_ports_per_cycle": {"value": 2, "source": "s"},
               "l2_bytes_per_core_cycle": {"value": 64, "source": "s"},
               "l3_bytes_per_core_cycle": {"value": 32, "source": "s"}}]})";
  auto r = parse_uarch(record, "bogus.json");
  ASSERT_FALSE(r);
  const std::string m = r.status().message();
  EXPECT_NE(m.find("rates[0].fma_pipes.value"), std::string::npos) << m;
  EXPECT_NE(m.find("1000000"), std::string::npos) << m;
  EXPECT_NE(m.find("1 to 64"), std::string::npos) << m;
}

}  // namespace
}  // namespace tileforge::hw
