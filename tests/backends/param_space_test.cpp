// ParamSpace: checking, pinning (with the messages users see) and enumeration under constraints.
#include <gtest/gtest.h>

#include "backends/backend.hpp"

namespace tileforge {
namespace {

ParamSpace toy() {
  ParamSpace s;
  s.family = "toy";
  s.params = {{"A", {1, 2, 4}, "data scheduling", ""}, {"B", {2, 3, 8}, "data scheduling", ""}};
  s.constraints = {{Layer::data_scheduling, "B % A == 0", [](const Config& c) { return c.params.at("B") % c.params.at("A") == 0; }}};
  return s;
}

TEST(ParamSpace, EnumeratesOnlyLegalCombinations) {
  auto all = toy().enumerate();
  // (1,2) (1,3) (1,8) (2,2) (2,8) (4,8): 6 of the 9 combinations.
  EXPECT_EQ(all.size(), 6u);
  for (const auto& c : all) EXPECT_TRUE(toy().check(c).ok()) << c.describe();
  EXPECT_EQ(toy().enumerate(2).size(), 2u);
}

TEST(ParamSpace, PinsAndRefusals) {
  Config base{"toy", {{"A", 1}, {"B", 3}}};
  auto ok = toy().pin(base, {{"B", 8}, {"A", 4}});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->at("A"), 4);
  auto unknown = toy().pin(base, {{"C", 1}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("allowed: A, B"), std::string::npos);
  auto illegal = toy().pin(base, {{"A", 3}});
  ASSERT_FALSE(illegal.ok());
  EXPECT_NE(illegal.status().message().find("allowed: 1, 2, 4"), std::string::npos);
  auto violated = toy().pin(base, {{"A", 2}});
  ASSERT_FALSE(violated.ok());
  EXPECT_NE(violated.status().message().find("B % A == 0"), std::string::npos);
  EXPECT_FALSE(toy().check(Config{"toy", {{"A", 1}}}).ok());  // B missing
  EXPECT_FALSE(toy().check(Config{"other", {{"A", 1}, {"B", 2}}}).ok());
}

// admits() is check().ok() without the message: the same verdict on every combination of legal and illegal values,
// missing and unknown parameters, and another family.
TEST(ParamSpace, AdmitsWhatCheckAccepts) {
  const ParamSpace s = toy();
  std::vector<Config> configs;
  for (int64_t a : {0, 1, 2, 3, 4})
    for (int64_t b : {1, 2, 3, 8, 9}) configs.push_back(Config{"toy", {{"A", a}, {"B", b}}});
  configs.push_back(Config{"toy", {{"A", 1}}});
  configs.push_back(Config{"toy", {{"A", 1}, {"B", 2}, {"C", 1}}});
  configs.push_back(Config{"toy", {{"A", 1}, {"C", 2}}});
  configs.push_back(Config{"other", {{"A", 1}, {"B", 2}}});
  int admitted = 0;
  for (const Config& c : configs) {
    EXPECT_EQ(s.admits(c), s.check(c).ok()) << c.family << " " << c.describe();
    admitted += s.admits(c);
  }
  EXPECT_EQ(admitted, 6);  // the six legal combinations of EnumeratesOnlyLegalCombinations
}

// Long evenly spaced lists are named as ranges in messages; short or uneven ones value by value.
TEST(ParamSpaceValues, LongRunsReadAsRanges) {
  std::vector<int64_t> kc;
  for (int64_t v = 8; v <= 4096; v += 8) kc.push_back(v);
  EXPECT_EQ(values_text(kc), "8 to 4096 in steps of 8");
  EXPECT_EQ(values_text({6, 12, 14}), "6, 12, 14");
  EXPECT_EQ(values_text({1, 2, 3, 4, 5, 7, 64, 128}), "1 to 5 in steps of 1, 7, 64, 128");
  EXPECT_EQ(values_text({}), "");
  ParamSpace space{"toy", {{"KC", kc, "data scheduling", ""}}, {}};
  auto pinned = space.pin(Config{"toy", {{"KC", 8}}}, {{"KC", 12}});
  ASSERT_FALSE(pinned);
  EXPECT_NE(pinned.status().message().find("allowed: 8 to 4096 in steps of 8"), std::string::npos)
      << pinned.status().message();
}

}  // namespace
}  // namespace tileforge
