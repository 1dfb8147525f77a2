// What only the cuda backend (sm80 family) has, on a GPU against the float64 reference computed on the device: large
// shapes (many tiles and waves, steady-state pipelines), pinned load widths, COPY_AB and fragment pipelining,
// misaligned pointers (narrower loads, never a fault), and refused host pointers. Skips visibly without a GPU. The
// small cases every backend runs (primes and tails, layouts, dtypes, alpha/beta, leading dimensions, batches; cuBLAS
// and cuBLASLt too) are the conformance test's (tests/conformance/).
#include <gtest/gtest.h>


#include "backends/backend.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "measure/timer.hpp"
#include "hw/cuda_driver.hpp"
#include "support/gpu_run.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

class CudaBackendTest : public testing::CudaGpuTest {
 protected:
  // Random operands (at `offset_elems` past an aligned base, to test misaligned pointers) through `backend_name`
  // with `config` (its heuristic when null), every element checked on the device.
  void run(const Problem& problem, const std::string& backend_name, const Config* config = nullptr,
           int64_t offset_elems = 0, uint64_t seed = 1) {
    testing::CudaGpuTest::run(problem, config, offset_elems, seed, backend_name);
  }
};

Problem half(int64_t m, int64_t n, int64_t k, Layout l, DType in = DType::f16, DType out = DType::f16) {
  return testing::make_problem(m, n, k, l, in, out);
}

// Sizes the conformance table leaves out (its host reference and CPU backends keep it small): many tiles and waves,
// a skinny M, ragged edges on every side at 4K, and a long K.
TEST_F(CudaBackendTest, LargeShapesInEveryLayout) {
  const int64_t shapes[][3] = {{1000, 1000, 1000}, {16, 4096, 4096}, {4095, 4097, 4093}, {512, 512, 8192}};
  uint64_t seed = 10;
  for (auto& s : shapes) {
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) run(half(s[0], s[1], s[2], l), "cuda", nullptr, 0, ++seed);
  }
}

// The sm80 family's own heuristic config (on an sm_90a GPU the backend's own choice is the sm90 family's).
Expected<Config> sm80_heuristic_config(const Problem& p, const Device& device) {
  return cuda::sm80_heuristic(p.normalized(), device.profile);
}

TEST_F(CudaBackendTest, EveryVectorWidthAndCopyMode) {
  Problem p = half(300, 264, 520, Layout::RR);  // every row 16-byte aligned, so all four widths are legal
  auto heuristic = sm80_heuristic_config(p, device_);
  ASSERT_TRUE(heuristic.ok());
  for (int vec : {2, 4, 8, 16}) {
    Config c = *heuristic;
    c.params["VEC_BYTES"] = vec;
    c.params["COPY_AB"] = 0;
    c.params["BLOCK_K"] = 32;
    run(p, "cuda", &c, 0, 200 + vec);
  }
  Config copy = *heuristic;
  copy.params["VEC_BYTES"] = 16;
  copy.params["COPY_AB"] = 1;
  run(p, "cuda", &copy, 0, 210);
  run(half(301, 263, 517, Layout::CC), "cuda", &copy, 0, 211);
  // A and B copied in one launch over a batch whose entries start at odd elements (strides and leading dimensions
  // odd), with bases 3 elements off: every row's shift inside its 16-byte chunks, rows at a matrix's ends read
  // element by element.
  Problem batched = half(97, 131, 259, Layout::RR);
  batched.lda = 261;
  batched.ldb = 133;
  batched.batch = 3;
  batched.stride_a = batched.span_a() + 5;
  batched.stride_b = batched.span_b() + 3;
  run(batched, "cuda", &copy, 3, 212);
  // More matrices to copy (2 x 40000) than a grid's z holds (65535): the copy walks the rest.
  Problem many = half(5, 7, 9, Layout::RR);
  many.lda = 11;
  many.ldb = 9;
  many.batch = 40000;
  many.stride_a = many.span_a() + 1;
  many.stride_b = many.span_b() + 3;
  run(many, "cuda", &copy, 1, 213);
  // Fragments double-buffered across the barrier, in every layout, with tails in M, N and K.
  uint64_t seed = 220;
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    Problem q = half(301, 264, 519, l);
    auto h = sm80_heuristic_config(q, device_);
    ASSERT_TRUE(h.ok());
    Config pipe = *h;
    pipe.params["BLOCK_K"] = 32;
    pipe.params["FRAG_PIPE"] = 1;
    run(q, "cuda", &pipe, 0, ++seed);
  }
}

Config sm80_config(int bm, int bn, int bk, int wm, int wn, int stages, int vec, int frag_pipe) {
  return Config{"sm80", {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"WARPS_M", wm}, {"WARPS_N", wn},
                         {"STAGES", stages}, {"GROUP_M", 8}, {"VEC_BYTES", vec}, {"COPY_AB", 0},
                         {"FRAG_PIPE", frag_pipe}}};
}

// Leading dimensions rounded up to 8 elements: every load width is legal while M, N and K stay ragged, so 16-byte
// chunks straddle the matrix's edges in both dimensions of every layout and the last k-tile is partial.
Problem padded(Problem p) {
  p.lda = (p.min_lda() + 7) / 8 * 8;
  p.ldb = (p.min_ldb() + 7) / 8 * 8;
  return p;
}

TEST_F(CudaBackendTest, BlockK64PipelinedTilesInEveryLayoutAndWidth) {
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  const Config deep[] = {sm80_config(128, 256, 64, 2, 4, 3, 16, 1), sm80_config(128, 256, 64, 2, 4, 4, 16, 1),
                         sm80_config(256, 128, 64, 4, 2, 3, 16, 1), sm80_config(256, 128, 64, 4, 2, 4, 16, 1),
                         sm80_config(128, 128, 64, 2, 2, 3, 16, 0)};
  uint64_t seed = 500;
  for (const Config& c : deep) {
    for (Layout l : layouts) {
      const DType dt = seed % 2 ? DType::bf16 : DType::f16;  // bf16 inputs write bf16 (or f32), never f16
      run(padded(half(301, 263, 517, l, dt, dt)), "cuda", &c, 0, seed);
      ++seed;
    }
  }
  // Every load width (2-byte copies go through registers) on a smaller pipelined tile, with alpha, beta and a
  // batch; 4096-wide K with a 16-element tail for the steady state.
  for (int vec : {2, 4, 8, 16}) {
    for (Layout l : layouts) {
      Problem p = padded(half(130, 200, 190, l, vec % 8 ? DType::bf16 : DType::f16, DType::f32));
      p.batch = 3;
      // Batch strides rounded up to 8 elements, so that every entry's rows keep the 16-byte alignment.
      p.stride_a = (p.span_a() + 7) / 8 * 8;
      p.stride_b = (p.span_b() + 7) / 8 * 8;
      p.alpha = -1.0;
      p.beta = 0.5;
      const Config c = sm80_config(64, 128, 64, 2, 2, 3, vec, 1);
      run(p, "cuda", &c, 0, ++seed);
    }
  }
  const Config big = sm80_config(128, 256, 64, 2, 4, 4, 16, 1);
  run(half(520, 776, 4112, Layout::RR), "cuda", &big, 0, ++seed);
}

// The sm80 family's split-K: within the bound against the float64 reference in every layout, with a ragged K that
// the slices share unevenly (a tail in the last slice), alpha and beta, a batch, every load width, and more slices
// than a tile's k-tiles divide into; each case run twice on the stream's own workspace (the counters must be left
// zero); and bit-identical from run to run, on another stream too.
TEST_F(CudaBackendTest, Sm80SplitKInEveryLayoutIsExactAndBitIdentical) {
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  uint64_t seed = 800;
  for (int split : {2, 3, 8}) {
    for (Layout l : layouts) {
      Config c = sm80_config(128, 128, 32, 2, 2, 4, 16, 0);
      c.params["SPLIT_K"] = split;
      const DType dt = seed % 2 ? DType::bf16 : DType::f16;
      run(padded(half(301, 263, 2077, l, dt, dt)), "cuda", &c, 0, ++seed);
      run(padded(half(301, 263, 2077, l, dt, dt)), "cuda", &c, 0, ++seed);
    }
  }
  for (int vec : {2, 8, 16}) {
    Problem p = padded(half(130, 200, 1990, Layout::RC, DType::f16, DType::f32));
    p.batch = 3;
    p.stride_a = (p.span_a() + 7) / 8 * 8;
    p.stride_b = (p.span_b() + 7) / 8 * 8;
    p.alpha = -1.0;
    p.beta = 0.5;
    Config c = sm80_config(64, 128, 64, 2, 2, 3, vec, 1);
    c.params["SPLIT_K"] = 6;
    run(p, "cuda", &c, 0, ++seed);
  }
  // Bit-identical: the last slice sums in slice order from zero whichever slice arrives last.
  const Problem p = half(256, 256, 16384, Layout::RR, DType::f16, DType::f16).normalized();
  Config c = sm80_config(64, 64, 64, 2, 2, 4, 16, 1);
  c.params["SPLIT_K"] = 16;
  expect_same_bits(p, c, ++seed);
}

// The sm80 family's stream-K: within the bound against the float64 reference in every layout, on shapes whose tiles
// are all shared (fewer than the blocks), a partial wave and a whole one shared after whole tiles, and whole waves
// (nothing shared); ragged M, N and K (a tail in the last k-block), alpha and beta, narrower loads; each case run twice
// on the stream's own workspace (the counters must be left zero); and bit-identical from run to run.
TEST_F(CudaBackendTest, Sm80StreamKInEveryLayoutIsExactAndBitIdentical) {
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  Config c = sm80_config(128, 128, 32, 2, 4, 4, 16, 0);
  c.params["SPLIT_K"] = 1;
  c.params["STREAM_K"] = 1;
  uint64_t seed = 900;
  for (Layout l : layouts) {
    const DType dt = seed % 2 ? DType::bf16 : DType::f16;
    run(padded(half(301, 263, 2077, l, dt, dt)), "cuda", &c, 0, ++seed);    // 9 tiles, all shared
    run(padded(half(301, 263, 2077, l, dt, dt)), "cuda", &c, 0, ++seed);
    run(padded(half(4000, 1100, 333, l, dt, DType::f32)), "cuda", &c, 0, ++seed);  // 288 tiles: a wave and a rest
  }
  Config small = sm80_config(64, 64, 64, 2, 2, 4, 8, 1);
  small.params["SPLIT_K"] = 1;
  small.params["STREAM_K"] = 1;
  for (int vec : {2, 8}) {
    small.params["VEC_BYTES"] = vec;
    Problem p = padded(half(1030, 970, 1990, Layout::RC, DType::f16, DType::f32));
    p.alpha = -1.0;
    p.beta = 0.5;
    run(p, "cuda", &small, 0, ++seed);
  }
  // Bit-identical: the block that finishes a shared tile sums its pieces in block order from zero, whichever arrives
  // last.
  const Problem p = half(512, 512, 8192, Layout::RR, DType::f16, DType::f16).normalized();
  expect_same_bits(p, c, ++seed);
}

TEST_F(CudaBackendTest, MisalignedPointersFallBackToNarrowerLoads) {
  // A and B start 1 element (2 bytes) past an aligned base: the 16-byte config must not fault.
  Problem p = half(256, 256, 256, Layout::RR);
  auto c = sm80_heuristic_config(p, device_);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->at("VEC_BYTES"), 16);
  run(p, "cuda", &*c, 1, 300);
}

TEST_F(CudaBackendTest, RefusesHostPointers) {
  Problem p = half(64, 64, 64, Layout::RR).normalized();
  Backend* cuda = find_backend("cuda");
  auto k = cuda->prepare(p, *cuda->heuristic(p, device_), device_);
  ASSERT_TRUE(k.ok());
  std::vector<uint16_t> host(64 * 64, 0x3c00);
  Status s = cuda->run(**k, p, GemmArgs{host.data(), host.data(), host.data(), nullptr});
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("not device memory"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tileforge
