// The cpu-avx512, cpu-avx2 and cpu-generic kernel families through the family registry: which chips they serve,
// the candidates they offer, their cost model and decision log, and that they agree with the cpu backend's own
// heuristic and thread split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/blocking.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_cost_constants.hpp"
#include "backends/cpu/gemm_driver.hpp"
#include "hw/hw.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge::cpu {
namespace {

using namespace constants;
using plan::Cost;
using plan::KernelFamily;
using testing::make_problem;

const char* const kCpuFamilies[] = {"cpu-avx512", "cpu-avx2", "cpu-generic"};

using testing::profile;

const KernelFamily& family(const char* name) {
  const KernelFamily* f = plan::find_family(name);
  if (!f) throw std::runtime_error(std::string(name) + " is not registered");
  return *f;
}

// The family the planner would pick for a chip nobody asked a family for: the first that fits, by preference.
std::string first_fitting_cpu_family(const hw::HwProfile& p) {
  for (const KernelFamily* f : plan::families()) {
    if (f->backend() == "cpu" && f->fit(p).ok) return std::string(f->name());
  }
  return {};
}

TEST(CpuFamily, TheThreeFamiliesAreRegisteredWithTheCpuBackend) {
  for (const char* name : kCpuFamilies) {
    SCOPED_TRACE(name);
    const KernelFamily* f = plan::find_family(name);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->name(), name);
    EXPECT_EQ(f->backend(), "cpu");
    EXPECT_TRUE(f->plans_threads());
    EXPECT_EQ(f->fill_word(), "packing");
    // Tuned records carry the space's version; the family must say the same one.
    EXPECT_EQ(f->version(), family_space(name, make_problem(64, 64, 64)).version);
  }
  // Listed widest vectors first, as the planner prefers them.
  const std::vector<std::string> all = plan::family_names();
  std::vector<std::size_t> at;
  for (const char* name : kCpuFamilies) at.push_back(std::find(all.begin(), all.end(), name) - all.begin());
  EXPECT_LT(at[0], at[1]);
  EXPECT_LT(at[1], at[2]);
  EXPECT_LT(at[2], all.size());
}

TEST(CpuFamily, FitPicksTheWidestIsaTheProfileLists) {
  EXPECT_EQ(first_fitting_cpu_family(profile("generic-avx512")), "cpu-avx512");
  EXPECT_EQ(first_fitting_cpu_family(profile("generic-avx2")), "cpu-avx2");

  const hw::HwProfile avx2 = profile("generic-avx2");
  const plan::FamilyFit no512 = family("cpu-avx512").fit(avx2);
  EXPECT_FALSE(no512.ok);
  EXPECT_TRUE(no512.relevant);
  EXPECT_NE(no512.refusal.find("AVX-512"), std::string::npos) << no512.refusal;
  EXPECT_NE(no512.refusal.find(avx2.name), std::string::npos) << no512.refusal;
  const plan::FamilyFit yes = family("cpu-avx2").fit(avx2);
  ASSERT_TRUE(yes.ok);
  EXPECT_NE(yes.reason.find(avx2.name), std::string::npos) << yes.reason;

  // A CPU that lists neither AVX2+FMA nor AVX-512 still runs the portable kernels.
  hw::HwProfile plain = avx2;
  plain.features = {"sse4.2"};
  EXPECT_EQ(first_fitting_cpu_family(plain), "cpu-generic");
  EXPECT_FALSE(family("cpu-avx2").fit(plain).ok);
  EXPECT_NE(family("cpu-avx2").fit(plain).refusal.find("AVX2"), std::string::npos);
}

TEST(CpuFamily, GpuProfilesAreRefusedWithTheReason) {
  const hw::HwProfile gpu = profile("a100-sxm");
  for (const char* name : kCpuFamilies) {
    SCOPED_TRACE(name);
    const plan::FamilyFit f = family(name).fit(gpu);
    EXPECT_FALSE(f.ok);
    EXPECT_FALSE(f.relevant);  // a CPU family has nothing to say about why no GPU family fits
    EXPECT_NE(f.refusal.find("plans for CPUs"), std::string::npos) << f.refusal;
    EXPECT_NE(f.refusal.find(gpu.name), std::string::npos) << f.refusal;
  }
}

TEST(CpuFamily, SupportsOnlyF32Accumulation) {
  const KernelFamily& f = family("cpu-avx2");
  EXPECT_TRUE(f.supports(make_problem(64, 64, 64, Layout::RR, DType::f16, DType::f16)).empty());
  Problem f16_accum = make_problem(64, 64, 64, Layout::RR, DType::f16, DType::f16);
  f16_accum.precision.accum = DType::f16;
  const plan::SupportGap gap = f.supports(f16_accum);
  EXPECT_FALSE(gap.empty());
  EXPECT_FALSE(gap.needed.empty());
}

// Dispatch's plans of the choice alone list only the micro-kernels' pairs: the same legal configs, in the same order,
// and none that is rejected; so they say they are legal as listed (the planner then prices them unchecked), the full
// grid does not.
TEST(CpuFamily, ChoiceCandidatesAreTheLegalCandidatesInOrder) {
  std::vector<Problem> problems = {make_problem(1000, 16, 16), make_problem(4096, 4096, 4096, Layout::RC, DType::bf16),
                                   make_problem(7, 3000, 500, Layout::CR)};
  std::mt19937_64 rng(17);
  for (int i = 0; i < 6; ++i) {
    const auto dim = [&] { return int64_t(1 + rng() % 5000); };
    problems.push_back(make_problem(dim(), dim(), dim(), Layout(rng() % 4)));
  }
  for (const char* chip : {"generic-avx2", "generic-avx512"}) {
    const hw::HwProfile p = testing::profile(chip);
    for (const Problem& q : problems) {
      for (const int threads : {1, 2, 16}) {
        const KernelFamily& f = *plan::find_family(plan::choose_family(p, q).family);
        const plan::FamilySpace all = f.candidates(q.normalized(), p, threads);
        const plan::FamilySpace few = f.choice_candidates(q.normalized(), p, threads);
        std::vector<Config> legal;
        for (const Config& c : all.list)
          if (!plan::first_violation(all.space, c)) legal.push_back(c);
        const std::vector<Config> listed = plan::listed_configs(few);
        EXPECT_TRUE(few.list.empty());  // flat: no map per config
        for (const Config& c : listed) EXPECT_FALSE(plan::first_violation(few.space, c)) << c.describe();
        EXPECT_EQ(listed, legal) << q.describe() << " on " << chip << ", " << threads << " threads";
        EXPECT_LT(listed.size(), all.list.size());
        EXPECT_EQ(few.reference, all.reference);
        EXPECT_TRUE(few.list_legal);
        EXPECT_FALSE(all.list_legal);
      }
    }
  }
}

TEST(CpuFamily, WorkspaceCountsTheDriversOwnBuffers) {
  const hw::HwProfile p = profile("generic-avx2");
  const KernelFamily& f = family("cpu-avx2");
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 256}, {"MC", 96}, {"NC", 4096}, {"PACK_B", 1}}};
  const Problem f32 = make_problem(1000, 3000, 500).normalized();
  Problem bf16 = f32;
  bf16.precision = {DType::bf16, DType::bf16, DType::f32};
  const uint64_t one = f.workspace_bytes(f32, p, c, 1);
  // Packed B (K x NC + NR floats, under the 64 MB chunk) and one thread's A block and B panel.
  EXPECT_EQ(one, uint64_t(4) * (500 * 3016 + (96 + 6) * 256 + 256 * 3016));
  // Each thread adds its own blocks; a 16-bit C adds its f32 accumulator of M x N.
  EXPECT_EQ(f.workspace_bytes(f32, p, c, 4) - one, uint64_t(3) * 4 * ((96 + 6) * 256 + 256 * 3016));
  EXPECT_EQ(f.workspace_bytes(bf16, p, c, 1) - one, uint64_t(1000) * 3000 * 4);
  // The packed chunk of B stops at 64 MB; an empty problem takes nothing.
  EXPECT_LE(f.workspace_bytes(make_problem(16, 4096, 1 << 20).normalized(), p, c, 1),
            (uint64_t(64) << 20) + uint64_t(4) * ((96 + 6) * 256 + 256 * 4112));
  EXPECT_EQ(f.workspace_bytes(make_problem(0, 16, 16).normalized(), p, c, 1), 0u);
}

TEST(CpuFamily, CandidatesAreLegalAroundALegalReference) {
  const hw::HwProfile p = profile("generic-avx2");
  const Problem q = make_problem(1024, 1024, 1024);
  const plan::FamilySpace fs = family("cpu-avx2").candidates(q, p, p.cores);
  ASSERT_FALSE(fs.list.empty());
  EXPECT_EQ(fs.space.family, "cpu-avx2");
  for (const Config& c : fs.list) EXPECT_EQ(c.family, "cpu-avx2");
  ASSERT_TRUE(fs.reference.has_value());
  EXPECT_FALSE(plan::first_violation(fs.space, *fs.reference).has_value()) << fs.reference->describe();
  EXPECT_FALSE(fs.reference_reasons.empty());
  EXPECT_FALSE(fs.coverage.empty());
  auto en = plan::enumerate_candidates(fs, {}, p.name);
  ASSERT_TRUE(en.ok()) << en.status().to_string();
  EXPECT_FALSE(en->legal.empty());
  // The reference is one of the configs the planner ranks.
  EXPECT_NE(std::find(en->legal.begin(), en->legal.end(), *fs.reference), en->legal.end());
}

TEST(CpuFamily, ReferenceReadsBInPlaceOnlyForFewRowsOfContiguousF32B) {
  const hw::HwProfile p = profile("generic-avx2");
  const KernelFamily& f = family("cpu-avx2");
  EXPECT_EQ(f.candidates(make_problem(16, 4096, 4096), p, 2).reference->at("PACK_B"), 0);
  EXPECT_EQ(f.candidates(make_problem(1024, 4096, 4096), p, 2).reference->at("PACK_B"), 1);
  // B stored column-major is never read in place: only PACK_B = 1 is declared.
  const plan::FamilySpace col = f.candidates(make_problem(16, 4096, 4096, Layout::RC), p, 2);
  EXPECT_EQ(col.reference->at("PACK_B"), 1);
  for (const Config& c : col.list) EXPECT_EQ(c.at("PACK_B"), 1);
}

TEST(CpuFamily, ReferenceIsTheBackendsOwnHeuristic) {
  // On the host, the planner's reference for the host's family is what the backend runs without a tuned record.
  Backend* backend = find_backend("cpu");
  ASSERT_NE(backend, nullptr);
  auto device = open_device("cpu", {}, 2);
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  for (const Problem& q : {make_problem(16, 4096, 4096), make_problem(300, 200, 100, Layout::CR)}) {
    auto heuristic = backend->heuristic(q, *device);
    ASSERT_TRUE(heuristic.ok()) << heuristic.status().to_string();
    const plan::FamilySpace fs = family(heuristic->family.c_str()).candidates(q, device->profile, 2);
    EXPECT_EQ(*fs.reference, *heuristic) << q.describe();
  }
}

TEST(CpuFamily, CostOfTheReferenceIsPositiveAndRespondsToItsInputs) {
  const hw::HwProfile p = profile("generic-avx2");
  const KernelFamily& f = family("cpu-avx2");
  const Problem q = make_problem(4096, 4096, 4096);
  const Config ref = *f.candidates(q, p, p.cores).reference;
  const plan::Cost c = f.cost(q, p, ref, p.cores, nullptr);
  ASSERT_TRUE(c.valid);
  EXPECT_GT(c.seconds, 0);
  EXPECT_TRUE(std::isfinite(c.seconds));
  // No config beats the roofline floor of the chip.
  EXPECT_GE(c.seconds, plan::analyze_roofline(q, p).floor_s);

  // 4096^3 is compute-bound: the whole chip is far faster than one core.
  EXPECT_LT(c.seconds, f.cost(q, p, ref, 1, nullptr).seconds / 8);

  // KC sets how often C is passed over and how much of B stays in L1: doubling it changes the prediction.
  Config deeper = ref;
  deeper.params["KC"] = ref.at("KC") * 2;
  EXPECT_NE(f.cost(q, p, deeper, p.cores, nullptr).seconds, c.seconds);

  // Packing B costs a phase that reading it in place does not have.
  Config in_place = ref;
  in_place.params["PACK_B"] = 0;
  EXPECT_GT(f.cost(q, p, ref, p.cores, nullptr).fill_s, f.cost(q, p, in_place, p.cores, nullptr).fill_s);
}

// The model of the config's own family, as the planner calls it (threads 0: all cores of the profile).
Cost cost(const Problem& q, const hw::HwProfile& p, const Config& c, int threads = 0) {
  return family(c.family.c_str()).cost(q, p, c, threads, nullptr);
}

TEST(CpuFamily, MoreCoresAreNeverSlower) {
  const hw::HwProfile p = profile("generic-avx2");
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  for (const Problem& q : {make_problem(4096, 4096, 4096), make_problem(1024, 1024, 1024)}) {
    double previous = 1e30;
    for (int threads : {1, 2, 8, 32, 64}) {
      const double t = cost(q, p, c, threads).seconds;
      EXPECT_LT(t, previous) << q.describe() << " with " << threads << " threads";
      previous = t;
    }
  }
}

TEST(CpuFamily, CostTermsAreConsistent) {
  const hw::HwProfile p = profile("generic-avx2");
  const Problem q = make_problem(1024, 1024, 1024);
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  const Cost whole = cost(q, p, c);
  ASSERT_TRUE(whole.valid);
  EXPECT_GT(whole.compute_s, 0);
  EXPECT_LE(whole.compute_share, 1.0);
  EXPECT_GE(whole.seconds, whole.body_s + whole.fill_s);
  EXPECT_EQ(whole.bound, "compute");
  // KC beyond K changes nothing: the loop nest uses min(KC, K).
  Problem shallow = make_problem(1024, 1024, 100);
  Config kc1 = c, kc2 = c;
  kc1.params["KC"] = 256;
  kc2.params["KC"] = 512;
  EXPECT_DOUBLE_EQ(cost(shallow, p, kc1).seconds, cost(shallow, p, kc2).seconds);
}

TEST(CpuFamily, InPlaceBPaysPerRowPanelOfA) {
  // ldb = 1024 floats = 4 KB: every row of a KC x NR micro-panel falls in the same L1 set, so B read in place is
  // re-read from a lower level by every MR-panel of A: 171 of them at M = 1024, where packing must win, against
  // 3 at M = 16, where the re-reads cost far less than a pass that packs B.
  const hw::HwProfile p = profile("generic-avx2");
  const Config packed{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  Config in_place = packed;
  in_place.params["PACK_B"] = 0;
  const Problem square = make_problem(1024, 1024, 1024);
  const int threads = 2;
  EXPECT_LT(cost(square, p, packed, threads).seconds, cost(square, p, in_place, threads).seconds);
  const Problem skinny = make_problem(16, 4096, 4096);
  EXPECT_LT(cost(skinny, p, in_place, threads).seconds, cost(skinny, p, packed, threads).seconds);
}

TEST(CpuFamily, InPlaceBFromDramIsBoundPerCore) {
  // Rows of B far apart stream from DRAM at a per-core rate (kInPlaceDramBytesPerCycle), not at the chip's
  // bandwidth: measured at 16x4096x4096 on a 2-core Zen 3, 5.70 ms in place where the bandwidth alone gives 1.7.
  const hw::HwProfile p = profile("generic-avx2");
  const int threads = 2;
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 0}}};
  const Problem skinny = make_problem(16, 4096, 4096);
  const double b_bytes = 4096.0 * 4096.0 * 4.0;
  const double core_clock = *p.peak_tflops(DType::f32, DType::f32) * 1e12 / p.cores / (2.0 * 8 * p.fma_pipes);
  const Cost in_place = cost(skinny, p, c, threads);
  EXPECT_GE(in_place.body_s, b_bytes / (threads * kInPlaceDramBytesPerCycle * core_clock) * (1 - 1e-9));
  EXPECT_EQ(in_place.bound, "DRAM");
  // Rows of 1.5 or 0.5 cache lines touch lines they do not use (measured 1.20x and 1.27x slower than 6x16).
  Config nr24 = c, nr8 = c;
  nr24.params["MR"] = 4;
  nr24.params["NR"] = 24;
  nr8.params["MR"] = 8;
  nr8.params["NR"] = 8;
  EXPECT_LT(in_place.seconds, cost(skinny, p, nr24, threads).seconds);
  EXPECT_LT(in_place.seconds, cost(skinny, p, nr8, threads).seconds);
}

TEST(CpuFamily, TeamCountsOnlyItsShareOfASharedL3) {
  // Two threads on a 16-core guest whose L3 the other cores (and other guests) share. Each work unit runs every KC
  // pass over its own block of C (516 rows x 4096 columns, 8.5 MB at 4096^3): in the team's share of a 48 MB L3
  // (6 MB) it does not stay, so every pass goes to memory and a deeper KC (fewer passes) is predicted faster; with
  // the whole L3 it stays. (Measured on such a guest with a 300 MB L3 when each thread's pass covered all of its
  // half of C: 12x32 KC=432 ran ahead of 6x64 KC=160 in both calls that compared them.)
  hw::HwProfile p = profile("generic-avx512");
  const double per_core_tflops = *p.peak_tflops(DType::f32, DType::f32) / p.cores;
  for (auto& r : p.peaks) r.tflops = per_core_tflops * 16;
  p.cores = 16;
  p.mem_bandwidth_gbps = 15;
  hw::HwProfile whole = p, shared = p;
  for (auto* q : {&whole, &shared}) {
    for (auto& c : q->caches) {
      if (c.level != 3) continue;
      c.size_bytes = 48ll << 20;
      c.ways = 16;
      c.shared_by = q == &whole ? 2 : 16;
    }
  }
  const int threads = 2;
  const Problem q = make_problem(4096, 4096, 4096);
  const Config shallow{"cpu-avx512", {{"MR", 6}, {"NR", 64}, {"KC", 160}, {"MC", 2112}, {"NC", 16384}, {"PACK_B", 1}}};
  const Config deep{"cpu-avx512", {{"MR", 12}, {"NR", 32}, {"KC", 432}, {"MC", 1056}, {"NC", 16384}, {"PACK_B", 1}}};
  auto dram = [](const Cost& c) {
    for (const auto& l : c.levels)
      if (l.level == "DRAM") return l.bytes;
    return 0.0;
  };
  const double c_bytes = 4.0 * 4096 * 4096;
  const Cost in_whole = cost(q, whole, shallow, threads), in_share = cost(q, shared, shallow, threads);
  EXPECT_LT(dram(in_whole), c_bytes);
  EXPECT_GT(dram(in_share), 2.0 * c_bytes * 25);  // 26 passes over C, each a load and a store (the first no load)
  EXPECT_LT(cost(q, shared, deep, threads).seconds, in_share.seconds);
}

TEST(CpuFamily, CacheOverflowCosts) {
  const hw::HwProfile p = profile("generic-avx2");
  const Problem q = make_problem(4096, 4096, 4096);
  const Config fit{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  Config deep = fit;
  deep.params["KC"] = 1024;  // the KC x NR micro-panel of B (64 KB) no longer stays in a 32 KB L1
  const Cost a = cost(q, p, fit), b = cost(q, p, deep);
  EXPECT_LT(a.seconds, b.seconds);
  bool noted = false;
  for (const auto& n : b.notes) noted = noted || n.find("does not stay in L1") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CpuFamily, DriverSplitsRowsOnlyWhenEachThreadGetsTwoPanels) {
  EXPECT_EQ(rows_split(4096, 6, 64), 64);
  EXPECT_EQ(rows_split(16, 6, 8), 1);   // 3 MR-panels: columns are split
  EXPECT_EQ(rows_split(60, 6, 8), 4);   // 10 panels: 4 rows of threads get two each
  EXPECT_EQ(rows_split(1000, 6, 7), 7); // a prime team splits rows when there are enough panels
  EXPECT_EQ(rows_split(1000, 6, 1), 1);
}

TEST(CpuFamily, CostWithoutAPeakIsInvalid) {
  hw::HwProfile p = profile("generic-avx2");
  p.peaks.clear();
  const KernelFamily& f = family("cpu-avx2");
  const Problem q = make_problem(256, 256, 256);
  const plan::Cost c = f.cost(q, p, *f.candidates(q, profile("generic-avx2"), 4).reference, 4, nullptr);
  EXPECT_FALSE(c.valid);
  EXPECT_TRUE(std::isinf(c.seconds));
  EXPECT_FALSE(c.notes.empty());
}

TEST(CpuFamily, CostNamesTheCoreRateTheProfileLacks) {
  // No number is assumed for a core the record does not describe: the cost is invalid and says which field.
  const KernelFamily& f = family("cpu-avx2");
  const hw::HwProfile full = profile("generic-avx2");
  const Problem q = make_problem(256, 256, 256);
  const Config c = *f.candidates(q, full, 4).reference;
  ASSERT_TRUE(f.cost(q, full, c, 4, nullptr).valid);
  auto without = [&](auto&& clear, const char* field) {
    hw::HwProfile p = full;
    clear(p);
    const Cost cost = f.cost(q, p, c, 4, nullptr);
    EXPECT_FALSE(cost.valid) << field;
    ASSERT_FALSE(cost.notes.empty()) << field;
    EXPECT_NE(cost.notes[0].find(std::string("the profile records no ") + field), std::string::npos) << cost.notes[0];
  };
  without([](hw::HwProfile& p) { p.fma_pipes = 0; }, "fma_pipes");
  without([](hw::HwProfile& p) { p.fma_latency_cycles = 0; }, "fma_latency_cycles");
  without([](hw::HwProfile& p) { p.load_ports_per_cycle = 0; }, "load_ports_per_cycle");
  without([](hw::HwProfile& p) { p.l2_bytes_per_core_cycle = 0; }, "l2_bytes_per_core_cycle");
  without([](hw::HwProfile& p) { p.l3_bytes_per_core_cycle = 0; }, "l3_bytes_per_core_cycle");
  without([](hw::HwProfile& p) { p.mem_bandwidth_gbps = 0; }, "mem_bandwidth_gbps");
  // Without an L3 the L3 rate is not needed.
  hw::HwProfile no_l3 = full;
  no_l3.l3_bytes_per_core_cycle = 0;
  no_l3.caches.erase(std::remove_if(no_l3.caches.begin(), no_l3.caches.end(),
                                    [](const hw::CacheLevel& l) { return l.level == 3; }),
                     no_l3.caches.end());
  EXPECT_TRUE(f.cost(q, no_l3, c, 4, nullptr).valid);
  // The planner reports the plan unserved with the field named.
  hw::HwProfile p = full;
  p.fma_pipes = 0;
  p.fma_latency_cycles = 0;
  auto plan = plan::make_plan(q, p, plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_FALSE(plan->served);
  EXPECT_NE(plan->unserved.find("the profile records no fma_pipes"), std::string::npos) << plan->unserved;
}

TEST(CpuFamily, CoreRatesFromTheRecordSetTheComputeAndCacheTerms) {
  // Zen 4's AVX-512: one 512-bit FMA per cycle. With the measured peak fixed, fewer pipes mean a faster clock
  // (peak / (2 x lanes x pipes)) and so faster caches; the compute term stays what the peak allows.
  hw::HwProfile two = profile("generic-avx512"), one = two;
  one.fma_pipes = 1;
  one.load_ports_per_cycle = 1;
  const KernelFamily& f = family("cpu-avx512");
  const Problem q = make_problem(2048, 2048, 2048);
  const Config c = *f.candidates(q, two, 8).reference;
  const Cost a = f.cost(q, two, c, 8, nullptr), b = f.cost(q, one, c, 8, nullptr);
  ASSERT_TRUE(a.valid && b.valid);
  auto rate = [](const Cost& cost, const char* level) {
    for (const auto& l : cost.levels)
      if (l.level == level) return l.bandwidth;
    return 0.0;
  };
  EXPECT_NEAR(rate(b, "L2"), 2 * rate(a, "L2"), 1e-6 * rate(a, "L2"));
  hw::HwProfile wide_l2 = two;
  wide_l2.l2_bytes_per_core_cycle *= 2;
  EXPECT_NEAR(rate(f.cost(q, wide_l2, c, 8, nullptr), "L2"), 2 * rate(a, "L2"), 1e-6 * rate(a, "L2"));
}

TEST(CpuFamily, ExplainSplitsThreadsAsTheDriverDoes) {
  const hw::HwProfile p = profile("generic-avx512");
  for (int threads : {1, 6, 8}) {
    for (const Problem& q : {make_problem(1024, 1024, 1024), make_problem(16, 4096, 4096)}) {
      SCOPED_TRACE(q.describe() + " threads " + std::to_string(threads));
      plan::PlanOptions o;
      o.threads = threads;
      auto made = plan::make_plan(q, p, o);
      ASSERT_TRUE(made.ok()) << made.status().to_string();
      ASSERT_TRUE(made->served) << made->unserved;
      EXPECT_EQ(made->family, "cpu-avx512");
      const Config& cfg = made->choice()->config;
      const int mr = int(cfg.at("MR")), nr = int(cfg.at("NR"));
      std::string split;
      if (threads == 1) {
        split = "one thread";
      } else if (rows_split(q.m, mr, threads) == 1) {
        split = "columns split " + std::to_string(threads) + " ways";
      } else {
        const TeamSplit s =
            team_split(q.m, q.n, q.k, mr, nr, cfg.at("MC"), cfg.at("NC"), cfg.at("PACK_B") != 0, threads);
        split = "work units of " + std::to_string(s.rows) + " rows x 1/" + std::to_string(s.col_parts) +
                " of the columns";
      }
      const auto& entries = made->log.entries();
      EXPECT_TRUE(std::any_of(entries.begin(), entries.end(),
                              [&](const plan::Decision& d) { return d.decision == split; }))
          << "no entry '" << split << "'";
      // Every layer of the log has an entry.
      for (std::string_view layer : plan::kLayers) EXPECT_FALSE(made->log.in_layer(layer).empty()) << layer;
    }
  }
}

}  // namespace
}  // namespace tileforge::cpu
