// Input JSON checked against the embedded schemas: the field's path, the rule in the schema's words, and which of
// several violations is reported.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/json_schema.hpp"

namespace tileforge {
namespace {

using nlohmann::json;

json valid_suite() {
  return json{{"name", "t"}, {"dtype", "f32"}, {"out_dtype", "f32"}, {"accum", "f32"}, {"layout", "RR"},
              {"shapes", json::array({json::array({1, 2, 3}), json::array({4, 5, 6})})}};
}

TEST(JsonSchema, AValidDocumentHasNoViolation) {
  EXPECT_FALSE(schema_violation(valid_suite(), "suite.schema.json"));
}

TEST(JsonSchema, PathsNameKeysAndIndexes) {
  json j = valid_suite();
  j["shapes"][1][2] = -1;
  auto bad = schema_violation(j, "suite.schema.json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "shapes[1][2]");
  EXPECT_EQ(bad->rule, "must be an integer >= 0 that fits 64 bits");  // the node's description
}

TEST(JsonSchema, MissingAndUnknownFieldsAreNamed) {
  json j = valid_suite();
  j.erase("layout");
  auto bad = schema_violation(j, "suite.schema.json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "layout");
  EXPECT_EQ(bad->rule, "is missing");
  // A misspelt key is reported as unknown, with the known ones, before the missing key it was meant to be.
  j["layouts"] = "RR";
  bad = schema_violation(j, "suite.schema.json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "layouts");
  EXPECT_EQ(bad->rule, "is not a known field (known: accum, dtype, layout, name, note, out_dtype, shapes)");
}

TEST(JsonSchema, EnumsListWhatIsAllowed) {
  auto rate = [](auto v) { return json{{"value", v}, {"source", "test"}}; };
  json width = {{"vector_bits", 384},          {"fma_pipes", rate(2)},
                {"fma_latency_cycles", rate(4)}, {"load_ports_per_cycle", rate(2)},
                {"l2_bytes_per_core_cycle", rate(64)}, {"l3_bytes_per_core_cycle", rate(32)}};
  json j = {{"name", "x"}, {"display_name", "X"}, {"rates", json::array({width})}};
  auto bad = schema_violation(j, "uarch.schema.json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "rates[0].vector_bits");
  EXPECT_EQ(bad->rule, "'384' is not a known vector width (allowed: 128, 256 or 512)");
}

TEST(JsonSchema, TypesWithoutADescriptionAreNamedByType) {
  json j = {{"format", "tileforge-tuning-db"}, {"format_version", 2}, {"records", json::array({json::array()})}};
  auto bad = schema_violation(j, "tuning-db-export.schema.json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "records[0]");
  EXPECT_EQ(bad->rule.rfind("must be an object", 0), 0u) << bad->rule;
  bad = schema_violation(json::array(), "suite.schema.json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "(top level)");
  EXPECT_EQ(bad->rule, "must be a JSON object");
}

TEST(JsonSchema, AnUnknownSchemaIsTheBuildsFault) {
  EXPECT_THROW(schema_violation(valid_suite(), "no-such.schema.json"), std::logic_error);
}

}  // namespace
}  // namespace tileforge
