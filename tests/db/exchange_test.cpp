// Tuning DB exchange: JSON export -> import round trip (quartiles and host load too, and older exports without
// them), merging by best median, malformed files refused with the record and field named, and the Triton export
// (parsed back with Python when it is installed).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/db_fixtures.hpp"
#include "db/exchange.hpp"
#include "db/store.hpp"

namespace tileforge::db {
namespace {

using namespace dbtest;

std::vector<Record> random_records(std::mt19937_64& rng, int count) {
  const Fingerprint devs[] = {h200(), h200("560.28.03"), a100(), epyc()};
  std::uniform_int_distribution<int64_t> dim(1, 9000), batch(1, 4);
  const DType in[] = {DType::f16, DType::bf16, DType::f32};
  std::vector<Record> out;
  for (int i = 0; i < count; ++i) {
    const Fingerprint& f = devs[i % 4];
    const DType t = f.kind == "cpu" ? DType::f32 : in[i % 3];
    Signature s = sig(dim(rng), dim(rng), dim(rng), t, t, Layout(i % 4), 0, batch(rng));
    out.push_back(random_record(rng, f, s, f.kind == "cpu" ? "cpu-avx2" : (i % 2 ? "sm80" : "sm90"), 1 + i % 2));
  }
  return out;
}

TEST(DbExchange, ExportParsesBackToTheSameRecords) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<Record> recs = random_records(rng, 50);
  recs[3].source = Source::imported;
  const std::string text = export_json(recs);
  auto back = parse_export(text, "x.json");
  ASSERT_TRUE(back) << back.status().to_string();
  ASSERT_EQ(back->size(), recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) expect_same((*back)[i], recs[i]);
  // The document names its format and version.
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("format"), "tileforge-tuning-db");
  EXPECT_EQ(j.at("format_version"), kExportFormatVersion);
  EXPECT_EQ(j.at("records").size(), recs.size());
}

TEST(DbExchange, RoundTripThroughTwoDatabases) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  auto a = Store::open(dir.file("a.db"));
  auto b = Store::open(dir.file("b.db"));
  ASSERT_TRUE(a && b);
  const std::vector<Record> recs = random_records(rng, 80);
  ASSERT_TRUE(a->upsert_all(recs));
  auto from_a = a->list();
  ASSERT_TRUE(from_a);
  ASSERT_EQ(from_a->size(), recs.size());
  auto summary = import_json(*b, export_json(*from_a), "a-export.json");
  ASSERT_TRUE(summary) << summary.status().to_string();
  EXPECT_EQ(summary->inserted, int64_t(recs.size()));
  EXPECT_EQ(summary->replaced + summary->kept, 0);
  auto from_b = b->list();
  ASSERT_TRUE(from_b);
  ASSERT_EQ(from_b->size(), from_a->size());
  for (std::size_t i = 0; i < from_a->size(); ++i) {
    Record want = without_id((*from_a)[i]);
    want.source = Source::imported;  // what came in from a file says so
    expect_same(without_id((*from_b)[i]), want);
  }
  // Importing the same file again changes nothing.
  summary = import_json(*b, export_json(*from_a), "a-export.json");
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->kept, int64_t(recs.size()));
}

TEST(DbExchange, ImportMergesByBestMedian) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  std::vector<Record> mine = random_records(rng, 40);
  ASSERT_TRUE(store->upsert_all(mine));
  // The team's file: the same keys with new random times, plus ten new keys.
  std::vector<Record> theirs = mine;
  int64_t faster = 0;
  for (Record& r : theirs) {
    const Record fresh = random_record(rng, r.device, r.problem, r.family(), r.family_version);
    r.config = fresh.config;
    set_time(r, fresh.time);
    faster += r.time.median_ms < mine[&r - theirs.data()].time.median_ms;
  }
  std::vector<Record> extra = random_records(rng, 10);
  for (Record& r : extra) {
    r.problem.batch = 7;  // keys no record of `mine` has
    set_time(r, r.time);
  }
  theirs.insert(theirs.end(), extra.begin(), extra.end());

  auto summary = import_json(*store, export_json(theirs), "team.json");
  ASSERT_TRUE(summary) << summary.status().to_string();
  EXPECT_EQ(summary->inserted, 10);
  EXPECT_EQ(summary->replaced, faster);
  EXPECT_EQ(summary->kept, 40 - faster);
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 50u);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const double best = std::min(mine[i].time.median_ms, theirs[i].time.median_ms);
    const auto it = std::find_if(all->begin(), all->end(), [&](const Record& r) {
      return r.device == mine[i].device && r.problem == mine[i].problem && r.family() == mine[i].family();
    });
    ASSERT_NE(it, all->end());
    EXPECT_EQ(it->time.median_ms, best);
    EXPECT_EQ(it->source, theirs[i].time.median_ms < mine[i].time.median_ms ? Source::imported : Source::tuned);
  }
}

// Applies `edit` to records[index] of a valid export and expects import to refuse it, naming `field`.
void expect_refused(const std::string& valid, std::size_t index,
                    const std::function<void(nlohmann::json&)>& edit, const std::string& field,
                    const std::string& also = "") {
  nlohmann::json j = nlohmann::json::parse(valid);
  edit(j["records"][index]);
  auto r = parse_export(j.dump(), "team.json");
  ASSERT_FALSE(r) << "accepted an edit of " << field;
  const std::string msg = r.status().message();
  const std::string where =
      "team.json: records[" + std::to_string(index) + "]" + (field.empty() ? "" : "." + field) + ":";
  EXPECT_NE(msg.find(where), std::string::npos) << msg << "\n(expected " << where << ")";
  if (!also.empty()) {
    EXPECT_NE(msg.find(also), std::string::npos) << msg;
  }
}

TEST(DbExchange, MalformedRecordsAreRefusedWithIndexAndField) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string valid = export_json(random_records(rng, 12));
  const std::size_t i = std::uniform_int_distribution<std::size_t>(0, 11)(rng);
  using J = nlohmann::json;
  expect_refused(valid, i, [](J& r) { r["time_ms"]["median"] = -1.0; }, "time_ms.median", "positive");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["min"] = r["time_ms"]["median"].get<double>() * 2; }, "time_ms", "min");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["reps"] = 2.5; }, "time_ms.reps", "integer");
  expect_refused(valid, i, [](J& r) { r.erase("backend"); }, "backend", "missing");
  expect_refused(valid, i, [](J& r) { r["problem"]["input"] = "f8"; }, "problem.input", "f8");
  expect_refused(valid, i, [](J& r) { r["problem"]["layout"] = "XY"; }, "problem.layout");
  expect_refused(valid, i, [](J& r) { r["problem"]["m"] = 0; }, "problem.m");
  expect_refused(valid, i, [](J& r) { r["problem"]["align"] = 3; }, "problem.align");
  expect_refused(valid, i, [](J& r) { r["problem"]["m"] = "4096"; }, "problem.m", "integer");
  expect_refused(valid, i, [](J& r) { r["device"]["arch"] = ""; }, "device.arch");
  expect_refused(valid, i, [](J& r) { r["device"]["cores"] = nullptr; }, "device.cores");
  expect_refused(valid, i, [](J& r) { r["config"]["BLOCK_M"] = "big"; }, "config", "BLOCK_M");
  expect_refused(valid, i, [](J& r) { r["config"].erase("family"); }, "config", "family");
  expect_refused(valid, i, [](J& r) { r["rel_error"] = -0.5; }, "rel_error");
  expect_refused(valid, i, [](J& r) { r["created_at"] = "yesterday"; }, "created_at");
  expect_refused(valid, i, [](J& r) { r["source"] = "guessed"; }, "source", "tuned, imported");
  expect_refused(valid, i, [](J& r) { r["tfolps"] = 1.0; }, "tfolps", "not a known field");
  expect_refused(valid, i, [](J& r) { r = J::array(); }, "", "must be an object");

  auto whole = [&](const std::string& text, const std::string& part) {
    auto r = parse_export(text, "team.json");
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
  };
  whole("{not json", "not valid JSON");
  whole("[]", "must be a JSON object");
  J j = J::parse(valid);
  j["format_version"] = 99;
  whole(j.dump(), "format_version 99 is not supported (this tileforge reads 1 to 4)");
  j["format_version"] = 0;
  whole(j.dump(), "format_version 0 is not supported");
  j = J::parse(valid);
  j["format"] = "something-else";
  whole(j.dump(), "field format must be");
  j = J::parse(valid);
  j.erase("records");
  whole(j.dump(), "field records is missing");
  j = J::parse(valid);
  j["records"] = J::object();
  whole(j.dump(), "field records must be an array");
  j = J::parse(valid);
  j["exported"] = "today";  // a misspelt top-level field is named, with the fields there are
  whole(j.dump(), "field exported is not a known field (known: exported_at, format, format_version, records, "
                  "tool_version)");
}

TEST(DbExchange, RefusedImportWritesNothing) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  nlohmann::json j = nlohmann::json::parse(export_json(random_records(rng, 10)));
  j["records"][9]["time_ms"]["median"] = 0;
  auto r = import_json(*store, j.dump(), "team.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("records[9].time_ms.median"), std::string::npos) << r.status().message();
  EXPECT_TRUE(store->list()->empty());
}

Record triton_record(std::mt19937_64& rng, const Signature& s, std::map<std::string, int64_t> params,
                     std::string family = "sm80") {
  Record r = random_record(rng, h200(), s, std::move(family));
  r.config.params = std::move(params);
  return r;
}

std::string run_python(const std::string& script_path, const std::string& arg) {
  const std::string cmd = "/usr/bin/python3 " + script_path + " " + arg;
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    if (pclose(p) != 0) return "python failed: " + out;
  }
  return out;
}

// Records with every mix of known and unknown quartiles and host load, as a v2 DB holds them.
std::vector<Record> records_with_quartiles(std::mt19937_64& rng, int count) {
  std::vector<Record> recs = random_records(rng, count);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    Record& r = recs[i];
    switch (i % 4) {
      case 0: break;
      case 1: add_quartiles(rng, r, /*host=*/false); break;
      case 2: add_quartiles(rng, r); break;
      case 3: r.time.others_cores = double(rng() % 1000) / 250; break;  // the spare count unknown
    }
  }
  return recs;
}

TEST(DbExchange, QuartilesAndHostLoadRoundTripThroughExportAndImport) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<Record> recs = records_with_quartiles(rng, 40);
  const std::string text = export_json(recs);
  // In the time object where known, left out where not (so a v1 record exports as it always did).
  const auto j = nlohmann::json::parse(text);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& t = j.at("records").at(i).at("time_ms");
    const Timing& want = recs[i].time;
    for (const auto& [name, v] : {std::pair{"q1", want.q1_ms}, std::pair{"q3", want.q3_ms},
                                  std::pair{"others_cores", want.others_cores},
                                  std::pair{"spare_cores", want.spare_cores}}) {
      ASSERT_EQ(t.contains(name), v.has_value()) << i << " " << name << " in " << t.dump();
      if (v) {
        EXPECT_EQ(t.at(name).get<double>(), *v) << i << " " << name;
      }
    }
  }
  auto back = parse_export(text, "x.json");
  ASSERT_TRUE(back) << back.status().to_string();
  ASSERT_EQ(back->size(), recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) expect_same((*back)[i], recs[i]);

  // Through a second DB: imported as written, and the same verdicts.
  ScratchDir dir;
  auto store = Store::open(dir.file("team.db"));
  ASSERT_TRUE(store);
  auto summary = import_json(*store, text, "x.json");
  ASSERT_TRUE(summary) << summary.status().to_string();
  EXPECT_EQ(summary->inserted, int64_t(recs.size()));
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), recs.size());
  for (const Record& r : recs) {
    const auto it = std::find_if(all->begin(), all->end(), [&](const Record& x) {
      return x.device == r.device && x.problem == r.problem && x.family() == r.family() &&
             x.family_version == r.family_version;
    });
    ASSERT_NE(it, all->end()) << r.problem.key();
    Record want = r;
    want.source = Source::imported;
    expect_same(without_id(*it), want);
    EXPECT_EQ(it->time.quality().why, r.time.quality().why);
  }
}

// An export written before v2 has no quartiles or host load: it imports, the fields unknown, everything else kept.
// A null value reads as unknown too.
TEST(DbExchange, OlderExportsWithoutQuartilesOrHostLoadImport) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<Record> recs = random_records(rng, 20);
  for (Record& r : recs) add_quartiles(rng, r);
  nlohmann::json j = nlohmann::json::parse(export_json(recs));
  for (auto& r : j["records"]) {
    for (const char* name : {"q1", "q3", "others_cores", "spare_cores"}) r["time_ms"].erase(name);
    // Exactly the members a v1 export has.
    ASSERT_EQ(r["time_ms"].size(), 4u) << r["time_ms"].dump();
  }
  j["records"][3]["time_ms"]["q1"] = nullptr;
  j["records"][3]["time_ms"]["q3"] = nullptr;
  j["records"][5]["time_ms"]["others_cores"] = nullptr;
  j["format_version"] = 1;  // as a tileforge before the quartiles wrote it
  auto back = parse_export(j.dump(), "old.json");
  ASSERT_TRUE(back) << back.status().to_string();
  ASSERT_EQ(back->size(), recs.size());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  auto summary = import_json(*store, j.dump(), "old.json");
  ASSERT_TRUE(summary) << summary.status().to_string();
  EXPECT_EQ(summary->inserted, int64_t(recs.size()));
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    Record want = recs[i];
    want.time = Timing(want.time.median_ms, want.time.min_ms, want.time.max_ms, want.time.reps);
    expect_same((*back)[i], want);
    EXPECT_TRUE((*back)[i].time.quality().clean());
    const auto it = std::find_if(all->begin(), all->end(), [&](const Record& x) {
      return x.device == want.device && x.problem == want.problem && x.family() == want.family();
    });
    ASSERT_NE(it, all->end());
    want.source = Source::imported;
    expect_same(without_id(*it), want);
  }
}

TEST(DbExchange, MalformedQuartilesAndHostLoadAreRefusedNamingTheField) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<Record> recs = random_records(rng, 6);
  for (Record& r : recs) add_quartiles(rng, r);
  const std::string valid = export_json(recs);
  ASSERT_TRUE(parse_export(valid, "team.json"));
  using J = nlohmann::json;
  const std::size_t i = std::size_t(rng() % recs.size());
  expect_refused(valid, i, [](J& r) { r["time_ms"]["q1"] = "0.1"; }, "time_ms.q1", "must be a number or null");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["q3"] = true; }, "time_ms.q3", "must be a number or null");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["others_cores"] = J::array({1}); }, "time_ms.others_cores",
                 "must be a number or null");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["spare_cores"] = {{"cores", 2}}; }, "time_ms.spare_cores",
                 "must be a number or null");
  expect_refused(valid, i, [](J& r) { r["time_ms"].erase("q3"); }, "time_ms.q3", "both quartiles or neither");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["q1"] = r["time_ms"]["median"].get<double>() * 1.5; }, "time_ms",
                 "q1");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["others_cores"] = -1; }, "time_ms.others_cores", ">= 0");
  expect_refused(valid, i, [](J& r) { r["time_ms"]["q2"] = 1.0; }, "time_ms.q2", "not a known field");
}

TEST(DbExchange, TritonExportMapsTritonAndSm80KeyedByShapeAndSkipsTheRest) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng));
  };
  std::vector<Record> recs;
  std::vector<std::map<std::string, int64_t>> expected;  // the mapped entries in order
  for (int i = 0; i < 6; ++i) {
    std::map<std::string, int64_t> p = {{"BLOCK_M", pick({64, 128, 256})}, {"BLOCK_N", pick({64, 128, 256})},
                                        {"BLOCK_K", pick({32, 64})},       {"GROUP_M", pick({1, 8, 16})},
                                        {"STAGES", pick({2, 3, 4})},       {"WARPS_M", pick({1, 2, 4})},
                                        {"WARPS_N", pick({1, 2})},         {"VEC_BYTES", 16},
                                        {"SPLIT_K", 1}};
    p["BLOCK_M"] += 1000 * i;  // distinct entries, so that none is folded into an earlier duplicate
    recs.push_back(triton_record(rng, sig(1024 * (i + 1), 4096, 4096), p));
    expected.push_back({{"BLOCK_SIZE_M", p["BLOCK_M"]},
                        {"BLOCK_SIZE_N", p["BLOCK_N"]},
                        {"BLOCK_SIZE_K", p["BLOCK_K"]},
                        {"GROUP_SIZE_M", p["GROUP_M"]},
                        {"num_warps", p["WARPS_M"] * p["WARPS_N"]},
                        {"num_stages", p["STAGES"]}});
  }
  // The triton family's own records: WARPS is num_warps.
  {
    std::map<std::string, int64_t> t = {{"BLOCK_M", pick({64, 128})}, {"BLOCK_N", pick({128, 256})},
                                        {"BLOCK_K", pick({32, 64})},  {"GROUP_M", pick({1, 8})},
                                        {"STAGES", pick({3, 4})},     {"WARPS", pick({4, 8})}};
    t["BLOCK_N"] += 7000;  // distinct from the sm80 entries
    recs.push_back(triton_record(rng, sig(1000, 1000, 1000), t, "triton"));
    expected.push_back({{"BLOCK_SIZE_M", t["BLOCK_M"]},
                        {"BLOCK_SIZE_N", t["BLOCK_N"]},
                        {"BLOCK_SIZE_K", t["BLOCK_K"]},
                        {"GROUP_SIZE_M", t["GROUP_M"]},
                        {"num_warps", t["WARPS"]},
                        {"num_stages", t["STAGES"]}});
  }
  recs.push_back(triton_record(rng, sig(333, 333, 333), recs[0].config.params));          // duplicate config
  recs.push_back(triton_record(rng, sig(64, 64, 64, DType::f32, DType::f32), {{"MR", 6}, {"NR", 16}}, "cpu-avx2"));
  recs.push_back(triton_record(rng, sig(8192, 8192, 8192), {{"BLOCK_M", 128}, {"CONSUMERS", 2}}, "sm90"));
  auto split = recs[1].config.params;
  split["SPLIT_K"] = 4;
  recs.push_back(triton_record(rng, sig(128, 128, 65536), split));

  const std::string text = export_triton(recs);
  // One comment line per record, naming its shape; the skipped ones say why.
  for (const Record& r : recs) {
    const std::size_t at = text.find(r.problem.key() + " on ");
    ASSERT_NE(at, std::string::npos) << r.problem.key() << "\n" << text;
    const std::size_t line = text.rfind('\n', at) + 1;
    EXPECT_EQ(text.compare(line, 5, "    #"), 0) << text.substr(line, at - line);
  }
  EXPECT_NE(text.find("family cpu-avx2 has no Triton equivalent"), std::string::npos) << text;
  EXPECT_NE(text.find("sm90 config lacks BLOCK_N, BLOCK_K, GROUP_M, STAGES, WARPS_M, WARPS_N"), std::string::npos)
      << text;
  EXPECT_NE(text.find("uses SPLIT_K=4"), std::string::npos) << text;
  EXPECT_NE(text.find("same config as entry 0 above"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("{:.1f} TFLOP/s measured", recs[2].tflops)), std::string::npos) << text;

  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3: string checks only";
  // Parse the module with Python's own parser (no Triton needed) and read every Config back.
  ScratchDir dir;
  write_file(dir.file("configs.py"), text);
  write_file(dir.file("read.py"), R"py(
import ast, json, sys
tree = ast.parse(open(sys.argv[1]).read())
assign = [n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "configs"][0]
out = []
for call in assign.value.elts:
    assert call.func.value.id == "triton" and call.func.attr == "Config", ast.dump(call)
    entry = dict(ast.literal_eval(call.args[0]))
    for kw in call.keywords:
        entry[kw.arg] = ast.literal_eval(kw.value)
    out.append(entry)
tuned = [n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "tuned"][0]
keys = {",".join(map(str, k)): v for k, v in ast.literal_eval(tuned.value).items()}
# The module's key_config with a stand-in for triton (no Triton needed): a tuned shape gets its one entry.
import types
stub = types.ModuleType("triton")
stub.Config = lambda *a, **k: (a, k)
stub.autotune = lambda **k: k
sys.modules["triton"] = stub
ns = {}
exec(compile(open(sys.argv[1]).read(), "configs.py", "exec"), ns)
picked = {k: ns["key_config"](ns["configs"], dict(zip("MNK", map(int, k.split(","))))) == [ns["configs"][v]]
          for k, v in keys.items()}
untuned = ns["key_config"](ns["configs"], {"M": 7, "N": 7, "K": 7}) == ns["configs"]
hook = ns["autotune"]()["prune_configs_by"]["early_config_prune"] is ns["key_config"]
print(json.dumps({"configs": out, "tuned": keys, "picked": picked, "untuned": untuned, "hook": hook}))
)py");
  const std::string got = run_python(dir.file("read.py"), dir.file("configs.py"));
  nlohmann::json parsed = nlohmann::json::parse(got, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << got << "\n" << text;
  ASSERT_EQ(parsed["configs"].size(), expected.size()) << text;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto entry = parsed["configs"][i].get<std::map<std::string, int64_t>>();
    EXPECT_EQ(entry, expected[i]) << "entry " << i << "\n" << text;
  }
  // Every mapped record's shape is keyed to its entry (the duplicate's to the first one's), and key_config hands
  // Triton only that entry; an untuned shape keeps every config.
  for (std::size_t i = 0; i < 7; ++i) {
    const auto& p = recs[i].problem;
    EXPECT_EQ(parsed["tuned"][fmt::format("{},{},{}", p.m, p.n, p.k)], int(i)) << text;
  }
  EXPECT_EQ(parsed["tuned"]["333,333,333"], 0) << text;
  for (const auto& [shape, ok] : parsed["picked"].items()) EXPECT_TRUE(ok.get<bool>()) << shape;
  EXPECT_TRUE(parsed["untuned"].get<bool>());
  EXPECT_TRUE(parsed["hook"].get<bool>());
}

TEST(DbExchange, TritonExportOfNothingIsAnEmptyList) {
  const std::string text = export_triton({});
  EXPECT_NE(text.find("import triton"), std::string::npos);
  EXPECT_NE(text.find("configs = [\n]"), std::string::npos) << text;
  EXPECT_NE(text.find("tuned = {\n}"), std::string::npos) << text;
}

}  // namespace
}  // namespace tileforge::db

namespace tileforge::db {
namespace {

using namespace dbtest;

// An export imported into a new store, and what the store then lists (empty, with a failure, where it cannot).
std::vector<Record> imported_into_a_store(const std::string& text) {
  ScratchDir dir;
  auto store = Store::open(dir.file("pool.db"));
  EXPECT_TRUE(store) << store.status().to_string();
  if (!store) return {};
  auto imported = import_json(*store, text, "pool.json");
  EXPECT_TRUE(imported) << imported.status().to_string();
  auto all = store->list();
  EXPECT_TRUE(all) << all.status().to_string();
  return all ? std::move(all).value() : std::vector<Record>{};
}

// The listed record stored under r's device, problem and family.
const Record* stored_as(const std::vector<Record>& all, const Record& r) {
  const auto it = std::find_if(all.begin(), all.end(), [&](const Record& x) {
    return x.device == r.device && x.problem == r.problem && x.family() == r.family();
  });
  return it == all.end() ? nullptr : &*it;
}

// Schema v3 / format 3: which host and device measured a record goes through export, import and the store, and
// stays unknown for records and files without it.
TEST(DbExchange, MeasuringHostAndDeviceRoundTripAndStayUnknownWhereNotGiven) {
  std::mt19937_64 rng(test_seed());
  std::vector<Record> recs = random_records(rng, 6);
  for (std::size_t i = 0; i < recs.size(); i += 2) {
    recs[i].host = fmt::format("node-{}.cluster", i);
    recs[i].device_index = int64_t(i % 4);
  }
  const std::string text = export_json(recs);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("format_version"), kExportFormatVersion);
  EXPECT_EQ(j.at("records").at(0).at("measured_on").at("host"), "node-0.cluster");
  EXPECT_FALSE(j.at("records").at(1).contains("measured_on"));
  const std::vector<Record> all = imported_into_a_store(text);
  ASSERT_EQ(all.size(), recs.size());
  for (const Record& r : recs) {
    const Record* back = stored_as(all, r);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->host, r.host);
    EXPECT_EQ(back->device_index, r.device_index);
  }
  // A format-2 file (before measured_on) still imports, its host unknown.
  auto old = nlohmann::json::parse(export_json({recs[1]}));
  old["format_version"] = 2;
  auto back = parse_export(old.dump(), "old.json");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_TRUE(back->front().host.empty());
  EXPECT_FALSE(back->front().device_index.has_value());
}

// Schema v4 / format 4: a record whose config sums by float atomics says so through export, import and the store, a
// record of an older file is deterministic, and a malformed flag is refused naming the field.
TEST(DbExchange, DeterminismRoundTripsAndOlderFilesAreDeterministic) {
  std::mt19937_64 rng(test_seed());
  std::vector<Record> recs = random_records(rng, 6);
  for (std::size_t i = 0; i < recs.size(); i += 3) recs[i].deterministic = false;
  const std::string text = export_json(recs);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("records").at(0).at("deterministic"), false);
  EXPECT_FALSE(j.at("records").at(1).contains("deterministic")) << "left out where true";
  const std::vector<Record> all = imported_into_a_store(text);
  ASSERT_EQ(all.size(), recs.size());
  for (const Record& r : recs) {
    const Record* back = stored_as(all, r);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->deterministic, r.deterministic);
  }
  auto old = nlohmann::json::parse(export_json({recs[0]}));
  old["format_version"] = 3;
  old["records"][0].erase("deterministic");
  auto back = parse_export(old.dump(), "old.json");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_TRUE(back->front().deterministic);
  auto bad = nlohmann::json::parse(export_json({recs[0]}));
  bad["records"][0]["deterministic"] = "no";
  auto refused = parse_export(bad.dump(), "bad.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("deterministic"), std::string::npos) << refused.status().message();
}

TEST(DbExchange, MalformedMeasuringHostOrDeviceIsRefusedNamingTheField) {
  std::mt19937_64 rng(test_seed());
  const std::vector<Record> recs = random_records(rng, 1);
  auto with = [&](nlohmann::json on) {
    auto j = nlohmann::json::parse(export_json(recs));
    j["records"][0]["measured_on"] = on;
    return parse_export(j.dump(), "x.json");
  };
  ASSERT_TRUE(with({{"host", "gpu-3"}, {"device_index", 7}}));
  for (const auto& [on, field] : {std::pair{nlohmann::json{{"host", "two words"}}, "measured_on.host"},
                                  std::pair{nlohmann::json{{"host", "a\nb"}}, "measured_on.host"},
                                  std::pair{nlohmann::json{{"device_index", -1}}, "measured_on.device_index"},
                                  std::pair{nlohmann::json{{"device_index", 5000}}, "measured_on.device_index"},
                                  std::pair{nlohmann::json{{"gpu", 1}}, "measured_on"}}) {
    auto r = with(on);
    ASSERT_FALSE(r) << on.dump();
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  }
  Record bad = recs[0];
  bad.host = std::string(300, 'h');
  EXPECT_TRUE(validate_record(bad).has_value());
}

}  // namespace
}  // namespace tileforge::db
