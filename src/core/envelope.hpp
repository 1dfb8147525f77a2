// The keys every verb's JSON report opens with (schemas/envelope.schema.json): tool, version and verb.
#pragma once

#include <string>
#include <string_view>

#include "tileforge/tileforge.hpp"

namespace tileforge {

// A JSON object (nlohmann's json or ordered_json) with "tool", "version" and "verb"; the caller adds "environment",
// "rows" and its own keys after them.
template <class Json>
Json envelope(std::string_view verb) {
  Json doc;
  doc["tool"] = "tileforge";
  doc["version"] = std::string(version());
  doc["verb"] = std::string(verb);
  return doc;
}

}  // namespace tileforge
