// Record values: checking them, the config's JSON text, ISO time stamps.
#include "db/record.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tileforge::db {

std::string_view to_string(Source s) { return s == Source::tuned ? "tuned" : "imported"; }

Expected<Source> parse_source(std::string_view text) {
  if (text == "tuned") return Source::tuned;
  if (text == "imported") return Source::imported;
  return invalid_argument(fmt::format("source '{}' is not known (allowed: tuned, imported)", text));
}

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return !(s[0] >= '0' && s[0] <= '9');
}

}  // namespace

namespace {

// The record's times: positive, plausible, in order with their quartiles; the load counts finite.
std::optional<FieldError> check_timing(const Timing& t) {
  auto bad = [](std::string field, std::string why) { return std::optional<FieldError>(FieldError{field, why}); };
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  // Not plausible: outside [0.1 ns, 6 h] (see Plausible for why those bounds).
  auto time_error = [&](const char* field, double v) -> std::optional<FieldError> {
    if (!positive(v)) return FieldError{field, fmt::format("is {}; must be a positive number", v)};
    if (v < Plausible::min_ms || v > Plausible::max_ms) {
      return FieldError{field, fmt::format("is {} ms; a GEMM call takes between {} ms (0.1 ns) and {} ms (6 h)", v,
                                           Plausible::min_ms, Plausible::max_ms)};
    }
    return std::nullopt;
  };
  if (auto e = time_error("time_ms.median", t.median_ms)) return e;
  if (auto e = time_error("time_ms.min", t.min_ms)) return e;
  if (auto e = time_error("time_ms.max", t.max_ms)) return e;
  if (t.min_ms > t.median_ms || t.median_ms > t.max_ms) {
    return bad("time_ms", fmt::format("min {} <= median {} <= max {} does not hold", t.min_ms, t.median_ms, t.max_ms));
  }
  if (t.reps < 1) return bad("time_ms.reps", fmt::format("is {}; must be >= 1", t.reps));
  // The quartiles: both or neither (the spread needs both), and in order with min, median and max. A forged
  // q3 < q1 would make a noisy measurement look clean. The slack of 1e-9 of the value is for rounding only: the
  // quartiles are interpolated between reps, the median of an even count averaged.
  if (t.q1_ms.has_value() != t.q3_ms.has_value()) {
    return bad(t.q1_ms ? "time_ms.q3" : "time_ms.q1",
               fmt::format("is missing while time_ms.{} is given; give both quartiles or neither",
                           t.q1_ms ? "q1" : "q3"));
  }
  if (t.q1_ms) {
    if (!positive(*t.q1_ms)) return bad("time_ms.q1", fmt::format("is {}; must be a positive number", *t.q1_ms));
    if (!positive(*t.q3_ms)) return bad("time_ms.q3", fmt::format("is {}; must be a positive number", *t.q3_ms));
    auto at_most = [](double a, double b) { return a <= b + 1e-9 * std::abs(b); };
    if (!(at_most(t.min_ms, *t.q1_ms) && at_most(*t.q1_ms, t.median_ms) && at_most(t.median_ms, *t.q3_ms) &&
          at_most(*t.q3_ms, t.max_ms))) {
      return bad("time_ms", fmt::format("min {} <= q1 {} <= median {} <= q3 {} <= max {} does not hold", t.min_ms,
                                        *t.q1_ms, t.median_ms, *t.q3_ms, t.max_ms));
    }
  }
  for (auto [name, v] : {std::pair{"time_ms.others_cores", t.others_cores},
                         std::pair{"time_ms.spare_cores", t.spare_cores}}) {
    if (v && !(std::isfinite(*v) && *v >= 0)) {
      return bad(name, fmt::format("is {}; must be a finite number of cores >= 0 (or unknown)", *v));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<FieldError> check_record(const Record& r) {
  auto bad = [](std::string field, std::string why) { return std::optional<FieldError>(FieldError{field, why}); };
  if (r.device.kind != "cpu" && r.device.kind != "gpu") {
    return bad("device.kind", fmt::format("'{}' is not a device kind (allowed: cpu, gpu)", r.device.kind));
  }
  if (r.device.name.empty()) return bad("device.name", "must not be empty");
  if (r.device.arch.empty()) return bad("device.arch", "must not be empty");
  if (r.device.cores < 0) return bad("device.cores", fmt::format("is {}; must be >= 0", r.device.cores));
  if (r.device.clock_mhz < 0) return bad("device.clock_mhz", fmt::format("is {}; must be >= 0", r.device.clock_mhz));
  if (r.backend.empty()) return bad("backend", "must not be empty");
  // A host name as gethostname() gives it (at most 255 printable characters, no spaces): anything else is a
  // hand-edited row, and a line break in it would forge lines of `db list`.
  if (r.host.size() > 255) return bad("measured_on.host", fmt::format("has {} characters; at most 255", r.host.size()));
  for (char c : r.host) {
    if (c <= ' ' || c > '~') return bad("measured_on.host", "must be printable characters without spaces");
  }
  if (r.device_index && (*r.device_index < 0 || *r.device_index > 1024)) {
    return bad("measured_on.device_index", fmt::format("is {}; must be 0 to 1024", *r.device_index));
  }
  if (r.family_version < 0) return bad("family_version", fmt::format("is {}; must be >= 0", r.family_version));

  const Signature& s = r.problem;
  for (auto [name, v] : {std::pair{"problem.m", s.m}, std::pair{"problem.n", s.n}, std::pair{"problem.k", s.k},
                         std::pair{"problem.batch", s.batch}}) {
    if (v < 1) return bad(name, fmt::format("is {}; must be >= 1", v));
  }
  const Problem p = problem_of(s);
  if (Status st = p.validate(); !st) return bad("problem", st.message());
  const int narrowest = int(std::min(size_of(s.input), size_of(s.output)));
  if (s.align != 2 && s.align != 4 && s.align != 8 && s.align != 16) {
    return bad("problem.align", fmt::format("is {}; must be 2, 4, 8 or 16", s.align));
  }
  if (s.align < narrowest) {
    return bad("problem.align", fmt::format("is {}, below the {}-byte elements of {}->{} (must be >= {})", s.align,
                                            narrowest, to_string(s.input), to_string(s.output), narrowest));
  }

  if (r.config.family.empty()) return bad("config.family", "must not be empty");
  for (const auto& [name, value] : r.config.params) {
    if (!is_identifier(name) || name == "family") {
      return bad("config", fmt::format("parameter name '{}' is not an identifier (letters, digits, _)", name));
    }
  }

  const Timing& t = r.time;
  if (auto e = check_timing(t)) return e;
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  auto non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  if (!positive(r.tflops)) return bad("tflops", fmt::format("is {}; must be a positive number", r.tflops));
  if (r.tflops > Plausible::max_tflops) {
    return bad("tflops", fmt::format("is {}; no chip computes more than {} TFLOP/s", r.tflops, Plausible::max_tflops));
  }
  {
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k) * double(s.batch);
    const double expected = flops / (t.median_ms * 1e-3) / 1e12;
    if (!(std::abs(r.tflops - expected) <= Plausible::tflops_tolerance * expected)) {
      return bad("tflops", fmt::format("is {:.6g}, but {} in {} ms is {:.6g} TFLOP/s (allowed: within {}%)", r.tflops,
                                       s.shape(), t.median_ms, expected, Plausible::tflops_tolerance * 100));
    }
  }
  if (!non_negative(r.rel_error)) {
    return bad("rel_error", fmt::format("is {}; must be a finite number >= 0", r.rel_error));
  }
  if (!non_negative(r.max_scaled_error)) {
    return bad("max_scaled_error", fmt::format("is {}; must be a finite number >= 0", r.max_scaled_error));
  }
  if (r.tool_version.empty()) return bad("tool_version", "must not be empty");
  if (!r.created_at.empty() && !is_iso_time(r.created_at)) {
    return bad("created_at", fmt::format("'{}' is not YYYY-MM-DDTHH:MM:SSZ (UTC)", r.created_at));
  }
  return std::nullopt;
}

std::optional<double> Timing::iqr_share() const {
  if (!q1_ms || !q3_ms || !(median_ms > 0)) return std::nullopt;
  return (*q3_ms - *q1_ms) / median_ms;
}

Quality Timing::quality() const {
  Quality q;
  std::string why;
  if (const auto share = iqr_share(); share && *share > kSpreadIqrLimit) {
    q.noisy = true;
    why = fmt::format("measured noisy (reps spread {:.2f} of the median, limit {:.2f})", *share, kSpreadIqrLimit);
  }
  // As measure::Timing::busy(): an unknown spare count leaves the others no spare core.
  if (others_cores && *others_cores >= 0) {
    const double spare = std::max(0.0, spare_cores.value_or(0.0));
    if (*others_cores > spare + kHostBusyCores) {
      q.busy = true;
      why += fmt::format("{}measured on a busy host (other processes used {:.2f} cores, {:.0f} spare; limit {:.2f} "
                         "beyond the spare)",
                         why.empty() ? "" : " and ", *others_cores, spare, kHostBusyCores);
    }
  }
  q.why = std::move(why);
  return q;
}

namespace {

// NOTE: set once at start-up by the command line, read by every DB call: a shared_ptr under a lock, so that a
// reader keeps the rules it started with.
std::mutex& rules_mutex() {
  static std::mutex mu;
  return mu;
}
std::shared_ptr<const RecordRules>& rules_slot() {
  static std::shared_ptr<const RecordRules> rules;
  return rules;
}

}  // namespace

void set_record_rules(RecordRules rules) {
  std::lock_guard lock(rules_mutex());
  rules_slot() = rules ? std::make_shared<const RecordRules>(std::move(rules)) : nullptr;
}

std::optional<FieldError> validate_record(const Record& record) {
  if (auto e = check_record(record)) return e;
  std::shared_ptr<const RecordRules> rules;
  {
    std::lock_guard lock(rules_mutex());
    rules = rules_slot();
  }
  if (rules) return (*rules)(record);
  return std::nullopt;
}

std::string describe(const Record& r) {
  std::string params;
  for (const auto& [name, value] : r.config.params) {
    params += fmt::format("{}{}={}", params.empty() ? "" : " ", name, value);
  }
  const auto share = r.time.iqr_share();
  std::string where;
  if (!r.host.empty() || r.device_index) {
    where = fmt::format(", measured on {}{}", r.host.empty() ? "an unknown host" : r.host,
                        r.device_index ? fmt::format(" device {}", *r.device_index) : "");
  }
  return fmt::format("#{} {} {} v{} {}{} on {}: {}; median {:.4g} ms (min {:.4g}, max {:.4g}, {} reps{}), {:.1f} "
                     "TFLOP/s, rel error {:.1e}, {} {}{}",
                     r.id, r.backend, r.config.family, r.family_version, r.problem.key(),
                     r.deterministic ? "" : " nondeterministic", r.device.describe(), params,
                     r.time.median_ms, r.time.min_ms, r.time.max_ms, r.time.reps,
                     share ? fmt::format(", spread {:.2f}", *share) : "", r.tflops, r.rel_error, to_string(r.source),
                     r.created_at, where);
}

std::string config_to_json(const Config& config) {
  // ordered_json keeps "family" first, then the parameters in the map's (alphabetical) order: stable text.
  nlohmann::ordered_json j;
  j["family"] = config.family;
  for (const auto& [name, value] : config.params) j[name] = value;
  return j.dump();
}

Expected<Config> config_from_json(std::string_view text, std::string_view what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(fmt::format("{}: not valid JSON", what));
  if (!j.is_object()) return invalid_argument(fmt::format("{}: must be an object", what));
  Config c;
  for (const auto& [name, value] : j.items()) {
    if (name == "family") {
      if (!value.is_string()) return invalid_argument(fmt::format("{}.family: must be a string", what));
      c.family = value.get<std::string>();
    } else {
      if (!value.is_number_integer()) {
        return invalid_argument(fmt::format("{}.{}: must be an integer, not {}", what, name, value.dump()));
      }
      c.params[name] = value.get<int64_t>();
    }
  }
  if (c.family.empty()) return invalid_argument(fmt::format("{}.family: missing or empty", what));
  return c;
}

bool is_iso_time(std::string_view s) {
  // NOTE: one fixed form so that text order is time order (prune compares the strings in SQL).
  if (s.size() != 20) return false;
  static constexpr std::string_view pattern = "dddd-dd-ddTdd:dd:ddZ";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (pattern[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pattern[i]) return false;
  }
  auto num = [&](std::size_t at, std::size_t len) {
    int v = 0;
    for (std::size_t i = at; i < at + len; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  const int month = num(5, 2), day = num(8, 2), hour = num(11, 2), minute = num(14, 2), second = num(17, 2);
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 60;
}

}  // namespace tileforge::db
