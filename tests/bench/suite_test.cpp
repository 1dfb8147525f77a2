// Suite files: the builtin suites load, and every malformed field is refused with the file and field named.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "bench/suite.hpp"

namespace tileforge::bench {
namespace {

const char* kGood = R"({"name": "t", "dtype": "bf16", "out_dtype": "f32", "accum": "f32", "layout": "CR",
                        "shapes": [[1, 2, 3], [0, 5, 7]], "note": "n"})";

TEST(Suite, ParsesEveryField) {
  auto s = parse_suite(kGood, "t.json");
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(s->name, "t");
  EXPECT_EQ(s->precision.input, DType::bf16);
  EXPECT_EQ(s->precision.output, DType::f32);
  EXPECT_EQ(s->precision.accum, DType::f32);
  ASSERT_EQ(s->layouts.size(), 1u);
  EXPECT_EQ(s->layouts[0], Layout::CR);
  ASSERT_EQ(s->shapes.size(), 2u);
  EXPECT_EQ(s->shapes[1], (std::array<int64_t, 3>{0, 5, 7}));
  EXPECT_EQ(s->note, "n");
}

TEST(Suite, LayoutAllExpands) {
  auto s = parse_suite(R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "all",
                           "shapes": [[4, 4, 4]]})",
                       "t.json");
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(s->layouts.size(), 4u);
}

TEST(Suite, BuiltinCpuSuiteIsTheIssuesDefault) {
  auto s = load_suite("cpu");
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(s->precision.input, DType::f32);
  EXPECT_EQ(s->layouts, std::vector<Layout>{Layout::RR});
  const std::vector<std::array<int64_t, 3>> want = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
                                                    {16, 4096, 4096}};
  EXPECT_EQ(s->shapes, want);
  EXPECT_EQ(default_suite_name("cpu"), "cpu");
  EXPECT_EQ(default_suite_name("cuda"), "public");
}

TEST(Suite, BuiltinPublicSuiteLoadsByNameAndFileName) {
  auto a = load_suite("public");
  auto b = load_suite("public.json");
  ASSERT_TRUE(a) << a.status().to_string();
  ASSERT_TRUE(b) << b.status().to_string();
  EXPECT_EQ(a->precision.input, DType::f16);
  EXPECT_EQ(a->shapes.size(), 18u);
  EXPECT_EQ(a->shapes, b->shapes);
}

TEST(Suite, EveryRepositorySuiteParses) {
  for (const char* name : {"cpu.json", "public.json"}) {
    auto s = load_suite(std::string(TILEFORGE_SOURCE_DIR) + "/bench/suites/" + name);
    EXPECT_TRUE(s) << name << ": " << s.status().to_string();
  }
}

struct BadCase {
  const char* json;
  const char* field;  // must appear in the message
};

class SuiteRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(SuiteRejects, NamesFileAndField) {
  auto s = parse_suite(GetParam().json, "bad.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.status().code(), Code::invalid_argument);
  EXPECT_NE(s.status().message().find("bad.json"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find(GetParam().field), std::string::npos) << s.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, SuiteRejects,
    ::testing::Values(
        BadCase{"not json", "JSON"}, BadCase{"[1, 2]", "object"},
        BadCase{R"({"dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR", "shapes": [[1,1,1]]})", "name"},
        BadCase{R"({"name": "t", "dtype": "f64", "out_dtype": "f32", "accum": "f32", "layout": "RR", "shapes": [[1,1,1]]})",
                "dtype"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": 3, "accum": "f32", "layout": "RR", "shapes": [[1,1,1]]})",
                "out_dtype"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "x", "layout": "RR", "shapes": [[1,1,1]]})",
                "accum"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RT", "shapes": [[1,1,1]]})",
                "layout"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR"})", "shapes"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR", "shapes": []})",
                "shapes"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR", "shapes": [[1,2]]})",
                "shapes[0]"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR",
                    "shapes": [[1,2,3],[4,-5,6]]})",
                "shapes[1][1]"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR",
                    "shapes": [[1,2,1.5]]})",
                "shapes[0][2]"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR",
                    "shapes": [[1,2,18446744073709551615]]})",
                "shapes[0][2]"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f32", "accum": "f32", "layout": "RR",
                    "shapes": [[1,1,1]], "layouts": "all"})",
                "layouts"},
        BadCase{R"({"name": "t", "dtype": "f32", "out_dtype": "f16", "accum": "f32", "layout": "RR", "shapes": [[1,1,1]]})",
                "out_dtype"}));

TEST(Suite, UnreadableFileIsAnIoErrorNamingThePath) {
  auto s = load_suite("/nonexistent/folder/suite.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.status().code(), Code::io_error);
  EXPECT_NE(s.status().message().find("/nonexistent/folder/suite.json"), std::string::npos);
  EXPECT_NE(s.status().message().find("--suite"), std::string::npos);
}

TEST(Suite, FolderIsRefused) {
  auto s = load_suite("/tmp/");
  EXPECT_FALSE(s);
}

TEST(Suite, UnknownBuiltinListsTheKnownOnes) {
  auto s = load_suite("nosuchsuite");
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("cpu"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("public"), std::string::npos) << s.status().message();
}

TEST(Suite, LoadsAFileByPath) {
  const std::string path = ::testing::TempDir() + "tileforge_suite_test.json";
  {
    std::ofstream out(path);
    out << kGood;
  }
  auto s = load_suite(path);
  std::remove(path.c_str());
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(s->origin, path);
}

}  // namespace
}  // namespace tileforge::bench
