// CLI11 validators for tileforge's options: bad input is refused while the command line is parsed, by name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/expected.hpp"

namespace tileforge::cli::check {

// Each validator's message reads "'VALUE' is ... (allowed: RULE)"; CLI11 puts the option's name in front, so that
// every refusal names the option and the rule in the tool's one style. Every one refuses an empty value (an unset
// shell variable would otherwise read as "not given" and fall back to the default without a word).

// A whole decimal integer in [min, max]; `allowed` states the rule ("an integer >= 1", "1 to 32").
CLI::Validator integer(int64_t min, int64_t max, std::string allowed);
// A finite number of seconds, >= 0 with zero_ok, else > 0.
CLI::Validator seconds(bool zero_ok);
// A finite number (alpha, beta).
CLI::Validator finite_number();
// One of `names`; `what` names the kind ("format") in the message.
CLI::Validator one_of(std::vector<std::string> names, std::string what);
// A builtin name or an existing file (--profile, --suite).
CLI::Validator name_or_file(std::function<std::vector<std::string>()> names, std::string what);
// An existing file (not a folder).
CLI::Validator existing_file();
// A domain parser's verdict (shapes, dtypes, layouts, NAME=VALUE pins, sizes): its own message, which names the
// option first, loses that prefix since CLI11 adds it.
CLI::Validator parsed_by(std::string option, std::function<Status(const std::string&)> parse);
// Any non-empty value (free text such as a family filter or a hash prefix checked later against the DB).
CLI::Validator non_empty();

}  // namespace tileforge::cli::check
