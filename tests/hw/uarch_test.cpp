// Tests of matching a CPU to its microarchitecture record by CPUID vendor, family and model (given values, not the
// host), of the ISA-class records that stand in for a CPU no record names, and of the record format.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hw/hw.hpp"

namespace tileforge::hw {
namespace {

using nlohmann::json;

CpuSignature cpu(const char* vendor, int family, int model) { return CpuSignature{vendor, family, model}; }

std::string record_for(const CpuSignature& c, int bits) {
  auto m = match_uarch(c, bits);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? m->record : std::string();
}

TEST(HwUarch, Leaf1DecodesDisplayFamilyAndModel) {
  // EAX of CPUID leaf 1 on parts the project meets (stepping in bits 0-3).
  const CpuSignature milan = cpu_signature_from_leaf1("AuthenticAMD", 0x00A00F11);  // EPYC 7763: 19h model 01h
  EXPECT_EQ(milan.family, 0x19);
  EXPECT_EQ(milan.model, 0x01);
  const CpuSignature genoa = cpu_signature_from_leaf1("AuthenticAMD", 0x00A10F11);  // EPYC 9654: 19h model 11h
  EXPECT_EQ(genoa.family, 0x19);
  EXPECT_EQ(genoa.model, 0x11);
  const CpuSignature rome = cpu_signature_from_leaf1("AuthenticAMD", 0x00830F10);  // EPYC 7742: 17h model 31h
  EXPECT_EQ(rome.family, 0x17);
  EXPECT_EQ(rome.model, 0x31);
  const CpuSignature spr = cpu_signature_from_leaf1("GenuineIntel", 0x000806F8);  // Xeon 8480+: 6 model 8Fh
  EXPECT_EQ(spr.family, 6);
  EXPECT_EQ(spr.model, 0x8F);
  const CpuSignature emr = cpu_signature_from_leaf1("GenuineIntel", 0x000C06F2);  // Xeon 5th gen: 6 model CFh
  EXPECT_EQ(emr.model, 0xCF);
  const CpuSignature skx = cpu_signature_from_leaf1("GenuineIntel", 0x00050654);  // Xeon Gold 6148: 6 model 55h
  EXPECT_EQ(skx.model, 0x55);
  EXPECT_EQ(skx.vendor, "GenuineIntel");
  // Family 5 (or below) takes neither extended field.
  const CpuSignature p5 = cpu_signature_from_leaf1("GenuineIntel", 0x000F0543);
  EXPECT_EQ(p5.family, 5);
  EXPECT_EQ(p5.model, 4);
}

TEST(HwUarch, KnownCpusMatchTheirRecords) {
  EXPECT_EQ(record_for(cpu("AuthenticAMD", 0x17, 0x31), 256), "zen2");   // Rome
  EXPECT_EQ(record_for(cpu("AuthenticAMD", 0x17, 0x71), 256), "zen2");   // Matisse
  EXPECT_EQ(record_for(cpu("AuthenticAMD", 0x19, 0x01), 256), "zen3");   // Milan
  EXPECT_EQ(record_for(cpu("AuthenticAMD", 0x19, 0x21), 256), "zen3");   // Vermeer
  EXPECT_EQ(record_for(cpu("AuthenticAMD", 0x19, 0x11), 512), "zen4");   // Genoa
  EXPECT_EQ(record_for(cpu("AuthenticAMD", 0x19, 0x61), 512), "zen4");   // Raphael
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0x3F), 256), "haswell");   // Haswell-EP
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0x4F), 256), "haswell");   // Broadwell-EP
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0x9E), 256), "skylake");   // Coffee Lake
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0x55), 512), "skylake-sp");
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0x6A), 512), "icelake-sp");
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0x8F), 512), "sapphire-rapids");
  EXPECT_EQ(record_for(cpu("GenuineIntel", 6, 0xCF), 512), "sapphire-rapids");  // Emerald Rapids
}

TEST(HwUarch, RatesAreThoseOfTheHostsVectorWidth) {
  // Zen 4 runs AVX-512 on 256-bit datapaths: one 512-bit FMA and one 512-bit load per cycle, two of 256 bits.
  const UarchMatch z4_512 = match_uarch(cpu("AuthenticAMD", 0x19, 0x11), 512).value();
  EXPECT_EQ(z4_512.rates.vector_bits, 512);
  EXPECT_EQ(z4_512.rates.fma_pipes, 1);
  EXPECT_EQ(z4_512.rates.load_ports_per_cycle, 1);
  const UarchMatch z4_256 = match_uarch(cpu("AuthenticAMD", 0x19, 0x11), 256).value();
  EXPECT_EQ(z4_256.rates.fma_pipes, 2);
  EXPECT_EQ(z4_256.rates.load_ports_per_cycle, 2);
  EXPECT_FALSE(z4_256.generic);
  // Haswell and Zen 2: FMA latency 5.
  EXPECT_EQ(match_uarch(cpu("GenuineIntel", 6, 0x3C), 256).value().rates.fma_latency_cycles, 5);
  EXPECT_EQ(match_uarch(cpu("AuthenticAMD", 0x17, 0x31), 256).value().rates.fma_latency_cycles, 5);
  // Golden Cove loads three 256-bit vectors per cycle, two of 512 bits.
  EXPECT_EQ(match_uarch(cpu("GenuineIntel", 6, 0x8F), 256).value().rates.load_ports_per_cycle, 3);
  EXPECT_EQ(match_uarch(cpu("GenuineIntel", 6, 0x8F), 512).value().rates.load_ports_per_cycle, 2);
}

TEST(HwUarch, AnUnknownCpuGetsItsIsaClassRecordSaidSo) {
  // Alder Lake (family 6 model 0x97) has no record: the generic AVX2 record stands in, and the label says so.
  const UarchMatch m = match_uarch(cpu("GenuineIntel", 6, 0x97), 256).value();
  EXPECT_EQ(m.record, "isa-avx2");
  EXPECT_TRUE(m.generic);
  EXPECT_NE(m.label.find("no record for GenuineIntel family 0x6 model 0x97"), std::string::npos) << m.label;
  EXPECT_NE(m.label.find("generic AVX2"), std::string::npos) << m.label;
  EXPECT_EQ(m.rates.fma_pipes, 2);
  EXPECT_EQ(m.rates.fma_latency_cycles, 4);
  // A new AMD family, with AVX-512.
  const UarchMatch zen5 = match_uarch(cpu("AuthenticAMD", 0x1a, 0x02), 512).value();
  EXPECT_EQ(zen5.record, "isa-avx512");
  EXPECT_NE(zen5.label.find("family 0x1a model 0x02"), std::string::npos) << zen5.label;
  // A vendor no record lists, and a CPU without CPUID at all.
  EXPECT_EQ(record_for(cpu("HygonGenuine", 0x18, 0x01), 256), "isa-avx2");
  const UarchMatch arm = match_uarch(CpuSignature{}, 128).value();
  EXPECT_EQ(arm.record, "isa-128");
  EXPECT_NE(arm.label.find("not x86"), std::string::npos) << arm.label;
}

TEST(HwUarch, ARecordWithoutTheHostsWidthDefersToTheIsaClass) {
  // Zen 3 has no AVX-512: asked for 512-bit rates (an impossible host, but the rule must hold), the ISA record
  // answers and the label names both.
  const UarchMatch m = match_uarch(cpu("AuthenticAMD", 0x19, 0x01), 512).value();
  EXPECT_EQ(m.record, "isa-avx512");
  EXPECT_TRUE(m.generic);
  EXPECT_NE(m.label.find("zen3"), std::string::npos) << m.label;
  EXPECT_NE(m.label.find("512-bit"), std::string::npos) << m.label;
}

TEST(HwUarch, ApplyingAMatchSetsEveryRateWithItsSource) {
  HwProfile p;
  const UarchMatch m = match_uarch(cpu("GenuineIntel", 6, 0xCF), 512).value();
  apply_uarch(p, m);
  EXPECT_EQ(p.fma_pipes, 2);
  EXPECT_EQ(p.fma_latency_cycles, 4);
  EXPECT_EQ(p.load_ports_per_cycle, 2);
  EXPECT_DOUBLE_EQ(p.l2_bytes_per_core_cycle, 64);
  EXPECT_DOUBLE_EQ(p.l3_bytes_per_core_cycle, 32);
  for (const char* key : {"fma_pipes", "fma_latency_cycles", "load_ports_per_cycle", "l2_bytes_per_core_cycle",
                          "l3_bytes_per_core_cycle"}) {
    EXPECT_NE(p.sources.at(key).find("sapphire-rapids"), std::string::npos) << key << ": " << p.sources.at(key);
  }
  EXPECT_NE(p.sources.at("fma_latency_cycles").find("latency 4"), std::string::npos);
  EXPECT_EQ(p.uarch, m.label);
}

// A complete record written here, so the format tests do not depend on the shipped files.
json valid_uarch() {
  auto num = [](auto v) { return json{{"value", v}, {"source", "test manual"}}; };
  return json{{"name", "testcore"},
              {"display_name", "Test Core"},
              {"match", json{{"vendor", "GenuineIntel"}, {"family", "0x6"}, {"models", {"0x10-0x1f", "0x42"}},
                             {"source", "test list"}}},
              {"rates", json::array({json{{"vector_bits", 256},
                                          {"fma_pipes", num(2)},
                                          {"fma_latency_cycles", num(4)},
                                          {"load_ports_per_cycle", num(2)},
                                          {"l2_bytes_per_core_cycle", num(32)},
                                          {"l3_bytes_per_core_cycle", num(16)}}})}};
}

void expect_refused(const json& j, const std::string& field, const std::string& also) {
  auto r = parse_uarch(j.dump(), "test.json");
  ASSERT_FALSE(r.ok()) << "accepted a record that should be refused for " << field;
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("'" + field + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(also), std::string::npos) << msg;
}

TEST(HwUarchJson, ParsesModelRangesAndRefusesIncompleteRecords) {
  auto r = parse_uarch(valid_uarch().dump(), "test.json");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->match.has_value());
  EXPECT_EQ(r->match->family, 6);
  EXPECT_EQ(r->match->models, (std::vector<std::pair<int, int>>{{0x10, 0x1f}, {0x42, 0x42}}));
  ASSERT_NE(r->at(256), nullptr);
  EXPECT_EQ(r->at(256)->sources.at("fma_pipes"), "test manual");
  EXPECT_EQ(r->at(512), nullptr);

  json j = valid_uarch();
  j["rates"][0].erase("fma_latency_cycles");
  expect_refused(j, "rates[0].fma_latency_cycles", "missing");
  j = valid_uarch();
  j["rates"][0]["fma_pipes"]["value"] = 0;  // the model divides by every rate
  expect_refused(j, "rates[0].fma_pipes.value", "positive");
  j = valid_uarch();
  j["rates"][0]["load_ports_per_cycle"] = 2;
  expect_refused(j, "rates[0].load_ports_per_cycle", "source");
  j = valid_uarch();
  j["rates"][0]["vector_bits"] = 384;
  expect_refused(j, "rates[0].vector_bits", "128, 256 or 512");
  j = valid_uarch();
  j["rates"].push_back(j["rates"][0]);
  expect_refused(j, "rates[1].vector_bits", "repeats");
  j = valid_uarch();
  j["match"]["family"] = "6";  // decimal or hexadecimal? Refused.
  expect_refused(j, "match.family", "0x");
  j = valid_uarch();
  j["match"]["models"] = json::array({"0x20-0x10"});
  expect_refused(j, "match.models[0]", "ends before it starts");
  j = valid_uarch();
  j["rates"][0]["fma_pipe"] = j["rates"][0]["fma_pipes"];
  expect_refused(j, "rates[0].fma_pipe", "not a known field");
  j = valid_uarch();
  j["rates"] = json::array();
  expect_refused(j, "rates", "at least one");
}

TEST(HwUarchJson, UnknownNameListsTheRecords) {
  auto r = load_uarch("zen9");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("zen3"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tileforge::hw
