// run_on_gpu (gpu_run.hpp): upload, run, verify on the device.
#include "support/gpu_run.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hw/cuda_driver.hpp"
#include "support/test_support.hpp"

namespace tileforge::testing {

GpuRun run_on_gpu(Backend& backend, const Device& device, measure::RepTimer& timer, const Problem& problem,
                  const Config* config, int64_t offset_elems, uint64_t seed, bool prepared_for_beta_zero) {
  GpuRun r;
  auto ops = make_operands(problem, seed);
  const Problem& p = ops.problem;
  const std::size_t in = size_of(p.precision.input), off = std::size_t(offset_elems) * in;
  auto place = [&](const std::vector<unsigned char>& host, std::size_t extra) {
    std::vector<unsigned char> padded(host.size() + extra, 0);
    std::memcpy(padded.data() + extra, host.data(), host.size());
    auto buf = timer.allocate(padded.size());
    EXPECT_TRUE(buf.ok());
    EXPECT_TRUE((*buf)->upload(padded.data()).ok());
    return std::move(*buf);
  };
  auto a = place(ops.a, off), b = place(ops.b, off), c_in = place(ops.c, 0), c = place(ops.c, 0);
  if (p.beta == 0.0) {
    EXPECT_TRUE(c->fill_bytes(0xFF).ok());  // NaN everywhere: unwritten elements show
  }
  Config chosen;
  if (config) {
    chosen = *config;
  } else {
    auto h = backend.heuristic(p, device);
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    if (!h.ok()) return r;
    chosen = *h;
  }
  Problem prepared_for = p;
  if (prepared_for_beta_zero) prepared_for.beta = 0.0;
  auto kernel = backend.prepare(prepared_for, chosen, device);
  EXPECT_TRUE(kernel.ok()) << chosen.describe() << ": " << kernel.status().to_string();
  if (!kernel.ok()) return r;
  GemmArgs args{static_cast<char*>(a->data()) + off, static_cast<char*>(b->data()) + off, c->data(), timer.stream()};
  const Status s = backend.run(**kernel, p, args);
  EXPECT_TRUE(s.ok()) << chosen.describe() << ": " << s.to_string();
  // The device reference reads A and B from the start of its buffers: hand it views at the same offsets.
  struct View final : measure::OperandBuffer {
    View(measure::OperandBuffer& base, std::size_t off, std::size_t bytes) : base_(base), off_(off), bytes_(bytes) {}
    void* data() override { return static_cast<char*>(base_.data()) + off_; }
    std::size_t bytes() const override { return bytes_; }
    const void* host_view() const override { return nullptr; }
    Status upload(const void*) override { return {}; }
    Status download(void*) const override { return {}; }
    Status copy_from(const OperandBuffer&) override { return {}; }
    Status fill_bytes(unsigned char) override { return {}; }
    measure::OperandBuffer& base_;
    std::size_t off_, bytes_;
  };
  View va(*a, off, ops.a.size()), vb(*b, off, ops.b.size());
  // Both device paths: the reference kept on the device and compared, and computed within the check. They see the
  // same float64 values per element (only the totals' summation order differs).
  std::unique_ptr<measure::KeptReference> kept;
  auto e = timer.verify_on_device(p, va, vb, *c_in, *c, &kept);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (!e.ok()) return r;
  auto fused = timer.verify_on_device(p, va, vb, *c_in, *c, nullptr);
  EXPECT_TRUE(fused.ok()) << fused.status().to_string();
  if (!fused.ok()) return r;
  EXPECT_EQ(e->max_scaled_error, fused->max_scaled_error) << p.describe();
  EXPECT_NEAR(e->rel_error, fused->rel_error, 1e-9 * fused->rel_error + 1e-300) << p.describe();
  EXPECT_EQ(e->nan_count, fused->nan_count);
  EXPECT_EQ(e->checked, fused->checked);
  EXPECT_EQ(e->checked, p.m * p.n * p.batch);
  r.error = *e;
  r.check = verify::check(p, *e);
  EXPECT_TRUE(r.check.ok()) << p.describe() << " " << chosen.describe() << ": " << r.check.to_string();
  r.family = (*kernel)->config().family;
  return r;
}

void CudaGpuTest::SetUp() {
  auto d = open_device("cuda");
  if (!d.ok()) GTEST_SKIP() << "SKIPPED: no CUDA device (" << d.status().message() << ")";
  device_ = *d;
  auto t = measure::make_timer(device_);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  timer_ = std::move(*t);
  cuda_ = find_backend("cuda");
  ASSERT_NE(cuda_, nullptr);
}

std::unique_ptr<measure::OperandBuffer> CudaGpuTest::upload(const std::vector<unsigned char>& host) {
  auto buf = timer_->allocate(host.size());
  EXPECT_TRUE(buf.ok()) << buf.status().to_string();
  if (!buf.ok()) return nullptr;
  EXPECT_TRUE((*buf)->upload(host.data()).ok());
  return std::move(*buf);
}

void CudaGpuTest::expect_same_bits(const Problem& p, const Config& config, uint64_t seed) {
  auto ops = testing::make_operands(p, seed);
  auto a = upload(ops.a), b = upload(ops.b);
  auto kernel = cuda_->prepare(p, config, device_);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  auto other = cuda::Stream::create();
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  std::vector<std::vector<unsigned char>> outs;
  for (void* stream : {timer_->stream(), timer_->stream(), static_cast<void*>(other->get())}) {
    auto c = upload(ops.c);
    outs.push_back(run_and_read(**kernel, p, GemmArgs{a->data(), b->data(), c->data(), stream}, *c));
    ASSERT_EQ(outs.back().size(), ops.c.size());
  }
  EXPECT_EQ(outs[0], outs[1]) << config.describe() << " differs between two runs";
  EXPECT_EQ(outs[0], outs[2]) << config.describe() << " differs on another stream";
  EXPECT_NE(outs[0], ops.c) << config.describe() << ": C was not written";
}

std::vector<unsigned char> CudaGpuTest::run_and_read(const Kernel& kernel, const Problem& problem,
                                                     const GemmArgs& args, measure::OperandBuffer& c) {
  const Status s = cuda_->run(kernel, problem, args);
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto d = cuda::driver();
  EXPECT_TRUE(d.ok());
  if (!s.ok() || !d.ok()) return {};
  EXPECT_EQ((*d)->cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<unsigned char> host(c.bytes());
  EXPECT_TRUE(c.download(host.data()).ok());
  return host;
}

}  // namespace tileforge::testing
