// One tuning result as the DB stores it: key (device, backend, kernel family and version, problem) and value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"  // iso_time, iso_date_now: the stamps records carry
#include "core/expected.hpp"
#include "db/keys.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::db {

// Where a record came from: measured by a tuner writing into this DB, or merged in from an export.
enum class Source { tuned, imported };
std::string_view to_string(Source);
Expected<Source> parse_source(std::string_view text);

// The contract's rules for a measurement to trust, restated here because the DB layer sits below measure/ (which
// defines them: measure::kSpreadIqrLimit in protocol.hpp, measure::kHostBusyCores in host_load.hpp). tune.cpp sees
// both layers and static_asserts that the two stay equal.
inline constexpr double kSpreadIqrLimit = 0.30;  // (q3 - q1) / median above it: the reps disagree
inline constexpr double kHostBusyCores = 0.3;    // other processes' cores beyond the spare ones above it: busy host

// What Timing::quality() finds: whether the measurement can be trusted, and if not why.
struct Quality {
  bool noisy = false;  // the reps spread more than kSpreadIqrLimit of the median
  bool busy = false;   // other processes took more than kHostBusyCores of the cores our threads wanted
  // Empty when clean: "measured noisy (reps spread 0.42 of the median, limit 0.30)".
  std::string why;
  bool clean() const { return !noisy && !busy; }
};

// The measured time distribution under the benchmark contract.
struct Timing {
  Timing() = default;
  // The v1 form {median, min, max, reps}: quartiles and host load unknown. A constructor rather than an aggregate,
  // so that this form stays the short one without warnings about the optional members it leaves out.
  Timing(double median, double min, double max, int64_t count)
      : median_ms(median), min_ms(min), max_ms(max), reps(count) {}

  double median_ms = 0, min_ms = 0, max_ms = 0;
  int64_t reps = 0;
  // Schema v2: the reps' first and third quartiles, other processes' use of the machine while they ran (in cores)
  // and the cores our threads left them. nullopt = unknown: rows stored by schema v1, imports that lack them, and
  // the host load where the counters could not be read.
  std::optional<double> q1_ms, q3_ms;
  std::optional<double> others_cores, spare_cores;

  // (q3 - q1) / median, when both quartiles are known.
  std::optional<double> iqr_share() const;
  // The rules of measure::Timing::spread() and busy() on what is known. Unknown fields count as clean: v1 records
  // were all stored by a tuner that already refused winners whose reps spread.
  Quality quality() const;
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
  // Schema v3: which machine and which of its devices measured it, so that a DB merged from a pool of devices (an
  // MPI tune, imports) says where each number came from. Not part of the key: equal fingerprints measure alike.
  // Empty / nullopt = unknown (rows stored before v3, imports that lack them).
  std::string host;                    // the measuring machine's host name
  std::optional<int64_t> device_index; // the device's ordinal on that host (cuda:N; 0 for the CPU)
  // Schema v4, part of the key: whether the config gives the same bits from run to run (every split-K / stream-K
  // tile summed in a fixed order), or adds a shared tile's slices by float atomics in arrival order (false: a
  // config only the non-deterministic policy allows, tuned under --nondeterministic). A problem may hold one record
  // of each; deterministic lookups read only the first kind.
  bool deterministic = true;

  const std::string& family() const { return config.family; }
};

// One line for `db list` and logs: "#12 cuda sm90 v3 4096x4096x4096 f16->f16 acc f32 RR align 16 on NVIDIA H200
// (sm_90a, ...): BLOCK_M=128 ...; median 0.202 ms (min 0.201, max 0.204, 100 reps, spread 0.02), 680.4 TFLOP/s,
// rel error 2.1e-04, tuned 2026-03-01T12:00:00Z" (illustrative numbers; the spread only where the quartiles are
// known).
std::string describe(const Record& record);

// A problem with a record: the field as the JSON export names it ("time_ms.median", "problem.align") and why.
struct FieldError {
  std::string field;
  std::string why;
};
// The plausible range of what a tuner measures, in one place. A record outside it is a unit mix-up, a broken timer
// or a forged row, never a real GEMM, and it would win (or lose) every comparison of the best-median rule: a median
// of 0 or 1e-300 would be dispatched forever and keep every later real result out.
struct Plausible {
  // 0.1 ns: less than one clock cycle of any chip (6 GHz is 0.17 ns), while even a 1x1x1 call takes dozens of
  // cycles (a GPU launch microseconds); a smaller time comes from a broken timer or a wrong unit. 0, -1 and 1e-300
  // all fall below it.
  static constexpr double min_ms = 1e-7;
  // 6 hours for one call: the largest problem tileforge takes runs for minutes on one slow core, and a tuner
  // repeats every config, so a call of hours was never measured; it is a seconds-for-milliseconds mix-up.
  static constexpr double max_ms = 6 * 3600 * 1e3;
  // 20 PFLOP/s: more than twice the densest rate any single chip specifies today, in any precision; a faster record
  // timed something other than the whole GEMM.
  static constexpr double max_tflops = 2e4;
  // TFLOP/s must be 2*M*N*K*batch / median to within 1% (tune computes it exactly so); more is a hand-edited row.
  static constexpr double tflops_tolerance = 0.01;
};

// Checks every value a record carries (sizes >= 1, known dtypes and a legal precision policy, an alignment class
// the dtypes allow, a device kind cpu or gpu, min <= median <= max within Plausible's bounds, both quartiles or
// neither with min <= q1 <= median <= q3 <= max, host load finite and >= 0 where known, TFLOP/s finite, plausible
// and consistent with the median, finite non-negative errors, an ISO time or none, parameter names).
std::optional<FieldError> check_record(const Record& record);

// What this build knows about names and parameters: the backends, their device kinds, the kernel families and
// the legal values of their parameters. The DB layer sits below the kernel-family registry, so the layer that
// sees it (the command line) installs the check, once, before any DB is used; it answers the first problem of a
// record or nullopt. Without rules, only check_record's checks are made.
using RecordRules = std::function<std::optional<FieldError>(const Record&)>;
void set_record_rules(RecordRules rules);  // process-wide; an empty function removes them

// check_record, then the installed rules: what every write, import and read of the DB applies.
std::optional<FieldError> validate_record(const Record& record);

// The config as JSON text, as bench JSON and exports write it: {"family": "sm80", "BLOCK_M": 128, ...}.
std::string config_to_json(const Config& config);
// Parses config_to_json's format; `what` names the field in messages ("records[3].config").
Expected<Config> config_from_json(std::string_view text, std::string_view what);

// Whether text is exactly "YYYY-MM-DDTHH:MM:SSZ" with plausible field values.
bool is_iso_time(std::string_view text);

}  // namespace tileforge::db
