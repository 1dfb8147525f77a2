// The sm80 family without a GPU: its parameter space on real profiles, the heuristic's picks, the generated
// source, and NVRTC builds for sm_80 and sm_90a checked against the resource estimates (CI's compile check).
#include <gtest/gtest.h>

#include "support/test_support.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "backends/cuda/kernels/common/work_schedule.cuh"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "bench/suite.hpp"
#include "core/embedded.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/nvrtc.hpp"

namespace tileforge::cuda {
namespace {

Problem fp16(int64_t m, int64_t n, int64_t k, Layout l = Layout::RR) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.layout = l;
  p.precision = {DType::f16, DType::f16, DType::f32};
  return p.normalized();
}

Problem problem(int64_t m, int64_t n, int64_t k, Layout l, DType in) {
  Problem p = fp16(m, n, k, l);
  p.precision = {in, in, DType::f32};
  return p.normalized();
}

Config sm80_config(int bm, int bn, int bk, int wm, int wn, int stages, int vec, int frag_pipe) {
  return Config{"sm80", {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"WARPS_M", wm}, {"WARPS_N", wn},
                         {"STAGES", stages}, {"GROUP_M", 8}, {"VEC_BYTES", vec}, {"COPY_AB", 0},
                         {"FRAG_PIPE", frag_pipe}}};
}

std::vector<jit::Header> kernel_headers() {
  std::vector<jit::Header> headers;
  for (const auto& [name, text] : embedded::embedded_kernel_headers()) headers.push_back({std::string(name), std::string(text)});
  return headers;
}

using testing::profile;

std::vector<std::array<int64_t, 3>> public_suite_shapes() {
  auto suite = bench::load_suite("public");
  EXPECT_TRUE(suite.ok()) << suite.status().to_string();
  return suite.ok() ? suite->shapes : std::vector<std::array<int64_t, 3>>{};
}

TEST(Sm80Family, SpaceHasOverAHundredLegalConfigsAt4096OnH200) {
  auto space = sm80_space(fp16(4096, 4096, 4096), profile("h200"));
  const auto legal = space.enumerate();
  EXPECT_GT(legal.size(), 100u);
  for (const Config& c : legal) {
    EXPECT_LE(sm80_smem_bytes(c), 232448) << c.describe();
    EXPECT_LE(sm80_register_estimate(c, "sm_90a"), 255) << c.describe();
  }
}

TEST(Sm80Family, RefusesWhatDoesNotFitAndNamesTheLimit) {
  const Problem p = fp16(4096, 4096, 4096);
  auto a100 = sm80_space(p, profile("a100-sxm"));
  Config big{"sm80", {{"BLOCK_M", 256}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"WARPS_M", 4}, {"WARPS_N", 4},
                      {"STAGES", 4}, {"GROUP_M", 8}, {"VEC_BYTES", 16}, {"COPY_AB", 0}, {"FRAG_PIPE", 0},
                      {"SPLIT_K", 1}}};
  Status s = a100.check(big);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shared memory"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("166912"), std::string::npos) << s.message();
  // Alignment: an odd leading dimension allows only 2-byte loads, unless the operands are copied first.
  const Problem odd = fp16(4095, 4097, 4093);
  EXPECT_EQ(max_vec_bytes(odd), 2);
  EXPECT_EQ(max_vec_bytes(fp16(64, 64, 68)), 8);
  EXPECT_EQ(max_vec_bytes(fp16(64, 64, 64)), 16);
  auto space = sm80_space(odd, profile("h200"));
  Config c = sm80_heuristic(odd, profile("h200"));
  EXPECT_EQ(c.at("COPY_AB"), 1);
  EXPECT_TRUE(space.check(c).ok());
  c.params["COPY_AB"] = 0;
  Status v = space.check(c);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("VEC_BYTES <= 2"), std::string::npos) << v.message();
}

TEST(Sm80Family, HeuristicPicksLegalConfigsForThePublicSuiteOnEveryNvidiaProfile) {
  const auto shapes = public_suite_shapes();
  ASSERT_EQ(shapes.size(), 18u);
  for (const char* name : {"h200", "h100-sxm", "a100-sxm", "l40s", "rtx-4090"}) {
    const auto prof = profile(name);
    for (const auto& s : shapes) {
      for (Layout l : {Layout::RR, Layout::CC}) {
        const Problem p = fp16(s[0], s[1], s[2], l);
        Config c = sm80_heuristic(p, prof);
        ASSERT_FALSE(c.family.empty()) << name;
        EXPECT_TRUE(sm80_space(p, prof).check(c).ok()) << name << " " << p.describe() << " " << c.describe();
      }
    }
  }
  // Large square problems get large tiles; a 16-row problem gets a tile of at most 32 rows.
  EXPECT_GE(sm80_heuristic(fp16(4096, 4096, 4096), profile("h200")).at("BLOCK_M") *
                sm80_heuristic(fp16(4096, 4096, 4096), profile("h200")).at("BLOCK_N"),
            128 * 128);
  EXPECT_LE(sm80_heuristic(fp16(16, 4096, 4096), profile("h200")).at("BLOCK_M"), 32);
}

TEST(Sm80Family, GeneratedSourceInstantiatesEveryParameter) {
  const Problem p = fp16(1000, 1000, 1000, Layout::CR);
  Config c = sm80_heuristic(p, profile("h200"));
  GeneratedKernel g = sm80_source(p, c, 8, 2);
  EXPECT_NE(g.source.find("#include \"sm80/gemm.cuh\""), std::string::npos);
  EXPECT_NE(g.source.find(fmt::format("Config<{}, {}, {}, {}, {}, {}, {}, 8, false, true, 1, 1, 2, {}>", c.at("BLOCK_M"),
                                      c.at("BLOCK_N"), c.at("BLOCK_K"), c.at("WARPS_M"), c.at("WARPS_N"),
                                      c.at("STAGES"), c.at("GROUP_M"), c.at("FRAG_PIPE") ? "true" : "false")),
            std::string::npos)
      << g.source;
  EXPECT_NE(g.source.find(g.entry), std::string::npos);
  EXPECT_EQ(g.threads, 32 * c.at("WARPS_M") * c.at("WARPS_N"));
  EXPECT_EQ(g.smem_bytes, sm80_smem_bytes(c));
}

// CI's compile check: NVRTC builds, for sm_80 and sm_90a, the configs the heuristic picks for the public suite
// and the largest legal config; none spills, registers stay within the estimate, shared memory fits.
TEST(Sm80Family, NvrtcBuildsStayWithinTheirEstimates) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << "SKIPPED: NVRTC not available: " << nvrtc.status().message();
  const std::vector<jit::Header> headers = kernel_headers();
  struct Case {
    std::string arch;
    const char* profile;
    Problem problem;
    Config config;
  };
  std::vector<Case> cases;
  for (const auto& [arch, prof_name] : {std::pair{"sm_90a", "h200"}, std::pair{"sm_80", "a100-sxm"}}) {
    const auto prof = profile(prof_name);
    std::vector<std::string> seen;
    for (const auto& s : public_suite_shapes()) {
      const Problem p = fp16(s[0], s[1], s[2]);
      Config c = sm80_heuristic(p, prof);
      if (std::find(seen.begin(), seen.end(), c.describe()) != seen.end()) continue;
      seen.push_back(c.describe());
      cases.push_back({arch, prof_name, p, c});
    }
    // The largest legal config: most shared memory, then most threads.
    const Problem big = fp16(4096, 4096, 4096);
    auto legal = sm80_space(big, prof).enumerate();
    ASSERT_FALSE(legal.empty());
    auto largest = *std::max_element(legal.begin(), legal.end(), [](const Config& x, const Config& y) {
      return std::pair{sm80_smem_bytes(x), sm80_threads(x)} < std::pair{sm80_smem_bytes(y), sm80_threads(y)};
    });
    cases.push_back({arch, prof_name, big, largest});
  }
  jit::KernelCache cache(::testing::TempDir() + "/tf-sm80-ci-cache");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    const int vec = k.config.at("COPY_AB") ? 16 : int(k.config.at("VEC_BYTES"));
    GeneratedKernel g = sm80_source(k.problem, k.config, vec, epilogue_vec(k.problem));
    jit::CompileRequest req;
    req.name = g.entry;
    req.source = g.source;
    req.headers = headers;
    req.arch = k.arch;
    auto compiled = cache.get(req);
    ASSERT_TRUE(compiled.ok()) << k.config.describe() << ": " << compiled.status().to_string();
    testing::keep_ptx(fmt::format("sm80-estimates-{:02}", i), compiled->ptx);  // fresh compiles only
    const jit::FunctionResources* r = compiled->resources(g.entry);
    ASSERT_NE(r, nullptr) << compiled->log;
    EXPECT_FALSE(r->spills()) << k.arch << " " << k.config.describe() << ": " << r->spill_store_bytes << " bytes spilled";
    EXPECT_LE(r->registers, sm80_register_estimate(k.config, k.arch)) << k.arch << " " << k.config.describe();
    const auto prof = profile(k.profile);
    EXPECT_LE(r->smem_bytes + g.smem_bytes, prof.smem_per_block_bytes) << k.arch << " " << k.config.describe();
    std::printf("[ info ] %s %s: %d registers (estimate %d), %lld B shared memory\n", k.arch.c_str(),
                k.config.describe().c_str(), r->registers, sm80_register_estimate(k.config, k.arch),
                (long long)(r->smem_bytes + g.smem_bytes));
  }
}

// The deep pipelined tiles (BLOCK_K 64 with FRAG_PIPE, 8 warps of 64x64) are legal on the H200 at 3 and 4
// stages, and NVRTC builds them for sm_90a without spills and within their estimate, in every layout and both
// input types; so does, for each load width, the largest legal BLOCK_K 64 FRAG_PIPE config (the narrow widths
// copy 4 to 8 times as many chunks per thread).
TEST(Sm80Family, NvrtcBuildsBlockK64PipelinedTilesWithoutSpills) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << "SKIPPED: NVRTC not available: " << nvrtc.status().message();
  const auto h200 = profile("h200");
  struct Case {
    Problem problem;
    Config config;
  };
  std::vector<Case> cases;
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  for (int stages : {3, 4}) {
    for (auto [bm, bn, wm, wn] : {std::array{128, 256, 2, 4}, std::array{256, 128, 4, 2}}) {
      for (int l = 0; l < 4; ++l) {
        // Each layout once per tile and stage count; f16 and bf16 alternate.
        const DType in = (l + stages) % 2 ? DType::bf16 : DType::f16;
        cases.push_back({problem(4096, 4096, 4096, layouts[l], in), sm80_config(bm, bn, 64, wm, wn, stages, 16, 1)});
      }
    }
  }
  const auto legal = sm80_space(fp16(4096, 4096, 4096), h200).enumerate();
  for (int vec : {8, 4, 2}) {
    const Config* best = nullptr;
    for (const Config& c : legal) {
      if (c.at("BLOCK_K") != 64 || c.at("FRAG_PIPE") != 1 || c.at("VEC_BYTES") != vec || c.at("COPY_AB") != 0) continue;
      if (!best || std::pair{c.at("BLOCK_M") * c.at("BLOCK_N"), c.at("STAGES")} >
                       std::pair{best->at("BLOCK_M") * best->at("BLOCK_N"), best->at("STAGES")}) {
        best = &c;
      }
    }
    ASSERT_NE(best, nullptr) << "no legal BLOCK_K=64 FRAG_PIPE=1 config with VEC_BYTES=" << vec;
    for (int l = 0; l < 4; ++l) {
      cases.push_back({problem(4096, 4096, 4096, layouts[l], l % 2 ? DType::bf16 : DType::f16), *best});
    }
  }
  jit::KernelCache cache(::testing::TempDir() + "/tf-sm80-ci-cache");
  const std::vector<jit::Header> headers = kernel_headers();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    const std::string what = fmt::format("{} {} {}", to_string(k.problem.layout), to_string(k.problem.precision.input),
                                         k.config.describe());
    // As the backend checks a config: in the space with SPLIT_K where the config names it.
    ASSERT_TRUE(sm80_space(k.problem, h200, k.config.get("SPLIT_K").has_value()).check(k.config).ok()) << what;
    GeneratedKernel g = sm80_source(k.problem, k.config, int(k.config.at("VEC_BYTES")), epilogue_vec(k.problem));
    jit::CompileRequest req;
    req.name = g.entry;
    req.source = g.source;
    req.headers = headers;
    req.arch = "sm_90a";
    auto compiled = cache.get(req);
    ASSERT_TRUE(compiled.ok()) << what << ": " << compiled.status().to_string();
    testing::keep_ptx(fmt::format("sm80-block-k64-{:02}", i), compiled->ptx);  // fresh compiles only
    const jit::FunctionResources* r = compiled->resources(g.entry);
    ASSERT_NE(r, nullptr) << compiled->log;
    EXPECT_FALSE(r->spills()) << what << ": " << r->spill_store_bytes << " bytes spilled";
    EXPECT_LE(r->registers, sm80_register_estimate(k.config, "sm_90a")) << what;
    EXPECT_LE(r->smem_bytes + g.smem_bytes, h200.smem_per_block_bytes) << what;
    std::printf("[ info ] sm_90a %s: %d registers (estimate %d)\n", what.c_str(), r->registers,
                sm80_register_estimate(k.config, "sm_90a"));
  }
}

// SPLIT_K: declared where asked for (the environment's default, or the explicit overload), bounded by K's k-tiles;
// its workspace one counter per output tile and SPLIT_K partials per tile; the cost model's view of the slices.
TEST(Sm80Family, SplitKIsDeclaredWhereAskedAndSizesItsWorkspace) {
  const auto h200 = profile("h200");
  const Problem p = fp16(512, 512, 8192);
  EXPECT_EQ(sm80_space(p, h200, false).find("SPLIT_K"), nullptr);
  const ParamSpace space = sm80_space(p, h200, true);
  ASSERT_NE(space.find("SPLIT_K"), nullptr);
  Config c = sm80_config(128, 128, 32, 2, 2, 4, 16, 0);
  EXPECT_FALSE(space.check(c).ok()) << "a config of the space with SPLIT_K names it";
  c.params["SPLIT_K"] = 16;
  EXPECT_TRUE(space.check(c).ok()) << space.check(c).to_string();
  const Problem short_k = fp16(512, 512, 96);  // three k-tiles of 32
  EXPECT_FALSE(sm80_space(short_k, h200, true).check(c).ok()) << "16 slices of 3 k-tiles";
  c.params["SPLIT_K"] = 3;
  EXPECT_TRUE(sm80_space(short_k, h200, true).check(c).ok());
  // Declared by default (TILEFORGE_SM80_SPLIT_K=0 takes it out), and admitted only where the whole-K tiles leave SMs
  // idle: 4096^3 in 128x128 tiles is 1024 of them for 132 SMs.
  if (std::getenv("TILEFORGE_SM80_SPLIT_K") == nullptr) EXPECT_NE(sm80_space(p, h200).find("SPLIT_K"), nullptr);
  const ParamSpace big = sm80_space(fp16(4096, 4096, 4096), h200, true);
  c.params["SPLIT_K"] = 2;
  const Status refused = big.check(c);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("fewer than the 132 SMs"), std::string::npos) << refused.message();
  c.params["SPLIT_K"] = 1;
  EXPECT_TRUE(big.check(c).ok()) << big.check(c).to_string();

  Problem batched = fp16(520, 264, 4104);
  batched.batch = 3;
  batched = batched.normalized();
  c.params["SPLIT_K"] = 4;
  const Sm80Workspace w = sm80_workspace(batched, c);
  const int64_t tiles = 5 * 3 * 3;  // ceil(520 / 128) x ceil(264 / 128) x 3 entries
  EXPECT_GE(w.counter_bytes, tiles * 4);
  EXPECT_EQ(w.counter_bytes % 256, 0);
  EXPECT_EQ(w.workspace_bytes, w.counter_bytes + tiles * 4 * 128 * 128 * 4);
  c.params["SPLIT_K"] = 1;
  EXPECT_EQ(sm80_workspace(batched, c).workspace_bytes, 0);
  const Problem slices = sm80_slice_problem(batched, 4, 32);
  EXPECT_EQ(slices.batch, 12);
  EXPECT_EQ(slices.k, 33 * 32);  // 129 k-tiles in 4 slices: the largest holds 33
  EXPECT_EQ(sm80_slice_problem(short_k, 3, 32).k, 32);
}

// Split-K's and stream-K's instances: NVRTC builds them for sm_90a and sm_80 in every layout, with the fix-up's
// counter atomic, no spills and within the register estimate (the sum's loads come after the main loop's fragments are
// dead; stream-K's schedule lives beside the accumulators).
TEST(Sm80Family, NvrtcBuildsSplitKWithoutSpills) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << "SKIPPED: NVRTC not available: " << nvrtc.status().message();
  const std::vector<jit::Header> headers = kernel_headers();
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  struct Tile {
    int bm, bn, bk, wm, wn, stages, pipe, split;  // split 0: STREAM_K 1
  };
  const Tile tiles[] = {{128, 256, 32, 2, 4, 3, 1, 2}, {128, 128, 32, 2, 2, 4, 0, 4}, {64, 64, 64, 2, 2, 4, 1, 16},
                        {16, 64, 32, 1, 2, 4, 0, 8},   {128, 128, 32, 2, 4, 4, 1, 0}, {64, 128, 64, 2, 2, 4, 1, 0}};
  jit::KernelCache cache(::testing::TempDir() + "/tf-sm80-ci-cache");
  int n = 0;
  for (const auto& [arch, prof_name] : {std::pair{"sm_90a", "h200"}, std::pair{"sm_80", "a100-sxm"}}) {
    const auto prof = profile(prof_name);
    for (const Tile& t : tiles) {
      for (int l = 0; l < 4; ++l) {
        // 256x256: every tile's whole-K grid leaves SMs idle (16x64 tiles: 64), where the space admits the split.
        const Problem q = problem(256, 256, 8192, layouts[l], l % 2 ? DType::bf16 : DType::f16);
        Config c = sm80_config(t.bm, t.bn, t.bk, t.wm, t.wn, t.stages, 16, t.pipe);
        c.params["SPLIT_K"] = std::max(1, t.split);
        c.params["STREAM_K"] = t.split == 0 ? 1 : 0;
        const std::string what = fmt::format("{} {} {}", arch, to_string(q.layout), c.describe());
        const ParamSpace space = sm80_space(q, prof, true, true);
        ASSERT_TRUE(space.check(c).ok()) << what << ": " << space.check(c).to_string();
        GeneratedKernel g = sm80_source(q, c, 16, epilogue_vec(q));
        EXPECT_NE(g.source.find(t.split ? fmt::format(", {}>;", t.split) : std::string(", 1, true>;")),
                  std::string::npos)
            << g.source;
        jit::CompileRequest req;
        req.name = g.entry;
        req.source = g.source;
        req.headers = headers;
        req.arch = arch;
        auto compiled = cache.get(req);
        ASSERT_TRUE(compiled.ok()) << what << ": " << compiled.status().to_string();
        testing::keep_ptx(fmt::format("sm80-split-k-{:02}", n++), compiled->ptx);  // fresh compiles only
        const jit::FunctionResources* r = compiled->resources(g.entry);
        ASSERT_NE(r, nullptr) << compiled->log;
        EXPECT_FALSE(r->spills()) << what << ": " << r->spill_store_bytes << " bytes spilled";
        EXPECT_LE(r->registers, sm80_register_estimate(c, arch)) << what;
        std::printf("[ info ] %s: %d registers (estimate %d)\n", what.c_str(), r->registers,
                    sm80_register_estimate(c, arch));
        if (!compiled->ptx.empty()) {  // a cached build keeps no PTX
          EXPECT_NE(compiled->ptx.find("atom.acq_rel.gpu.global.add.s32"), std::string::npos) << what;
        }
      }
    }
  }
}

// STREAM_K: declared where asked for, never with SPLIT_K > 1 or a batch; one wave of blocks (the SMs times the
// occupancy) with the tiles of the last partial wave and one whole wave shared; its workspace one counter per shared
// tile and two partial tiles per block, none where the tiles fill whole waves.
TEST(Sm80Family, StreamKIsDeclaredWhereAskedAndSizesItsWorkspace) {
  const auto a100 = profile("a100-sxm");
  const Problem p = fp16(1000, 1000, 1000);
  EXPECT_EQ(sm80_space(p, a100, true).find("STREAM_K"), nullptr);
  const ParamSpace space = sm80_space(p, a100, true, true);
  ASSERT_NE(space.find("STREAM_K"), nullptr);
  Config c = sm80_config(128, 128, 32, 2, 4, 4, 16, 0);
  c.params["SPLIT_K"] = 2;
  c.params["STREAM_K"] = 1;
  EXPECT_FALSE(space.check(c).ok()) << "split-K and stream-K at once";
  c.params["SPLIT_K"] = 1;
  EXPECT_TRUE(space.check(c).ok()) << space.check(c).to_string();
  Problem batched = p;
  batched.batch = 2;
  batched = batched.normalized();
  EXPECT_FALSE(sm80_space(batched, a100, true, true).check(c).ok()) << "stream-K walks one matrix";
  // The kernel's schedule is 32-bit: 2^16 x 2^16 tiles of 2^8 k-blocks exceed it.
  EXPECT_FALSE(sm80_space(fp16(int64_t(1) << 23, int64_t(1) << 23, 8192), a100, true, true).check(c).ok());

  // 1000^3 in 128x128 tiles: 64 tiles of 32 k-blocks for 108 SMs x the occupancy: all shared.
  const int64_t workers = sm80_stream_k_workers(c, a100);
  EXPECT_EQ(workers % 108, 0);
  Sm80StreamK s = sm80_stream_k_schedule(p, c, workers);
  EXPECT_EQ(s.tiles, 64);
  EXPECT_EQ(s.k_blocks, 32);
  EXPECT_EQ(s.sk_tiles, 64);
  EXPECT_EQ(s.workers, workers);
  Sm80Workspace w = sm80_workspace(p, c, workers);
  EXPECT_EQ(w.counter_bytes, 256);
  EXPECT_EQ(w.workspace_bytes, 256 + 2 * workers * 128 * 128 * 4);
  // 3000 x 3000 in 128x128 tiles: 24 x 24 = 576 tiles over 108 blocks: 36 left over, so 36 + 108 shared.
  s = sm80_stream_k_schedule(fp16(3000, 3000, 256), c, 108);
  EXPECT_EQ(s.sk_tiles, 36 + 108);
  // Tiles that fill whole waves share none, and need no workspace.
  EXPECT_EQ(sm80_stream_k_schedule(fp16(1024, 1024, 256), c, 64).sk_tiles, 0);
  EXPECT_EQ(sm80_workspace(fp16(1024, 1024, 256), c, 64).workspace_bytes, 0);
  // Never more blocks than k-blocks to share.
  s = sm80_stream_k_schedule(fp16(128, 128, 64), c, 108);
  EXPECT_EQ(s.workers, 2);
  EXPECT_EQ(s.sk_tiles, 1);
  c.params["STREAM_K"] = 0;
  EXPECT_EQ(sm80_workspace(p, c, workers).workspace_bytes, 0);
}

// The kernel's stream-K walk (kernels/common/work_schedule.cuh) over the launch's blocks, on the host: every k-block of
// every tile is run exactly once; a shared tile's pieces agree on their count, run in block order, and each stores in
// a slot of its own inside the workspace's 2 x blocks, which the summing block finds from its own piece.
TEST(Sm80Family, StreamKScheduleCoversEveryKBlockOnce) {
  const Config c = sm80_config(128, 128, 32, 2, 4, 4, 16, 0);
  struct Case {
    Problem q;
    int64_t workers;
  };
  const Case cases[] = {{fp16(1000, 1000, 1000), 216}, {fp16(3000, 3000, 256), 108}, {fp16(512, 512, 8192), 216},
                        {fp16(129, 4000, 100), 108},   {fp16(1024, 1024, 256), 64}, {fp16(128, 128, 64), 108},
                        {fp16(4100, 300, 999), 132}};
  for (const Case& t : cases) {
    const Sm80StreamK s = sm80_stream_k_schedule(t.q, c, t.workers);
    SCOPED_TRACE(t.q.describe() + " over " + std::to_string(s.workers) + " blocks");
    std::map<int, std::vector<int>> covered;  // tile -> how often each k-block was run
    std::map<int, std::set<long long>> stored;  // shared tile -> the slots its pieces store in
    std::map<int, std::set<long long>> read;    // shared tile -> the slots the summing block would read
    std::map<int, int> nseg;
    for (int b = 0; b < int(s.workers); ++b) {
      tf::Schedule<1, true> sched(int(s.tiles), int(s.k_blocks), b, int(s.workers), int(s.sk_tiles));
      tf::Work w;
      while (sched.step(w)) {
        ASSERT_GE(w.tile, 0);
        ASSERT_LT(w.tile, s.tiles);
        ASSERT_LT(w.kb0, w.kb1);
        std::vector<int>& k = covered[w.tile];
        k.resize(size_t(s.k_blocks));
        for (int i = w.kb0; i < w.kb1; ++i) ++k[size_t(i)];
        if (w.nseg == 1) continue;
        ASSERT_GE(w.tile, s.tiles - s.sk_tiles) << "only the last tiles are shared";
        ASSERT_LT(w.seg, w.nseg);
        EXPECT_EQ(w.first + w.seg, b) << "a tile's pieces run on consecutive blocks, in k order";
        if (nseg.count(w.tile)) {
          EXPECT_EQ(nseg[w.tile], w.nseg) << "the pieces agree on their count";
        }
        nseg[w.tile] = w.nseg;
        const long long own = sched.slot(w, w.seg);
        EXPECT_GE(own, 0);
        EXPECT_LT(own, 2 * s.workers);
        EXPECT_TRUE(stored[w.tile].insert(own).second) << "slot " << own << " taken twice in tile " << w.tile;
        for (int j = 0; j < w.nseg; ++j) read[w.tile].insert(sched.slot(w, j));
      }
    }
    ASSERT_EQ(int64_t(covered.size()), s.tiles);
    for (const auto& [tile, k] : covered) {
      for (size_t i = 0; i < k.size(); ++i) ASSERT_EQ(k[i], 1) << "tile " << tile << " k-block " << i;
    }
    std::set<long long> all;
    for (const auto& [tile, slots] : stored) {
      EXPECT_EQ(int(slots.size()), nseg[tile]) << "tile " << tile;
      EXPECT_EQ(read[tile], slots) << "tile " << tile << ": the sum reads the slots its pieces stored";
      for (long long slot : slots) EXPECT_TRUE(all.insert(slot).second) << "slot " << slot << " of two tiles";
    }
  }
}

}  // namespace
}  // namespace tileforge::cuda
