// Tests of the chip-record format: parsing, refusal of malformed records with the field named, round trips,
// and load_profile by name and by path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "hw/hw.hpp"

namespace tileforge::hw {
namespace {

using nlohmann::json;

// A complete, valid GPU record written here by hand, so that the tests do not depend on any shipped profile.
json valid_record() {
  auto num = [](auto v) { return json{{"value", v}, {"source", "test sheet"}}; };
  return json{
      {"name", "testchip"},
      {"display_name", "Test Chip"},
      {"kind", "gpu"},
      {"vendor", "nvidia"},
      {"arch", "sm_80"},
      {"cores", num(10)},
      {"boost_clock_ghz", num(1.5)},
      {"vector_bits", num(0)},
      {"smem_per_core_bytes", num(65536)},
      {"smem_per_block_bytes", num(49152)},
      {"registers_per_core", num(65536)},
      {"max_threads_per_core", num(2048)},
      {"mem_bandwidth_gbps", num(900.5)},
      {"max_blocks_per_core", num(32)},
      {"l2_bytes_per_core_cycle", num(52.5)},
      {"l3_bytes_per_core_cycle", num(0)},
      {"smem_bytes_per_core_cycle", num(128)},
      {"fma_pipes", num(0)},
      {"fma_latency_cycles", num(0)},
      {"load_ports_per_cycle", num(0)},
      {"features", json{{"value", {"mma.sync", "cp.async"}}, {"source", "test sheet"}}},
      {"caches", json::array({json{{"level", 1}, {"kind", "data"}, {"size_bytes", 131072}, {"ways", 0},
                                   {"line_bytes", 128}, {"shared_by", 1}, {"source", "test sheet"}},
                              json{{"level", 2}, {"kind", "unified"}, {"size_bytes", 4194304}, {"ways", 16},
                                   {"line_bytes", 128}, {"shared_by", 10}, {"source", "test sheet"}}})},
      {"matrix_units", json::array({json{{"name", "mma.sync.m16n8k16"}, {"m", 16}, {"n", 8}, {"k", 16},
                                         {"input", "f16"}, {"accum", "f32"}, {"source", "test sheet"}}})},
      {"peaks", json::array({json{{"input", "f16"}, {"accum", "f32"}, {"tflops", 100.0}, {"source", "sheet"}},
                             json{{"input", "f32"}, {"accum", "f32"}, {"tflops", 12.5}, {"source", "sheet"}}})},
  };
}

Expected<HwProfile> parse(const json& j) { return parse_profile(j.dump(), "test.json"); }

// The record must be refused with a message naming `field`; `also` must appear in the message too.
void expect_refused(const json& j, const std::string& field, const std::string& also = "") {
  auto p = parse(j);
  ASSERT_FALSE(p.ok()) << "accepted a record that should be refused for field " << field;
  EXPECT_EQ(p.status().code(), Code::invalid_argument);
  const std::string& msg = p.status().message();
  EXPECT_NE(msg.find("profile test.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'" + field + "'"), std::string::npos) << "message does not name " << field << ": " << msg;
  if (!also.empty()) {
    EXPECT_NE(msg.find(also), std::string::npos) << msg;
  }
}

std::filesystem::path temp_file(const std::string& stem) {
  std::random_device rd;
  return std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(rd()) + ".json");
}

TEST(HwProfileJson, ValidRecordParsesEveryField) {
  auto p = parse(valid_record());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->name, "testchip");
  EXPECT_EQ(p->display_name, "Test Chip");
  EXPECT_EQ(p->kind, "gpu");
  EXPECT_EQ(p->cores, 10);
  EXPECT_DOUBLE_EQ(p->boost_clock_ghz, 1.5);
  EXPECT_EQ(p->smem_per_core_bytes, 65536);
  EXPECT_EQ(p->smem_per_block_bytes, 49152);
  EXPECT_EQ(p->registers_per_core, 65536);
  EXPECT_EQ(p->max_threads_per_core, 2048);
  EXPECT_DOUBLE_EQ(p->mem_bandwidth_gbps, 900.5);
  EXPECT_EQ(p->max_blocks_per_core, 32);
  EXPECT_DOUBLE_EQ(p->l2_bytes_per_core_cycle, 52.5);
  EXPECT_DOUBLE_EQ(p->smem_bytes_per_core_cycle, 128);
  EXPECT_EQ(p->fma_pipes, 0);
  EXPECT_EQ(p->sources.at("l2_bytes_per_core_cycle"), "test sheet");
  EXPECT_EQ(p->features, (std::vector<std::string>{"mma.sync", "cp.async"}));
  ASSERT_EQ(p->caches.size(), 2u);
  EXPECT_EQ(p->caches[1].level, 2);
  EXPECT_EQ(p->caches[1].kind, "unified");
  EXPECT_EQ(p->caches[1].size_bytes, 4194304);
  EXPECT_EQ(p->caches[1].ways, 16);
  EXPECT_EQ(p->caches[1].shared_by, 10);
  ASSERT_EQ(p->matrix_units.size(), 1u);
  EXPECT_EQ(p->matrix_units[0].n, 8);
  EXPECT_EQ(p->matrix_units[0].input, DType::f16);
  ASSERT_EQ(p->peaks.size(), 2u);
  EXPECT_EQ(p->peak_tflops(DType::f16, DType::f32), 100.0);
  EXPECT_EQ(p->peak_tflops(DType::f32, DType::f32), 12.5);
  EXPECT_FALSE(p->peak_tflops(DType::bf16, DType::f32).has_value());
  EXPECT_EQ(p->sources.at("cores"), "test sheet");
  EXPECT_EQ(p->sources.at("caches[0]"), "test sheet");
  EXPECT_FALSE(p->measured);
  EXPECT_FALSE(p->representative);
}

TEST(HwProfileJson, RidgePointIsPeakOverBandwidth) {
  auto p = parse(valid_record());
  ASSERT_TRUE(p.ok());
  auto ridge = p->ridge_flops_per_byte(DType::f16, DType::f32);
  ASSERT_TRUE(ridge.has_value());
  EXPECT_NEAR(*ridge, 100.0e12 / 900.5e9, 1e-9);
  EXPECT_FALSE(p->ridge_flops_per_byte(DType::bf16, DType::f32).has_value());
}

TEST(HwProfileJson, RefusesMissingFields) {
  for (const char* key : {"name", "display_name", "kind", "vendor", "arch", "cores", "boost_clock_ghz",
                          "vector_bits", "smem_per_core_bytes", "smem_per_block_bytes", "registers_per_core",
                          "max_threads_per_core", "mem_bandwidth_gbps", "max_blocks_per_core",
                          "l2_bytes_per_core_cycle", "l3_bytes_per_core_cycle", "smem_bytes_per_core_cycle",
                          "fma_pipes", "fma_latency_cycles", "load_ports_per_cycle", "features", "caches",
                          "matrix_units", "peaks"}) {
    SCOPED_TRACE(key);
    json j = valid_record();
    j.erase(key);
    expect_refused(j, key, "missing");
  }
  json j = valid_record();
  j["peaks"][1].erase("tflops");
  expect_refused(j, "peaks[1].tflops", "missing");
  j = valid_record();
  j["cores"].erase("source");
  expect_refused(j, "cores.source", "missing");
  j = valid_record();
  j["caches"][0].erase("size_bytes");
  expect_refused(j, "caches[0].size_bytes", "missing");
}

TEST(HwProfileJson, RefusesWrongTypes) {
  json j = valid_record();
  j["cores"]["value"] = "132";
  expect_refused(j, "cores.value", "integer");
  j = valid_record();
  j["cores"] = 132;  // a bare number without its source
  expect_refused(j, "cores", "source");
  j = valid_record();
  j["cores"]["value"] = 13.5;
  expect_refused(j, "cores.value", "integer");
  j = valid_record();
  j["name"] = 7;
  expect_refused(j, "name", "string");
  j = valid_record();
  j["peaks"][1]["tflops"] = "fast";
  expect_refused(j, "peaks[1].tflops", "must be a positive number");
  j = valid_record();
  j["peaks"] = json::object();
  expect_refused(j, "peaks", "array");
  j = valid_record();
  j["features"]["value"] = json::array({"tma", 3});
  expect_refused(j, "features.value[1]", "string");
  j = valid_record();
  j["representative"] = "yes";
  expect_refused(j, "representative");
}

TEST(HwProfileJson, RefusesZeroAndNegativeWherePositiveIsRequired) {
  json j = valid_record();
  j["cores"]["value"] = 0;
  expect_refused(j, "cores.value", "positive");
  j = valid_record();
  j["cores"]["value"] = -4;
  expect_refused(j, "cores.value", "positive");
  j = valid_record();
  j["peaks"][1]["tflops"] = -1.0;
  auto p = parse(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "profile test.json: field 'peaks[1].tflops' must be a positive number");
  j = valid_record();
  j["mem_bandwidth_gbps"]["value"] = 0;
  expect_refused(j, "mem_bandwidth_gbps.value", "positive");
  j = valid_record();
  j["smem_per_core_bytes"]["value"] = 0;  // a GPU must have shared memory
  expect_refused(j, "smem_per_core_bytes.value", "positive");
  j = valid_record();
  j["boost_clock_ghz"]["value"] = -1.0;
  expect_refused(j, "boost_clock_ghz.value", "non-negative");
  j = valid_record();
  j["caches"][1]["line_bytes"] = 0;
  expect_refused(j, "caches[1].line_bytes", "positive");
  j = valid_record();
  j["smem_per_block_bytes"]["value"] = 70000;  // more than the SM has
  expect_refused(j, "smem_per_block_bytes.value", "exceed");
}

TEST(HwProfileJson, CoreRatesAreNonNegativeSourcedAndFmaComesAsAPair) {
  // The cost models' per-core rates: 0 means unknown or not applicable; a negative rate or a bare number is refused.
  for (const char* key : {"max_blocks_per_core", "l2_bytes_per_core_cycle", "l3_bytes_per_core_cycle",
                          "smem_bytes_per_core_cycle", "fma_pipes", "fma_latency_cycles", "load_ports_per_cycle"}) {
    SCOPED_TRACE(key);
    json j = valid_record();
    j[key]["value"] = -1;
    expect_refused(j, std::string(key) + ".value", "non-negative");
    j = valid_record();
    j[key] = 2;
    expect_refused(j, key, "source");
  }
  json j = valid_record();
  j["max_blocks_per_core"]["value"] = 2.5;
  expect_refused(j, "max_blocks_per_core.value", "integer");
  // Pipes without a latency would price the FMA chain with half a record.
  j = valid_record();
  j["fma_pipes"]["value"] = 2;
  expect_refused(j, "fma_latency_cycles.value", "together");
  j = valid_record();
  j["fma_latency_cycles"]["value"] = 4;
  expect_refused(j, "fma_pipes.value", "together");
  j = valid_record();
  j["fma_pipes"]["value"] = 2;
  j["fma_latency_cycles"]["value"] = 4;
  EXPECT_TRUE(parse(j).ok()) << parse(j).status().to_string();
}

TEST(HwProfileJson, CoreRatesRoundTripWithTheirSources) {
  json j = valid_record();
  j["kind"] = "cpu";
  j["vector_bits"]["value"] = 512;
  j["smem_per_core_bytes"]["value"] = 0;
  j["smem_per_block_bytes"]["value"] = 0;
  j["max_blocks_per_core"]["value"] = 0;
  j["smem_bytes_per_core_cycle"]["value"] = 0;
  j["fma_pipes"] = json{{"value", 2}, {"source", "ORM: ports 0 and 5"}};
  j["fma_latency_cycles"] = json{{"value", 4}, {"source", "uops.info"}};
  j["load_ports_per_cycle"] = json{{"value", 2}, {"source", "ORM: two 512-bit loads"}};
  j["l2_bytes_per_core_cycle"]["value"] = 64;
  j["l3_bytes_per_core_cycle"] = json{{"value", 32.5}, {"source", "half a vector"}};
  j["uarch"] = "Test Core (microarchitecture record testcore)";
  auto first = parse(j);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->fma_pipes, 2);
  EXPECT_EQ(first->fma_latency_cycles, 4);
  EXPECT_EQ(first->load_ports_per_cycle, 2);
  EXPECT_DOUBLE_EQ(first->l3_bytes_per_core_cycle, 32.5);
  const std::string text = to_json(*first);
  auto second = parse_profile(text, "again.json");
  ASSERT_TRUE(second.ok()) << second.status().to_string() << "\n" << text;
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(second->sources.at("fma_pipes"), "ORM: ports 0 and 5");
  EXPECT_EQ(second->sources.at("l3_bytes_per_core_cycle"), "half a vector");
  EXPECT_EQ(second->uarch, "Test Core (microarchitecture record testcore)");
  EXPECT_EQ(to_json(*second), text);
}

// Clusters resident at once by size: optional, round-tripped with its source; sizes 2 .. 16, counts >= 1.
TEST(HwProfileJson, ResidentClustersAreOptionalBySizeAndRoundTrip) {
  json j = valid_record();
  auto without = parse(j);
  ASSERT_TRUE(without.ok()) << without.status().to_string();
  EXPECT_TRUE(without->resident_clusters.empty());
  EXPECT_EQ(to_json(*without).find("resident_clusters"), std::string::npos);
  j["resident_clusters"] = json{{"value", json{{"4", 2}, {"2", 5}, {"8", 1}}}, {"source", "occupancy query"}};
  auto with = parse(j);
  ASSERT_TRUE(with.ok()) << with.status().to_string();
  EXPECT_EQ(with->resident_clusters, (std::map<int, int>{{2, 5}, {4, 2}, {8, 1}}));
  auto again = parse_profile(to_json(*with), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(*again, *with);
  EXPECT_EQ(again->sources.at("resident_clusters"), "occupancy query");
  for (const json& bad : {json{{"1", 3}}, json{{"17", 1}}, json{{"four", 1}}, json{{"04", 1}}, json{{"4", 0}},
                          json{{"4", 2.5}}, json{{"4", "2"}}}) {
    json k = valid_record();
    k["resident_clusters"] = json{{"value", bad}, {"source", "test"}};
    expect_refused(k, "resident_clusters.value." + bad.items().begin().key());
  }
  json list = valid_record();
  list["resident_clusters"] = json{{"value", json::array({4, 2})}, {"source", "test"}};
  expect_refused(list, "resident_clusters.value", "cluster size");
}

TEST(HwProfileJson, KindDecidesWhatMustBePositive) {
  // A CPU has no shared memory but must have a vector width.
  json j = valid_record();
  j["kind"] = "cpu";
  j["smem_per_core_bytes"]["value"] = 0;
  j["smem_per_block_bytes"]["value"] = 0;
  j["max_threads_per_core"]["value"] = 0;
  j["vector_bits"]["value"] = 256;
  EXPECT_TRUE(parse(j).ok()) << parse(j).status().to_string();
  j["vector_bits"]["value"] = 0;
  expect_refused(j, "vector_bits.value", "positive");
}

TEST(HwProfileJson, RefusesUnknownNames) {
  json j = valid_record();
  j["peaks"][0]["input"] = "fp8";
  expect_refused(j, "peaks[0].input", "'fp8' is not a known dtype");
  j = valid_record();
  j["matrix_units"][0]["accum"] = "f64";
  expect_refused(j, "matrix_units[0].accum", "f64");
  j = valid_record();
  j["kind"] = "tpu";
  expect_refused(j, "kind", "'tpu' is not a known kind");
  j = valid_record();
  j["caches"][0]["kind"] = "instruction";
  expect_refused(j, "caches[0].kind", "instruction");
  j = valid_record();
  j["cors"] = j["cores"];  // a misspelt field must not pass silently
  expect_refused(j, "cors", "not a known field");
  j = valid_record();
  j["peaks"][0]["tflop"] = 1;
  expect_refused(j, "peaks[0].tflop", "not a known field");
}

TEST(HwProfileJson, RefusesRepeatedPeakAndEmptyLists) {
  json j = valid_record();
  j["peaks"].push_back(j["peaks"][0]);
  expect_refused(j, "peaks[2]", "repeats");
  j = valid_record();
  j["peaks"] = json::array();
  expect_refused(j, "peaks", "at least one");
  j = valid_record();
  j["caches"] = json::array();
  expect_refused(j, "caches", "at least one");
}

TEST(HwProfileJson, RefusesBrokenJson) {
  for (std::string text : {"", "{", "{\"name\": \"x\",}", "[1, 2]", "null"}) {
    SCOPED_TRACE(text);
    auto p = parse_profile(text, "broken.json");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::invalid_argument);
    EXPECT_NE(p.status().message().find("profile broken.json"), std::string::npos) << p.status().message();
  }
}

TEST(HwProfileJson, RoundTripsThroughToJson) {
  json j = valid_record();
  j["representative"] = true;
  j["notes"] = "a note";
  j["match"] = json{{"device_names", {"Test Chip 1"}}};
  j["matrix_units"].push_back(json{{"name", "wide"}, {"m", 64}, {"n", 256}, {"k", 16}, {"n_step", 8},
                                   {"input", "bf16"}, {"accum", "f32"}, {"source", "s"}});
  auto first = parse(j);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const std::string text = to_json(*first);
  auto second = parse_profile(text, "again.json");
  ASSERT_TRUE(second.ok()) << second.status().to_string() << "\n" << text;
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(to_json(*second), text);
  EXPECT_TRUE(second->representative);
  EXPECT_EQ(second->matrix_units[1].n_step, 8);
  EXPECT_EQ(second->match_names, std::vector<std::string>{"Test Chip 1"});
}

TEST(HwProfileJson, HasComparesFeatureNamesLoosely) {
  HwProfile p;
  p.features = {"avx512-bf16", "amx-tile"};
  EXPECT_TRUE(p.has("avx512-bf16"));
  EXPECT_TRUE(p.has("AVX512_BF16"));
  EXPECT_TRUE(p.has("amx_tile"));
  EXPECT_FALSE(p.has("avx512f"));
  EXPECT_FALSE(p.has("amx"));
}

TEST(HwProfileJson, CacheByLevelPrefersTheDataCache) {
  HwProfile p;
  p.caches = {CacheLevel{1, "unified", 1000, 0, 64, 1}, CacheLevel{1, "data", 2000, 0, 64, 1},
              CacheLevel{2, "unified", 3000, 0, 64, 1}};
  ASSERT_NE(p.cache(1), nullptr);
  EXPECT_EQ(p.cache(1)->size_bytes, 2000);
  ASSERT_NE(p.cache(2), nullptr);
  EXPECT_EQ(p.cache(2)->size_bytes, 3000);
  EXPECT_EQ(p.cache(3), nullptr);
}

TEST(HwProfileLoad, UnknownNameListsKnownNames) {
  auto p = load_profile("h300");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::invalid_argument);
  const std::string& msg = p.status().message();
  EXPECT_NE(msg.find("h300"), std::string::npos) << msg;
  for (const char* known : {"h100-sxm", "h200", "a100-sxm", "l40s", "rtx-4090", "mi300x", "ascend-910b",
                            "generic-avx2", "generic-avx512"})
    EXPECT_NE(msg.find(known), std::string::npos) << "message does not list " << known << ": " << msg;
}

TEST(HwProfileLoad, UnreadableFileIsAnIoErrorNamingThePath) {
  const std::string missing = (std::filesystem::temp_directory_path() / "no-such-dir-tf" / "chip.json").string();
  auto p = load_profile(missing);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::io_error);
  EXPECT_NE(p.status().message().find(missing), std::string::npos) << p.status().message();

  const std::string dir = std::filesystem::temp_directory_path().string() + "/";
  auto d = load_profile(dir);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::io_error);
  EXPECT_NE(d.status().message().find(dir), std::string::npos) << d.status().message();
}

TEST(HwProfileLoad, LoadsAFileAndNamesItInErrors) {
  const auto path = temp_file("tf-chip");
  {
    std::ofstream out(path);
    out << valid_record().dump(2);
  }
  auto p = load_profile(path.string());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->name, "testchip");

  json bad = valid_record();
  bad["cores"]["value"] = 0;
  {
    std::ofstream out(path);
    out << bad.dump(2);
  }
  auto q = load_profile(path.string());
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), Code::invalid_argument);
  EXPECT_NE(q.status().message().find(path.string()), std::string::npos) << q.status().message();
  EXPECT_NE(q.status().message().find("'cores.value'"), std::string::npos) << q.status().message();
  std::filesystem::remove(path);
}

TEST(HwProfileLoad, HostNameGivesTheDetectedCpu) {
  auto p = load_profile(kHostProfileName);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->measured);
  EXPECT_EQ(p->kind, "cpu");
}

}  // namespace
}  // namespace tileforge::hw
