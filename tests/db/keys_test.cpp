// Tuning DB keys: fingerprint text and hash stability, alignment classes, shape buckets, and the DB's location.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "db/db_fixtures.hpp"
#include "db/keys.hpp"
#include "db/location.hpp"

namespace tileforge::db {
namespace {

using namespace dbtest;

TEST(DbKeys, FingerprintTextAndHashAreStable) {
  // These strings are stored in every DB: a change here orphans every existing record.
  const Fingerprint f = h200();
  EXPECT_EQ(f.key(), R"(["gpu","NVIDIA H200","sm_90a",132,1980,"550.54.15","12.4"])");
  EXPECT_EQ(f.hash(), "3146f0657b9c3b93");  // FNV-1a 64, computed independently
  EXPECT_EQ(f.describe(), "NVIDIA H200 (sm_90a, 132 cores, 1980 MHz, driver 550.54.15, toolkit 12.4)");
  EXPECT_NE(h200("560.28.03").hash(), f.hash());
  EXPECT_NE(h100().hash(), f.hash());
  // Field boundaries are unambiguous: moving a character between fields changes the key.
  Fingerprint a = f, b = f;
  a.driver = "1";
  a.toolkit = "23";
  b.driver = "12";
  b.toolkit = "3";
  EXPECT_NE(a.key(), b.key());
}

TEST(DbKeys, FingerprintOfDeviceUsesProfileFields) {
  Device d;
  d.kind = "cpu";
  d.name = "cpu";
  d.profile.kind = "cpu";
  d.profile.display_name = "AMD EPYC 7B13";
  d.profile.arch = "x86-64-v3";
  d.profile.cores = 2;
  d.profile.boost_clock_ghz = 0;
  Fingerprint f = fingerprint_of(d, "", "g++ 12.2");
  EXPECT_EQ(f, epyc());

  Device g;
  g.kind = "cuda";
  g.name = "NVIDIA H200";
  g.profile.kind = "gpu";
  g.profile.display_name = "NVIDIA H200 SXM";
  g.profile.arch = "sm_90a";
  g.profile.cores = 132;
  g.profile.boost_clock_ghz = 1.98;
  EXPECT_EQ(fingerprint_of(g, "550.54.15", "12.4"), h200());
}

// The alignment class written out the slow way: every byte count that must be divisible, then the widest class.
int alignment_by_hand(const Problem& p) {
  const Problem q = p.normalized();
  const int64_t in = int64_t(size_of(q.precision.input)), out = int64_t(size_of(q.precision.output));
  std::vector<int64_t> bytes = {q.lda * in, q.ldb * in, q.ldc * out};
  if (q.batch > 1) {
    bytes.push_back(q.stride_a * in);
    bytes.push_back(q.stride_b * in);
    bytes.push_back(q.stride_c * out);
  }
  for (int w = 16; w >= 2; w /= 2) {
    bool all = true;
    for (int64_t b : bytes) all = all && b % w == 0;
    if (all) return w;
  }
  return 1;
}

TEST(DbKeys, AlignmentClassExamples) {
  EXPECT_EQ(alignment_class(problem_of(sig(4096, 4096, 4096))), 16);
  EXPECT_EQ(alignment_class(problem_of(sig(4095, 4097, 4093))), 2);            // f16 rows of odd length
  EXPECT_EQ(alignment_class(problem_of(sig(64, 64, 4092))), 8);                // K*2 = 8184 = 8 * 1023, N*2 = 128
  EXPECT_EQ(alignment_class(problem_of(sig(64, 66, 64, DType::f32, DType::f32))), 8);  // N*4 = 264 = 8 * 33
  EXPECT_EQ(alignment_class(problem_of(sig(64, 63, 64, DType::f32, DType::f32))), 4);
  // f16 inputs with f32 output: C's rows count in 4-byte elements.
  EXPECT_EQ(alignment_class(problem_of(sig(64, 4, 64, DType::f16, DType::f32, Layout::RC))), 16);
  EXPECT_EQ(alignment_class(problem_of(sig(64, 4, 64, DType::f16, DType::f16, Layout::RC))), 8);
  // Batch strides count only with more than one matrix: one odd-sized matrix alone keeps class 16.
  Problem p = problem_of(sig(8, 8, 8));
  p.stride_a = 8 * 8 + 1;
  EXPECT_EQ(alignment_class(p), 16);
  p.batch = 2;
  EXPECT_EQ(alignment_class(p), 2);
  // Padded leading dimensions lift a class.
  Problem q = problem_of(sig(4095, 4097, 4093));
  q.lda = 4096;
  q.ldb = 4104;
  q.ldc = 4104;
  EXPECT_EQ(alignment_class(q), 16);
}

TEST(DbKeys, AlignmentClassMatchesDefinitionOnRandomProblems) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dim(1, 300), pad(0, 17), batch(1, 3);
  const DType types[][2] = {{DType::f32, DType::f32}, {DType::f16, DType::f16}, {DType::f16, DType::f32},
                            {DType::bf16, DType::bf16}};
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) {
    Problem p;
    p.m = dim(rng);
    p.n = dim(rng);
    p.k = dim(rng);
    p.batch = batch(rng);
    const auto& t = types[i % 4];
    p.precision = {t[0], t[1], DType::f32};
    p.layout = Layout(i % 4);
    p.lda = p.min_lda() + pad(rng);
    p.ldb = p.min_ldb() + pad(rng);
    p.ldc = p.min_ldc() + pad(rng);
    if (i % 3 == 0) p.stride_c = p.span_c() + pad(rng);
    if (i % 10 == 0) {
      // Every tenth problem with its leading dimensions and C's stride on 8 elements, so that the 16-byte class
      // occurs whatever the seed (at random it needs every one of them to land there at once).
      auto up8 = [](int64_t v) { return (v + 7) / 8 * 8; };
      p.lda = up8(p.lda);
      p.ldb = up8(p.ldb);
      p.ldc = up8(p.ldc);
      if (p.stride_c) p.stride_c = up8(std::max(p.stride_c, p.span_c()));
    }
    ASSERT_TRUE(p.validate()) << p.describe();
    const int c = alignment_class(p);
    ASSERT_EQ(c, alignment_by_hand(p)) << p.describe();
    ++seen[c];
  }
  // Every class occurs, so the comparison above exercised each branch.
  for (int c : {2, 4, 8, 16}) EXPECT_GT(seen[c], 0) << "class " << c;
}

TEST(DbKeys, BucketRoundsUpToPowersOfTwoWithFloor) {
  EXPECT_EQ(round_up_pow2(4000, 16), 4096);
  EXPECT_EQ(round_up_pow2(4096, 16), 4096);
  EXPECT_EQ(round_up_pow2(4097, 16), 8192);
  EXPECT_EQ(round_up_pow2(1, 16), 16);
  EXPECT_EQ(round_up_pow2(16, 16), 16);
  EXPECT_EQ(round_up_pow2(17, 16), 32);
  EXPECT_EQ(round_up_pow2(1, 1), 1);
  EXPECT_EQ(round_up_pow2(3, 1), 4);

  const Signature s = sig(4000, 4097, 7, DType::f16, DType::f16, Layout::RC, 2, 3);
  const Signature b = s.bucket();
  EXPECT_EQ(b, sig(4096, 8192, 16, DType::f16, DType::f16, Layout::RC, 2, 4));
  EXPECT_EQ(s.bucket().bucket(), b);  // idempotent
  EXPECT_EQ(s.key(), "4000x4097x7 batch 3 f16->f16 acc f32 RC align 2");
  EXPECT_EQ(sig(4096, 4096, 4096).shape(), "4096x4096x4096");
}

TEST(DbKeys, BucketMembersShareTheBucketOnRandomShapes) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dim(1, 1 << 20);
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = dim(rng);
    const int64_t b = round_up_pow2(v, 16);
    ASSERT_GE(b, v);
    ASSERT_GE(b, 16);
    ASSERT_EQ(b & (b - 1), 0) << b;
    ASSERT_TRUE(b == 16 || b / 2 < v) << v << " -> " << b;  // the smallest such power
  }
}

TEST(DbKeys, LogDistanceIsScaleFreeAndSymmetric) {
  EXPECT_DOUBLE_EQ(log_distance(sig(4096, 4096, 4096), sig(4096, 4096, 4096)), 0);
  EXPECT_DOUBLE_EQ(log_distance(sig(2048, 4096, 4096), sig(4096, 4096, 4096)), 1);
  EXPECT_DOUBLE_EQ(log_distance(sig(2048, 2048, 4096), sig(4096, 4096, 4096)), 2);
  EXPECT_DOUBLE_EQ(log_distance(sig(100, 200, 300), sig(200, 400, 600)), 3);
  EXPECT_DOUBLE_EQ(log_distance(sig(3000, 4000, 50), sig(1000, 70, 4096)),
                   log_distance(sig(1000, 70, 4096), sig(3000, 4000, 50)));
}

TEST(DbLocation, OrderOfOverrides) {
  std::map<std::string, std::string> env;
  Getenv get = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env["HOME"] = "/home/u";
  auto loc = resolve_location({}, get);
  ASSERT_TRUE(loc) << loc.status().to_string();
  EXPECT_EQ(loc->path, "/home/u/.cache/tileforge/tune.db");
  EXPECT_EQ(loc->origin, "$HOME/.cache");

  env["XDG_CACHE_HOME"] = "relative/cache";  // the XDG spec says to ignore a relative path
  EXPECT_EQ(resolve_location({}, get)->path, "/home/u/.cache/tileforge/tune.db");
  env["XDG_CACHE_HOME"] = "/var/cache/u";
  EXPECT_EQ(resolve_location({}, get)->path, "/var/cache/u/tileforge/tune.db");
  EXPECT_EQ(resolve_location({}, get)->origin, "$XDG_CACHE_HOME");

  env["TILEFORGE_DB"] = "";  // set but empty: as if unset
  EXPECT_EQ(resolve_location({}, get)->origin, "$XDG_CACHE_HOME");
  env["TILEFORGE_DB"] = "/data/team.db";
  EXPECT_EQ(resolve_location({}, get)->path, "/data/team.db");
  EXPECT_EQ(resolve_location({}, get)->origin, "TILEFORGE_DB");

  EXPECT_EQ(resolve_location({"/tmp/mine.db", false}, get)->path, "/tmp/mine.db");
  EXPECT_EQ(resolve_location({"/tmp/mine.db", false}, get)->origin, "--db");

  auto off = resolve_location({"/tmp/mine.db", true}, get);
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->enabled);
  EXPECT_EQ(off->describe(), "disabled (--no-db)");
}

}  // namespace
}  // namespace tileforge::db
