// One tuning result as the DB stores it: key (device, backend, kernel family and version, problem) and value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/expected.hpp"
#include "db/keys.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::db {

// Where a record came from: measured by a tuner writing into this DB, or merged in from an export.
enum class Source { tuned, imported };
std::string_view to_string(Source);
Expected<Source> parse_source(std::string_view text);

// The measured time distribution under the benchmark contract.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int64_t reps = 0;
};

struct Record {
  int64_t id = 0;             // row id in the store (for `db show`); 0 for a record not read from a store
  Fingerprint device;
  std::string backend;        // "cuda", "cpu"
  int64_t family_version = 0; // the kernel family's declared version (config.family names the family)
  Signature problem;
  Config config;              // family + named integer parameters
  Timing time;
  double tflops = 0;
  double rel_error = 0;
  double max_scaled_error = 0;
  std::string tool_version;   // tileforge version that measured it
  std::string created_at;     // ISO 8601 UTC, "2026-03-01T12:00:00Z"; empty on upsert = now
  Source source = Source::tuned;

  const std::string& family() const { return config.family; }
};

// One line for `db list` and logs: "#12 cuda sm80 v1 4096x4096x4096 f16->f16 acc f32 RR align 16 on NVIDIA H200
// (sm_90a, ...): BLOCK_M=128 ...; median 0.171 ms (min 0.169, max 0.175, 100 reps), 803.2 TFLOP/s, rel error
// 1.2e-04, tuned 2026-03-01T12:00:00Z".
std::string describe(const Record& record);

// A problem with a record: the field as the JSON export names it ("time_ms.median", "problem.align") and why.
struct FieldError {
  std::string field;
  std::string why;
};
// Checks every value a record carries (sizes >= 1, known dtypes and a legal precision policy, an alignment class
// the dtypes allow, min <= median <= max, finite non-negative errors, an ISO time or none, parameters present).
std::optional<FieldError> check_record(const Record& record);

// The config as JSON text, as bench JSON and exports write it: {"family": "sm80", "BLOCK_M": 128, ...}.
std::string config_to_json(const Config& config);
// Parses config_to_json's format; `what` names the field in messages ("records[3].config").
Expected<Config> config_from_json(std::string_view text, std::string_view what);

// The current UTC time as "YYYY-MM-DDTHH:MM:SSZ", and the same for a number of seconds since the epoch.
std::string iso_now();
std::string iso_time(int64_t unix_seconds);
// Whether text is exactly "YYYY-MM-DDTHH:MM:SSZ" with plausible field values.
bool is_iso_time(std::string_view text);

}  // namespace tileforge::db
