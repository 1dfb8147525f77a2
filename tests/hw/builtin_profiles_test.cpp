// Tests of the shipped chip records: each parses, is complete and sourced, round-trips, and carries the planner's
// key numbers as the vendors publish them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/hw.hpp"

namespace tileforge::hw {
namespace {

const std::vector<std::string> kRequired = {"h100-sxm", "h200",   "a100-sxm",    "l40s",        "rtx-4090",
                                            "mi300x",   "ascend-910b", "generic-avx2", "generic-avx512"};

HwProfile load(const std::string& name) {
  auto p = load_profile(name);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? *p : HwProfile{};
}

constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

TEST(HwBuiltinProfiles, AllRequiredChipsAreCompiledIn) {
  std::vector<std::string> names = builtin_profile_names();
  for (const auto& want : kRequired)
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want << " is not compiled in";
}

TEST(HwBuiltinProfiles, CompiledInMatchesTheProfilesFolder) {
  // Every file in profiles/ is embedded, unchanged (the build re-embeds when one changes).
  std::vector<std::string> names = builtin_profile_names();
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TILEFORGE_SOURCE_DIR "/profiles")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string stem = entry.path().stem().string();
    EXPECT_NE(std::find(names.begin(), names.end(), stem), names.end()) << stem;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto from_file = parse_profile(text.str(), entry.path().filename().string());
    ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
    auto builtin = load_profile(stem);
    ASSERT_TRUE(builtin.ok()) << builtin.status().to_string();
    EXPECT_EQ(*from_file, *builtin) << stem;
    auto by_path = load_profile(entry.path().string());
    ASSERT_TRUE(by_path.ok()) << by_path.status().to_string();
    EXPECT_EQ(*by_path, *builtin) << stem;
  }
  EXPECT_EQ(files, names.size());
}

TEST(HwBuiltinProfiles, EveryProfileIsCompleteAndSourced) {
  for (const std::string& name : builtin_profile_names()) {
    SCOPED_TRACE(name);
    HwProfile p = load(name);
    EXPECT_EQ(p.name, name);
    EXPECT_FALSE(p.display_name.empty());
    EXPECT_FALSE(p.measured) << "a shipped record is not a measurement of this host";
    EXPECT_GT(p.cores, 0);
    EXPECT_GT(p.mem_bandwidth_gbps, 0);
    EXPECT_GT(p.registers_per_core, 0);
    ASSERT_FALSE(p.peaks.empty());
    for (const PeakRate& r : p.peaks) {
      EXPECT_GT(r.tflops, 0) << to_string(r.input) << "/" << to_string(r.accum);
      EXPECT_FALSE(r.source.empty());
    }
    ASSERT_FALSE(p.caches.empty());
    for (const CacheLevel& c : p.caches) {
      EXPECT_GT(c.size_bytes, 0);
      EXPECT_GT(c.line_bytes, 0);
      EXPECT_GE(c.shared_by, 1);
      EXPECT_LE(c.shared_by, p.cores) << "a cache shared by more cores than the chip has";
    }
    // Every scalar number, the feature list, each cache and matrix unit names where it comes from.
    for (const char* key : {"cores", "boost_clock_ghz", "vector_bits", "smem_per_core_bytes", "smem_per_block_bytes",
                            "registers_per_core", "max_threads_per_core", "mem_bandwidth_gbps", "max_blocks_per_core",
                            "l2_bytes_per_core_cycle", "l3_bytes_per_core_cycle", "smem_bytes_per_core_cycle",
                            "fma_pipes", "fma_latency_cycles", "load_ports_per_cycle", "features"}) {
      auto it = p.sources.find(key);
      ASSERT_NE(it, p.sources.end()) << key;
      EXPECT_GT(it->second.size(), 5u) << key;
    }
    for (std::size_t i = 0; i < p.caches.size(); ++i) EXPECT_TRUE(p.sources.count("caches[" + std::to_string(i) + "]"));
    for (std::size_t i = 0; i < p.matrix_units.size(); ++i)
      EXPECT_TRUE(p.sources.count("matrix_units[" + std::to_string(i) + "]"));
    if (p.kind == "cpu") {
      EXPECT_GT(p.vector_bits, 0);
      EXPECT_TRUE(p.has("avx2"));
      EXPECT_TRUE(p.has("fma"));
    } else {
      EXPECT_GT(p.smem_per_core_bytes, 0);
      EXPECT_GT(p.smem_per_block_bytes, 0);
      EXPECT_LE(p.smem_per_block_bytes, p.smem_per_core_bytes);
      EXPECT_FALSE(p.matrix_units.empty());
    }
    if (p.kind == "gpu") {
      EXPECT_GT(p.boost_clock_ghz, 0);
      EXPECT_GT(p.max_threads_per_core, 0);
      EXPECT_FALSE(p.match_names.empty()) << "a GPU record needs the device names it matches";
    }
  }
}

TEST(HwBuiltinProfiles, EveryProfileRoundTrips) {
  for (const std::string& name : builtin_profile_names()) {
    SCOPED_TRACE(name);
    HwProfile p = load(name);
    const std::string text = to_json(p);
    auto again = parse_profile(text, name + " (round trip)");
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(*again, p);
    EXPECT_EQ(to_json(*again), text);
  }
}

TEST(HwBuiltinProfiles, PeaksAreConsistentWithTheRecordsOwnNumbers) {
  for (const std::string& name : builtin_profile_names()) {
    SCOPED_TRACE(name);
    HwProfile p = load(name);
    auto f32 = p.peak_tflops(DType::f32, DType::f32);
    auto f16 = p.peak_tflops(DType::f16, DType::f32);
    auto bf16 = p.peak_tflops(DType::bf16, DType::f32);
    ASSERT_TRUE(f16.has_value() && bf16.has_value()) << "every chip states its f16 and bf16 rates";
    if (f32) {
      EXPECT_LE(*f32, *f16) << "a matrix unit is never slower than plain FP32";
    }
    EXPECT_GT(*p.ridge_flops_per_byte(DType::f16, DType::f32), 1.0);
    if (p.kind == "gpu" && f32) {
      // FP32 = SMs x lanes x 2 x clock, with 64..256 lanes per SM (or CU) on every chip recorded.
      const double per_sm_clock = *f32 * 1e3 / (p.cores * p.boost_clock_ghz);
      EXPECT_GE(per_sm_clock, 2 * 64 * 0.95);
      EXPECT_LE(per_sm_clock, 2 * 256 * 1.05);
    }
    if (p.kind == "cpu" && f32 && p.boost_clock_ghz > 0) {
      // At most two FMA pipes of vector_bits per core at the boost clock.
      const double bound = p.cores * 2.0 * (p.vector_bits / 32) * 2 * p.boost_clock_ghz / 1e3;
      EXPECT_LE(*f32, bound);
    }
  }
}

TEST(HwBuiltinProfiles, GpuNumbersThePlannerReliesOn) {
  struct Want {
    const char* name;
    int sms;
    int64_t smem_sm, smem_block, l2;
    double bandwidth;
    int threads;
  };
  const Want wants[] = {
      {"h100-sxm", 132, 228 * KiB, 227 * KiB, 50 * MiB, 3350, 2048},
      {"h200", 132, 228 * KiB, 227 * KiB, 60 * MiB, 4800, 2048},
      {"a100-sxm", 108, 164 * KiB, 163 * KiB, 40 * MiB, 2039, 2048},
      {"l40s", 142, 100 * KiB, 99 * KiB, 96 * MiB, 864, 1536},
      {"rtx-4090", 128, 100 * KiB, 99 * KiB, 72 * MiB, 1008, 1536},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    HwProfile p = load(w.name);
    EXPECT_EQ(p.vendor, "nvidia");
    EXPECT_EQ(p.cores, w.sms);
    EXPECT_EQ(p.smem_per_core_bytes, w.smem_sm);
    EXPECT_EQ(p.smem_per_block_bytes, w.smem_block);
    EXPECT_EQ(p.registers_per_core, 65536);
    EXPECT_EQ(p.max_threads_per_core, w.threads);
    ASSERT_NE(p.cache(2), nullptr);
    EXPECT_EQ(p.cache(2)->size_bytes, w.l2);
    EXPECT_DOUBLE_EQ(p.mem_bandwidth_gbps, w.bandwidth);
    EXPECT_TRUE(p.has("mma.sync"));
    EXPECT_TRUE(p.has("cp.async"));
    EXPECT_TRUE(p.has("ldmatrix"));
    auto mma = std::find_if(p.matrix_units.begin(), p.matrix_units.end(), [](const MatrixUnit& u) {
      return u.m == 16 && u.n == 8 && u.k == 16 && u.input == DType::f16 && u.accum == DType::f32;
    });
    EXPECT_NE(mma, p.matrix_units.end()) << "sm_80 and later have mma.sync m16n8k16";
  }
  for (const char* hopper : {"h100-sxm", "h200"}) {
    HwProfile p = load(hopper);
    EXPECT_EQ(p.arch, "sm_90a");
    EXPECT_TRUE(p.has("tma"));
    EXPECT_TRUE(p.has("wgmma"));
    auto wg = std::find_if(p.matrix_units.begin(), p.matrix_units.end(),
                           [](const MatrixUnit& u) { return u.m == 64 && u.k == 16 && u.n_step == 8; });
    ASSERT_NE(wg, p.matrix_units.end());
    EXPECT_EQ(wg->n, 256);
    EXPECT_NEAR(*p.peak_tflops(DType::f16, DType::f32), 989, 2);
    EXPECT_NEAR(*p.peak_tflops(DType::bf16, DType::f32), 989, 2);
    EXPECT_NEAR(*p.peak_tflops(DType::f32, DType::f32), 67, 1);
  }
  EXPECT_FALSE(load("a100-sxm").has("wgmma"));
  EXPECT_NEAR(*load("a100-sxm").peak_tflops(DType::f16, DType::f32), 312, 1);
  // GeForce Ada halves the rate with FP32 accumulation.
  HwProfile rtx = load("rtx-4090");
  EXPECT_NEAR(*rtx.peak_tflops(DType::f16, DType::f16), 2 * *rtx.peak_tflops(DType::f16, DType::f32), 1);
}

// The per-core rates the cost models read used to be constants in the families' code; the records carry the same
// values, so every plan for a builtin profile stays what it was (tests/plan/plan_golden_check.py holds the plans).
TEST(HwBuiltinProfiles, CoreRatesAreTheCostModelsFormerConstants) {
  struct Gpu {
    const char* name;
    int blocks;     // CUDA C++ Programming Guide: 32 per SM on 8.0 and 9.0, 24 on 8.9
    double l2;      // 32 B/SM/cycle (A100 measurement), 52 with wgmma (H200 measurement)
  };
  for (const Gpu& g : {Gpu{"a100-sxm", 32, 32}, Gpu{"h100-sxm", 32, 52}, Gpu{"h200", 32, 52}, Gpu{"l40s", 24, 32},
                       Gpu{"rtx-4090", 24, 32}}) {
    SCOPED_TRACE(g.name);
    HwProfile p = load(g.name);
    EXPECT_EQ(p.max_blocks_per_core, g.blocks);
    EXPECT_DOUBLE_EQ(p.l2_bytes_per_core_cycle, g.l2);
    EXPECT_EQ(p.has("wgmma"), g.l2 == 52) << "the 52 B/cycle L2 rate was the constant for profiles with wgmma";
    EXPECT_DOUBLE_EQ(p.smem_bytes_per_core_cycle, 128);  // 32 banks x 4 B
    EXPECT_EQ(p.fma_pipes, 0);
    EXPECT_NE(p.sources.at("fma_pipes").find("not applicable"), std::string::npos);
  }
  for (const std::string& name : builtin_profile_names()) {
    HwProfile p = load(name);
    if (p.kind != "cpu") continue;
    SCOPED_TRACE(name);
    // Two FMA pipes of four cycles, two loads per cycle; one vector per cycle from L2 and half a vector from L3.
    EXPECT_EQ(p.fma_pipes, 2);
    EXPECT_EQ(p.fma_latency_cycles, 4);
    EXPECT_EQ(p.load_ports_per_cycle, 2);
    EXPECT_DOUBLE_EQ(p.l2_bytes_per_core_cycle, p.vector_bits / 8.0);
    EXPECT_DOUBLE_EQ(p.l3_bytes_per_core_cycle, p.vector_bits / 16.0);
    EXPECT_EQ(p.max_blocks_per_core, 0);
    EXPECT_DOUBLE_EQ(p.smem_bytes_per_core_cycle, 0);
  }
  // Chips no family plans for say that they do not know, rather than borrowing another chip's numbers.
  for (const char* name : {"ascend-910b"}) {
    HwProfile p = load(name);
    EXPECT_EQ(p.max_blocks_per_core, 0) << name;
    EXPECT_NE(p.sources.at("l2_bytes_per_core_cycle").find("not recorded"), std::string::npos) << name;
  }
  // The MI300X's rates the triton family's model reads are estimates from the whitepaper, and say so.
  HwProfile mi = load("mi300x");
  for (const char* field : {"l2_bytes_per_core_cycle", "smem_bytes_per_core_cycle", "max_blocks_per_core"}) {
    EXPECT_NE(mi.sources.at(field).find("estimate"), std::string::npos) << field;
  }
  EXPECT_GT(mi.max_blocks_per_core, 0);
}

// ---- microarchitecture records (profiles/uarch/) -------------------------------------------------------------------

TEST(HwBuiltinUarch, CompiledInMatchesTheUarchFolder) {
  std::vector<std::string> names = builtin_uarch_names();
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TILEFORGE_SOURCE_DIR "/profiles/uarch")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string stem = entry.path().stem().string();
    EXPECT_NE(std::find(names.begin(), names.end(), stem), names.end()) << stem;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto from_file = parse_uarch(text.str(), entry.path().filename().string());
    ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
    EXPECT_EQ(from_file->name, stem);
  }
  EXPECT_EQ(files, names.size());
  // The chip list does not list them.
  for (const std::string& chip : builtin_profile_names()) EXPECT_EQ(chip.find('/'), std::string::npos) << chip;
}

TEST(HwBuiltinUarch, EveryRecordIsSourcedAndTheRequiredFamiliesAreThere) {
  for (const char* want : {"zen2", "zen3", "zen4", "haswell", "skylake", "skylake-sp", "icelake-sp", "sapphire-rapids",
                           "isa-avx512", "isa-avx2", "isa-128"}) {
    auto r = load_uarch(want);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_FALSE(r->rates.empty()) << want;
    if (r->match) {
      EXPECT_GT(r->match->source.size(), 10u) << want;
    }
    for (const UarchRates& w : r->rates) {
      for (const char* key : {"fma_pipes", "fma_latency_cycles", "load_ports_per_cycle", "l2_bytes_per_core_cycle",
                              "l3_bytes_per_core_cycle"}) {
        ASSERT_TRUE(w.sources.count(key)) << want << " " << key;
        EXPECT_GT(w.sources.at(key).size(), 10u) << want << " " << key;
      }
    }
  }
  // One ISA-class record per width stands in for CPUs no record names.
  for (int bits : {128, 256, 512}) {
    int generic = 0;
    for (const std::string& name : builtin_uarch_names()) {
      UarchRecord r = load_uarch(name).value();
      if (!r.match && r.at(bits)) ++generic;
    }
    EXPECT_EQ(generic, 1) << bits << "-bit";
  }
}

TEST(HwBuiltinUarch, NoTwoRecordsClaimTheSameCpu) {
  std::vector<UarchRecord> records;
  for (const std::string& name : builtin_uarch_names()) records.push_back(load_uarch(name).value());
  for (std::size_t i = 0; i < records.size(); ++i) {
    for (std::size_t j = i + 1; j < records.size(); ++j) {
      const auto& a = records[i].match;
      const auto& b = records[j].match;
      if (!a || !b || a->vendor != b->vendor || a->family != b->family) continue;
      for (const auto& [alo, ahi] : a->models)
        for (const auto& [blo, bhi] : b->models)
          EXPECT_TRUE(ahi < blo || bhi < alo) << records[i].name << " and " << records[j].name << " overlap";
    }
  }
}

TEST(HwBuiltinUarch, TheRecordsOfTheProjectsHostsHaveTheFormerConstants) {
  // The project's two measured hosts (Zen 3, AVX2; Emerald Rapids, AVX-512) plan exactly as before the records: the
  // cost model's constants were calibrated there.
  const UarchRates zen3 = *load_uarch("zen3").value().at(256);
  const UarchRates emr = *load_uarch("sapphire-rapids").value().at(512);
  for (const UarchRates& r : {zen3, emr}) {
    EXPECT_EQ(r.fma_pipes, 2);
    EXPECT_EQ(r.fma_latency_cycles, 4);
    EXPECT_EQ(r.load_ports_per_cycle, 2);
    EXPECT_DOUBLE_EQ(r.l2_bytes_per_core_cycle, r.vector_bits / 8.0);
    EXPECT_DOUBLE_EQ(r.l3_bytes_per_core_cycle, r.vector_bits / 16.0);
  }
}

TEST(HwBuiltinProfiles, OtherAcceleratorsAndGenericCpus) {
  HwProfile mi = load("mi300x");
  EXPECT_EQ(mi.vendor, "amd");
  EXPECT_EQ(mi.cores, 304);
  EXPECT_DOUBLE_EQ(mi.mem_bandwidth_gbps, 5300);
  EXPECT_TRUE(std::any_of(mi.matrix_units.begin(), mi.matrix_units.end(),
                          [](const MatrixUnit& u) { return u.name.find("mfma") != std::string::npos; }));

  HwProfile ascend = load("ascend-910b");
  EXPECT_TRUE(ascend.representative);
  EXPECT_TRUE(std::any_of(ascend.matrix_units.begin(), ascend.matrix_units.end(),
                          [](const MatrixUnit& u) { return u.m == 16 && u.n == 16 && u.k == 16; }));

  HwProfile avx2 = load("generic-avx2");
  EXPECT_TRUE(avx2.representative);
  EXPECT_EQ(avx2.kind, "cpu");
  EXPECT_EQ(avx2.vector_bits, 256);
  EXPECT_FALSE(avx2.has("avx512f"));
  ASSERT_NE(avx2.cache(1), nullptr);
  EXPECT_EQ(avx2.cache(1)->size_bytes, 32 * KiB);
  EXPECT_EQ(avx2.cache(1)->ways, 8);

  HwProfile avx512 = load("generic-avx512");
  EXPECT_TRUE(avx512.representative);
  EXPECT_EQ(avx512.vector_bits, 512);
  for (const char* f : {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile",
                        "amx-bf16"})
    EXPECT_TRUE(avx512.has(f)) << f;
  ASSERT_NE(avx512.cache(1), nullptr);
  EXPECT_EQ(avx512.cache(1)->size_bytes, 48 * KiB);
  EXPECT_EQ(avx512.cache(1)->ways, 12);
  ASSERT_NE(avx512.cache(2), nullptr);
  EXPECT_EQ(avx512.cache(2)->size_bytes, 2 * MiB);
  EXPECT_EQ(avx512.cache(2)->ways, 16);
}

}  // namespace
}  // namespace tileforge::hw
