// The sm90 family on an sm_90a GPU, through the cuda backend, against the float64 reference computed on the device:
// all four layouts, f16 and bf16 in, 16-bit and f32 out, tails in M, N and K, alpha/beta, skinny shapes, clusters
// along M and N, one and two consumer warpgroups, every epilogue; dispatch's family on the GPU; split-K and stream-K
// exact and bit-identical; leading dimensions TMA cannot take through the operand copy; misaligned pointers run the
// sm80 family; the transposed run (SWAP_AB) writing C column by column. Skips visibly without an sm_90a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/sm90/sm90_test_config.hpp"
#include "backends/backend.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "measure/timer.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#include "plan/kernel_family.hpp"
#include "support/gpu_run.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

using cuda::testing_sm90::sm90_config;
using cuda::testing_sm90::swapped;
using cuda::testing_sm90::atomic;
using cuda::testing_sm90::consumer_cols;
using cuda::testing_sm90::consumer_k;
using cuda::testing_sm90::cluster_sum;

class Sm90GpuTest : public testing::CudaGpuTest {
 protected:
  void SetUp() override {
    testing::CudaGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto props = cuda::query_device(device_.ordinal);
    ASSERT_TRUE(props.ok()) << props.status().to_string();
    if (cuda::nvrtc_arch(props->cc_major, props->cc_minor) != "sm_90a") {
      GTEST_SKIP() << "SKIPPED: the sm90 family needs an sm_90a GPU; this is " << props->name;
    }
  }

  // Clusters of 4 and 8 are planned only on chips whose record lists how many are resident (the H200's); elsewhere
  // the space does not declare them and a test of them skips, saying so.
  void skip_without_large_clusters() {
    if (cuda::sm90_resident_clusters(device_.profile, 4) > 0 && cuda::sm90_resident_clusters(device_.profile, 8) > 0) {
      return;
    }
    GTEST_SKIP() << "SKIPPED: the chip record " << device_.profile.name
                 << " lists no resident clusters of 4 and 8, so the sm90 space declares none";
  }

  // `c` on `p` where the space of `options` admits it (a failure naming the constraint where it does not), checked
  // element by element; with `same_bits` also bit-identical from run to run. A case in clusters larger than the chip
  // record lists as resident (4 and 8 on the H100, whose record has none) is left out, and says so.
  void run_where_legal(const Problem& p, const Config& c, const cuda::Sm90SpaceOptions& options, uint64_t seed,
                       bool same_bits = false) {
    const int64_t cluster = c.get("CLUSTER_M").value_or(1) * c.get("CLUSTER_N").value_or(1);
    if (cluster > 2 && cuda::sm90_resident_clusters(device_.profile, cluster) <= 0) {
      std::printf("[ info ] left out on %s (no resident clusters of %lld in its record): %s\n",
                  device_.profile.name.c_str(), static_cast<long long>(cluster), c.describe().c_str());
      return;
    }
    const Status legal = cuda::sm90_space(p, device_.profile, options).check(c);
    EXPECT_TRUE(legal.ok()) << c.describe() << ": " << legal.to_string();
    if (!legal.ok()) return;
    EXPECT_EQ(run(p, &c, 0, seed), "sm90") << c.describe();
    if (same_bits) expect_same_bits(p, c, seed);
  }

  // `c` in every layout whose space admits it (the multicast splits need whole 64-row boxes of a column-major A or
  // 64-column boxes of a row-major B per CTA; narrow tiles a row-major A), f16 and bf16 in turn, ragged in every
  // dimension against every tile (leading dimensions stay multiples of 8): 1032 = 8 x 128 + 8, 1544 = 6 x 256 + 8,
  // 2056 = 32 x 64 + 8. Returns the layouts run.
  int run_in_every_layout(const Config& c, uint64_t& seed, const cuda::Sm90SpaceOptions& options = {}) {
    int ran = 0;
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
      const DType in = seed % 2 ? DType::bf16 : DType::f16;
      const Problem p = testing::make_problem(1032, 1544, 2056, l, in, in);
      ++seed;
      if (!cuda::sm90_space(p.normalized(), device_.profile, options).check(c).ok()) continue;
      EXPECT_EQ(run(p, &c, 0, seed), "sm90") << c.describe() << " " << to_string(l);
      ++ran;
    }
    return ran;
  }
};

// A problem and the config a test runs it with.
struct Case {
  Problem problem;
  Config config;
};

Problem half(int64_t m, int64_t n, int64_t k, Layout l, DType in = DType::f16, DType out = DType::f16) {
  return testing::make_problem(m, n, k, l, in, out);
}

// C = 0.5 AB - 1.25 C: the epilogue's read of C and both scalars.
Problem with_beta(Problem p) {
  p.alpha = 0.5;
  p.beta = -1.25;
  return p;
}

TEST_F(Sm90GpuTest, DispatchRunsTheSm90FamilyHere) {
  const Problem p = half(4096, 4096, 4096, Layout::RR).normalized();
  EXPECT_EQ(cuda_->space(p, device_).family, "sm90");
  const plan::KernelFamily* f = plan::family_for("cuda", p, device_);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name(), "sm90");
  // Batches: the sm80 family. Small outputs (split-K, stream-K) and leading dimensions TMA cannot take (the
  // operand copy) are sm90's.
  EXPECT_EQ(cuda_->space(half(4095, 4097, 4093, Layout::RR).normalized(), device_).family, "sm90");
  Problem batched = half(1024, 1024, 64, Layout::RR);
  batched.batch = 2;
  EXPECT_EQ(cuda_->space(batched.normalized(), device_).family, "sm80");
  EXPECT_EQ(cuda_->space(half(256, 256, 16384, Layout::RR).normalized(), device_).family, "sm90");
}

TEST_F(Sm90GpuTest, HeuristicInEveryLayoutAndDtypeWithTails) {
  // Tails in M, N and K (leading dimensions stay multiples of 8), a skinny M, a K of three k-steps.
  const int64_t shapes[][3] = {{1000, 1064, 1000}, {520, 1048, 136}, {24, 8200, 264}, {4104, 136, 72}};
  uint64_t seed = 10;
  for (auto& s : shapes) {
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
      for (DType in : {DType::f16, DType::bf16}) {
        const Problem p = half(s[0], s[1], s[2], l, in, in);
        EXPECT_EQ(run(p, nullptr, 0, ++seed), "sm90") << p.describe();
      }
    }
  }
  // f32 output (direct epilogue).
  for (Layout l : {Layout::RR, Layout::CC}) {
    EXPECT_EQ(run(half(1000, 1064, 1000, l, DType::bf16, DType::f32), nullptr, 0, ++seed), "sm90");
  }
}

TEST_F(Sm90GpuTest, EveryKindOfConfigInEveryLayoutThatTakesIt) {
  const Config configs[] = {
      sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1),   // the probe's best (L16)
      sm90_config(128, 256, 4, 2, 2, 1, 16, 1, 2, 1),  // 2x1 cluster, half staging tiles
      sm90_config(256, 128, 3, 2, 1, 2, 1, 1, 1, 0),   // 1x2 cluster, row-major walk, 32-bit staging stores
      sm90_config(128, 192, 4, 2, 1, 1, 8, 1, 1, 1),   // BLOCK_N 192
      sm90_config(128, 256, 3, 2, 1, 1, 8, 2, 1, 1),   // deferred epilogue
      sm90_config(128, 128, 5, 2, 1, 1, 4, 0, 1, 0),   // direct epilogue
      sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1),     // one consumer, 1x2 cluster of 64x64 (32-row A boxes)
      sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1),    // one consumer
      sm90_config(256, 64, 4, 1, 2, 1, 8, 1, 1, 1),    // one consumer, four m64 blocks, 2x1 cluster
      sm90_config(128, 64, 8, 2, 1, 2, 8, 1, 1, 1),    // two consumers of 64x64, 1x2 cluster
      sm90_config(64, 64, 8, 1, 1, 2, 0, 1, 1, 1),     // Hilbert walk over 1x2 cluster tiles (17 x 13)
      sm90_config(128, 64, 8, 2, 2, 1, 0, 1, 1, 1),    // Hilbert walk over 2x1 cluster tiles (5 x 25)
      sm90_config(192, 192, 3, 3, 1, 1, 8, 1, 1, 1),   // three consumers of 64x192, TMA-store epilogue
      sm90_config(192, 192, 4, 3, 1, 2, 8, 1, 2, 1),   // three consumers, 1x2 cluster, staging tile in thirds
      sm90_config(192, 128, 4, 3, 2, 1, 8, 0, 1, 0),   // three consumers, 2x1 cluster, direct stores
      sm90_config(192, 64, 6, 1, 1, 2, 8, 1, 1, 1),    // one consumer, three m64 blocks, 1x2 cluster
  };
  uint64_t seed = 100;
  for (const Config& c : configs) EXPECT_GE(run_in_every_layout(c, seed), 2) << c.describe();
}

// Clusters of four and eight (declared for operands with rows off 32-byte sectors, on grids of one wave of them): an
// M/N-major operand's boxes split into K-row parts where the CTAs sharing it do not divide them, a K-major one into
// row parts, in every layout; rows off sectors (1000) and tails in every dimension.
TEST_F(Sm90GpuTest, ClustersOfFourAndEightSplitEveryOperandLayout) {
  skip_without_large_clusters();
  if (IsSkipped()) return;
  const Config configs[] = {
      sm90_config(128, 128, 4, 2, 2, 2, 8, 1, 1, 1),  // 2x2: A and B each shared by two
      sm90_config(64, 192, 6, 1, 4, 2, 8, 1, 1, 1),   // 4x2: B's three boxes split into 16-row parts
      sm90_config(64, 192, 6, 1, 8, 1, 8, 1, 1, 1),   // 8x1: B's boxes split into 8-row parts
      sm90_config(128, 128, 4, 2, 1, 4, 8, 1, 1, 1),  // 1x4: A in 32-row parts, or its two boxes in 16-row ones
  };
  uint64_t seed = 700;
  for (const Config& c : configs) {
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
      const DType in = seed % 2 ? DType::bf16 : DType::f16;
      const Problem p = half(1000, 1000, 1000, l, in, in);
      ++seed;
      const Status legal = cuda::sm90_space(p.normalized(), device_.profile).check(c);
      EXPECT_TRUE(legal.ok()) << c.describe() << " " << to_string(l) << ": " << legal.to_string();
      if (!legal.ok()) continue;
      EXPECT_EQ(run(p, &c, 0, seed), "sm90") << c.describe() << " " << to_string(l);
    }
  }
}

// SWAP_AB: the kernel runs C^T = B^T A^T and writes C column by column: stmatrix .trans into the staging tile and a
// TMA store, the warpgroups' own stores where TMA cannot store C (an odd ldc), direct stores where beta != 0 at run
// time; narrow M tiles (16 to 112 rows, A row-major) with ragged edges, clusters sharing either operand, one to three
// consumers; split-K and stream-K exact and bit-identical from run to run. Every element of C is checked.
TEST_F(Sm90GpuTest, SwapAbWritesCColumnByColumnExactly) {
  const Config configs[] = {
      swapped(sm90_config(128, 64, 6, 2, 1, 1, 8, 1, 1, 1)),   // any layout: 64-row M tiles
      swapped(sm90_config(128, 128, 4, 2, 1, 2, 8, 2, 2, 1)),  // deferred, half staging tiles, 1x2 cluster
      swapped(sm90_config(128, 192, 4, 2, 2, 1, 8, 1, 2, 1)),  // staging in thirds, 2x1 cluster
      swapped(sm90_config(128, 72, 6, 2, 1, 2, 8, 1, 1, 1)),   // 72-row M tiles: nine 8-column blocks (x2 tail)
      swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 1)),   // 16-row M tiles
      swapped(sm90_config(64, 48, 8, 1, 1, 1, 8, 2, 1, 1)),    // one consumer, deferred
      swapped(sm90_config(256, 112, 3, 2, 1, 1, 8, 1, 1, 1)),  // two m64 blocks per consumer
      swapped(sm90_config(192, 80, 4, 3, 1, 1, 8, 1, 1, 1)),   // three consumers
  };
  const cuda::Sm90SpaceOptions swap{.swap_ab = true};
  uint64_t seed = 1300;
  // The narrow tiles take a row-major A only (RR, RC); 1032 = 14 x 72 + 24 = 9 x 112 + 24 is ragged against them.
  for (const Config& c : configs) EXPECT_GE(run_in_every_layout(c, seed, swap), 2) << c.describe();
  // Decode steps: M of 1 to 64 along the wgmma's N.
  for (int64_t m : {1, 8, 16, 40, 64}) {
    const Config c = swapped(sm90_config(128, m <= 16 ? 16 : m <= 48 ? 48 : 64, 8, 2, 1, 1, 8, 1, 1, 1));
    EXPECT_EQ(run(half(m, 4104, 4096, Layout::RR), &c, 0, ++seed), "sm90") << m;
  }
  // An odd ldc: no TMA store of C, the warpgroups store the staged columns themselves.
  Problem odd = half(1000, 1032, 520, Layout::RR);
  odd.ldc = odd.min_ldc() + 1;
  for (const Config& c : {configs[0], configs[3], configs[5]}) EXPECT_EQ(run(odd, &c, 0, ++seed), "sm90") << c.describe();
  // beta != 0 at run time in a kernel prepared for beta == 0: the direct stores, column by column.
  Problem beta = with_beta(half(1000, 1032, 520, Layout::RC));
  for (const Config& c : {configs[0], configs[1]}) {
    EXPECT_EQ(testing::run_on_gpu(*cuda_, device_, *timer_, beta, &c, 0, ++seed, true).family, "sm90") << c.describe();
  }

  // Split-K and stream-K: exact, and the same bits three times (the third on another stream).
  const std::vector<Case> cases = {
      {half(16, 4104, 4096, Layout::RR), swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 1, 4, 0))},
      {half(64, 14336, 4096, Layout::RC), swapped(sm90_config(128, 64, 6, 2, 1, 1, 8, 2, 1, 1, 2, 0))},
      {half(256, 264, 16392, Layout::RR), swapped(sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 16, 0))},
      {half(1032, 1544, 2056, Layout::CC), swapped(sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 1, 1))},
      {half(1000, 1000, 1000, Layout::RR), swapped(sm90_config(128, 72, 6, 2, 1, 1, 8, 1, 1, 1, 1, 1))},
  };
  for (const Case& k : cases) {
    const Problem p = k.problem.normalized();
    const Status legal = cuda::sm90_space(p, device_.profile, swap).check(k.config);
    EXPECT_TRUE(legal.ok()) << k.config.describe() << ": " << legal.to_string();
    if (!legal.ok()) continue;
    EXPECT_EQ(run(p, &k.config, 0, ++seed), "sm90") << k.config.describe();
    expect_same_bits(p, k.config, seed);
  }
}

// The transposed run's K-major B (the caller's row-major A) shared by CTAs whose rows are not whole 8-row atoms each:
// the atoms dealt out one box at a time (72 rows over 4 CTAs: 3, 2, 2 and 2 atoms; over 2: 5 and 4), ragged in every
// dimension (1000 = 13 x 72 + 64 = 7 x 128 + 104 = 15 x 64 + 40). Every element of C is checked.
TEST_F(Sm90GpuTest, SwapAbClustersDealOutUnevenAtomsExactly) {
  skip_without_large_clusters();
  if (IsSkipped()) return;
  const Config configs[] = {
      swapped(sm90_config(128, 72, 8, 1, 4, 2, 8, 1, 1, 1)),  // the planner's 1000^3 with the atoms dealt out
      swapped(sm90_config(128, 72, 6, 2, 2, 2, 8, 1, 1, 1)),  // 36 rows per CTA, two consumers
      swapped(sm90_config(128, 80, 6, 2, 4, 1, 8, 2, 1, 1)),  // 20 rows per CTA, the deferred epilogue
      swapped(sm90_config(128, 112, 4, 2, 8, 1, 8, 1, 1, 1)), // fourteen atoms over eight CTAs
  };
  const cuda::Sm90SpaceOptions atoms{.swap_ab = true, .atom_split = true};
  uint64_t seed = 1900;
  for (const Config& c : configs) {
    for (Layout l : {Layout::RR, Layout::RC}) {
      const DType in = seed % 2 ? DType::bf16 : DType::f16;
      SCOPED_TRACE(to_string(l));
      run_where_legal(half(1000, 1000, 1000, l, in, in).normalized(), c, atoms, ++seed);
    }
  }
}

// CONSUMER_COLS 1: two or three consumer warpgroups splitting BLOCK_N, each with its own columns of B in shared
// memory, its part of the staging tile, of the workspace slot and of the shared sum. Exact in every epilogue (TMA
// store, deferred, direct with beta, f32 out), with clusters, split-K (the last slice's sum and the shared sum),
// stream-K, half staging tiles, a K-major B, SWAP_AB and rows off the sectors read in place; split-K and stream-K
// bit-identical from run to run.
TEST_F(Sm90GpuTest, ConsumerColumnsAreExactAndSplitsBitIdentical) {
  const std::vector<Case> cases = {
      {half(1000, 1000, 1000, Layout::RR), consumer_cols(sm90_config(64, 128, 8, 2, 2, 1, 8, 1, 1, 1))},
      {half(1032, 1544, 2056, Layout::RR, DType::bf16, DType::bf16), consumer_cols(sm90_config(64, 128, 8, 2, 1, 1, 8, 2, 1, 1))},
      {with_beta(half(1032, 1544, 2056, Layout::RC)), consumer_cols(sm90_config(64, 192, 6, 3, 1, 1, 8, 0, 1, 0))},
      {half(1032, 1544, 2056, Layout::CC), consumer_cols(sm90_config(128, 256, 4, 2, 1, 1, 8, 1, 2, 1))},
      {half(512, 512, 8192, Layout::RR), consumer_cols(sm90_config(64, 128, 8, 2, 1, 1, 8, 1, 1, 1, 8, 0))},
      {half(520, 264, 4104, Layout::RR, DType::f16, DType::f32), consumer_cols(sm90_config(64, 128, 8, 2, 1, 1, 8, 0, 1, 0, 6, 0))},
      {half(2056, 2056, 1032, Layout::CR), consumer_cols(sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 1, 1))},
      {half(64, 4096, 4104, Layout::RR), consumer_cols(swapped(sm90_config(128, 64, 8, 2, 1, 1, 8, 1, 1, 1, 2, 0)))},
  };
  uint64_t seed = 2300;
  for (const Case& k : cases) {
    const cuda::Sm90SpaceOptions cols{.swap_ab = k.config.get("SWAP_AB").has_value(), .consumer_cols = true};
    const bool shared = k.config.at("SPLIT_K") > 1 || k.config.at("STREAM_K") != 0;
    SCOPED_TRACE(k.config.describe());
    run_where_legal(k.problem.normalized(), k.config, cols, ++seed, shared);
  }
}

// CONSUMER_K 1: two consumer warpgroups taking every other k-block of the whole tile, the second handing its partial
// tile to the first through shared memory. Exact with units of an odd number of k-blocks and of one (the second's
// part zero), in every epilogue (TMA store, direct with beta, f32 out), clusters of 2 and 4, split-K (the last slice's
// sum and the shared sum), stream-K, a K-major B and SWAP_AB with the float-atomic sum; split-K and stream-K
// bit-identical from run to run.
TEST_F(Sm90GpuTest, ConsumerKIsExactAndSplitsBitIdentical) {
  const std::vector<Case> cases = {
      {half(512, 512, 8192, Layout::RR), consumer_k(sm90_config(64, 64, 12, 2, 2, 1, 8, 1, 1, 1, 2, 0))},
      {half(1000, 1000, 1000, Layout::RR), consumer_k(sm90_config(64, 128, 6, 2, 2, 1, 8, 1, 1, 1))},
      {half(1032, 1544, 2056, Layout::RR, DType::bf16, DType::bf16), consumer_k(sm90_config(128, 64, 6, 2, 1, 1, 8, 1, 1, 1, 8, 0))},
      {with_beta(half(1032, 1544, 2056, Layout::RC)), consumer_k(sm90_config(64, 128, 8, 2, 1, 1, 8, 0, 1, 0, 1, 1))},
      {half(520, 264, 4104, Layout::RR, DType::f16, DType::f32), consumer_k(sm90_config(64, 128, 8, 2, 1, 1, 8, 0, 1, 0, 6, 0))},
      {half(256, 256, 16384, Layout::CR), consumer_k(sm90_config(64, 64, 10, 2, 2, 2, 8, 1, 1, 1, 7, 0))},
      {half(200, 1032, 72, Layout::CC), consumer_k(sm90_config(64, 64, 8, 2, 1, 1, 8, 1, 1, 1, 2, 0))},
      {half(64, 4096, 4104, Layout::RR), atomic(consumer_k(swapped(sm90_config(128, 64, 6, 2, 1, 1, 8, 1, 1, 1, 2, 0))))},
  };
  uint64_t seed = 2500;
  for (const Case& k : cases) {
    const cuda::Sm90SpaceOptions halves{.swap_ab = k.config.get("SWAP_AB").has_value(),
                                        .reduce = k.config.get("REDUCE").has_value(),
                                        .atom_split = true,
                                        .deep_stages = true,
                                        .consumer_k = true};
    const bool shared = (k.config.at("SPLIT_K") > 1 || k.config.at("STREAM_K") != 0) && !k.config.get("REDUCE");
    SCOPED_TRACE(k.config.describe());
    run_where_legal(k.problem.normalized(), k.config, halves, ++seed, shared);
  }
}

// SPLIT_CLUSTER 1: a tile's slices as one cluster, summed through their shared memory; exact and bit-identical from
// run to run: one wave of 16 clusters of four; 117 tiles over the resident clusters of two (several tiles per cluster,
// the ring refilled after each sum); beta over clusters of eight with tails in M and N; f32 out; a skinny M;
// slices of one k-block each.
TEST_F(Sm90GpuTest, ClusterSumIsExactAndBitIdentical) {
  const std::vector<Case> cases = {
      {half(512, 512, 8192, Layout::RR), cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 4, 0))},
      {half(1032, 1544, 2056, Layout::RC, DType::bf16, DType::bf16),
       cluster_sum(sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 2, 0))},
      {with_beta(half(520, 1032, 2056, Layout::RC)), cluster_sum(sm90_config(64, 128, 8, 1, 1, 1, 8, 0, 1, 0, 8, 0))},
      {half(520, 264, 4104, Layout::RR, DType::f16, DType::f32),
       cluster_sum(sm90_config(128, 64, 8, 2, 1, 1, 8, 0, 1, 0, 4, 0))},
      {half(64, 4096, 4104, Layout::RR), cluster_sum(sm90_config(64, 64, 8, 1, 1, 1, 8, 0, 1, 0, 2, 0))},
      {half(256, 256, 16384, Layout::CR), cluster_sum(sm90_config(64, 128, 8, 1, 1, 1, 8, 0, 1, 0, 8, 0))},
      {half(200, 1032, 200, Layout::CC), cluster_sum(sm90_config(64, 64, 8, 1, 1, 1, 8, 0, 1, 0, 4, 0))},
  };
  uint64_t seed = 2700;
  for (const Case& k : cases) {
    cuda::Sm90SpaceOptions options;
    options.cluster_sum = true;
    SCOPED_TRACE(k.config.describe());
    run_where_legal(k.problem.normalized(), k.config, options, ++seed, true);
  }
}

// Rings of 10 to 16 stages (small tiles of memory-bound shapes): the stage index and the barriers' phases wrap at a
// count that is not a power of two, across split-K slices and tiles; exact, and split-K bit-identical.
TEST_F(Sm90GpuTest, DeepRingsAreExactAndSplitsBitIdentical) {
  const std::vector<Case> cases = {
      {half(16, 4104, 4096, Layout::RR), swapped(sm90_config(64, 16, 16, 1, 1, 1, 8, 1, 1, 1, 2, 0))},
      {half(40, 4096, 4104, Layout::RC), swapped(sm90_config(64, 48, 12, 1, 1, 1, 8, 1, 1, 1, 3, 0))},
      {half(64, 4096, 4096, Layout::CR), sm90_config(64, 64, 12, 1, 1, 1, 8, 1, 1, 1, 2, 0)},
      {half(200, 1032, 2056, Layout::CC), sm90_config(64, 64, 10, 1, 1, 2, 8, 2, 1, 1)},
  };
  uint64_t seed = 2100;
  for (const Case& k : cases) {
    const cuda::Sm90SpaceOptions deep{.swap_ab = k.config.get("SWAP_AB").has_value(), .deep_stages = true};
    run_where_legal(k.problem.normalized(), k.config, deep, ++seed, k.config.at("SPLIT_K") > 1);
  }
}

TEST_F(Sm90GpuTest, AlphaBetaPaddedLeadingDimensionsAndSkinnyShapes) {
  Problem p = half(1000, 1064, 136, Layout::RC);
  p.lda = p.min_lda() + 8;
  p.ldb = p.min_ldb() + 16;
  p.ldc = p.min_ldc() + 8;
  p.alpha = -0.75;
  p.beta = 1.5;  // the TMA-store epilogues take the direct path for beta != 0
  for (const Config& c : {sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1), sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1)}) {
    EXPECT_EQ(run(p, &c, 0, 300), "sm90");
  }
  // beta == 0 with alpha, through the TMA store; an ldc that only the direct epilogue takes.
  p.beta = 0.0;
  EXPECT_EQ(run(p, nullptr, 0, 301), "sm90");
  p.ldc = p.min_ldc() + 6;
  const Config direct = sm90_config(128, 128, 5, 2, 1, 1, 4, 0, 1, 0);
  EXPECT_EQ(run(p, &direct, 0, 302), "sm90");
  Problem q = half(24, 8200, 4096, Layout::RR);  // up to 16 rows in RR are the sm80_skinny family's
  q.alpha = 0.5;
  EXPECT_EQ(run(q, nullptr, 0, 303), "sm90");
  const Config skinny = sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1);
  EXPECT_EQ(run(half(16, 8200, 4096, Layout::RC, DType::bf16, DType::bf16), &skinny, 0, 304), "sm90");
}

TEST_F(Sm90GpuTest, WhatTmaCannotTakeRunsTheSm80Family) {
  // A and B one element past an aligned base: the sm90 kernel hands the call to the sm80 family and says so.
  const Problem p = half(1024, 1024, 256, Layout::RR);
  auto c = cuda_->heuristic(p.normalized(), device_);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->family, "sm90");
  EXPECT_EQ(run(p, &*c, 1, 400), "sm90");  // prepared as sm90; the run itself goes through sm80 (the warning says so)
}

// Leading dimensions TMA cannot take run the sm90 family through its operand copy (COPY_AB), odd ldc included,
// in every layout; exact against the reference.
TEST_F(Sm90GpuTest, LeadingDimensionsTmaCannotTakeRunThroughTheOperandCopy) {
  uint64_t seed = 450;
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    EXPECT_EQ(run(half(301, 263, 517, l), nullptr, 0, ++seed), "sm90");
    EXPECT_EQ(run(half(1031, 1029, 1027, l, DType::bf16, DType::bf16), nullptr, 0, ++seed), "sm90");
  }
  // Bases 6 bytes off 16 as well: every row's shift, and row 0's first chunk, which would start before the matrix.
  EXPECT_EQ(run(half(1031, 1029, 1027, Layout::RR), nullptr, 3, ++seed), "sm90");
  Problem p = half(1031, 1029, 1027, Layout::RC);
  p.beta = 0.5;  // C read through the element-by-element path
  const Config split = sm90_config(64, 128, 8, 1, 1, 1, 8, 0, 1, 0, 4, 0, 1);
  EXPECT_EQ(run(p, &split, 0, ++seed), "sm90");
  const Config stream = sm90_config(128, 128, 6, 2, 1, 1, 8, 0, 1, 0, 1, 1, 1);
  EXPECT_EQ(run(half(1031, 1029, 1027, Layout::CR), &stream, 0, ++seed), "sm90");
}

// The staging epilogues where C cannot take a TMA store (an odd ldc): the staged tile is written out by the
// warpgroups' own stores (Params::c_staged_stores). Every staging variant (immediate and deferred, stmatrix or 32-bit
// shared stores, half tiles, one or two consumers, a cluster, split-K's last-slice sum), ragged edges on both sides,
// exact against the reference with every element of C checked.
TEST_F(Sm90GpuTest, StagingEpiloguesWriteCWhereTmaCannotStoreIt) {
  const Config configs[] = {
      sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 1, 0, 1),  // immediate, stmatrix
      sm90_config(128, 128, 4, 2, 1, 1, 8, 2, 1, 1, 1, 0, 1),  // deferred under the next tile's main loop
      sm90_config(128, 256, 4, 2, 2, 1, 16, 1, 2, 0, 1, 0, 1),  // half tiles, 32-bit shared stores, 2x1 cluster
      sm90_config(64, 128, 6, 1, 1, 1, 8, 1, 1, 1, 2, 0, 1),   // one consumer, split-K 2 (last slice's sum)
  };
  uint64_t seed = 700;
  for (const Config& c : configs) {
    for (Layout l : {Layout::RR, Layout::CC}) {
      EXPECT_EQ(run(half(1031, 1029, 1027, l), &c, 0, ++seed), "sm90") << c.describe();  // odd ldc, A and B copied
      Problem padded = half(520, 776, 264, l);  // A and B read in place, C's rows 1554 bytes apart
      padded.ldc = 777;
      Config in_place = c;
      in_place.params["COPY_AB"] = 0;
      EXPECT_EQ(run(padded, &in_place, 0, ++seed), "sm90") << in_place.describe();
    }
  }
}

// COPY_AB pinned where TMA could read the operands in place: rows 16 bytes apart but off 32-byte sectors (the copy
// kernel's wide path, with a column tail that is not a multiple of 8), both operands or only the one off sectors
// (the other read in place), each value the space allows, and bases off 16 bytes (the shifted 16-byte reads).
TEST_F(Sm90GpuTest, OperandCopyTakesAlignedAndUnalignedRowsAndCopiesOnlyWhatNeedsIt) {
  auto with_copy = [](Config c, int64_t v) {
    c.params["COPY_AB"] = v;
    return c;
  };
  const Config tma_store = sm90_config(128, 192, 4, 2, 1, 1, 8, 1, 1, 1);
  const Config direct = sm90_config(128, 128, 4, 2, 1, 1, 8, 0, 1, 0);  // ldc 260: no TMA store
  uint64_t seed = 470;
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    for (int64_t v : {1, 2, 3}) {
      const Config c = with_copy(tma_store, v);
      EXPECT_EQ(run(half(1000, 1000, 1000, l), &c, 0, ++seed), "sm90");   // the named ones copied
    }
    // K = 1000: A's rows are off sectors when A is row-major, B's when B is column-major.
    const bool a_off = a_row_major(l), b_off = !b_row_major(l);
    if (a_off || b_off) {
      const Config c = with_copy(tma_store, a_off && b_off ? 1 : a_off ? 2 : 3);
      EXPECT_EQ(run(half(1024, 1024, 1000, l), &c, 0, ++seed), "sm90");
    }
    Problem tail = half(300, 260, 203, l);  // rows 16 bytes apart but off 32-byte sectors, cols with a tail
    tail.lda = a_row_major(l) ? 216 : 312;
    tail.ldb = b_row_major(l) ? 264 : 216;
    const Config both = with_copy(direct, 1);
    EXPECT_EQ(run(tail, &both, 0, ++seed), "sm90");
    const Config copy = with_copy(tma_store, 1);
    EXPECT_EQ(run(half(1000, 1000, 1000, l), &copy, 1, ++seed), "sm90");  // bases 2 bytes off 16
  }
}

// Split-K and stream-K: exact against the reference in every layout (ragged tiles, partial waves, skinny M, beta,
// f32 output, clusters), and bit-identical from run to run (the slices are summed in slice order whichever CTA
// arrives last), also on a second stream with its own workspace.
TEST_F(Sm90GpuTest, SplitKAndStreamKAreExactAndBitIdenticalFromRunToRun) {
  const Problem large_beta = with_beta(half(1032, 1544, 2056, Layout::RC));
  const Problem small_beta = with_beta(half(520, 1032, 2056, Layout::RC));
  const std::vector<Case> cases = {
      {half(1032, 1544, 2056, Layout::RR), sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 3, 0)},
      {half(1032, 1544, 2056, Layout::CC), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 2, 0)},
      {half(264, 520, 8200, Layout::CR, DType::bf16, DType::bf16), sm90_config(64, 64, 8, 1, 1, 1, 8, 1, 1, 1, 16, 0)},
      {half(16, 4104, 4096, Layout::RR), sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1, 8, 0)},
      {half(16, 4104, 4096, Layout::RC), sm90_config(64, 256, 5, 1, 1, 1, 8, 0, 1, 0, 4, 0)},
      {half(520, 264, 4104, Layout::RR, DType::f16, DType::f32), sm90_config(128, 64, 8, 2, 1, 2, 8, 0, 1, 0, 6, 0)},
      {large_beta, sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 4, 0)},
      // The shared sum (4 slices or more, every unit on an SM of its own, 132 SMs): 128 units; 60 units of clusters
      // of two with tails in M and N; beta with 100 units; f32 out (direct stores) with rows and columns past C.
      {half(512, 512, 8192, Layout::RR), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 8, 0)},
      {half(264, 520, 8200, Layout::CR, DType::bf16, DType::bf16), sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 6, 0)},
      {small_beta, sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 4, 0)},
      {half(1000, 1000, 1000, Layout::RR, DType::f16, DType::f32), sm90_config(128, 256, 4, 2, 1, 1, 8, 0, 1, 0, 4, 0)},
      {half(256, 256, 16384, Layout::RC), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 32, 0)},
      // Clusters of four and eight (a grid of one wave of them): 24 units of 4 and 12 of 8 (rows off sectors), and 30
      // of 4 with 15 slices of 257 k-blocks (17 or 18 each).
      {half(504, 1000, 8200, Layout::RR), sm90_config(128, 128, 5, 2, 2, 2, 8, 1, 1, 1, 3, 0)},
      {half(1000, 1000, 1000, Layout::CR), sm90_config(128, 192, 4, 2, 4, 2, 8, 1, 1, 1, 2, 0)},
      {half(256, 256, 16392, Layout::RR), sm90_config(64, 128, 8, 1, 2, 2, 8, 1, 1, 1, 15, 0)},
      // Stream-K: every tile shared (63 and 117 tiles for 132 SMs), and whole waves with the rest shared (289).
      {half(1032, 1544, 2056, Layout::RR), sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 1, 1)},
      {half(1032, 1544, 2056, Layout::CR), sm90_config(128, 128, 6, 2, 1, 1, 8, 2, 1, 1, 1, 1)},
      {half(2056, 2056, 1032, Layout::RR), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 1, 1)},
      {half(2056, 2056, 1032, Layout::CC, DType::bf16, DType::bf16), sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 1, 1)},
      {large_beta, sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 1, 1)},
  };
  uint64_t seed = 500;
  for (const Case& k : cases) run_where_legal(k.problem.normalized(), k.config, {}, ++seed, true);
}

// The timeline diagnostic (TILEFORGE_SM90_TIMELINE, sm90/timeline.cuh): C stays exact, and every CTA of the grid
// writes its row, its stamps in the order of its phases on both clocks, and the units of all the CTAs add up to the
// launch's work units (each CTA of a cluster runs every unit of its cluster): persistent whole tiles (256 tiles for at
// most 132 CTAs) and split-K in clusters of two with the shared sum.
TEST_F(Sm90GpuTest, TimelineStampsEveryCtaInOrderAndLeavesCExact) {
  const std::vector<Case> cases = {
      {half(2048, 2048, 264, Layout::RR), sm90_config(128, 128, 5, 2, 1, 1, 8, 1, 1, 1)},
      {half(512, 512, 8192, Layout::RR), sm90_config(128, 128, 6, 2, 1, 2, 8, 1, 1, 1, 8, 0)},
  };
  const std::filesystem::path dir = testing::fresh_test_dir("sm90-timeline");
  uint64_t seed = 2300;
  for (const Case& k : cases) {
    const std::string path = (dir / fmt::format("case{}.csv", seed)).string();
    ::setenv("TILEFORGE_SM90_TIMELINE", path.c_str(), 1);
    const std::string family = run(k.problem.normalized(), &k.config, 0, ++seed);
    ::unsetenv("TILEFORGE_SM90_TIMELINE");
    ASSERT_EQ(family, "sm90") << k.config.describe();
    std::istringstream csv(testing::read_file(path));
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));
    ASSERT_EQ(line.rfind("cta,sm,units,grid,entry_ns,", 0), 0u) << line;
    int64_t rows = 0, units = 0, grid = 0;
    while (std::getline(csv, line)) {
      std::vector<int64_t> v;
      std::istringstream fields(line);
      for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stoll(f));
      ASSERT_EQ(v.size(), 20u) << line;
      EXPECT_EQ(v[0], rows) << line;
      units += v[2];
      grid = v[3];
      EXPECT_GE(v[2], 1) << line;
      // Stamps 4 (stored) and 5 (arrived) only where the last unit has a workspace fix-up (split-K here); the others
      // always, each after the one before it.
      const bool fixup = k.config.at("SPLIT_K") > 1;
      for (int clock = 0; clock < 2; ++clock) {
        const int first = 4 + 8 * clock;
        int64_t before = 0;
        for (int s = 0; s < 8; ++s) {
          const int64_t t = v[first + s];
          if (s == 4 || s == 5) {
            EXPECT_EQ(t > 0, fixup) << "stamp " << s << ": " << line;
            if (t == 0) continue;
          }
          EXPECT_GT(t, 0) << "stamp " << s << ": " << line;
          EXPECT_LE(before, t) << "stamp " << s << ": " << line;
          before = t;
        }
      }
      ++rows;
    }
    const cuda::Sm90Schedule sched = cuda::sm90_schedule(k.problem.normalized(), k.config, 132);
    const int64_t cs = k.config.at("CLUSTER_M") * k.config.at("CLUSTER_N");
    EXPECT_EQ(rows, grid) << k.config.describe();
    EXPECT_EQ(grid % cs, 0) << k.config.describe();
    EXPECT_EQ(units, sched.cluster_tiles * sched.split_k * cs) << k.config.describe();
  }
}

// REDUCE 1 (the non-deterministic policy's float-atomic sums): within the error bound against the float64 reference,
// split-K and stream-K, with beta, bf16, f32 out, clusters and SWAP_AB; each case run twice on the stream's own
// workspace, so that a sum tile left non-zero by the first launch would spoil the second.
TEST_F(Sm90GpuTest, AtomicSumsAreWithinTheBoundAndLeaveTheirTilesZero) {
  const std::vector<Case> cases = {
      {half(1032, 1544, 2056, Layout::RR), atomic(sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 3, 0))},
      {half(264, 520, 8200, Layout::CR, DType::bf16, DType::bf16), atomic(sm90_config(64, 64, 8, 1, 1, 1, 8, 1, 1, 1, 16, 0))},
      {with_beta(half(520, 1032, 2056, Layout::RC)), atomic(sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 4, 0))},
      {half(520, 264, 4104, Layout::RR, DType::f16, DType::f32), atomic(sm90_config(128, 64, 8, 2, 1, 2, 8, 0, 1, 0, 6, 0))},
      {half(256, 256, 16384, Layout::RC), atomic(sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 32, 0))},
      {half(1032, 1544, 2056, Layout::CR), atomic(sm90_config(128, 128, 6, 2, 1, 1, 8, 2, 1, 1, 1, 1))},
      {half(2056, 2056, 1032, Layout::CC, DType::bf16, DType::bf16), atomic(sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 1, 1))},
      {half(16, 4096, 4096, Layout::RR), atomic(swapped(sm90_config(128, 16, 8, 2, 1, 1, 8, 1, 1, 1, 4, 0)))},
  };
  uint64_t seed = 700;
  for (const Case& k : cases) {
    const Problem p = k.problem.normalized();
    const cuda::Sm90SpaceOptions options{.swap_ab = cuda::sm90_swap_ab(k.config), .reduce = true};
    const Status legal = cuda::sm90_space(p, device_.profile, options).check(k.config);
    EXPECT_TRUE(legal.ok()) << k.config.describe() << ": " << legal.to_string();
    if (!legal.ok()) continue;
    const int64_t clusters = device_.profile.cores / cuda::sm90_cluster_size(k.config);
    EXPECT_TRUE(cuda::sm90_schedule(p, k.config, clusters).atomic_sum) << k.config.describe();
    EXPECT_EQ(run(p, &k.config, 0, ++seed), "sm90") << k.config.describe();
    EXPECT_EQ(run(p, &k.config, 0, ++seed), "sm90") << k.config.describe() << ", its second launch";
  }
}

TEST_F(Sm90GpuTest, SharedSplitKSumHasTheLastSliceSumsBits) {
  // The same configs with the shared sum and with the last slice summing (TILEFORGE_SM90_SHARED_SUM=0, read when a
  // kernel is prepared): both add the slices in slice order from zero, so C must be the same to the bit.
  const std::vector<Case> cases = {
      {half(512, 512, 8192, Layout::RR), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 8, 0)},
      {half(264, 520, 8200, Layout::CR, DType::bf16, DType::bf16), sm90_config(128, 128, 6, 2, 2, 1, 8, 1, 1, 1, 6, 0)},
      {with_beta(half(520, 1032, 2056, Layout::RC)), sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 4, 0)},
      {half(1000, 1000, 1000, Layout::RR, DType::f16, DType::f32), sm90_config(128, 256, 4, 2, 1, 1, 8, 0, 1, 0, 4, 0)},
  };
  uint64_t seed = 900;
  for (const Case& k : cases) {
    const Problem p = k.problem.normalized();
    const cuda::Sm90Schedule sched = cuda::sm90_schedule(p, k.config, device_.profile.cores / cuda::sm90_cluster_size(k.config));
    EXPECT_TRUE(sched.shared_sum) << k.config.describe() << " is meant to run the shared sum here";
    auto ops = testing::make_operands(p, ++seed);
    auto a = upload(ops.a), b = upload(ops.b);
    auto shared = cuda_->prepare(p, k.config, device_);
    ASSERT_TRUE(shared.ok()) << shared.status().to_string();
    ::setenv("TILEFORGE_SM90_SHARED_SUM", "0", 1);
    auto last = cuda_->prepare(p, k.config, device_);
    ::unsetenv("TILEFORGE_SM90_SHARED_SUM");
    ASSERT_TRUE(last.ok()) << last.status().to_string();
    auto c1 = upload(ops.c), c2 = upload(ops.c);
    const auto out_shared =
        run_and_read(**shared, p, GemmArgs{a->data(), b->data(), c1->data(), timer_->stream()}, *c1);
    const auto out_last = run_and_read(**last, p, GemmArgs{a->data(), b->data(), c2->data(), timer_->stream()}, *c2);
    ASSERT_EQ(out_shared.size(), ops.c.size());
    EXPECT_EQ(out_shared, out_last) << k.config.describe() << ": the shared sum and the last slice's differ";
    EXPECT_NE(out_shared, ops.c) << k.config.describe() << ": C was not written";
  }
}

TEST_F(Sm90GpuTest, F16AccumulationIsAsCloseAsCublasOwnF16AccumulatingCall) {
  // The opt-in policy (f16 inputs, f16 accumulators): on the same operands, ours is within twice the error of
  // cuBLAS's f16-accumulating call (verify's rule for this policy), and further from the reference than our own f32
  // accumulation, so the policy is honoured rather than silently widened. Heuristic and pinned configs: both
  // staging epilogues, direct stores with beta, clusters, split-K (f32 partials, shared and last-slice sums) and
  // stream-K.
  Backend* cublas = find_backend("cublas");
  if (cublas == nullptr || !cublas->available().ok) GTEST_SKIP() << "SKIPPED: cuBLAS is not available";
  struct Case {
    Problem problem;
    std::optional<Config> config;
  };
  const std::vector<Case> cases = {
      {half(4096, 4096, 4096, Layout::RR), std::nullopt},
      {half(1032, 1544, 2056, Layout::RC), sm90_config(128, 256, 3, 2, 1, 1, 16, 2, 1, 1)},
      {with_beta(half(1032, 1544, 2056, Layout::CC)), sm90_config(128, 128, 6, 2, 2, 1, 8, 0, 1, 0)},
      {half(1032, 1544, 2056, Layout::CR), sm90_config(128, 128, 6, 2, 1, 2, 8, 1, 1, 1)},
      {half(512, 512, 8192, Layout::RR), sm90_config(128, 128, 6, 2, 1, 1, 8, 1, 1, 1, 8, 0)},
      {half(520, 1032, 2056, Layout::RR), sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 2, 0)},
      {half(1032, 1544, 2056, Layout::RR), sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1, 1, 1)},
  };
  uint64_t seed = 1300;
  for (const Case& k : cases) {
    Problem p = k.problem.normalized();
    p.precision.accum = DType::f16;
    const Config* config = k.config ? &*k.config : nullptr;
    if (config != nullptr) {
      const Status legal = cuda::sm90_space(p, device_.profile).check(*config);
      EXPECT_TRUE(legal.ok()) << config->describe() << ": " << legal.to_string();
      if (!legal.ok()) continue;
    }
    ++seed;
    const testing::GpuRun ours = testing::run_on_gpu(*cuda_, device_, *timer_, p, config, 0, seed);
    EXPECT_EQ(ours.family, "sm90") << p.describe();
    const testing::GpuRun native = testing::run_on_gpu(*cublas, device_, *timer_, p, nullptr, 0, seed);
    Problem wide = p;
    wide.precision.accum = DType::f32;
    const testing::GpuRun f32 = testing::run_on_gpu(*cuda_, device_, *timer_, wide, config, 0, seed);
    const std::string what = p.describe() + (config ? " " + config->describe() : std::string(" (heuristic)"));
    std::printf("[ info ] %s: f16-accumulation error ours %.3e, cuBLAS %.3e; ours with f32 accumulators %.3e\n",
                what.c_str(), ours.error.rel_error, native.error.rel_error, f32.error.rel_error);
    EXPECT_LE(ours.error.rel_error, 2.0 * native.error.rel_error) << what;
    EXPECT_GT(ours.error.rel_error, 1.5 * f32.error.rel_error) << what << ": no sign of f16 accumulation";
  }
}

}  // namespace
}  // namespace tileforge
