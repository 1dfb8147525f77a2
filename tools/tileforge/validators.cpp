// CLI11 validators for tileforge's options: integers, seconds, names, files and domain parsers, in one style.
#include "validators.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/parse.hpp"

namespace tileforge::cli::check {
namespace {

constexpr const char* kEmpty = "is empty (allowed: a value; or leave the option out for its default)";

// The validator's description is left empty: the option's help text already says what is allowed, and CLI11
// would print the description after it.
CLI::Validator make(std::function<std::string(const std::string&)> rule, std::string name) {
  return CLI::Validator(
      [rule = std::move(rule)](std::string& value) { return value.empty() ? std::string(kEmpty) : rule(value); }, "",
      std::move(name));
}

bool parse_number(const std::string& text, double& v) {
  char* end = nullptr;
  errno = 0;
  v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno != ERANGE && std::isfinite(v);
}

}  // namespace

CLI::Validator integer(int64_t min, int64_t max, std::string allowed) {
  return make(
      [=](const std::string& text) -> std::string {
        auto v = parse_int(text, "value");
        if (!v) return fmt::format("'{}' is not an integer (allowed: {})", text, allowed);
        if (*v < min || *v > max) return fmt::format("{} is out of range (allowed: {})", *v, allowed);
        return {};
      },
      "integer");
}

CLI::Validator seconds(bool zero_ok) {
  const std::string allowed = zero_ok ? "a number of seconds >= 0" : "a number of seconds > 0";
  return make(
      [=](const std::string& text) -> std::string {
        double v = 0;
        if (!parse_number(text, v)) return fmt::format("'{}' is not a number (allowed: {})", text, allowed);
        if (v < 0 || (!zero_ok && v == 0)) return fmt::format("{} is out of range (allowed: {})", text, allowed);
        return {};
      },
      "seconds");
}

CLI::Validator finite_number() {
  return make(
      [](const std::string& text) -> std::string {
        double v = 0;
        if (parse_number(text, v)) return {};
        return fmt::format("'{}' is not a finite number (allowed: a number such as 1 or -0.5)", text);
      },
      "number");
}

CLI::Validator one_of(std::vector<std::string> names, std::string what) {
  return make(
      [names = std::move(names), what = std::move(what)](const std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return {};
        return fmt::format("'{}' is not a known {} (allowed: {})", text, what, fmt::join(names, ", "));
      },
      "one of");
}

CLI::Validator name_or_file(std::function<std::vector<std::string>()> names, std::string what) {
  return make(
      [names = std::move(names), what = std::move(what)](const std::string& text) -> std::string {
        const std::vector<std::string> known = names();
        if (std::find(known.begin(), known.end(), text) != known.end()) return {};
        std::error_code ec;
        if (std::filesystem::is_regular_file(text, ec)) return {};
        return fmt::format("'{}' is neither a builtin {} nor an existing file (allowed: {}, or a JSON file)", text,
                           what, fmt::join(known, ", "));
      },
      "name or file");
}

CLI::Validator existing_file() {
  return make(
      [](const std::string& text) -> std::string {
        // Any file that exists: a FIFO or /dev/stdin (a shell's process substitution) reads as well as a regular one.
        std::error_code ec;
        const auto status = std::filesystem::status(text, ec);
        if (!std::filesystem::exists(status)) return fmt::format("'{}' does not exist (allowed: an existing file)", text);
        if (std::filesystem::is_directory(status)) return fmt::format("'{}' is a folder (allowed: a file)", text);
        return {};
      },
      "existing file");
}

CLI::Validator parsed_by(std::string option, std::function<Status(const std::string&)> parse) {
  return make(
      [option = std::move(option), parse = std::move(parse)](const std::string& text) -> std::string {
        Status s = parse(text);
        if (s) return {};
        std::string message = s.message();
        for (const std::string& prefix : {option + " ", option + ": "}) {
          if (message.starts_with(prefix)) message.erase(0, prefix.size());
        }
        return message;
      },
      "parsed");
}

CLI::Validator non_empty() {
  return make([](const std::string&) { return std::string(); }, "non-empty");
}

}  // namespace tileforge::cli::check
