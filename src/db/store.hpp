// The tuning DB: a SQLite file of best records per key, safe for several writers, with lookup and fallback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "db/keys.hpp"
#include "db/record.hpp"

namespace tileforge::db {

// ---- schema ---------------------------------------------------------------------------------------------------

// Runs one SQL text (several statements allowed) inside the migration's transaction.
using SqlExec = std::function<Status(std::string_view sql)>;

// One step of the schema: brings a file at version to_version - 1 to to_version. Steps run in order, each in its
// own write transaction that also sets PRAGMA user_version, so a crash leaves a file at one whole version.
struct Migration {
  int to_version = 0;
  std::string what;  // one line for logs: "v1: devices and records tables"
  std::function<Status(const SqlExec&)> apply;
};

// The steps this build knows (v1 ..). A new schema version is one more entry at the end.
const std::vector<Migration>& migrations();
// The version this build writes: the last entry's to_version.
int schema_version();

// ---- opening --------------------------------------------------------------------------------------------------

enum class Access {
  read_write,  // create the file (and its directories) when missing, migrate an older schema
  read_only,   // never create or migrate: a missing file or an older schema is refused (dispatch reads only)
};

struct OpenOptions {
  Access access = Access::read_write;
  int busy_timeout_ms = 10000;  // how long a writer waits for another one before giving up
  // Tests replace the list to exercise migrations; nullptr = migrations().
  const std::vector<Migration>* migrations = nullptr;
};

// ---- queries --------------------------------------------------------------------------------------------------

enum class Upsert { inserted, replaced, kept };
std::string_view to_string(Upsert);

// Empty fields match everything.
struct ListFilter {
  std::string device;   // fingerprint hash, or a prefix of it
  std::string backend;
  std::string family;
  std::string arch;
};

// Which records to delete: all given criteria must hold (an empty filter is refused, so nothing is deleted by
// accident).
struct PruneFilter {
  std::string older_than;                   // ISO time: records created before it
  std::string device;                       // fingerprint hash (whole)
  std::map<std::string, int64_t> current;   // family -> its current version: records of older versions
  bool dry_run = false;                     // count what would go, delete nothing
};

// A stored row that is not usable (validate_record refuses it, or a column no longer parses): never listed,
// exported or dispatched, and replaced by any valid new result for its key. `db check` lists them, `db prune
// --invalid` removes them.
struct InvalidRow {
  int64_t id = 0;
  std::string key;  // "cuda sm80 v1 4096x4096x4096 f16->f16 acc f32 RR align 16 on NVIDIA H200 (...)", as stored
  std::string why;  // "time_ms.median: is 0; must be a positive number"
  // "record #7 (KEY): WHY"
  std::string describe() const;
};

struct DeviceSummary {
  Fingerprint device;
  std::string hash;
  int64_t records = 0;
};

// ---- lookup ---------------------------------------------------------------------------------------------------

// How a config was chosen, as bench rows name it in `config_source`.
enum class Hit {
  exact,    // "db-exact": this fingerprint, this signature
  bucket,   // "db-bucket": this fingerprint, the nearest shape of the same bucket
  arch,     // "db-arch": another fingerprint of the same architecture (exact signature first, then bucket)
  planner,  // "planner": no usable record; the caller plans
};
std::string_view to_string(Hit);

struct LookupRequest {
  Fingerprint device;
  std::string backend;
  Problem problem;
  // The kernel families the backend runs here, each with its current version. Records of other families or of
  // another version are never returned (a new family version may change what its parameters mean).
  std::map<std::string, int64_t> families;
  // Optional: whether the record's config is legal for this problem here (the backend's ParamSpace::check).
  // A record it refuses is skipped, and the reason is kept in LookupResult::rejected.
  std::function<Support(const Record&)> accept;
  // The caller's determinism policy (Options::deterministic): true reads only the records whose configs give the
  // same bits from run to run; false reads both kinds, and the tiers' orders choose between them.
  bool deterministic = true;
};

struct LookupResult {
  Hit source = Hit::planner;
  std::optional<Record> record;      // set unless source is planner
  std::string reason;                // one line for the decision log
  std::vector<std::string> rejected; // records `accept` refused, each with its reason
  std::vector<InvalidRow> invalid;   // rows of the bucket that failed validation: skipped, never dispatched

  const Config* config() const { return record ? &record->config : nullptr; }
  std::string_view config_source() const { return to_string(source); }
};

// ---- the store ------------------------------------------------------------------------------------------------

class Store {
 public:
  // Opens (or creates) the DB. Refused with a message naming the path and what to do: a file that is not a
  // SQLite database or fails PRAGMA quick_check ("move it away or pass --no-db"), another application's
  // database, a schema newer than this build knows, a directory that cannot be created, and for read_write a file
  // or folder this user may not write ("is read-only"). Read-only access reads a file in a folder it may not write
  // (SQLite's immutable mode when no writer can have left a WAL beside it).
  static Expected<Store> open(const std::string& path, const OpenOptions& options = {});

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::string& path() const;
  int version() const;  // the file's schema version (after migration)

  // Keeps the best record per (device, backend, family, family version, signature): the new record replaces the
  // stored one when its median time is lower (ties keep the stored one), when the stored one is invalid, or always
  // with `force`. A record validate_record refuses is refused, naming the field. An empty created_at becomes now.
  // Each call is one write transaction.
  Expected<Upsert> upsert(const Record& record, bool force = false);
  // The same for many records in one transaction (all or nothing).
  Expected<std::vector<Upsert>> upsert_all(const std::vector<Record>& records, bool force = false);

  // Valid records in a stable order: device hash, backend, family, shape, id. Invalid rows are left out, and
  // appended to `skipped` when given (one bad row never hides the others).
  Expected<std::vector<Record>> list(const ListFilter& filter = {}, std::vector<InvalidRow>* skipped = nullptr) const;
  // One record by its id (`db show ID`); nullopt when there is none. An invalid row is refused naming why, unless
  // `invalid` is given: then it is set, and the record is returned as far as it reads.
  Expected<std::optional<Record>> get(int64_t id, std::optional<InvalidRow>* invalid = nullptr) const;
  Expected<std::vector<DeviceSummary>> devices() const;
  // Deletes the records the filter selects (and devices left without records); returns how many records (with
  // dry_run: how many it would delete).
  Expected<int64_t> prune(const PruneFilter& filter);
  // The ids of the records prune(filter) would delete, in id order; deletes nothing (`db prune --dry-run`).
  Expected<std::vector<int64_t>> prune_matches(const PruneFilter& filter) const;

  // Every invalid row, by id (`db check`).
  Expected<std::vector<InvalidRow>> check() const;
  // Deletes every invalid row (and devices left without records) in one transaction and returns them; with
  // dry_run, only returns them (`db prune --invalid [--dry-run]`).
  Expected<std::vector<InvalidRow>> prune_invalid(bool dry_run = false);

  // The fallback chain: db-exact, db-bucket, db-arch, planner. A record of another architecture is never
  // returned. Ties are broken deterministically (see docs/TUNING-DB.md).
  Expected<LookupResult> lookup(const LookupRequest& request) const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- dispatch -------------------------------------------------------------------------------------------------

// What dispatch holds: a store when the DB is enabled and usable, else none and a note saying why (disabled,
// not created yet, corrupted, newer schema). Never fails: without a DB the caller plans.
struct DispatchDb {
  std::optional<Store> store;
  std::string note;  // empty when the store is open
};
DispatchDb open_for_dispatch(const std::string& path, bool enabled = true);

// An `accept` for LookupRequest: a record is usable when its config passes the backend's parameter space for
// this problem here (the family matches, every parameter is declared and legal, every constraint holds).
std::function<Support(const Record&)> legal_in(ParamSpace space);

// Dispatch's request for a problem run by `backend` with this parameter space here: the space's family at its
// version (none when the space names no family), and legal_in(space) as the veto, under the caller's determinism
// policy. `plan --db` asks the same.
LookupRequest lookup_request(Fingerprint device, std::string backend, const Problem& problem, ParamSpace space,
                             bool deterministic = true);

// The lookup, or "planner" with the reason when there is no store or the lookup failed.
LookupResult lookup_or_plan(const DispatchDb& db, const LookupRequest& request);

}  // namespace tileforge::db
