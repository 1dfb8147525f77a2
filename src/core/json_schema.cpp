// Validation of input JSON with valijson (JSON Schema draft 7, through its nlohmann-json adapter) against the
// schemas embedded from schemas/; turns valijson's first error into the field's path and the schema's words.
#include "core/json_schema.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>  // before valijson, whose exceptions.hpp would include it inside its namespace
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#define VALIJSON_USE_EXCEPTIONS 1
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "core/embedded.hpp"

namespace tileforge {

namespace {

using nlohmann::json;

struct LoadedSchema {
  json document;  // kept for the words of the rules (descriptions, titles, enums, properties)
  valijson::Schema schema;
};

// Each schema is parsed once per process; a schema that is missing or broken is the build's fault, not the input's.
const LoadedSchema& loaded_schema(std::string_view file) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<LoadedSchema>, std::less<>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(file); it != cache.end()) return *it->second;
  std::string_view text;
  for (const auto& [name, contents] : embedded::embedded_schemas())
    if (name == file) text = contents;
  if (text.empty()) throw std::logic_error(fmt::format("schema {} is not compiled in", file));
  auto loaded = std::make_unique<LoadedSchema>();
  loaded->document = json::parse(text);
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter adapter(loaded->document);
  parser.populateSchema(adapter, loaded->schema);
  return *cache.emplace(std::string(file), std::move(loaded)).first->second;
}

// valijson's context ("<root>", "[caches]", "[0]", ...) as the path people write ("caches[0]"); whether "[0]" is an
// index or a key named "0" is read from the document.
struct Located {
  std::string path;
  std::vector<std::string> steps;  // keys and indexes, for walking the schema
  const json* node = nullptr;      // the value at the path, when it exists
};

Located locate(const json& doc, const std::vector<std::string>& context) {
  Located at;
  at.node = &doc;
  for (std::size_t i = 1; i < context.size(); ++i) {
    std::string step = context[i];
    if (step.size() >= 2 && step.front() == '[' && step.back() == ']') step = step.substr(1, step.size() - 2);
    const bool index = at.node && at.node->is_array();
    at.path += index ? "[" + step + "]" : (at.path.empty() ? step : "." + step);
    at.steps.push_back(step);
    if (!at.node) continue;
    if (index) {
      const std::size_t k = std::stoul(step);
      at.node = k < at.node->size() ? &(*at.node)[k] : nullptr;
    } else {
      auto it = at.node->find(step);
      at.node = it != at.node->end() ? &*it : nullptr;
    }
  }
  return at;
}

// The schema node that describes the value at `steps`: properties, additionalProperties or items, through local
// "$ref"s ("#/definitions/name").
const json* resolve(const json& root, const json* node) {
  for (int depth = 0; node && node->is_object() && node->contains("$ref") && depth < 8; ++depth) {
    const std::string ref = (*node)["$ref"].get<std::string>();
    node = ref.rfind("#/", 0) == 0 ? &root.at(json::json_pointer(ref.substr(1))) : nullptr;
  }
  return node;
}

const json* schema_at(const json& root, const std::vector<std::string>& steps, const json& doc) {
  const json* node = resolve(root, &root);
  const json* value = &doc;
  for (const std::string& step : steps) {
    if (!node || !node->is_object()) return nullptr;
    if (value && value->is_array()) {
      node = node->contains("items") ? &(*node)["items"] : nullptr;
      const std::size_t k = std::stoul(step);
      value = k < value->size() ? &(*value)[k] : nullptr;
    } else {
      if (node->contains("properties") && (*node)["properties"].contains(step)) {
        node = &(*node)["properties"][step];
      } else {
        node = node->contains("additionalProperties") ? &(*node)["additionalProperties"] : nullptr;
      }
      if (value && value->is_object() && value->contains(step)) {
        value = &(*value)[step];
      } else {
        value = nullptr;
      }
    }
    node = resolve(root, node);
  }
  return node;
}

std::string type_words(const json& type) {
  static const std::map<std::string, std::string> words = {
      {"string", "a string"},   {"integer", "an integer"}, {"number", "a number"}, {"boolean", "true or false"},
      {"object", "an object"},  {"array", "an array"},     {"null", "null"}};
  if (type.is_string()) return words.count(type.get<std::string>()) ? words.at(type.get<std::string>()) : "valid";
  std::string out;
  for (std::size_t i = 0; i < type.size(); ++i)
    out += (i == 0 ? "" : i + 1 == type.size() ? " or " : ", ") + type_words(type[i]);
  return out;
}

// "a, b or c".
std::string join_values(const json& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const json& v = values[i];
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// The text in quotes at the end of valijson's "... property 'name'." messages.
std::string quoted_name(const std::string& description) {
  const std::size_t end = description.rfind('\'');
  const std::size_t begin = end == std::string::npos || end == 0 ? std::string::npos : description.rfind('\'', end - 1);
  return begin == std::string::npos ? std::string() : description.substr(begin + 1, end - begin - 1);
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// valijson reports each failure again on every enclosing node; only the innermost says what is wrong.
bool is_enclosing_report(const std::string& d) {
  return starts_with(d, "Failed to validate against schema associated with property name") ||
         starts_with(d, "Failed to validate item #") ||
         starts_with(d, "Failed to validate against additional properties schema") ||
         starts_with(d, "Failed to validate against schema associated with pattern");
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

SchemaViolation describe(const json& schema_root, const json& doc, const valijson::ValidationResults::Error& e) {
  const Located at = locate(doc, e.context);
  const json* node = schema_at(schema_root, at.steps, doc);
  const std::string field = at.path.empty() ? "(top level)" : at.path;
  if (starts_with(e.description, "Missing required property"))
    return {join_path(at.path, quoted_name(e.description)), "is missing"};
  if (starts_with(e.description, "Object contains a property that could not be validated")) {
    std::string known;
    if (node && node->contains("properties"))
      for (const auto& [key, value] : (*node)["properties"].items()) known += (known.empty() ? "" : ", ") + key;
    return {join_path(at.path, quoted_name(e.description)), fmt::format("is not a known field (known: {})", known)};
  }
  if (node && node->contains("enum") && starts_with(e.description, "Failed to match against any enum values")) {
    const std::string value = at.node ? (at.node->is_string() ? at.node->get<std::string>() : at.node->dump()) : "";
    return {field, fmt::format("'{}' is not a known {} (allowed: {})", value, node->value("title", "value"),
                               join_values((*node)["enum"]))};
  }
  // The top level's description documents the file; its type is the rule.
  if (node && !at.path.empty() && node->contains("description"))
    return {field, "must be " + (*node)["description"].get<std::string>()};
  if (node && at.path.empty() && node->value("type", "") == "object") return {field, "must be a JSON object"};
  if (node && node->contains("type")) return {field, "must be " + type_words((*node)["type"])};
  return {field, "is not valid: " + e.description};
}

}  // namespace

std::optional<SchemaViolation> schema_violation(const nlohmann::json& doc, std::string_view schema_file) {
  const LoadedSchema& loaded = loaded_schema(schema_file);
  valijson::Validator validator;  // strong types: "132" is not a number, 13.5 not an integer
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(doc);
  if (validator.validate(loaded.schema, target, &results)) return std::nullopt;
  const valijson::ValidationResults::Error* unknown = nullptr;
  const valijson::ValidationResults::Error* missing = nullptr;
  const valijson::ValidationResults::Error* wrong = nullptr;
  valijson::ValidationResults::Error e;
  std::vector<valijson::ValidationResults::Error> errors;
  while (results.popError(e)) errors.push_back(e);
  for (const auto& x : errors) {
    if (is_enclosing_report(x.description)) continue;
    if (starts_with(x.description, "Object contains a property that could not be validated")) {
      if (!unknown) unknown = &x;
    } else if (starts_with(x.description, "Missing required property")) {
      if (!missing) missing = &x;
    } else if (!wrong) {
      wrong = &x;
    }
  }
  const auto* first = unknown ? unknown : missing ? missing : wrong ? wrong : &errors.front();
  return describe(loaded.document, doc, *first);
}

}  // namespace tileforge
