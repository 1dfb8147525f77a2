// Dispatch: which config our backend runs for a problem here — pins, then the tuning DB, then the planner, then the
// backend's heuristic — with the source and a one-line reason for bench rows and the decision log.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "db/keys.hpp"
#include "db/location.hpp"
#include "db/store.hpp"

namespace tileforge::dispatch {

struct DispatchOptions {
  std::vector<std::pair<std::string, int64_t>> pins;  // --set NAME=VALUE, applied on top of the chosen config
  db::LocationRequest db;                             // --db PATH / --no-db; else TILEFORGE_DB or the default
  bool use_planner = true;                            // false: the backend's heuristic when the DB has nothing
  // Options::deterministic: configs whose results vary from run to run (float-atomic sums) are refused wherever they
  // come from, the DB, the planner or a pin (KernelFamily::determinism); false (--nondeterministic) allows them.
  bool deterministic = true;
};

// What dispatch chose, and why.
struct Choice {
  Config config;
  // "pinned", "db-exact", "db-bucket", "db-arch", "planner" or "heuristic" (bench JSON's config_source).
  std::string source;
  // One line: the DB's reason for a hit, why the DB had nothing and what the planner chose, or what was pinned
  // on top of what.
  std::string reason;
  // DB records the backend's parameter space refused for this problem, each with its reason.
  std::vector<std::string> rejected;
};

// Chooses our config for `problem` (validated, normalized here) on `device`:
//   1. the tuning DB on the device's fingerprint (exact shape, shape bucket, then another fingerprint of the same
//      arch), each record vetoed by `ours.space(problem, device)` and the family's current version; a record whose
//      measurement was noisy or taken on a busy machine (db::Timing::quality()) is passed over for the planner,
//      the reason saying so;
//   2. else the planner's pick for the backend's family (plans are cached per problem and profile in-process);
//   3. else the backend's heuristic;
// and, when pins are given, the pins applied on top of that choice (source "pinned"); when a pin breaks one of the
// space's constraints on that base, the planner's best config with those pins instead. A record of another
// architecture is never used. The DB never makes this fail: an unreadable file warns once on stderr and plans.
// Fails (invalid_argument) for an invalid problem or a bad pin; unsupported when the backend finds no config.
Expected<Choice> choose_config(const Problem& problem, const Device& device, Backend& ours,
                               const DispatchOptions& options = {});

// Every field of a normalized problem a choice depends on, in one line (alpha left out; beta only as "reads C or
// not"): the key of the plan cache.
std::string problem_key(const Problem& problem);

// The fingerprint records of this device are stored and looked up under: the device's profile, with, on CUDA, the
// driver's and NVRTC's versions ("13.0"), and on the CPU the compiler that built the kernels ("GNU 12.2.0").
// The tuner writes under the same fingerprint, so that dispatch finds what it tuned.
db::Fingerprint running_fingerprint(const Device& device);

// The compiler that built this library ("GNU 12.2.0", "Clang 16.0.6"): the CPU kernels' part of a fingerprint.
std::string compiler_id();

// The kernel families this build runs, each with its current version (what `db prune --stale-versions` keeps).
std::map<std::string, int64_t> current_family_versions();

// The tuning DB dispatch reads at `location`: opened read-only once per process and path and kept (a file that
// does not exist yet is looked for again on the next call, so a DB that tune creates later is found). An
// unreadable file is reported once per path on stderr, then kept as refused.
std::shared_ptr<const db::DispatchDb> dispatch_db(const db::Location& location);

// How many plans this process has made for dispatch (tests check that the plan cache works).
uint64_t dispatch_plans_made();

}  // namespace tileforge::dispatch
