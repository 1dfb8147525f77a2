// `tileforge banks`: the bank model on hand-computed cases (an unswizzled tile's 4-way ldmatrix, a 2-way case, a
// broadcast), the families' real layouts conflict-free, the sm80 adapter's addresses equal to tile_layout.cuh's,
// and bad input refused through the CLI.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/bank_conflicts.hpp"
#include "sm80/tile_layout.cuh"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan::banks {
namespace {

namespace fs = std::filesystem;

AccessBanks simulate_ok(const WarpAccess& a) {
  auto r = simulate(a);
  EXPECT_TRUE(r) << r.status().message();
  return r ? *r : AccessBanks{};
}

InstructionReport raw(int64_t row_bytes, const std::string& instruction = "ldmatrix.x4") {
  auto acc = raw_accesses(row_bytes, instruction);
  EXPECT_TRUE(acc) << acc.status().message();
  auto rows = report(*acc);
  EXPECT_TRUE(rows) << rows.status().message();
  EXPECT_EQ(rows->size(), 1u);
  return rows->front();
}

// ---- the model on cases computed by hand ----------------------------------------------------------------------

// The issue's acceptance case. Rows 64 bytes apart start at words 0, 16, 32, ..., 112: banks 0 and 16 alternately.
// A phase of ldmatrix.x4 is 8 rows of 16 bytes (4 words each), so banks 0-3 hold the words of rows 0, 2, 4 and 6
// and banks 16-19 those of rows 1, 3, 5 and 7: four distinct words per bank, 4-way, in each of the 4 phases.
TEST(BankConflicts, UnswizzledLdmatrixX4On64ByteRowsIsFourWay) {
  const InstructionReport r = raw(64);
  EXPECT_EQ(r.degree, 4);
  EXPECT_EQ(r.wavefronts, 16);  // 4 phases x 4
  EXPECT_EQ(r.ideal, 4);        // 4 phases x 128 bytes
  ASSERT_EQ(r.worst.phases.size(), 4u);
  const PhaseBanks& ph = r.worst.phases[0];
  ASSERT_EQ(ph.words[0].size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(ph.words[0][k].word, 32 * k);  // rows 0, 2, 4, 6: bytes 0, 128, 256, 384
    EXPECT_EQ(ph.words[0][k].threads, std::vector<int>{2 * k});
  }
  EXPECT_EQ(ph.words[16].size(), 4u);
  EXPECT_TRUE(ph.words[4].empty());  // banks 4-15 and 20-31 idle
  // Phase 1 serves threads 8-15 (rows 8-15) on the same banks.
  EXPECT_EQ(r.worst.phases[1].first_thread, 8);
  EXPECT_EQ(r.worst.phases[1].words[0][0].threads, std::vector<int>{8});
}

// Rows 32 bytes apart start at banks 0, 8, 16, 24, 0, ...: rows r and r + 4 of a phase share banks, 2-way.
TEST(BankConflicts, UnswizzledLdmatrixX4On32ByteRowsIsTwoWay) {
  const InstructionReport r = raw(32);
  EXPECT_EQ(r.degree, 2);
  EXPECT_EQ(r.wavefronts, 8);
  const PhaseBanks& ph = r.worst.phases[0];
  ASSERT_EQ(ph.words[0].size(), 2u);
  EXPECT_EQ(ph.words[0][0].threads, std::vector<int>{0});
  EXPECT_EQ(ph.words[0][1].threads, std::vector<int>{4});
  EXPECT_EQ(ph.words[0][1].word, 32);  // row 4 at byte 128
}

// Two 4-byte accesses 128 bytes apart: words 0 and 32, both in bank 0, the rest of the warp elsewhere.
TEST(BankConflicts, TwoWordsInOneBankAreTwoWay) {
  WarpAccess a;
  a.bytes_per_thread = 4;
  for (int t = 0; t < kWarpSize; ++t) a.address[t] = 4 * t;
  a.address[1] = 128;  // thread 1 leaves bank 1 for bank 0
  const AccessBanks b = simulate_ok(a);
  EXPECT_EQ(b.degree, 2);
  EXPECT_EQ(b.wavefronts, 2);
  EXPECT_EQ(b.ideal, 1);
  ASSERT_EQ(b.phases.size(), 1u);
  EXPECT_EQ(b.phases[0].words[0].size(), 2u);
  EXPECT_TRUE(b.phases[0].words[1].empty());
}

// Threads reading one word are served at once, whatever the width.
TEST(BankConflicts, BroadcastIsNoConflict) {
  WarpAccess a;
  a.bytes_per_thread = 4;
  a.address.fill(256);
  AccessBanks b = simulate_ok(a);
  EXPECT_EQ(b.degree, 1);
  EXPECT_EQ(b.wavefronts, 1);
  ASSERT_EQ(b.phases[0].words[0].size(), 1u);
  EXPECT_EQ(b.phases[0].words[0][0].threads.size(), 32u);

  a.bytes_per_thread = 16;  // every ldmatrix row address the same
  b = simulate_ok(a);
  EXPECT_EQ(b.degree, 1);
  EXPECT_EQ(b.wavefronts, 4);
  // Pairs of threads in one word: a 2-byte store of neighbours.
  a.bytes_per_thread = 2;
  for (int t = 0; t < kWarpSize; ++t) a.address[t] = 2 * t;
  b = simulate_ok(a);
  EXPECT_EQ(b.degree, 1);
  EXPECT_EQ(b.phases[0].words[0][0].threads, (std::vector<int>{0, 1}));
}

TEST(BankConflicts, OtherRawCases) {
  EXPECT_EQ(raw(128).degree, 8);                    // every row of a phase on banks 0-3
  EXPECT_EQ(raw(80).degree, 1);                     // 64-byte rows padded by 16 bytes
  EXPECT_EQ(raw(64, "ldmatrix.x1").wavefronts, 4);  // one phase
  EXPECT_EQ(raw(128, "ld.shared.b32").degree, 32);  // a column of a 128-byte-row tile
  EXPECT_EQ(raw(16, "ld.shared.v4.b32").degree, 1);
  const InstructionReport v2 = raw(16, "ld.shared.v2.b32");  // half-warp phases of 16 rows of 16 bytes: 256 bytes
  EXPECT_EQ(v2.degree, 2);
  EXPECT_EQ(v2.worst.phases.size(), 2u);
}

TEST(BankConflicts, BadAccessesRefused) {
  WarpAccess a;
  a.bytes_per_thread = 12;
  EXPECT_FALSE(simulate(a));
  a.bytes_per_thread = 16;
  a.address[3] = 8;
  EXPECT_FALSE(simulate(a));
  EXPECT_FALSE(raw_accesses(60, "ldmatrix.x4"));
  EXPECT_FALSE(raw_accesses(64, "ldmatrix.x8"));
}

// ---- the families' real layouts ----------------------------------------------------------------------------

Problem problem_with(Layout layout) {
  Problem p;
  p.m = p.n = p.k = 4096;
  p.precision = {DType::f16, DType::f16, DType::f32};
  p.layout = layout;
  return p.normalized();
}

Config sm80(int bm, int bn, int bk, int wm, int wn, int vec = 16) {
  return {"sm80",
          {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"WARPS_M", wm}, {"WARPS_N", wn}, {"STAGES", 3},
           {"GROUP_M", 8}, {"VEC_BYTES", vec}, {"COPY_AB", 0}, {"FRAG_PIPE", 0}}};
}

std::vector<InstructionReport> family_report(const char* family, const Problem& p, const Config& c) {
  const BankModel* model = find_bank_model(family);
  EXPECT_NE(model, nullptr) << family;
  if (!model) return {};
  auto acc = model->accesses(p, c);
  EXPECT_TRUE(acc) << acc.status().message();
  if (!acc) return {};
  auto rows = report(*acc);
  EXPECT_TRUE(rows) << rows.status().message();
  return rows ? *rows : std::vector<InstructionReport>{};
}

constexpr Layout kLayouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};

TEST(BankConflicts, Sm80TypicalConfigsAreConflictFree) {
  for (Layout layout : kLayouts) {
    for (const Config& c : {sm80(128, 128, 32, 2, 2), sm80(128, 256, 64, 2, 4), sm80(256, 128, 32, 4, 2)}) {
      const auto rows = family_report("sm80", problem_with(layout), c);
      ASSERT_EQ(rows.size(), 4u);  // copies of A and B, ldmatrix of A and B
      for (const InstructionReport& r : rows) {
        EXPECT_EQ(r.degree, 1) << c.describe() << " " << to_string(layout) << " " << r.instruction << " " << r.operand;
        EXPECT_EQ(r.wavefronts, r.ideal) << c.describe() << " " << r.instruction;
      }
    }
  }
  // 128x128x32 RR: A [128][32] (64-byte rows) read without .trans, B [32][128] (256-byte rows) with .trans; each
  // of 128 threads copies 4 16-byte chunks of A (8 KB) and 4 of B; a warp tile of 64x64 takes 4 A and 4 B
  // ldmatrix.x4 per 16-deep k-step, two k-steps per k-tile; every 16-byte access takes 4 wavefronts at best.
  const auto rows = family_report("sm80", problem_with(Layout::RR), sm80(128, 128, 32, 2, 2));
  EXPECT_EQ(rows[0].instruction, "cp.async.cg 16B");
  EXPECT_EQ(rows[0].issues_per_warp, 4);
  EXPECT_EQ(rows[0].wavefronts, 16);
  EXPECT_EQ(rows[2].instruction, "ldmatrix.x4");
  EXPECT_EQ(rows[2].issues_per_warp, 8);
  EXPECT_EQ(rows[3].instruction, "ldmatrix.x4.trans");
  EXPECT_EQ(rows[3].issues_per_warp, 8);
}

// The swizzle's promise, checked on the simulation for every tile shape and copy width the family's constraints
// allow (tile, warps, chunks per thread), in every layout.
TEST(BankConflicts, Sm80EveryShapeIsConflictFree) {
  int checked = 0;
  for (int bm : {16, 32, 64, 128, 256})
    for (int bn : {16, 32, 64, 128, 256})
      for (int bk : {16, 32, 64})
        for (int wm : {1, 2, 4, 8})
          for (int wn : {1, 2, 4, 8})
            for (int vec : {2, 4, 8, 16}) {
              const int threads = 32 * wm * wn;
              if (bm % (16 * wm) || bn % (16 * wn) || threads > 512) continue;
              if ((bm * bk * 2 / vec) % threads || (bk * bn * 2 / vec) % threads) continue;
              for (Layout layout : kLayouts) {
                for (const InstructionReport& r : family_report("sm80", problem_with(layout), sm80(bm, bn, bk, wm, wn, vec))) {
                  EXPECT_EQ(r.degree, 1) << sm80(bm, bn, bk, wm, wn, vec).describe() << " " << to_string(layout) << " "
                                         << r.instruction << " " << r.operand << " " << r.worst_what;
                  // The fast count over every issue and the full simulation of the worst one agree.
                  EXPECT_EQ(r.worst.degree, r.degree);
                }
                ++checked;
              }
            }
  EXPECT_GT(checked, 500);
}

// The adapter mirrors tile_layout.cuh (the library's layer cannot include it): its addresses must be the header's.
template <int BM, int BN, int BK, int WM, int WN, bool A_ROW, bool B_ROW>
void expect_sm80_addresses_of_header() {
  constexpr int THREADS = 32 * WM * WN, VEC = 16;
  constexpr int A_COLS = A_ROW ? BK : BM, B_COLS = B_ROW ? BN : BK;
  constexpr unsigned A_TILE = 0, B_TILE = BM * BK * 2;
  using CopyA = tf::sm80::CopyState<A_ROW ? BM : BK, A_COLS, VEC, THREADS, !A_ROW>;
  using CopyB = tf::sm80::CopyState<B_ROW ? BK : BN, B_COLS, VEC, THREADS, B_ROW>;
  const Layout layout = A_ROW ? (B_ROW ? Layout::RR : Layout::RC) : (B_ROW ? Layout::CR : Layout::CC);
  const BankModel* model = find_bank_model("sm80");
  ASSERT_NE(model, nullptr);
  auto acc = model->accesses(problem_with(layout), sm80(BM, BN, BK, WM, WN));
  ASSERT_TRUE(acc) << acc.status().message();
  ASSERT_EQ(acc->instructions.size(), 4u);
  const std::string what = sm80(BM, BN, BK, WM, WN).describe() + " " + std::string(to_string(layout));

  std::vector<unsigned short> g(size_t(BM + BN) * BK);  // sources are not read, only offset
  auto check_copies = [&](const Instruction& ins, auto copy, unsigned tile, int rows, int cols) {
    size_t n = 0;
    for (int w = 0; w < WM * WN; ++w) {
      for (int i = 0; i < decltype(copy)::CHUNKS; ++i, ++n) {
        ASSERT_LT(n, ins.issues.size());
        for (int lane = 0; lane < 32; ++lane) {
          copy.init(g.data(), cols, 0, 0, rows, cols, tile, w * 32 + lane);
          EXPECT_EQ(ins.issues[n].access.address[lane], int64_t(copy.chunk(i, 0, cols).dst))
              << what << " " << ins.operand << " warp " << w << " chunk " << i << " lane " << lane;
        }
      }
    }
    EXPECT_EQ(n, ins.issues.size());
  };
  check_copies(acc->instructions[0], CopyA{}, A_TILE, A_ROW ? BM : BK, A_COLS);
  check_copies(acc->instructions[1], CopyB{}, B_TILE, B_ROW ? BK : BN, B_COLS);

  // ldmatrix: the plain swizzled address of the lane's element (lane part + step), which gemm.cuh's split form
  // equals (tests/backends/cuda/tile_layout_test.cpp).
  size_t na = 0, nb = 0;
  for (int w = 0; w < WM * WN; ++w) {
    const int wm = w % WM, wn = w / WM;
    for (int kk = 0; kk < BK; kk += 16) {
      for (int i = 0; i < BM / WM / 16; ++i, ++na) {
        for (int lane = 0; lane < 32; ++lane) {
          const auto l = tf::sm80::a_frag_lane(A_ROW, lane, wm * (BM / WM));
          const auto s = tf::sm80::a_frag_step(A_ROW, i, kk);
          const unsigned want = A_TILE + tf::swizzle_128b<A_COLS * 2>(unsigned(((l.row + s.row) * A_COLS + l.col + s.col) * 2));
          EXPECT_EQ(acc->instructions[2].issues[na].access.address[lane], int64_t(want)) << what << " A lane " << lane;
        }
      }
      for (int j = 0; j < BN / WN / 8; j += 2, ++nb) {
        for (int lane = 0; lane < 32; ++lane) {
          const auto l = tf::sm80::b_frag_lane(B_ROW, lane, wn * (BN / WN));
          const auto s = tf::sm80::b_frag_step(B_ROW, j, kk);
          const unsigned want = B_TILE + tf::swizzle_128b<B_COLS * 2>(unsigned(((l.row + s.row) * B_COLS + l.col + s.col) * 2));
          EXPECT_EQ(acc->instructions[3].issues[nb].access.address[lane], int64_t(want)) << what << " B lane " << lane;
        }
      }
    }
  }
  EXPECT_EQ(na, acc->instructions[2].issues.size());
  EXPECT_EQ(nb, acc->instructions[3].issues.size());
}

TEST(BankConflicts, Sm80AddressesAreTileLayoutHeaders) {
  expect_sm80_addresses_of_header<128, 128, 32, 2, 2, true, true>();
  expect_sm80_addresses_of_header<128, 256, 64, 2, 4, true, true>();
  expect_sm80_addresses_of_header<128, 128, 32, 2, 2, false, false>();
  expect_sm80_addresses_of_header<64, 128, 64, 2, 2, true, false>();
  expect_sm80_addresses_of_header<32, 64, 16, 1, 2, false, true>();
}

Config sm90(int bm, int bn, int consumers, int epilogue, int stmatrix, int epi_split = 1, int split_k = 1) {
  return {"sm90",
          {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", 64}, {"STAGES", 4}, {"CONSUMERS", consumers},
           {"CLUSTER_M", 1}, {"CLUSTER_N", 1}, {"GROUP_M", 8}, {"EPILOGUE", epilogue}, {"EPI_SPLIT", epi_split},
           {"STMATRIX", stmatrix}, {"SPLIT_K", split_k}, {"STREAM_K", 0}, {"COPY_AB", 0}}};
}

TEST(BankConflicts, Sm90EpilogueIsConflictFree) {
  for (int stmatrix : {0, 1})
    for (int epilogue : {1, 2})
      for (const Config& c : {sm90(128, 256, 2, epilogue, stmatrix, 2), sm90(128, 128, 1, epilogue, stmatrix),
                              sm90(256, 128, 2, epilogue, stmatrix), sm90(64, 64, 1, epilogue, stmatrix)}) {
        const auto rows = family_report("sm90", problem_with(Layout::RR), c);
        ASSERT_EQ(rows.size(), 1u) << c.describe();
        EXPECT_EQ(rows[0].instruction, stmatrix ? "stmatrix.x4" : "st.shared.b32");
        EXPECT_EQ(rows[0].degree, 1) << c.describe() << " " << rows[0].worst_what;
      }
  // SWAP_AB's column-major staging (stmatrix .trans), an odd count of 8-column blocks (the x2 tail) included.
  for (const auto& [bm, bn, consumers, epilogue] : {std::tuple{128, 72, 2, 1}, std::tuple{128, 16, 2, 2},
                                                     std::tuple{256, 112, 2, 1}, std::tuple{192, 80, 3, 1},
                                                     std::tuple{64, 48, 1, 2}, std::tuple{128, 128, 2, 1}}) {
    Config c = sm90(bm, bn, consumers, epilogue, 1);
    c.params["SWAP_AB"] = 1;
    const auto rows = family_report("sm90", problem_with(Layout::RR), c);
    ASSERT_EQ(rows.size(), 1u) << c.describe();
    EXPECT_EQ(rows[0].instruction, "stmatrix.x4.trans");
    EXPECT_EQ(rows[0].degree, 1) << c.describe() << " " << rows[0].worst_what;
  }
  // Direct stores: nothing staged, and the notes say why nothing is simulated.
  const BankModel* model = find_bank_model("sm90");
  ASSERT_NE(model, nullptr);
  auto direct = model->accesses(problem_with(Layout::RR), sm90(128, 256, 2, 0, 0));
  ASSERT_TRUE(direct);
  EXPECT_TRUE(direct->instructions.empty());
  bool tma_note = false;
  for (const std::string& n : direct->notes) tma_note = tma_note || n.find("TMA") != std::string::npos;
  EXPECT_TRUE(tma_note);
  // Split-K's flag: one writer, then every lane of every consumer warp reads one word (a broadcast).
  const auto rows = family_report("sm90", problem_with(Layout::RR), sm90(128, 256, 2, 1, 1, 2, 2));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].instruction, "ld.shared.u32");
  EXPECT_EQ(rows[2].degree, 1);
  int words = 0;
  for (const auto& bank : rows[2].worst.phases[0].words) {
    for (const auto& w : bank) {
      ++words;
      EXPECT_EQ(w.threads.size(), 32u);
    }
  }
  EXPECT_EQ(words, 1);
}

// ---- the verb ----------------------------------------------------------------------------------------------

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome run(const BanksCommandOptions& o) {
  std::ostringstream out, err;
  const int rc = banks_command(o, out, err);
  return {rc, out.str(), err.str()};
}

TEST(BankConflicts, CommandRawTableAndHeatmap) {
  BanksCommandOptions o;
  o.raw_row_bytes = "64";
  o.heatmap = true;
  const Outcome r = run(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("4-way"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phase 3 (threads 24-31): degree 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wf 4"), std::string::npos) << r.out;
}

TEST(BankConflicts, CommandFamilyJsonWithPins) {
  BanksCommandOptions o;
  o.family = "sm80";
  o.sets = {"BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=32"};
  o.format = "json";
  o.heatmap = true;
  const Outcome r = run(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["subject"]["config"]["BLOCK_M"], 128);
  EXPECT_EQ(doc["subject"]["config"]["BLOCK_K"], 32);
  EXPECT_EQ(doc["subject"]["profile"], "h200");
  ASSERT_EQ(doc["instructions"].size(), 4u);
  for (const auto& ins : doc["instructions"]) {
    EXPECT_EQ(ins["degree"], 1) << ins.dump();
    EXPECT_EQ(ins["heatmap"].size(), 4u);  // four 128-byte phases of 16-byte accesses
    EXPECT_EQ(ins["heatmap"][0]["banks"].size(), 32u);
  }
}

TEST(BankConflicts, CommandRefusesBadInput) {
  struct Bad {
    BanksCommandOptions o;
    std::vector<std::string> mentions;
  };
  auto fam = [](std::vector<std::string> sets) {
    BanksCommandOptions o;
    o.family = "sm80";
    o.sets = std::move(sets);
    return o;
  };
  std::vector<Bad> cases;
  cases.push_back({BanksCommandOptions{}, {"--family", "--raw-row-bytes", "sm80", "sm90"}});
  BanksCommandOptions o = fam({});
  o.family = "sm99";
  cases.push_back({o, {"sm99", "is not known", "sm80, sm90"}});
  o.family = "cpu-generic";
  cases.push_back({o, {"cpu-generic", "no shared-memory model"}});
  cases.push_back({fam({"NOT_A_PARAM=1"}), {"NOT_A_PARAM"}});
  cases.push_back({fam({"BLOCK_M=100"}), {"BLOCK_M"}});
  o = fam({});
  o.raw_row_bytes = "64";
  cases.push_back({o, {"not both"}});
  o = fam({});
  o.format = "xml";
  cases.push_back({o, {"--format", "table, json"}});
  o = fam({});
  o.dtype = "f64";
  cases.push_back({o, {"--dtype"}});
  o = BanksCommandOptions{};
  o.raw_row_bytes = "60";
  cases.push_back({o, {"--raw-row-bytes", "multiple of 16"}});
  o.raw_row_bytes = "64";
  o.instruction = "ldmatrix.x3";
  cases.push_back({o, {"--instruction", "ldmatrix.x4"}});
  o.instruction = "";
  o.sets = {"BLOCK_M=128"};
  cases.push_back({o, {"--set", "--family only"}});
  for (const Bad& b : cases) {
    const Outcome r = run(b.o);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.out, "") << r.err;
    for (const std::string& m : b.mentions) EXPECT_NE(r.err.find(m), std::string::npos) << "'" << m << "' not in " << r.err;
  }
}

// Through the real process: exit codes, stdout empty on refusal.
TEST(BankConflicts, CliRunsAndRefuses) {
  const fs::path dir = tileforge::testing::fresh_test_dir("tileforge_banks_");
  auto ok = tileforge::testing::run_cli({"banks", "--raw-row-bytes", "64"}, dir);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("4-way"), std::string::npos) << ok.out;
  auto bad = tileforge::testing::run_cli({"banks", "--family", "nope"}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  // Refused while the command line is parsed: the option, the value and the families allowed.
  EXPECT_NE(bad.err.find("--family: 'nope' is not a known family"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("sm80, sm90"), std::string::npos) << bad.err;
  auto pin = tileforge::testing::run_cli({"banks", "--family", "sm80", "--set", "BLOCK_Q=1"}, dir);
  EXPECT_EQ(pin.exit_code, 2);
  EXPECT_EQ(pin.out, "");
  EXPECT_NE(pin.err.find("BLOCK_Q"), std::string::npos) << pin.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tileforge::plan::banks
