// Tuning DB lookup: db-exact, db-bucket, db-arch and planner, deterministic tie-breaks, family versions, the
// backend's veto, and that a record of another architecture is never returned.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "db/db_fixtures.hpp"
#include "db/store.hpp"

namespace tileforge::db {
namespace {

using namespace dbtest;

class DbLookup : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = test_seed();
    rng_.seed(seed_);
    auto s = Store::open(dir_.file("tune.db"));
    ASSERT_TRUE(s) << s.status().to_string();
    store_.emplace(std::move(s).value());
  }

  Record put(const Fingerprint& f, const Signature& s, std::string family = "sm80", int64_t version = 1) {
    Record r = random_record(rng_, f, s, std::move(family), version);
    auto u = store_->upsert(r);
    EXPECT_TRUE(u) << u.status().to_string();
    return r;
  }
  Record put_with_median(const Fingerprint& f, const Signature& s, double median, std::string family = "sm80") {
    Record r = random_record(rng_, f, s, std::move(family));
    set_time(r, {median, median * 0.99, median * 1.01, 100});
    EXPECT_TRUE(store_->upsert(r));
    return r;
  }

  LookupResult find(const Fingerprint& f, const Signature& s, std::map<std::string, int64_t> families = {{"sm80", 1}},
                    std::function<Support(const Record&)> accept = nullptr) {
    LookupRequest req{f, "cuda", problem_of(s), std::move(families), std::move(accept)};
    auto r = store_->lookup(req);
    EXPECT_TRUE(r) << r.status().to_string();
    return r ? std::move(r).value() : LookupResult{};
  }

  ScratchDir dir_;
  std::optional<Store> store_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

void expect_record(const LookupResult& got, const Record& want) {
  ASSERT_TRUE(got.record) << got.reason;
  expect_same(without_id(*got.record), want);
}

TEST_F(DbLookup, EmptyStorePlans) {
  LookupResult r = find(h200(), sig(4096, 4096, 4096));
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_FALSE(r.record);
  EXPECT_EQ(r.config(), nullptr);
  EXPECT_EQ(r.reason.rfind("planner: no record for 4096x4096x4096", 0), 0u) << r.reason;
}

TEST_F(DbLookup, ExactBeatsBucketAndArch) {
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed_);
  const Signature want = sig(4096, 4096, 4096);
  put_with_median(h200("560.28.03"), want, 0.05);  // faster, but on another fingerprint
  put_with_median(h200(), sig(4000, 4096, 4096), 0.05);
  const Record exact = put_with_median(h200(), want, 5.0);
  LookupResult r = find(h200(), want);
  EXPECT_EQ(r.source, Hit::exact);
  EXPECT_EQ(r.config_source(), "db-exact");
  expect_record(r, exact);
  ASSERT_NE(r.config(), nullptr);
  EXPECT_EQ(*r.config(), exact.config);
  EXPECT_EQ(r.reason.rfind("db-exact: 4096x4096x4096 tuned on this GPU (sm80 v1", 0), 0u) << r.reason;
}

TEST_F(DbLookup, ExactAcrossFamiliesTakesTheFaster) {
  const Signature want = sig(2048, 2048, 2048);
  put_with_median(h200(), want, 0.5, "sm80");
  const Record fast = put_with_median(h200(), want, 0.3, "sm90");
  expect_record(find(h200(), want, {{"sm80", 1}, {"sm90", 1}}), fast);
  // A backend that runs only sm80 here never gets the sm90 record.
  LookupResult only80 = find(h200(), want, {{"sm80", 1}});
  ASSERT_TRUE(only80.record);
  EXPECT_EQ(only80.record->family(), "sm80");
}

TEST_F(DbLookup, BucketPicksTheNearestShapeAndSaysSo) {
  put(h200(), sig(4096, 4096, 4096));
  put(h200(), sig(2100, 2100, 2100));
  put(h200(), sig(8192, 8192, 8192));  // another bucket: never a candidate for 4000^3
  LookupResult r = find(h200(), sig(4000, 4000, 4000));
  EXPECT_EQ(r.source, Hit::bucket);
  ASSERT_TRUE(r.record);
  EXPECT_EQ(r.record->problem, sig(4096, 4096, 4096));
  EXPECT_EQ(r.reason.rfind("db-bucket: 4096x4096x4096 tuned on this GPU for 4000x4000x4000", 0), 0u) << r.reason;
}

TEST_F(DbLookup, BucketChoiceMatchesBruteForceOnRandomShapes) {
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed_);
  // Records at random shapes of the bucket (1024, 2048] x (512, 1024] x (2048, 4096].
  std::uniform_int_distribution<int64_t> m(1025, 2048), n(513, 1024), k(2049, 4096);
  std::vector<Record> recs;
  for (int i = 0; i < 60; ++i) recs.push_back(put(h200(), sig(m(rng_), n(rng_), k(rng_))));
  int checked = 0;
  for (int q = 0; q < 60; ++q) {
    const Signature want = sig(m(rng_), n(rng_), k(rng_));
    LookupResult r = find(h200(), want);
    // Brute force: same alignment class; smallest log distance, then the smaller median, then the smaller shape.
    // An exact match has distance 0 and wins too (as db-exact).
    std::vector<Record> same_class;
    std::copy_if(recs.begin(), recs.end(), std::back_inserter(same_class),
                 [&](const Record& r) { return r.problem.align == want.align; });
    if (same_class.empty()) {
      EXPECT_EQ(r.source, Hit::planner) << r.reason;
      continue;
    }
    ++checked;
    ASSERT_TRUE(r.record) << r.reason;
    auto best = std::min_element(same_class.begin(), same_class.end(), [&](const Record& a, const Record& b) {
      return std::tuple(log_distance(a.problem, want), a.time.median_ms, a.problem.m, a.problem.n, a.problem.k) <
             std::tuple(log_distance(b.problem, want), b.time.median_ms, b.problem.m, b.problem.n, b.problem.k);
    });
    EXPECT_EQ(r.record->problem, best->problem) << "for " << want.key();
    EXPECT_EQ(r.source, best->problem == want ? Hit::exact : Hit::bucket);
  }
  EXPECT_GT(checked, 20);
}

TEST_F(DbLookup, BucketTiesAreBrokenDeterministically) {
  // Two shapes at exactly the same log distance from the query (M and N swapped).
  const Signature want = sig(3000, 3000, 3000);
  const Signature a = sig(3200, 3000, 3000), b = sig(3000, 3200, 3000);
  ASSERT_EQ(log_distance(a, want), log_distance(b, want));
  for (bool a_first : {true, false}) {
    ScratchDir dir;
    auto store = Store::open(dir.file("t.db"));
    ASSERT_TRUE(store);
    Record ra = random_record(rng_, h200(), a), rb = random_record(rng_, h200(), b);
    set_time(ra, {1.0, 0.9, 1.1, 50});  // equal medians too: the smaller shape (M first) wins
    set_time(rb, {1.0, 0.9, 1.1, 50});
    ASSERT_TRUE(store->upsert(a_first ? ra : rb));
    ASSERT_TRUE(store->upsert(a_first ? rb : ra));
    auto r = store->lookup({h200(), "cuda", problem_of(want), {{"sm80", 1}}, nullptr});
    ASSERT_TRUE(r && r->record);
    EXPECT_EQ(r->record->problem, b) << "inserted " << (a_first ? "a first" : "b first");
    // Now make a faster: the median decides before the shape.
    Record faster = ra;
    set_time(faster, {0.5, 0.4, 0.6, 50});
    ASSERT_TRUE(store->upsert(faster));
    r = store->lookup({h200(), "cuda", problem_of(want), {{"sm80", 1}}, nullptr});
    EXPECT_EQ(r->record->problem, a);
  }
}

TEST_F(DbLookup, ArchFallbackUsesAnotherFingerprintOfTheSameArchVisibly) {
  const Signature want = sig(4096, 4096, 4096);
  const Record twin = put(h200("560.28.03"), want);
  LookupResult r = find(h200(), want);
  EXPECT_EQ(r.source, Hit::arch);
  EXPECT_EQ(r.config_source(), "db-arch");
  expect_record(r, twin);
  EXPECT_NE(r.reason.find("another fingerprint of sm_90a"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("driver 560.28.03"), std::string::npos) << r.reason;
  // A bucket record of this very GPU outranks the other fingerprint's exact record.
  put(h200(), sig(4000, 4096, 4096));
  EXPECT_EQ(find(h200(), want).source, Hit::bucket);
}

TEST_F(DbLookup, ArchFallbackPrefersExactThenTheMostSimilarDevice) {
  const Signature want = sig(1024, 1024, 1024);
  put_with_median(h100(), sig(1000, 1024, 1024), 0.001);     // bucket on arch
  const Record h100_exact = put_with_median(h100(), want, 0.2);
  LookupResult r = find(h200(), want);
  EXPECT_EQ(r.source, Hit::arch);
  expect_record(r, h100_exact);
  // Same chip name with another driver beats a faster record of another chip of the arch.
  const Record h200_exact = put_with_median(h200("560.28.03"), want, 0.9);
  r = find(h200(), want);
  expect_record(r, h200_exact);
  // Without exact records the arch tier falls back to the bucket.
  r = find(h200(), sig(1000, 1000, 1000));
  EXPECT_EQ(r.source, Hit::arch);
  EXPECT_NE(r.reason.find(" for 1000x1000x1000"), std::string::npos) << r.reason;
}

TEST_F(DbLookup, AnotherArchitectureIsNeverUsed) {
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed_);
  // The A100 has every shape, exact and fast; the H200 must still plan.
  std::uniform_int_distribution<int64_t> d(16, 8192);
  std::vector<Signature> shapes;
  for (int i = 0; i < 30; ++i) shapes.push_back(sig(d(rng_), d(rng_), d(rng_)));
  for (const Signature& s : shapes) put_with_median(a100(), s, fast_ms(s));
  for (const Signature& s : shapes) {
    LookupResult r = find(h200(), s);
    EXPECT_EQ(r.source, Hit::planner) << s.key();
    EXPECT_FALSE(r.record);
    EXPECT_NE(r.reason.find(" of another architecture"), std::string::npos) << r.reason;
  }
  // With an sm_90a record in the bucket, that one is returned and never the A100's.
  const Record twin = put_with_median(h200("560.28.03"), shapes[0].bucket(), 100.0);
  LookupResult r = find(h200(), shapes[0]);
  ASSERT_TRUE(r.record);
  EXPECT_EQ(r.record->device.arch, "sm_90a");
  // And the A100 itself sees only its own records.
  for (const Signature& s : shapes) {
    LookupResult mine = find(a100(), s);
    ASSERT_TRUE(mine.record);
    EXPECT_EQ(mine.source, Hit::exact);
    EXPECT_EQ(mine.record->device, a100());
  }
}

TEST_F(DbLookup, OtherBackendDtypeLayoutOrAlignmentIsNotTheBucket) {
  const Signature want = sig(4096, 4096, 4096);
  put(h200(), sig(4096, 4096, 4096, DType::bf16, DType::bf16));
  put(h200(), sig(4096, 4096, 4096, DType::f16, DType::f16, Layout::RC));
  Record other_backend = random_record(rng_, h200(), want);
  other_backend.backend = "cublas-lt";
  ASSERT_TRUE(store_->upsert(other_backend));
  EXPECT_EQ(find(h200(), want).source, Hit::planner);
  // Alignment class 2 (odd leading dimensions) does not borrow an aligned record.
  put(h200(), sig(4094, 4096, 4096));
  LookupResult r = find(h200(), sig(4095, 4095, 4095));
  EXPECT_EQ(r.source, Hit::planner) << r.reason;
}

TEST_F(DbLookup, StaleFamilyVersionIsNotUsed) {
  const Signature want = sig(512, 512, 512);
  put(h200(), want, "sm80", 1);
  LookupResult r = find(h200(), want, {{"sm80", 2}});
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_NE(r.reason.find("of another family version"), std::string::npos) << r.reason;
  r = find(h200(), want, {{"sm90", 1}});
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_NE(r.reason.find("family this backend does not run here"), std::string::npos) << r.reason;
  const Record v2 = put(h200(), want, "sm80", 2);
  expect_record(find(h200(), want, {{"sm80", 2}}), v2);
  // A request without families is refused rather than guessed.
  EXPECT_FALSE(store_->lookup({h200(), "cuda", problem_of(want), {}, nullptr}));
}

TEST_F(DbLookup, BackendVetoSkipsToTheNextCandidate) {
  const Signature want = sig(2048, 2048, 2048);
  const Record exact = put_with_median(h200(), want, 0.1);
  const Record bucket = put_with_median(h200(), sig(2000, 2048, 2048), 0.2);
  auto refuse_exact = [&](const Record& r) {
    return r.config == exact.config && r.problem == exact.problem ? Support::no("STAGES=5 needs 228 KB")
                                                                   : Support::yes();
  };
  LookupResult r = find(h200(), want, {{"sm80", 1}}, refuse_exact);
  EXPECT_EQ(r.source, Hit::bucket);
  expect_record(r, bucket);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_NE(r.rejected[0].find("STAGES=5 needs 228 KB"), std::string::npos) << r.rejected[0];
  r = find(h200(), want, {{"sm80", 1}}, [](const Record&) { return Support::no("nothing fits"); });
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_EQ(r.rejected.size(), 2u);
  EXPECT_NE(r.reason.find("2 refused by the backend"), std::string::npos) << r.reason;
}

TEST_F(DbLookup, LegalInUsesTheBackendsParameterSpace) {
  // A space where BLOCK_M may only be 64 or 128 and STAGES * BLOCK_M is bounded, as a shared-memory limit would.
  ParamSpace space;
  space.family = "sm80";
  space.params = {{"BLOCK_M", {64, 128}, "data scheduling", ""}, {"STAGES", {2, 3, 4}, "compute pipeline", ""}};
  space.constraints = {
      {Layer::data_scheduling, "STAGES * BLOCK_M <= 384", [](const Config& c) { return c.at("STAGES") * c.at("BLOCK_M") <= 384; }}};
  const Signature want = sig(1024, 1024, 1024);
  Record fits = random_record(rng_, h200(), sig(1000, 1024, 1024));
  fits.config.params = {{"BLOCK_M", 128}, {"STAGES", 3}};
  set_time(fits, {9, 8, 10, 100});  // slower than the others, but the only legal one
  Record too_deep = random_record(rng_, h200(), want);
  too_deep.config.params = {{"BLOCK_M", 128}, {"STAGES", 4}};
  Record unknown = random_record(rng_, h200(), sig(1020, 1024, 1024));
  unknown.config.params = {{"BLOCK_M", 256}, {"STAGES", 2}};
  ASSERT_TRUE(store_->upsert_all({fits, too_deep, unknown}));
  LookupResult r = find(h200(), want, {{"sm80", 1}}, legal_in(space));
  EXPECT_EQ(r.source, Hit::bucket) << r.reason;
  expect_record(r, fits);
  ASSERT_EQ(r.rejected.size(), 2u);
  EXPECT_NE(r.rejected[0].find("STAGES * BLOCK_M <= 384"), std::string::npos) << r.rejected[0];
  EXPECT_NE(r.rejected[1].find("BLOCK_M"), std::string::npos) << r.rejected[1];
}

// The determinism policy is in the key: a record whose config sums by float atomics is stored beside the problem's
// deterministic record; a deterministic request never reads it (and says how many it left out), a non-deterministic
// one takes the faster of the two.
TEST_F(DbLookup, EachPolicyReadsItsOwnRecords) {
  const Signature s = sig(512, 512, 8192);
  Record atomic = random_record(rng_, h200(), s);
  atomic.deterministic = false;
  set_time(atomic, {0.010, 0.009, 0.011, 100});
  ASSERT_TRUE(store_->upsert(atomic));
  LookupResult r = find(h200(), s);
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_NE(r.reason.find("1 summing by float atomics"), std::string::npos) << r.reason;

  Record ordered = random_record(rng_, h200(), s);
  set_time(ordered, {0.020, 0.019, 0.021, 100});
  auto u = store_->upsert(ordered);
  ASSERT_TRUE(u) << u.status().to_string();
  EXPECT_EQ(*u, Upsert::inserted) << "beside the atomic record, not over it";
  auto all = store_->list();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 2u);
  expect_record(find(h200(), s), ordered);

  LookupRequest req{h200(), "cuda", problem_of(s), {{"sm80", 1}}, nullptr};
  req.deterministic = false;
  auto any = store_->lookup(req);
  ASSERT_TRUE(any) << any.status().to_string();
  expect_record(*any, atomic);
  EXPECT_EQ(any->source, Hit::exact);
  // A faster atomic result replaces the atomic record only; a slower one is kept out.
  Record faster = atomic;
  set_time(faster, {0.008, 0.007, 0.009, 100});
  u = store_->upsert(faster);
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, Upsert::replaced);
  expect_record(find(h200(), s), ordered);
}

TEST_F(DbLookup, InvalidProblemIsRefused) {
  Problem p = problem_of(sig(64, 64, 64));
  p.lda = 3;
  EXPECT_FALSE(store_->lookup({h200(), "cuda", p, {{"sm80", 1}}, nullptr}));
}

TEST(DbDispatch, DisabledMissingAndPresentDatabases) {
  ScratchDir dir;
  const LookupRequest req{h200(), "cuda", problem_of(sig(256, 256, 256)), {{"sm80", 1}}, nullptr};

  DispatchDb off = open_for_dispatch(dir.file("tune.db"), /*enabled=*/false);
  EXPECT_FALSE(off.store);
  EXPECT_EQ(lookup_or_plan(off, req).reason, "planner: tuning DB disabled (--no-db)");

  // A missing file is not created by dispatch (it only reads).
  DispatchDb missing = open_for_dispatch(dir.file("sub/tune.db"));
  EXPECT_FALSE(missing.store);
  EXPECT_FALSE(std::filesystem::exists(dir.file("sub")));
  LookupResult r = lookup_or_plan(missing, req);
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_NE(r.reason.find("no tuning DB at"), std::string::npos) << r.reason;

  std::mt19937_64 rng(test_seed());
  const Record rec = random_record(rng, h200(), sig(256, 256, 256));
  {
    auto w = Store::open(dir.file("tune.db"));
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->upsert(rec));
  }
  DispatchDb db = open_for_dispatch(dir.file("tune.db"));
  ASSERT_TRUE(db.store) << db.note;
  r = lookup_or_plan(db, req);
  EXPECT_EQ(r.source, Hit::exact);
  expect_record(r, rec);
}

}  // namespace
}  // namespace tileforge::db
