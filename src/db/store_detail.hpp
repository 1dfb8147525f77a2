// Internals the Store's files share (src/db/store*.cpp only): the connection, errors as Status, one row as read.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "db/sqlite.hpp"
#include "db/store.hpp"

namespace tileforge::db {

namespace detail {

// 'TFDB': marks the file as ours, so that another application's SQLite file is never taken over.
inline constexpr int64_t kApplicationId = 0x54464442;

inline constexpr std::string_view kAdvice = "move it away or pass --no-db (tileforge then plans without it)";

// A Status for an SQLite failure on the DB at `path`, with what to do about it.
Status sql_status(const std::string& path, const sql::Error& e, int busy_timeout_ms);

// The columns every record query reads, in the order read_row expects: those of every schema version, then the ones
// a version added (an older file opened read-only reads NULL, or 1 for v4's determinism, in their place).
inline constexpr std::string_view kSelectColumns = R"sql(
SELECT r.id, d.kind, d.name, d.arch, d.cores, d.clock_mhz, d.driver, d.toolkit,
       r.backend, r.family_version, r.m, r.n, r.k, r.batch, r.input, r.output, r.accum, r.layout, r.align,
       r.config, r.median_ms, r.min_ms, r.max_ms, r.reps, r.tflops, r.rel_error, r.max_scaled_error,
       r.tool_version, r.created_at, r.source, r.device, r.family,
)sql";
inline constexpr std::string_view kSelectFrom = "\nFROM records r JOIN devices d ON d.hash = r.device\n";
// The SELECT of read_row's columns for a file of schema `version` (an older file opened read-only lacks columns).
std::string select_sql(int version);

// One row as read: the record as far as its columns parse, and why it is not usable (empty when it is).
struct Row {
  Record record;
  std::string hash;  // the device column
  std::string key;   // what the row is stored under, from the raw columns (for messages about a bad row)
  std::string why;   // "field: reason"

  bool valid() const { return why.empty(); }
  InvalidRow invalid() const { return {record.id, key, why}; }
};

// The current row of a statement built on select_sql(); never throws for a bad value, only marks the row invalid.
Row read_row(const sql::Stmt& s);

}  // namespace detail

struct Store::Impl {
  sqlite3* db = nullptr;
  std::string path;
  int version = 0;
  int busy_timeout_ms = 10000;
  // NOTE: one connection is shared by the threads of a process; statements are prepared per call, and this lock
  // keeps one call's statements and transaction from interleaving with another's.
  mutable std::mutex mu;

  ~Impl() {
    if (db) sqlite3_close_v2(db);
  }
  Status error(const sql::Error& e) const { return detail::sql_status(path, e, busy_timeout_ms); }
};

}  // namespace tileforge::db
