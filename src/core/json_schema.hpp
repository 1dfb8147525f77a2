// Structural checks of input JSON (chip records, suites, tuning-DB exports) against the schemas of schemas/, which
// are compiled into the library; the first violation comes back with the field's path and the rule in words.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace tileforge {

struct SchemaViolation {
  std::string field;  // "caches[0].kind"; "(top level)" for the document itself
  std::string rule;   // "'x' is not a known cache kind (allowed: data, unified)", "is missing", "must be a string"
};

// The first way `doc` breaks the embedded schema `schema_file` ("chip.schema.json"), or nullopt when it holds.
// Unknown fields are reported before missing ones, and those before wrong values, so that a misspelt key is named
// as such rather than as the key it was meant to be. The rule's words come from the schema: "must be " and the
// failing node's "description" (else its type), "is not a known <title>" with an enum's values, "is missing", "is not
// a known field" with the node's properties.
std::optional<SchemaViolation> schema_violation(const nlohmann::json& doc, std::string_view schema_file);

}  // namespace tileforge
