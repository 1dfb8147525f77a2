// NVRTC compiles with no GPU present: embedded headers, cuda_fp16.h, exact targets, the ptxas report, errors.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "jit/kernel_cache.hpp"
#include "jit/nvrtc.hpp"
#include "jit_test_util.hpp"

namespace tileforge::jit {
namespace {

using testing::TempDir;

TEST(Nvrtc, LoadsAndFindsToolkitHeaders) {
  TF_REQUIRE_NVRTC();
  const Nvrtc& n = **Nvrtc::get();
  EXPECT_GE(n.major(), 12);
  EXPECT_FALSE(n.library_path().empty());
  EXPECT_FALSE(n.include_dir().empty()) << "cuda_fp16.h not found beside " << n.library_path();
  EXPECT_NE(n.identity().find(std::to_string(n.major())), std::string::npos);
  EXPECT_FALSE(n.supported_archs().empty());
}

TEST(Nvrtc, CompilesEmbeddedHeaderAndFp16ForSm80AndSm90a) {
  TF_REQUIRE_NVRTC();
  const Nvrtc& n = **Nvrtc::get();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    auto t0 = std::chrono::steady_clock::now();
    auto out = n.compile(testing::scale_request(arch));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_TRUE(out->ok) << out->log;
    std::printf("[ info ] NVRTC %s compile of a small fp16 kernel: %.3f s\n", arch, s);
    EXPECT_GT(out->cubin.size(), 100u);
    EXPECT_EQ(out->cubin.substr(0, 4), std::string("\x7f" "ELF", 4)) << "a cubin is an ELF file";
    EXPECT_NE(out->ptx.find(".target " + std::string(arch)), std::string::npos);
    ASSERT_EQ(out->lowered_names.count("scale_kernel<2>"), 1u);
    std::string mangled = out->lowered_names.at("scale_kernel<2>");
    EXPECT_EQ(mangled, "_Z12scale_kernelILi2EEvPK6__halfPfi");
    for (const std::string& fn : {mangled, std::string("add_one")}) {
      const FunctionResources* f = out->report.find(fn);
      ASSERT_NE(f, nullptr) << fn << " missing from the report:\n" << out->log;
      EXPECT_EQ(f->arch, arch);
      EXPECT_GT(f->registers, 0);
      EXPECT_EQ(f->stack_frame_bytes, 0);
      EXPECT_EQ(f->spill_store_bytes, 0);
      EXPECT_EQ(f->spill_load_bytes, 0);
    }
  }
}

TEST(Nvrtc, ReportShowsStackOfDynamicallyIndexedLocalArray) {
  TF_REQUIRE_NVRTC();
  CompileRequest r;
  r.name = "test_local_array";
  r.arch = "sm_90a";
  r.source = R"(extern "C" __global__ void local_array(float* out, int n, int j) {
  float loc[512];
  for (int i = 0; i < 512; ++i) loc[i] = out[i * n];
  out[threadIdx.x] = loc[j & 511];
}
extern "C" __global__ void __launch_bounds__(1024, 2) spiller(float* out, const float* in, int n) {
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = in[i * n + threadIdx.x];
  for (int j = 0; j < n; ++j) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + 1) & 63] + in[j * 64 + i];
  }
  float r = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) r += acc[i];
  out[threadIdx.x] = r;
}
)";
  auto out = (*Nvrtc::get())->compile(r);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_TRUE(out->ok) << out->log;
  const FunctionResources* local = out->report.find("local_array");
  ASSERT_NE(local, nullptr) << out->log;
  EXPECT_GE(local->stack_frame_bytes, 2048) << out->log;
  const FunctionResources* spill = out->report.find("spiller");
  ASSERT_NE(spill, nullptr) << out->log;
  EXPECT_LE(spill->registers, 32) << "1024 threads x 2 blocks leave 32 registers";
  EXPECT_TRUE(spill->spills()) << out->log;
  EXPECT_TRUE(out->report.any_spills());
}

TEST(Nvrtc, RepeatCompileStillReportsResources) {
  // NVRTC 12.9+ has its own cache (active only where a driver is installed) that skips ptxas on a repeat and
  // empties the log; tileforge turns it off, so the report is there every time.
  TF_REQUIRE_NVRTC();
  const Nvrtc& n = **Nvrtc::get();
  CompileRequest r = testing::scale_request("sm_90a");
  r.options.push_back("-DTF_REPEAT_TEST=1");
  for (int i = 0; i < 2; ++i) {
    auto out = n.compile(r);
    ASSERT_TRUE(out.ok() && out->ok) << (out.ok() ? out->log : out.status().to_string());
    const FunctionResources* f = out->report.find("add_one");
    ASSERT_NE(f, nullptr) << "compile " << i << " has no ptxas report; log:\n" << out->log;
    EXPECT_GT(f->registers, 0);
  }
}

TEST(Nvrtc, RefusesTargetsItCannotBuild) {
  TF_REQUIRE_NVRTC();
  const Nvrtc& n = **Nvrtc::get();
  EXPECT_TRUE(n.check_arch("sm_80").ok());
  EXPECT_TRUE(n.check_arch("sm_90a").ok());
  Status s = n.check_arch("sm_20");
  EXPECT_EQ(s.code(), Code::unsupported);
  EXPECT_NE(s.message().find("sm_80"), std::string::npos) << "the message lists the supported targets: " << s.message();
  EXPECT_EQ(n.check_arch("compute_90a").code(), Code::invalid_argument);
  EXPECT_EQ(n.check_arch("").code(), Code::invalid_argument);
  auto r = testing::scale_request("sm_20");
  EXPECT_EQ(n.compile(r).status().code(), Code::unsupported);
}

TEST(Nvrtc, CompileErrorGivesLogPathAndText) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  KernelCache cache(dir.str());
  CompileRequest r;
  r.name = "broken kernel";
  r.arch = "sm_80";
  r.source = "extern \"C\" __global__ void broken(float* p) { p[0] = undeclared_name; }\n";
  auto out = cache.get(r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::compile_failed);
  const std::string& msg = out.status().message();
  EXPECT_NE(msg.find("undeclared_name"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sm_80"), std::string::npos) << msg;
  std::size_t at = msg.find("(log: ");
  ASSERT_NE(at, std::string::npos) << msg;
  std::string path = msg.substr(at + 6, msg.find(')', at) - at - 6);
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << "log file " << path;
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("undeclared_name"), std::string::npos);
  EXPECT_NE(text.str().find("--gpu-architecture=sm_80"), std::string::npos) << "the log records the options";
  // A missing embedded header is a compile error too, naming the header.
  r.source = "#include \"sm80/missing.cuh\"\nextern \"C\" __global__ void k() {}\n";
  auto missing = cache.get(r);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sm80/missing.cuh"), std::string::npos) << missing.status().message();
  EXPECT_EQ(cache.counters().hits, 0u) << "failures are not cached";
}

TEST(Nvrtc, HeadersFromEmbeddedTables) {
  std::vector<std::pair<std::string_view, std::string_view>> files = {{"gemm.cuh", "// a"}, {"tile.cuh", "// b"}};
  auto h = headers_from(files, "sm80/");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].name, "sm80/gemm.cuh");
  EXPECT_EQ(h[1].content, "// b");
}

}  // namespace
}  // namespace tileforge::jit
