// Parsing of dtype and layout names, "MxNxK" shapes and "NAME=VALUE" pins, with the refusals users see.
#include <gtest/gtest.h>

#include "core/parse.hpp"

namespace tileforge {
namespace {

TEST(Parse, DtypesAndLayouts) {
  EXPECT_EQ(*parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(*parse_dtype("f16"), DType::f16);
  EXPECT_EQ(*parse_dtype("f32"), DType::f32);
  auto bad = parse_dtype("fp8", "--dtype");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::invalid_argument);
  EXPECT_NE(bad.status().message().find("--dtype 'fp8'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("f32, f16, bf16"), std::string::npos);
  EXPECT_EQ(*parse_layout("CR"), Layout::CR);
  EXPECT_EQ(parse_layouts("all")->size(), 4u);
  auto bad_layout = parse_layouts("RX");
  ASSERT_FALSE(bad_layout.ok());
  EXPECT_NE(bad_layout.status().message().find("RR, RC, CR, CC, all"), std::string::npos);
}

TEST(Parse, Shapes) {
  auto s = parse_shape("4095x4097x4093");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0], 4095);
  EXPECT_EQ((*s)[1], 4097);
  EXPECT_EQ((*s)[2], 4093);
  EXPECT_EQ((*parse_shape("0x5x0"))[1], 5);
  for (const char* bad : {"12x", "4096x4096", "1x2x3x4", "x1x2", "1xx2", "-1x2x3", "1x2xa", "", "99999999999999999999x1x1",
                          "1 x2x3"}) {
    auto r = parse_shape(bad, "--shape");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--shape"), std::string::npos) << bad;
    EXPECT_NE(r.status().message().find("MxNxK"), std::string::npos) << bad;
  }
}

TEST(Parse, PinsAndIntegers) {
  auto p = parse_pin("KC=256");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->first, "KC");
  EXPECT_EQ(p->second, 256);
  EXPECT_EQ(parse_pin("X=-3")->second, -3);
  for (const char* bad : {"KC", "=3", "KC=", "KC=abc", "KC=1.5"}) EXPECT_FALSE(parse_pin(bad).ok()) << bad;
  EXPECT_FALSE(parse_int("12abc", "--seed").ok());
  EXPECT_EQ(*parse_int("+7", "x"), 7);
}

TEST(StatusText, NamesCodeAndMessage) {
  Status s = invalid_argument("lda = 3 is too small");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.to_string(), "invalid_argument: lda = 3 is too small");
  EXPECT_EQ(Status().to_string(), "ok");
}

}  // namespace
}  // namespace tileforge
