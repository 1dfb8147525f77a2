// The tuning DB's schema, as an ordered list of migrations (v1 to v4 now); a new version is one more entry.
#include "db/store.hpp"

namespace tileforge::db {

namespace {

// v1: fingerprints in their own table (listed and pruned by hash); one row per best record. The bucket columns
// are stored so that a lookup reads one bucket through an index instead of scanning the table.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE devices (
  hash      TEXT PRIMARY KEY,   -- Fingerprint::hash(): FNV-1a 64 of key, 16 hex digits
  key       TEXT NOT NULL,      -- Fingerprint::key(): JSON array of the fields below
  kind      TEXT NOT NULL,
  name      TEXT NOT NULL,
  arch      TEXT NOT NULL,
  cores     INTEGER NOT NULL,
  clock_mhz INTEGER NOT NULL,
  driver    TEXT NOT NULL,
  toolkit   TEXT NOT NULL
);
CREATE INDEX devices_by_arch ON devices(arch);
CREATE TABLE records (
  id               INTEGER PRIMARY KEY,
  device           TEXT NOT NULL REFERENCES devices(hash),
  backend          TEXT NOT NULL,
  family           TEXT NOT NULL,
  family_version   INTEGER NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
  input TEXT NOT NULL, output TEXT NOT NULL, accum TEXT NOT NULL, layout TEXT NOT NULL,
  align            INTEGER NOT NULL,
  bucket_m INTEGER NOT NULL, bucket_n INTEGER NOT NULL, bucket_k INTEGER NOT NULL, bucket_batch INTEGER NOT NULL,
  config           TEXT NOT NULL,  -- {"family": ..., "BLOCK_M": ..., ...}
  median_ms REAL NOT NULL, min_ms REAL NOT NULL, max_ms REAL NOT NULL, reps INTEGER NOT NULL,
  tflops REAL NOT NULL, rel_error REAL NOT NULL, max_scaled_error REAL NOT NULL,
  tool_version     TEXT NOT NULL,
  created_at       TEXT NOT NULL,  -- YYYY-MM-DDTHH:MM:SSZ: text order is time order
  source           TEXT NOT NULL CHECK (source IN ('tuned', 'imported')),
  UNIQUE (device, backend, family, family_version, m, n, k, batch, input, output, accum, layout, align)
);
CREATE INDEX records_by_bucket ON records(backend, input, output, accum, layout, align,
                                          bucket_m, bucket_n, bucket_k, bucket_batch);
CREATE INDEX records_by_time ON records(created_at);
)sql";

// v2: the spread and the host load of the measurement, so that dispatch can pass over a record measured in a
// disturbed moment (docs/TUNING-DB.md). Nullable, NULL = unknown: ALTER TABLE upgrades a v1 file in place without
// rewriting its rows, and those rows (stored by a tuner that already refused winners whose reps spread) and
// imports that lack the fields stay usable.
constexpr std::string_view kV2 = R"sql(
ALTER TABLE records ADD COLUMN q1_ms REAL;         -- first quartile of the reps
ALTER TABLE records ADD COLUMN q3_ms REAL;         -- third quartile of the reps
ALTER TABLE records ADD COLUMN others_cores REAL;  -- other processes' use of the machine while timed, in cores
ALTER TABLE records ADD COLUMN spare_cores REAL;   -- the cores our threads left them
)sql";

// v3: which host and which of its devices measured each record (a DB merged from an MPI tune over a pool of
// devices says where each number came from). Nullable for the same reason as v2's columns; not part of the key.
constexpr std::string_view kV3 = R"sql(
ALTER TABLE records ADD COLUMN host TEXT;             -- the measuring machine's host name
ALTER TABLE records ADD COLUMN device_index INTEGER;  -- the device's ordinal on that host
)sql";

// v4: whether the record's config gives the same bits from run to run (1) or sums a shared tile's slices by float
// atomics in arrival order (0: measured under the non-deterministic policy), as part of the key, so that a
// `--nondeterministic` tune's atomic winner is stored beside the deterministic record of the same problem instead of
// replacing it. SQLite cannot change a table's UNIQUE constraint in place: the table is rebuilt, every row kept as
// deterministic (no earlier tool stored a record under the other policy's key), its indexes made again.
constexpr std::string_view kV4 = R"sql(
CREATE TABLE records_v4 (
  id               INTEGER PRIMARY KEY,
  device           TEXT NOT NULL REFERENCES devices(hash),
  backend          TEXT NOT NULL,
  family           TEXT NOT NULL,
  family_version   INTEGER NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
  input TEXT NOT NULL, output TEXT NOT NULL, accum TEXT NOT NULL, layout TEXT NOT NULL,
  align            INTEGER NOT NULL,
  bucket_m INTEGER NOT NULL, bucket_n INTEGER NOT NULL, bucket_k INTEGER NOT NULL, bucket_batch INTEGER NOT NULL,
  config           TEXT NOT NULL,
  median_ms REAL NOT NULL, min_ms REAL NOT NULL, max_ms REAL NOT NULL, reps INTEGER NOT NULL,
  tflops REAL NOT NULL, rel_error REAL NOT NULL, max_scaled_error REAL NOT NULL,
  tool_version     TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  source           TEXT NOT NULL CHECK (source IN ('tuned', 'imported')),
  q1_ms REAL, q3_ms REAL, others_cores REAL, spare_cores REAL,
  host TEXT, device_index INTEGER,
  deterministic    INTEGER NOT NULL DEFAULT 1 CHECK (deterministic IN (0, 1)),
  UNIQUE (device, backend, family, family_version, m, n, k, batch, input, output, accum, layout, align, deterministic)
);
INSERT INTO records_v4 (id, device, backend, family, family_version, m, n, k, batch, input, output, accum, layout,
                        align, bucket_m, bucket_n, bucket_k, bucket_batch, config, median_ms, min_ms, max_ms, reps,
                        tflops, rel_error, max_scaled_error, tool_version, created_at, source, q1_ms, q3_ms,
                        others_cores, spare_cores, host, device_index, deterministic)
  SELECT id, device, backend, family, family_version, m, n, k, batch, input, output, accum, layout, align, bucket_m,
         bucket_n, bucket_k, bucket_batch, config, median_ms, min_ms, max_ms, reps, tflops, rel_error,
         max_scaled_error, tool_version, created_at, source, q1_ms, q3_ms, others_cores, spare_cores, host,
         device_index, 1
  FROM records;
DROP TABLE records;
ALTER TABLE records_v4 RENAME TO records;
CREATE INDEX records_by_bucket ON records(backend, input, output, accum, layout, align,
                                          bucket_m, bucket_n, bucket_k, bucket_batch);
CREATE INDEX records_by_time ON records(created_at);
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "v1: devices and records tables", [](const SqlExec& exec) { return exec(kV1); }},
      {2, "v2: quartiles and host load of each record's measurement", [](const SqlExec& exec) { return exec(kV2); }},
      {3, "v3: the host and device index that measured each record", [](const SqlExec& exec) { return exec(kV3); }},
      {4, "v4: the determinism of each record's config, in its key", [](const SqlExec& exec) { return exec(kV4); }},
  };
  return list;
}

int schema_version() { return migrations().back().to_version; }

}  // namespace tileforge::db
