// A thin RAII layer over the SQLite C API for src/db only: statements, binding, and errors as exceptions that the
// Store turns into Status at its boundary.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tileforge::db::sql {

// Thrown inside src/db only; Store methods catch it and return a Status naming the DB's path.
struct Error {
  int code = SQLITE_ERROR;  // primary result code (SQLITE_BUSY, SQLITE_CORRUPT, SQLITE_NOTADB, ...)
  std::string message;
  int system_errno = 0;     // the failed system call's errno where SQLite knows it (EFBIG, EIO, ...), else 0
};

[[noreturn]] inline void fail(sqlite3* db, int rc) {
  throw Error{rc & 0xff, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), db ? sqlite3_system_errno(db) : 0};
}

class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view text) : db_(db) {
    if (int rc = sqlite3_prepare_v2(db, text.data(), int(text.size()), &s_, nullptr); rc != SQLITE_OK) fail(db, rc);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Parameters are numbered from 1, as in SQL's ?1.
  Stmt& bind_int(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
  // NULL for nullopt.
  Stmt& bind_int(int i, const std::optional<int64_t>& v) {
    return v ? bind_int(i, *v) : check(sqlite3_bind_null(s_, i));
  }
  Stmt& bind_double(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  // NULL for nullopt: a nullable column's "unknown".
  Stmt& bind_double(int i, const std::optional<double>& v) {
    return v ? bind_double(i, *v) : check(sqlite3_bind_null(s_, i));
  }
  Stmt& bind_text(int i, std::string_view v) {
    return check(sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT));
  }

  // true: a row is ready; false: done.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc);
  }
  void run() {
    while (step()) {
    }
  }

  // Columns are numbered from 0.
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  // nullopt for NULL (f64 would read it as 0).
  std::optional<double> opt_f64(int c) const {
    if (sqlite3_column_type(s_, c) == SQLITE_NULL) return std::nullopt;
    return f64(c);
  }
  std::optional<int64_t> opt_i64(int c) const {
    if (sqlite3_column_type(s_, c) == SQLITE_NULL) return std::nullopt;
    return i64(c);
  }
  std::string text(int c) const {
    const unsigned char* p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), std::size_t(sqlite3_column_bytes(s_, c))) : std::string();
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc);
    return *this;
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
};

// Runs SQL text that may hold several statements and returns no rows.
inline void exec(sqlite3* db, std::string_view text) {
  const std::string s(text);
  char* msg = nullptr;
  if (int rc = sqlite3_exec(db, s.c_str(), nullptr, nullptr, &msg); rc != SQLITE_OK) {
    Error e{rc & 0xff, msg ? msg : sqlite3_errmsg(db), sqlite3_system_errno(db)};
    sqlite3_free(msg);
    throw e;
  }
}

// The single value of a one-row query ("PRAGMA user_version").
inline int64_t scalar_int(sqlite3* db, std::string_view text) {
  Stmt s(db, text);
  return s.step() ? s.i64(0) : 0;
}

// A write transaction taken at once (BEGIN IMMEDIATE): the busy timeout applies while waiting for the lock, and
// no read-to-write upgrade can fail halfway. Rolled back unless commit() ran.
class WriteTxn {
 public:
  explicit WriteTxn(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
  ~WriteTxn() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

// A read transaction, so that a multi-statement read sees one snapshot while writers commit.
class ReadTxn {
 public:
  explicit ReadTxn(sqlite3* db) : db_(db) { exec(db_, "BEGIN DEFERRED"); }
  ~ReadTxn() { sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr); }
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;

 private:
  sqlite3* db_;
};

}  // namespace tileforge::db::sql
