// CI's compile check of the sm90 family (no GPU needed): NVRTC builds representative configs for sm_90a; the PTX
// holds wgmma.mma_async and the TMA copies, ptxas reports no spills and no line saying that wgmma instructions are
// serialized, and the registers and shared memory fit what the family declares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "backends/cuda/sm90/sm90_test_config.hpp"
#include "backends/cuda/common/cuda_common.hpp"
#include "backends/cuda/sm90/sm90_cost_model.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "hw/hw.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"
#include "jit/nvrtc.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cuda {
namespace {

Problem problem(int64_t m, int64_t n, int64_t k, Layout l = Layout::RR, DType in = DType::f16, DType out = DType::f16) {
  return testing::make_problem(m, n, k, l, in, out).normalized();
}

// The opt-in f16 accumulation policy (f16 inputs).
Problem acc16(Problem p) {
  p.precision.accum = DType::f16;
  return p;
}

using testing_sm90::sm90_config;
using testing_sm90::swapped;
using testing_sm90::atomic;
using testing_sm90::consumer_cols;
using testing_sm90::consumer_k;
using testing_sm90::cluster_sum;

// Clusters of 4 and 8: as many resident as the chip record lists (none planned without the list), declared only
// where an operand's rows are off 32-byte sectors, and legal only on a grid of one wave of them, without stream-K.
TEST(Sm90Family, ClustersAboveTwoOnlyForRowsOffSectorsOnGridsOfOneWave) {
  auto h200 = hw::load_profile("h200"), h100 = hw::load_profile("h100-sxm");
  ASSERT_TRUE(h200.ok() && h100.ok());
  EXPECT_EQ(sm90_resident_clusters(*h200, 1), 132);
  EXPECT_EQ(sm90_resident_clusters(*h200, 2), 66);
  EXPECT_EQ(sm90_resident_clusters(*h200, 4), 30);
  EXPECT_EQ(sm90_resident_clusters(*h200, 8), 15);
  EXPECT_EQ(sm90_resident_clusters(*h100, 2), 66);
  EXPECT_EQ(sm90_resident_clusters(*h100, 4), 30);  // measured on an H100 as on the H200 (the same die)
  // A record that lists no resident clusters (as the H100's did before they were measured) offers no larger ones.
  hw::HwProfile unlisted = *h100;
  unlisted.resident_clusters.clear();
  EXPECT_EQ(sm90_resident_clusters(unlisted, 4), 0);
  auto cluster_values = [](const ParamSpace& s) { return s.find("CLUSTER_M")->values.get(); };
  const std::vector<int64_t> small{1, 2}, large{1, 2, 4, 8};
  EXPECT_EQ(cluster_values(sm90_space(problem(1000, 1000, 1000), *h200)), large);
  EXPECT_EQ(cluster_values(sm90_space(problem(1024, 1000, 1024), *h200)), large);   // B's rows off
  EXPECT_EQ(cluster_values(sm90_space(problem(1024, 1024, 1024), *h200)), small);   // every row on sectors
  EXPECT_EQ(cluster_values(sm90_space(problem(8000, 8000, 1000), *h200)), small);   // never one wave
  EXPECT_EQ(cluster_values(sm90_space(problem(1000, 1000, 1000), *h100)), large);
  EXPECT_EQ(cluster_values(sm90_space(problem(1000, 1000, 1000), unlisted)), small);  // no resident count listed
  const ParamSpace s = sm90_space(problem(1000, 1000, 1000), *h200);
  // 64x192 in 4x1 clusters: 4 x 6 = 24 cluster tiles for 30; in 4x2, 12 for 15; 64x128 in 2x2: 8 x 4 = 32 > 30.
  EXPECT_TRUE(s.check(sm90_config(64, 192, 6, 1, 4, 1, 8, 1, 1, 1)).ok());
  EXPECT_TRUE(s.check(sm90_config(64, 192, 6, 1, 4, 2, 8, 1, 1, 1)).ok());
  const Status two_waves = s.check(sm90_config(64, 128, 8, 1, 2, 2, 8, 1, 1, 1));
  EXPECT_FALSE(two_waves.ok());
  EXPECT_NE(two_waves.to_string().find("one wave of resident clusters (30 of 4, 15 of 8"), std::string::npos)
      << two_waves.to_string();
  EXPECT_FALSE(s.check(sm90_config(64, 192, 6, 1, 4, 1, 8, 1, 1, 1, 2, 0)).ok());  // x 2 slices: 48 > 30
  EXPECT_FALSE(s.check(sm90_config(64, 192, 6, 1, 4, 1, 8, 1, 1, 1, 1, 1)).ok());  // stream-K
  // Every legal config of the space keeps its cluster within one wave and the K-row parts whole.
  for (const Config& c : s.enumerate()) {
    const int64_t cs = sm90_cluster_size(c);
    if (cs <= 2) continue;
    const int64_t units = (1000 + c.at("BLOCK_M") * c.at("CLUSTER_M") - 1) / (c.at("BLOCK_M") * c.at("CLUSTER_M")) *
                          ((1000 + c.at("BLOCK_N") * c.at("CLUSTER_N") - 1) / (c.at("BLOCK_N") * c.at("CLUSTER_N"))) *
                          c.at("SPLIT_K");
    EXPECT_LE(units, sm90_resident_clusters(*h200, cs)) << c.describe();
    EXPECT_EQ(c.at("STREAM_K"), 0) << c.describe();
  }
}

TEST(Sm90Family, WorkspaceIsTheSchedulesAndTheOperandCopies) {
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  const plan::KernelFamily* f = plan::find_family("sm90");
  ASSERT_NE(f, nullptr);
  // Split-K: the counters and partial tiles of the schedule on every SM; whole tiles without a copy: nothing.
  const Problem small = problem(512, 512, 8192);
  const Config split = sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 8, 0);
  const int64_t ws = sm90_schedule(small, split, h200->cores).workspace_bytes;
  EXPECT_GE(ws, int64_t(16) * 8 * 128 * 128 * 4);  // 16 tiles x 8 slices of f32 partials
  EXPECT_EQ(f->workspace_bytes(small, *h200, split, 0), uint64_t(ws));
  EXPECT_EQ(f->workspace_bytes(problem(4096, 4096, 4096), *h200, sm90_config(128, 256, 3, 2, 1, 1, 16, 1, 1, 1), 0),
            0u);
  // COPY_AB 3 copies B (K x N, rows padded to 64 elements) of 3000^3: 3000 x 3008 x 2 bytes.
  EXPECT_EQ(f->workspace_bytes(problem(3000, 3000, 3000), *h200,
                               sm90_config(128, 192, 4, 2, 1, 1, 8, 1, 1, 1, 1, 0, 3), 0),
            uint64_t(3000) * 3008 * 2);
}

// SWAP_AB: declared only when asked for (not yet measured on a GPU) and where the staging epilogue can write C; the
// kernel's problem is the transpose in every layout; the space, the schedule, the source and the cost model all see
// the transposed problem (the price of a swapped config is the price of its unswapped twin on the transpose).
TEST(Sm90Family, SwapAbRunsTheTransposedProblem) {
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  const Sm90SpaceOptions on{.swap_ab = true}, off{.swap_ab = false};
  const Problem decode = problem(16, 4096, 4096);
  EXPECT_EQ(sm90_space(decode, *h200, off).find("SWAP_AB"), nullptr);
  ASSERT_NE(sm90_space(decode, *h200, on).find("SWAP_AB"), nullptr);
  const std::vector<int64_t> narrow_and_wide{16, 32, 48, 64, 72, 80, 96, 112, 128, 192, 256};
  EXPECT_EQ(sm90_space(decode, *h200, on).find("BLOCK_N")->values.get(), narrow_and_wide);
  // A column-major A is the transposed run's N-major B: whole 64-column boxes, no narrow values to declare.
  const std::vector<int64_t> wide{64, 128, 192, 256};
  EXPECT_EQ(sm90_space(problem(16, 4096, 4096, Layout::CR), *h200, on).find("BLOCK_N")->values.get(), wide);
  Problem beta = decode;
  beta.beta = 0.5;
  EXPECT_EQ(sm90_space(beta, *h200, on).find("SWAP_AB"), nullptr);  // direct stores only
  EXPECT_EQ(sm90_space(problem(16, 4096, 4096, Layout::RR, DType::f16, DType::f32), *h200, on).find("SWAP_AB"),
            nullptr);  // f32 C: direct stores only

  // The kernel's problem in each layout: M and N, A and B exchanged, each operand's major order flipped.
  const Config dec = swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 1, 4, 0));
  const std::pair<Layout, Layout> transposed[] = {
      {Layout::RR, Layout::CC}, {Layout::RC, Layout::RC}, {Layout::CR, Layout::CR}, {Layout::CC, Layout::RR}};
  for (const auto& [given, runs] : transposed) {
    const Problem q = problem(40, 300, 512, given);
    const Problem t = sm90_kernel_problem(q, dec);
    EXPECT_EQ(t.m, 300);
    EXPECT_EQ(t.n, 40);
    EXPECT_EQ(t.lda, q.ldb);
    EXPECT_EQ(t.ldb, q.lda);
    EXPECT_EQ(t.layout, runs) << to_string(given);
    EXPECT_EQ(t.c_order, Order::col_major);
    EXPECT_EQ(sm90_kernel_problem(q, sm90_config(128, 64, 8, 2, 1, 1, 8, 1, 1, 1)).m, 40);
  }

  // Narrow BLOCK_N only swapped with A row-major (the kernel's B K-major); the stmatrix staging epilogue only.
  const ParamSpace rr = sm90_space(decode, *h200, on), cr = sm90_space(problem(16, 4096, 4096, Layout::CR), *h200, on);
  auto with_swap = [](Config c, int64_t v) {
    c.params["SWAP_AB"] = v;
    return c;
  };
  EXPECT_TRUE(rr.check(dec).ok()) << rr.check(dec).to_string();
  EXPECT_FALSE(rr.check(with_swap(dec, 0)).ok());
  EXPECT_FALSE(cr.check(dec).ok());
  EXPECT_TRUE(cr.check(swapped(sm90_config(128, 64, 8, 2, 1, 1, 8, 1, 1, 1, 4, 0))).ok());
  EXPECT_FALSE(rr.check(swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 0, 1, 0, 4, 0))).ok());  // direct stores
  EXPECT_FALSE(rr.check(swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 0, 4, 0))).ok());  // 32-bit stores

  // The schedule tiles the transposed problem: 4096 / 128 x 16 / 16 tiles x 4 slices.
  const Sm90Schedule sched = sm90_schedule(decode, dec, h200->cores);
  EXPECT_EQ(sched.cluster_tiles, 32);
  EXPECT_EQ(sched.slots, 128);

  // The source instantiates the column-major C of the transposed layout, with C's boxes 64 rows x BLOCK_N columns.
  const Sm90Source src = sm90_source(decode, dec);
  EXPECT_NE(src.entry.find("_CC_swap_128x16x64"), std::string::npos) << src.entry;
  EXPECT_NE(src.source.find(", true>;"), std::string::npos) << src.source;
  EXPECT_EQ(src.c_box[0], 64);
  EXPECT_EQ(src.c_box[1], 16);
  EXPECT_EQ(src.a_box[1], 64);  // the caller's B, N-major: 64 x 64 boxes
  EXPECT_EQ(src.b_box[1], 16);  // the caller's A, K-major: 16 rows

  // The price is that of the unswapped config on the transposed problem; COPY_AB names the caller's operands.
  Sm90CostCache cache;
  for (int64_t copy : {0, 2, 3}) {
    const Problem q = problem(1000, 1000, 1000);
    Config c = swapped(sm90_config(128, 72, 6, 2, 1, 2, 8, 1, 1, 1, 1, 0, copy));
    Config twin = c;
    twin.params.erase("SWAP_AB");
    twin.params["COPY_AB"] = copy == 0 ? 0 : 5 - copy;
    const double seconds = sm90_cost(q, *h200, c, &cache).seconds;
    EXPECT_GT(seconds, 0);
    EXPECT_DOUBLE_EQ(seconds, sm90_cost(sm90_kernel_problem(q, c), *h200, twin).seconds) << copy;
    EXPECT_LE(sm90_cost_bound(q, *h200, c, &cache), seconds * (1 + 1e-12)) << copy;
  }
}

// The tensor maps of the kernel's problem read, at the kernel's coordinates, the caller's elements: the same ones
// without SWAP_AB, the transposed ones with it (the kernel's A(n, k) is the caller's B(k, n), its B(k, m) the caller's
// A(m, k), its C(n, m) the caller's C(m, n)), in every layout, with padded leading dimensions.
TEST(Sm90Family, TensorMapsOfTheKernelsProblemReadTheCallersElements) {
  auto at = [](const Sm90MapShape& map, int64_t inner, int64_t outer) {
    EXPECT_LT(inner, map.inner);
    EXPECT_LT(outer, map.outer);
    return outer * map.ld + inner;
  };
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    Problem q = problem(40, 300, 512, l);
    q.lda += 8;
    q.ldb += 16;
    q.ldc += 24;
    const bool a_row = a_row_major(l), b_row = b_row_major(l);
    auto caller_a = [&](int64_t m, int64_t k) { return a_row ? m * q.lda + k : k * q.lda + m; };
    auto caller_b = [&](int64_t k, int64_t n) { return b_row ? k * q.ldb + n : n * q.ldb + k; };
    for (const bool swap : {false, true}) {
      const Config plain = sm90_config(128, 64, 6, 2, 1, 1, 8, 1, 1, 1);
      const Config c = swap ? swapped(plain) : plain;
      const Problem kp = sm90_kernel_problem(q, c);
      const Sm90Maps maps = sm90_maps(kp);
      const bool ka_row = a_row_major(kp.layout), kb_row = b_row_major(kp.layout);
      const bool c_col = kp.c_order == Order::col_major;
      EXPECT_EQ(c_col, swap);
      for (int64_t i : {0, 1, 7, 39}) {
        for (int64_t j : {0, 5, 64, 299}) {
          for (int64_t k : {0, 3, 256, 511}) {
            // Where the kernel reads the caller's A(i, k), B(k, j) and writes C(i, j): its A(m, k) at (k, m) of a
            // row-major map, else (m, k); its B(k, n) at (n, k) of a row-major map, else (k, n); its C(m, n) at (n, m)
            // row-major, (m, n) column-major. Swapped, A(i, k) is the kernel's B(k, i), B(k, j) its A(j, k), and
            // C(i, j) its C(j, i), which the column-major map places at (j, i) as the row-major one places C(i, j).
            const int64_t ka = swap ? at(maps.b, kb_row ? i : k, kb_row ? k : i)
                                    : at(maps.a, ka_row ? k : i, ka_row ? i : k);
            const int64_t kb = swap ? at(maps.a, ka_row ? k : j, ka_row ? j : k)
                                    : at(maps.b, kb_row ? j : k, kb_row ? k : j);
            const int64_t kc = at(maps.c, j, i);
            EXPECT_EQ(ka, caller_a(i, k)) << to_string(l) << (swap ? " swapped" : "");
            EXPECT_EQ(kb, caller_b(k, j)) << to_string(l) << (swap ? " swapped" : "");
            EXPECT_EQ(kc, i * q.ldc + j) << to_string(l) << (swap ? " swapped" : "");
          }
        }
      }
    }
  }
}

// Through the CLI: SWAP_AB is a parameter unless TILEFORGE_SM90_SWAP_AB=0 leaves it out (a pin of it is refused
// then, naming it), and a plan that swaps says so in its decision log.
TEST(Sm90Family, SwapAbIsDeclaredUnlessTheEnvironmentTurnsItOffAndExplained) {
  const std::filesystem::path dir = testing::fresh_test_dir("tileforge_sm90_swap_");
  const std::vector<std::string> args = {"plan", "--profile", "h200", "--dtype", "f16", "--shape", "1000x1000x1000",
                                         "--family", "sm90", "--no-db", "-q", "--explain", "--set", "SWAP_AB=1",
                                         "--set", "BLOCK_N=72"};
  const testing::CliResult off = testing::run_cli(args, dir, {{"TILEFORGE_SM90_SWAP_AB", "0"}});
  EXPECT_NE(off.exit_code, 0) << off.out;
  EXPECT_NE(off.err.find("SWAP_AB"), std::string::npos) << off.err;
  EXPECT_EQ(off.out, "");
  const testing::CliResult on = testing::run_cli(args, dir, {{"TILEFORGE_SM90_SWAP_AB", std::nullopt}});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_NE(on.out.find("SWAP_AB=1"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("C^T = B^T A^T"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("M = 1000 lies along the wgmma's N in 72-row tiles (14 of them, 8 rows past M)"),
            std::string::npos)
      << on.out;
  std::filesystem::remove_all(dir);
}

// A K-major tile whose rows are not whole 8-row atoms per CTA sharing it (the transposed run's 72-row B over four
// CTAs: 18 each) is legal only with the atoms dealt out (TILEFORGE_SM90_ATOM_SPLIT=1 until measured), and then the
// tensor map's box is one atom; an even split keeps its one box per CTA.
TEST(Sm90Family, KMajorTilesSharedUnevenlyDealOutAtoms) {
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  const Problem q = problem(1000, 1000, 1000);
  const Config uneven = swapped(sm90_config(128, 72, 8, 1, 4, 2, 8, 1, 1, 1));
  const Config even = swapped(sm90_config(128, 80, 7, 1, 2, 2, 8, 1, 1, 1));
  const ParamSpace off = sm90_space(q, *h200, Sm90SpaceOptions{.swap_ab = true});
  const ParamSpace on = sm90_space(q, *h200, Sm90SpaceOptions{.swap_ab = true, .atom_split = true});
  const Status refused = off.check(uneven);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("(BLOCK_N / CLUSTER_M) % 8 == 0"), std::string::npos) << refused.to_string();
  EXPECT_TRUE(on.check(uneven).ok()) << on.check(uneven).to_string();
  EXPECT_TRUE(off.check(even).ok()) << off.check(even).to_string();
  EXPECT_TRUE(on.check(even).ok()) << on.check(even).to_string();
  // At least one atom per CTA: 16 rows (two atoms) over a 4x1 cluster's four CTAs are refused either way.
  const Config thin = swapped(sm90_config(128, 16, 8, 2, 4, 1, 8, 1, 1, 1));
  EXPECT_FALSE(on.check(thin).ok());
  EXPECT_EQ(sm90_source(q, uneven).b_box[1], 8);
  EXPECT_EQ(sm90_source(q, even).b_box[1], 40);
  EXPECT_EQ(sm90_source(q, swapped(sm90_config(128, 72, 6, 2, 2, 2, 8, 1, 1, 1))).b_box[1], 8);  // 36 rows each

  // The planner offers them only where the environment asks for them.
  const std::filesystem::path dir = testing::fresh_test_dir("tileforge_sm90_atoms_");
  const std::vector<std::string> args = {"plan", "--profile", "h200", "--dtype", "f16", "--shape", "1000x1000x1000",
                                         "--family", "sm90", "--no-db", "-q", "--set", "SWAP_AB=1", "--set",
                                         "BLOCK_N=72", "--set", "CLUSTER_M=4", "--set", "CLUSTER_N=2"};
  const testing::CliResult without = testing::run_cli(args, dir, {{"TILEFORGE_SM90_ATOM_SPLIT", std::nullopt}});
  EXPECT_NE(without.exit_code, 0) << without.out;
  EXPECT_NE(without.err.find("whole 8-row swizzle atoms"), std::string::npos) << without.err;
  const testing::CliResult with = testing::run_cli(args, dir, {{"TILEFORGE_SM90_ATOM_SPLIT", "1"}});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_NE(with.out.find("BLOCK_N=72"), std::string::npos) << with.out;
  EXPECT_NE(with.out.find("CLUSTER_M=4 CLUSTER_N=2"), std::string::npos) << with.out;
  std::filesystem::remove_all(dir);
}

// STAGES 10, 12 and 16 are declared only with the deep rings asked for (TILEFORGE_SM90_DEEP_STAGES=1 until
// measured), and shared memory still bounds them: 16 stages of 64x16 fit, 16 of 64x128 do not.
TEST(Sm90Family, DeepRingsOnlyWhereAskedForAndWhereTheyFit) {
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  const Problem q = problem(16, 4096, 4096);
  auto stages_of = [&](const Sm90SpaceOptions& o) { return sm90_space(q, *h200, o).find("STAGES")->values; };
  EXPECT_EQ(stages_of(Sm90SpaceOptions{.swap_ab = true}), (ParamValues{2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(stages_of(Sm90SpaceOptions{.swap_ab = true, .deep_stages = true}), (ParamValues{2, 3, 4, 5, 6, 7, 8, 10, 12, 16}));
  const ParamSpace deep = sm90_space(q, *h200, Sm90SpaceOptions{.swap_ab = true, .deep_stages = true});
  const Config ring16 = swapped(sm90_config(64, 16, 16, 1, 1, 1, 8, 1, 1, 1, 2, 0));
  EXPECT_TRUE(deep.check(ring16).ok()) << deep.check(ring16).to_string();
  EXPECT_FALSE(sm90_space(q, *h200, Sm90SpaceOptions{.swap_ab = true}).check(ring16).ok());
  Config big = sm90_config(64, 128, 16, 1, 1, 1, 8, 1, 1, 1, 2, 0);
  big.params["SWAP_AB"] = 0;
  const Status too_big = deep.check(big);
  EXPECT_FALSE(too_big.ok());
  EXPECT_NE(too_big.message().find("shared memory"), std::string::npos) << too_big.to_string();
  EXPECT_EQ(sm90_source(q, ring16).smem_bytes, sm90_smem_bytes(ring16));
  EXPECT_GT(sm90_smem_bytes(ring16), 16 * (64 + 16) * 128);
}

// CONSUMER_COLS is declared only where asked for (TILEFORGE_SM90_CONSUMER_COLS=1 until measured); it takes two or three
// warpgroups whose columns are whole 64-column boxes of an N-major B (any wgmma N of a K-major one), and a 64-row
// tile then holds two of them: half the accumulators each, the whole A tile read by both.
TEST(Sm90Family, ConsumerColumnsOnlyWhereAskedForAndWhereTheBoxesSplit) {
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  const Problem rr = problem(1000, 1000, 1000), rc = problem(1000, 1000, 1000, Layout::RC);
  Sm90SpaceOptions on;
  on.consumer_cols = true;
  EXPECT_EQ(sm90_space(rr, *h200, Sm90SpaceOptions{}).find("CONSUMER_COLS"), nullptr);
  ASSERT_NE(sm90_space(rr, *h200, on).find("CONSUMER_COLS"), nullptr);
  const Config pair = consumer_cols(sm90_config(64, 128, 8, 2, 2, 1, 8, 1, 1, 1));
  EXPECT_TRUE(sm90_space(rr, *h200, on).check(pair).ok()) << sm90_space(rr, *h200, on).check(pair).to_string();
  EXPECT_EQ(sm90_accumulators(pair), 32);
  EXPECT_EQ(sm90_consumer_rows(pair), 64);
  EXPECT_EQ(sm90_consumer_cols(pair), 64);
  // Without CONSUMER_COLS the same 64-row tile cannot hold two warpgroups.
  Config rows = pair;
  rows.params.erase("CONSUMER_COLS");
  EXPECT_FALSE(sm90_space(rr, *h200, Sm90SpaceOptions{}).check(rows).ok());
  // 32 columns each: inside a 128-byte box of the N-major B (RR) refused, a wgmma N of the K-major B (RC) taken.
  const Config narrow = consumer_cols(sm90_config(64, 64, 8, 2, 1, 1, 8, 1, 1, 1));
  const Status refused = sm90_space(rr, *h200, on).check(narrow);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("CONSUMER_COLS"), std::string::npos) << refused.to_string();
  EXPECT_TRUE(sm90_space(rc, *h200, on).check(narrow).ok()) << sm90_space(rc, *h200, on).check(narrow).to_string();
  // One warpgroup has nothing to split.
  EXPECT_FALSE(sm90_space(rr, *h200, on).check(consumer_cols(sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1))).ok());
  // The generated source names it in the entry and the template; the C map's box is a warpgroup's 64 rows.
  const Sm90Source g = sm90_source(rr, pair);
  EXPECT_NE(g.entry.find("_ncols"), std::string::npos) << g.entry;
  EXPECT_NE(g.source.find(", false, false, true>"), std::string::npos) << g.source;
  EXPECT_EQ(g.c_box[1], 64);
  EXPECT_EQ(g.threads, 384);
  // The cost model prices both warpgroups' reads of the A tile: a k-step of 64x128 in halves reads 8 KB more of
  // shared memory than the one-consumer 64x128 (64 x 64 x 2 bytes of A once more).
  const Problem big = problem(4096, 4096, 4096);
  const Config one = sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1);
  const Config two = consumer_cols(sm90_config(64, 128, 8, 2, 1, 1, 8, 1, 1, 1));
  const plan::Cost c1 = sm90_cost(big, *h200, one), c2 = sm90_cost(big, *h200, two);
  ASSERT_TRUE(c1.valid && c2.valid);
  auto smem_bytes = [](const plan::Cost& c) {
    for (const auto& level : c.levels) {
      if (level.level == "shared memory") return level.bytes;
    }
    return -1.0;
  };
  const double k_steps = 64.0 * 32 * 64;  // 64 k-steps of each of 64 x 32 tiles
  EXPECT_NEAR(smem_bytes(c2) - smem_bytes(c1), k_steps * 64 * 64 * 2, 1.0);
}

// The h200 space of `q` under `on`, which declares `name` where the default options do not (a parameter behind an
// environment switch until measured).
ParamSpace space_declaring(const Problem& q, const Sm90SpaceOptions& on, const std::string& name) {
  auto h200 = hw::load_profile("h200");
  EXPECT_TRUE(h200.ok());
  EXPECT_EQ(sm90_space(q, *h200, Sm90SpaceOptions{}).find(name), nullptr) << name;
  ParamSpace space = sm90_space(q, *h200, on);
  EXPECT_NE(space.find(name), nullptr) << name;
  return space;
}

// CONSUMER_K is declared only where asked for (TILEFORGE_SM90_CONSUMER_K=1: measured slower); it takes exactly two
// warpgroups, each holding the whole tile (a 64-row tile then has two), not with CONSUMER_COLS or the deferred
// epilogue, and its f32 hand-over tile takes BLOCK_M x BLOCK_N x 4 bytes of shared memory.
TEST(Sm90Family, ConsumerKOnlyWhereAskedForWithTwoWarpgroups) {
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  const Problem q = problem(512, 512, 8192);
  Sm90SpaceOptions on;
  on.consumer_k = true;
  on.deep_stages = true;
  const ParamSpace space = space_declaring(q, on, "CONSUMER_K");
  const Config pair = consumer_k(sm90_config(64, 64, 12, 2, 2, 1, 8, 1, 1, 1, 2, 0));
  EXPECT_TRUE(space.check(pair).ok()) << space.check(pair).to_string();
  EXPECT_EQ(sm90_consumer_rows(pair), 64);
  EXPECT_EQ(sm90_consumer_cols(pair), 64);
  EXPECT_EQ(sm90_accumulators(pair), 32);
  Config plain = pair;
  plain.params["CONSUMER_K"] = 0;
  EXPECT_EQ(sm90_smem_bytes(pair) - sm90_smem_bytes(plain), 64 * 64 * 4);
  // Without it the same 64-row tile cannot hold two warpgroups.
  EXPECT_FALSE(space.check(plain).ok());
  for (const Config& bad : {consumer_k(sm90_config(64, 64, 12, 1, 2, 1, 8, 1, 1, 1, 2, 0)),
                            consumer_k(sm90_config(128, 64, 8, 3, 1, 1, 8, 1, 1, 1, 2, 0)),
                            consumer_k(sm90_config(64, 64, 12, 2, 2, 1, 8, 2, 1, 1, 2, 0)),
                            consumer_k(sm90_config(128, 128, 4, 2, 1, 1, 8, 1, 1, 1, 2, 0)),
                            consumer_cols(consumer_k(sm90_config(64, 128, 8, 2, 1, 1, 8, 1, 1, 1, 2, 0)))}) {
    Sm90SpaceOptions both = on;
    both.consumer_cols = true;
    const Status refused = sm90_space(q, *h200, both).check(bad);
    EXPECT_FALSE(refused.ok()) << bad.describe();
    EXPECT_NE(refused.message().find("CONSUMER"), std::string::npos) << refused.to_string();
  }
  // f16 accumulators (the opt-in policy) never declare it: the hand-over sums f32 partials.
  Problem f16acc = q;
  f16acc.precision.accum = DType::f16;
  EXPECT_EQ(sm90_space(f16acc, *h200, on).find("CONSUMER_K"), nullptr);
  // The generated source names it in the entry and as the template's last argument; the C map's box is the whole
  // tile's 64 rows, held by the first warpgroup.
  const Sm90Source g = sm90_source(q, pair);
  EXPECT_NE(g.entry.find("_khalves"), std::string::npos) << g.entry;
  EXPECT_NE(g.source.find(", false, false, false, true>"), std::string::npos) << g.source;
  EXPECT_EQ(g.c_box[1], 64);
  EXPECT_EQ(g.threads, 384);
  EXPECT_EQ(g.smem_bytes, sm90_smem_bytes(pair));
}

// SPLIT_CLUSTER is declared only where asked for (TILEFORGE_SM90_CLUSTER_SUM=1 until measured) and only beside 2, 4
// or 8 slices of a tile that shares no operand, without stream-K or the atomic sum, whose ring holds the f32 tile; its
// launch cluster is the slices, and it takes no workspace.
TEST(Sm90Family, SplitClusterOnlyWhereAskedForAsOneClusterOfTheSlices) {
  const Problem q = problem(512, 512, 8192);
  Sm90SpaceOptions on;
  on.cluster_sum = true;
  const ParamSpace space = space_declaring(q, on, "SPLIT_CLUSTER");
  if (!space.find("SPLIT_CLUSTER")) return;
  const Config four = cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 4, 0));
  EXPECT_TRUE(space.check(four).ok()) << space.check(four).to_string();
  for (const Config& bad : {cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 3, 0)),
                            cluster_sum(sm90_config(128, 128, 6, 2, 2, 1, 8, 0, 1, 0, 4, 0)),
                            cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 1, 1)),
                            cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 4, 0)),
                            cluster_sum(sm90_config(256, 256, 2, 2, 1, 1, 8, 1, 2, 1, 4, 0))}) {
    const Status refused = space.check(bad);
    EXPECT_FALSE(refused.ok()) << bad.describe();
  }
  EXPECT_EQ(sm90_launch_cluster(four), 4);
  EXPECT_EQ(sm90_launch_cluster(sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 4, 0)), 2);
  const Sm90Schedule sched = sm90_schedule(q, four, 30);
  EXPECT_TRUE(sched.cluster_sum);
  EXPECT_EQ(sched.clusters, 16);
  EXPECT_EQ(sched.workspace_bytes, 0);
  const Sm90Source g = sm90_source(q, four);
  EXPECT_EQ(g.cluster, 4);
  EXPECT_NE(g.entry.find("_csum"), std::string::npos) << g.entry;
  EXPECT_NE(g.source.find(", false, false, false, false, true>"), std::string::npos) << g.source;
}

// REDUCE 1 (float-atomic sums) is a plan's only under --nondeterministic: pinned without it, the plan is refused
// naming the flag; with it, the decision log says the sums are not bit-identical from run to run.
TEST(Sm90Family, AtomicSumOnlyUnderTheNondeterministicFlag) {
  const std::filesystem::path dir = testing::fresh_test_dir("tileforge_sm90_reduce_");
  const std::vector<std::string> args = {"plan", "--profile", "h200", "--dtype", "f16", "--shape", "256x256x16384",
                                         "--family", "sm90", "--no-db", "-q", "--explain", "--set", "REDUCE=1"};
  const testing::CliResult refused = testing::run_cli(args, dir);
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("--nondeterministic"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");
  std::vector<std::string> allowed = args;
  allowed.push_back("--nondeterministic");
  const testing::CliResult on = testing::run_cli(allowed, dir);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_NE(on.out.find("REDUCE=1"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("by float atomics in the order they arrive (not bit-identical"), std::string::npos) << on.out;
  std::filesystem::remove_all(dir);
}

// The row-split experiment (TILEFORGE_SM90_ROW_SPLIT=1) splits a cluster's shared M/N-major boxes by K rows where
// whole boxes would divide evenly, in the tensor maps' boxes and in the generated source alike (its entry named
// apart, so that the kernel cache keeps both); without it, or where nothing is shared, the kernel is the default.
TEST(Sm90Family, RowSplitExperimentSplitsSharedBoxesByKRows) {
  const Problem q = problem(1000, 1000, 1000);
  const Config shared_b = sm90_config(64, 128, 8, 1, 2, 1, 8, 1, 1, 1);  // B row-major: two boxes over two CTAs
  const Config alone = sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1);
  const Sm90Source whole = sm90_source(q, shared_b);
  EXPECT_EQ(whole.b_box[1], 64);
  EXPECT_EQ(whole.source.find("TF_SM90_ROW_SPLIT"), std::string::npos);
  ::setenv("TILEFORGE_SM90_ROW_SPLIT", "1", 1);
  const Sm90Source rows = sm90_source(q, shared_b);
  const Sm90Source unshared = sm90_source(q, alone);
  ::unsetenv("TILEFORGE_SM90_ROW_SPLIT");
  EXPECT_EQ(rows.b_box[1], 32);
  EXPECT_EQ(rows.a_box[1], whole.a_box[1]);  // A, K-major, is not shared along M
  EXPECT_NE(rows.source.find("#define TF_SM90_ROW_SPLIT 1"), std::string::npos);
  EXPECT_EQ(rows.entry, whole.entry + "_rows");
  EXPECT_EQ(unshared.entry, sm90_source(q, alone).entry);
  EXPECT_EQ(unshared.b_box[1], 64);
}

// The other source experiments (TILEFORGE_SM90_LEADER_MULTICAST, TILEFORGE_SM90_L2_HINT, TILEFORGE_SM90_L2_PREFETCH) likewise: a define in the
// generated source and a suffix on the entry where they apply, nothing where they do not or are unset.
TEST(Sm90Family, SourceExperimentsAreDefinedAndNamedApart) {
  const Problem q = problem(1000, 1000, 1000);
  const Config shared_b = sm90_config(64, 128, 8, 1, 2, 1, 8, 1, 1, 1);
  const Config alone = sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1);
  const Sm90Source plain = sm90_source(q, shared_b);
  ::setenv("TILEFORGE_SM90_LEADER_MULTICAST", "1", 1);
  const Sm90Source lead = sm90_source(q, shared_b);
  const Sm90Source lead_alone = sm90_source(q, alone);
  ::unsetenv("TILEFORGE_SM90_LEADER_MULTICAST");
  EXPECT_EQ(lead.entry, plain.entry + "_lead");
  EXPECT_NE(lead.source.find("#define TF_SM90_LEADER_MULTICAST 1"), std::string::npos);
  EXPECT_EQ(lead_alone.source.find("TF_SM90_LEADER_MULTICAST"), std::string::npos);  // nothing shared
  for (const auto& [value, define] : std::vector<std::pair<std::string, std::string>>{
           {"first", "#define TF_SM90_L2_HINT 1"}, {"last", "#define TF_SM90_L2_HINT 2"}, {"normal", "#define TF_SM90_L2_HINT 3"}}) {
    ::setenv("TILEFORGE_SM90_L2_HINT", value.c_str(), 1);
    const Sm90Source hinted = sm90_source(q, alone);
    ::unsetenv("TILEFORGE_SM90_L2_HINT");
    EXPECT_EQ(hinted.entry, sm90_source(q, alone).entry + "_l2" + value);
    EXPECT_NE(hinted.source.find(define), std::string::npos) << value;
  }
  ::setenv("TILEFORGE_SM90_L2_HINT", "sometimes", 1);  // not a priority: the default kernel
  const Sm90Source unknown = sm90_source(q, alone);
  ::unsetenv("TILEFORGE_SM90_L2_HINT");
  EXPECT_EQ(unknown.source, sm90_source(q, alone).source);
  ::setenv("TILEFORGE_SM90_L2_PREFETCH", "8", 1);
  const Sm90Source ahead = sm90_source(q, alone);
  ::setenv("TILEFORGE_SM90_L2_PREFETCH", "0", 1);  // no distance: the default kernel
  const Sm90Source none = sm90_source(q, alone);
  ::unsetenv("TILEFORGE_SM90_L2_PREFETCH");
  EXPECT_EQ(ahead.entry, sm90_source(q, alone).entry + "_pf8");
  EXPECT_NE(ahead.source.find("#define TF_SM90_L2_PREFETCH 8"), std::string::npos);
  EXPECT_EQ(none.source, sm90_source(q, alone).source);
  // The timeline diagnostic: its define, its entry and the flag the kernel's run reads back by.
  ::setenv("TILEFORGE_SM90_TIMELINE", "timeline.csv", 1);
  const Sm90Source stamped = sm90_source(q, alone);
  ::unsetenv("TILEFORGE_SM90_TIMELINE");
  EXPECT_EQ(stamped.entry, sm90_source(q, alone).entry + "_tl");
  EXPECT_NE(stamped.source.find("#define TF_SM90_TIMELINE 1"), std::string::npos);
  EXPECT_TRUE(stamped.timeline);
  EXPECT_FALSE(sm90_source(q, alone).timeline);
}

// The timeline's kernels compile for sm_90a beside the split-K fix-up and stream-K without spilling, and stamp with
// the global timer into the module's tf_sm90_timeline; the same configs without it carry neither.
TEST(Sm90Family, NvrtcBuildsTheTimelineOnlyWhereAskedFor) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << "SKIPPED: NVRTC not available: " << nvrtc.status().message();
  if (!(*nvrtc)->check_arch("sm_90a").ok()) GTEST_SKIP() << "SKIPPED: this NVRTC cannot target sm_90a";
  const std::vector<std::pair<Problem, Config>> cases = {
      {problem(512, 512, 8192), sm90_config(128, 128, 6, 2, 1, 2, 8, 1, 1, 1, 8, 0)},
      {problem(1000, 1000, 1000), swapped(sm90_config(128, 80, 7, 1, 2, 2, 8, 1, 1, 1))},
      {problem(3000, 3000, 3000), sm90_config(128, 256, 4, 2, 1, 1, 8, 1, 2, 1, 1, 1)},
  };
  for (const auto& [q, config] : cases) {
    for (const bool stamped : {false, true}) {
      if (stamped) ::setenv("TILEFORGE_SM90_TIMELINE", "timeline.csv", 1);
      const Sm90Source g = sm90_source(q, config);
      ::unsetenv("TILEFORGE_SM90_TIMELINE");
      auto out = (*nvrtc)->compile(detail::request_for(g.entry, g.source, "sm_90a"));
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      ASSERT_TRUE(out->ok) << config.describe() << "\n" << out->log;
      EXPECT_EQ(out->ptx.find("%globaltimer") != std::string::npos, stamped) << config.describe();
      EXPECT_EQ(out->ptx.find("tf_sm90_timeline") != std::string::npos, stamped) << config.describe();
      const jit::FunctionResources* r = out->report.find(g.entry);
      ASSERT_NE(r, nullptr) << out->log;
      EXPECT_FALSE(r->spills()) << config.describe() << (stamped ? " with the timeline: " : ": ")
                                << r->spill_store_bytes << " bytes spilled";
    }
  }
}

TEST(Sm90Family, NvrtcBuildsRepresentativeConfigsForSm90a) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << "SKIPPED: NVRTC not available: " << nvrtc.status().message();
  if (!(*nvrtc)->check_arch("sm_90a").ok()) GTEST_SKIP() << "SKIPPED: this NVRTC cannot target sm_90a";
  auto h200 = hw::load_profile("h200");
  ASSERT_TRUE(h200.ok());
  struct Case {
    Problem problem;
    Config config;
  };
  const std::vector<Case> cases = {
      // The heuristic's (and the probe's best) 128x256, and the planner's picks for small and skinny shapes.
      {problem(4096, 4096, 4096), sm90_heuristic(problem(4096, 4096, 4096), *h200)},
      {problem(4096, 4096, 4096, Layout::CC, DType::bf16, DType::bf16), sm90_config(256, 128, 3, 2, 1, 1, 16, 1, 1, 1)},
      {problem(5120, 5120, 5120, Layout::RC), sm90_config(128, 192, 4, 2, 1, 1, 16, 1, 1, 1)},
      {problem(16, 4096, 4096), sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1)},
      {problem(64, 14336, 4096, Layout::RC), sm90_config(64, 128, 8, 1, 1, 2, 8, 1, 1, 1)},
      {problem(1024, 1024, 1024), sm90_config(128, 64, 8, 2, 1, 2, 8, 1, 1, 1)},
      // Clusters of eight and four: B's (row-major) and A's (column-major) boxes split into K-row parts.
      {problem(1000, 1000, 1000), sm90_config(64, 192, 6, 1, 4, 2, 8, 1, 1, 1)},
      {problem(1000, 1000, 1000, Layout::CR), sm90_config(128, 128, 4, 2, 1, 4, 8, 1, 1, 1)},
      // Clusters along M with 4 stages and half staging tiles; the deferred epilogue; direct stores to f32.
      {problem(8192, 8192, 8192), sm90_config(128, 256, 4, 2, 2, 1, 8, 1, 2, 1)},
      // GROUP_M 0: the Hilbert walk (common/raster.cuh) compiled into the kernel.
      {problem(8192, 8192, 8192), sm90_config(128, 256, 3, 2, 1, 1, 0, 1, 1, 1)},
      {problem(2048, 2048, 2048, Layout::RR), sm90_config(128, 256, 3, 2, 1, 1, 8, 2, 1, 0)},
      {problem(1000, 1000, 1000, Layout::CC, DType::f16, DType::f32), sm90_config(256, 64, 4, 1, 1, 1, 4, 0, 1, 0)},
      // Split-K (the fix-up's loads beside 128 accumulators must not spill) and stream-K.
      {problem(512, 512, 8192), sm90_config(128, 256, 4, 2, 1, 1, 8, 1, 2, 1, 4, 0)},
      {problem(16, 4096, 4096), sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1, 8, 0)},
      // The heuristic's 128x192 with 2 slices (1000x1064x1000): every split-K instance carries the shared sum's code
      // too, beside 96 accumulators here (a fix-up variant that spilled only in this tile fell back to sm80).
      {problem(1000, 1064, 1000), sm90_config(128, 192, 4, 2, 1, 1, 8, 1, 1, 1, 2, 0)},
      // The shared sum (every unit on its own SM): 32 slices of 128x128, 16 of 128x256 tiles in a cluster.
      {problem(256, 256, 16384), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 32, 0)},
      {problem(512, 512, 8192), sm90_config(128, 256, 4, 2, 2, 1, 8, 1, 2, 1, 16, 0)},
      {problem(3000, 3000, 3000, Layout::RC), sm90_config(128, 256, 4, 2, 2, 1, 8, 1, 2, 1, 1, 1)},
      {problem(1000, 1000, 1000, Layout::CR), sm90_config(128, 128, 6, 2, 1, 1, 8, 2, 1, 1, 1, 1)},
      // f16 accumulators: the deferred epilogue, direct stores to f32, split-K's f32 sum and stream-K.
      {acc16(problem(4096, 4096, 4096)), sm90_config(128, 256, 3, 2, 1, 1, 16, 2, 1, 1)},
      {acc16(problem(1000, 1000, 1000, Layout::CC, DType::f16, DType::f32)), sm90_config(256, 64, 4, 1, 1, 1, 4, 0, 1, 0)},
      {acc16(problem(512, 512, 8192)), sm90_config(128, 256, 4, 2, 1, 1, 8, 1, 2, 1, 4, 0)},
      {acc16(problem(1000, 1000, 1000, Layout::CR)), sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 1, 1)},
      // Three consumer warpgroups of 64 rows: 96 accumulators in 152 registers, with the TMA-store epilogue, and in a
      // cluster with direct stores.
      {problem(3000, 3000, 3000), sm90_config(192, 192, 3, 3, 1, 1, 8, 1, 1, 1)},
      {problem(3000, 3000, 3000, Layout::RC), sm90_config(192, 192, 4, 3, 2, 1, 8, 0, 1, 0)},
      {problem(3000, 3000, 3000, Layout::CR), sm90_config(192, 192, 3, 3, 1, 2, 8, 1, 1, 1)},
      // SWAP_AB (C^T = B^T A^T, C written column by column by stmatrix .trans): M along the wgmma's N, narrow where A
      // is row-major. A decode step with split-K; 72-row M tiles (an odd count of 8-column blocks: the x2 tail) in
      // 1x2 clusters; the deferred epilogue; an N-major B (A column-major) with half staging tiles; stream-K with
      // thirds; f16 accumulators; two m64 blocks per consumer beside 112-wide accumulators.
      {problem(16, 4096, 4096), swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 1, 4, 0))},
      {problem(1000, 1000, 1000), swapped(sm90_config(128, 72, 6, 2, 1, 2, 8, 1, 1, 1))},
      {problem(64, 14336, 4096, Layout::RC), swapped(sm90_config(128, 64, 6, 2, 1, 1, 8, 2, 1, 1))},
      {problem(4096, 4096, 4096, Layout::CC, DType::bf16, DType::bf16), swapped(sm90_config(128, 128, 4, 2, 1, 1, 8, 1, 2, 1))},
      {problem(3000, 3000, 3000), swapped(sm90_config(128, 192, 4, 2, 1, 1, 8, 1, 2, 1, 1, 1))},
      {acc16(problem(48, 4096, 4096)), swapped(sm90_config(128, 48, 8, 2, 1, 1, 8, 2, 1, 1, 4, 0))},
      {problem(100, 8192, 4096), swapped(sm90_config(256, 112, 3, 2, 1, 1, 8, 1, 1, 1))},
      // A K-major B shared unevenly: 72 rows (nine atoms) dealt out over the four CTAs of a 4x2 cluster and the two
      // of a 2x2 one, one 8-row box at a time.
      {problem(1000, 1000, 1000), swapped(sm90_config(128, 72, 8, 1, 4, 2, 8, 1, 1, 1))},
      {problem(1000, 1000, 1000), swapped(sm90_config(128, 72, 6, 2, 2, 2, 8, 1, 1, 1))},
      // Deep rings for small tiles of memory-bound shapes: 16 stages of 64x16, 12 of 64x64 with split-K.
      {problem(16, 4096, 4096), swapped(sm90_config(64, 16, 16, 1, 1, 1, 8, 1, 1, 1, 2, 0))},
      {problem(64, 4096, 4096, Layout::RC), sm90_config(64, 64, 12, 1, 1, 1, 8, 1, 1, 1, 2, 0)},
      // REDUCE 1: the float-atomic sum beside 128 accumulators (split-K), in a cluster with stream-K, f16
      // accumulators, and swapped with narrow tiles.
      {problem(512, 512, 8192), atomic(sm90_config(128, 256, 4, 2, 1, 1, 8, 1, 2, 1, 4, 0))},
      {problem(1000, 1000, 1000, Layout::CR), atomic(sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 1, 1))},
      {acc16(problem(256, 256, 16384)), atomic(sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 16, 0))},
      {problem(16, 4096, 4096), atomic(swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 1, 4, 0)))},
      // CONSUMER_COLS 1: two or three warpgroups splitting BLOCK_N of 64-row tiles (one m64 block each): 64x128 in
      // a 2x1 cluster (cuBLAS's 1000^3 kernel), split-K 8 with the shared sum, a K-major B with three warpgroups of
      // 64 columns and direct stores, 128x256 in halves of 128 columns with half staging tiles, and swapped (C staged
      // column by column) with split-K.
      {problem(1000, 1000, 1000), consumer_cols(sm90_config(64, 128, 8, 2, 2, 1, 8, 1, 1, 1))},
      {problem(512, 512, 8192), consumer_cols(sm90_config(64, 128, 8, 2, 1, 1, 8, 1, 1, 1, 8, 0))},
      {problem(1000, 1000, 1000, Layout::RC), consumer_cols(sm90_config(64, 192, 6, 3, 1, 1, 8, 0, 1, 0))},
      {problem(4096, 4096, 4096), consumer_cols(sm90_config(128, 256, 4, 2, 1, 1, 8, 1, 2, 1))},
      {problem(64, 4096, 4096), consumer_cols(swapped(sm90_config(128, 64, 8, 2, 1, 1, 8, 1, 1, 1, 2, 0)))},
      // CONSUMER_K 1: two warpgroups taking every other k-block of the whole tile, the second handing its partial to
      // the first: cuBLAS's 64x64 split-K 2 in 2x1 clusters with 12 stages, 128x64 (64 accumulators each, the most
      // beside the hand-over) with the shared sum, stream-K with direct stores, a 2x2 cluster with 7 slices, and
      // swapped with the float-atomic sum.
      {problem(512, 512, 8192), consumer_k(sm90_config(64, 64, 12, 2, 2, 1, 8, 1, 1, 1, 2, 0))},
      {problem(512, 512, 8192), consumer_k(sm90_config(128, 64, 6, 2, 1, 1, 8, 1, 1, 1, 8, 0))},
      {problem(1000, 1000, 1000, Layout::RC), consumer_k(sm90_config(64, 128, 8, 2, 1, 1, 8, 0, 1, 0, 1, 1))},
      {problem(256, 256, 16384), consumer_k(sm90_config(64, 64, 10, 2, 2, 2, 8, 1, 1, 1, 7, 0))},
      {problem(64, 4096, 4096), atomic(consumer_k(swapped(sm90_config(128, 64, 6, 2, 1, 1, 8, 1, 1, 1, 4, 0))))},
      // SPLIT_CLUSTER 1: a tile's slices as one cluster summing in shared memory: 4 slices of 128x128 with two
      // warpgroups, 8 of 64x128 with a K-major A, 64x64 in pairs.
      {problem(512, 512, 8192), cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 4, 0))},
      {problem(256, 256, 16384, Layout::CR), cluster_sum(sm90_config(64, 128, 8, 1, 1, 1, 8, 0, 1, 0, 8, 0))},
      {problem(64, 4096, 4096), cluster_sum(sm90_config(64, 64, 8, 1, 1, 1, 8, 0, 1, 0, 2, 0))},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    const bool swap = sm90_swap_ab(k.config);
    const bool reduce = k.config.get("REDUCE").has_value();
    const bool cols = k.config.get("CONSUMER_COLS").value_or(0) != 0;
    const bool halves = k.config.get("CONSUMER_K").value_or(0) != 0;
    // Checked as the backend checks a config it is given.
    const ParamSpace space = sm90_space(k.problem, *h200, sm90_space_options_declaring(k.config));
    ASSERT_TRUE(space.check(k.config).ok()) << k.config.describe() << ": " << space.check(k.config).to_string();
    const Sm90Source g = sm90_source(k.problem, k.config);
    auto out = (*nvrtc)->compile(detail::request_for(g.entry, g.source, "sm_90a"));
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_TRUE(out->ok) << k.config.describe() << "\n" << out->log;
    testing::keep_ptx(fmt::format("sm90-{:02}", i), out->ptx);
    EXPECT_NE(out->ptx.find("wgmma.mma_async"), std::string::npos) << k.config.describe();
    // The accumulator type of the policy, and no other.
    const bool f16_acc = k.problem.precision.accum == DType::f16;
    EXPECT_EQ(out->ptx.find(f16_acc ? "k16.f32." : "k16.f16.f16.f16"), std::string::npos) << k.config.describe();
    EXPECT_NE(out->ptx.find(f16_acc ? "k16.f16.f16.f16" : "k16.f32."), std::string::npos) << k.config.describe();
    EXPECT_NE(out->ptx.find("cp.async.bulk.tensor"), std::string::npos) << k.config.describe();
    // The wgmma's N: a warpgroup's columns, the whole BLOCK_N unless CONSUMER_COLS splits it.
    const int64_t wg_n = cols ? k.config.at("BLOCK_N") / k.config.at("CONSUMERS") : k.config.at("BLOCK_N");
    EXPECT_NE(out->ptx.find(fmt::format("m64n{}k16", wg_n)), std::string::npos) << k.config.describe();
    if (cols) {
      EXPECT_EQ(out->ptx.find(fmt::format("m64n{}k16", k.config.at("BLOCK_N"))), std::string::npos);
    }
    // CONSUMER_K's hand-over arrives on a named barrier without waiting; no other instance does.
    EXPECT_EQ(out->ptx.find("bar.arrive") != std::string::npos, halves) << k.config.describe();
    // The transposed run stages C column by column (stmatrix .trans); the others never transpose.
    EXPECT_EQ(out->ptx.find("stmatrix.sync.aligned.m8n8.x4.trans") != std::string::npos, swap) << k.config.describe();
    // The float-atomic sum only where REDUCE 1 asks for it.
    EXPECT_EQ(out->ptx.find("red.relaxed.gpu.global.add.v4.f32") != std::string::npos, reduce) << k.config.describe();
    if (k.config.at("EPILOGUE") != 0) {
      EXPECT_NE(out->ptx.find("cp.async.bulk.tensor.2d.global.shared"), std::string::npos) << k.config.describe();
    }
    if (sm90_cluster_size(k.config) > 1) {
      EXPECT_NE(out->ptx.find("multicast::cluster"), std::string::npos);
    }
    const jit::FunctionResources* r = out->report.find(g.entry);
    ASSERT_NE(r, nullptr) << out->log;
    EXPECT_FALSE(r->spills()) << k.config.describe() << ": " << r->spill_store_bytes << " bytes spilled";
    EXPECT_LE(int64_t(r->registers) * g.threads, h200->registers_per_core) << k.config.describe();
    EXPECT_LE(r->smem_bytes + g.smem_bytes, h200->smem_per_block_bytes) << k.config.describe();
    for (const std::string& w : out->report.warnings) {
      EXPECT_EQ(w.find("serialized"), std::string::npos) << k.config.describe() << ": " << w;
    }
    std::printf("[ info ] %s: %d registers, %lld B shared memory, %.2f s\n", k.config.describe().c_str(),
                r->registers, (long long)(r->smem_bytes + g.smem_bytes), out->seconds);
  }
}

}  // namespace
}  // namespace tileforge::cuda
