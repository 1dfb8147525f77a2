// The Store object and what all its queries share: SQLite failures as Status, and one row read into a checked Record.
#include "db/store.hpp"

#include <cstring>

#include <fmt/format.h>

#include "core/parse.hpp"
#include "db/store_detail.hpp"

namespace tileforge::db {

namespace detail {

namespace {

bool is_corruption(int code) { return code == SQLITE_CORRUPT || code == SQLITE_NOTADB; }

}  // namespace

// A Status for an SQLite failure on the DB at `path`, with what to do about it.
Status sql_status(const std::string& path, const sql::Error& e, int busy_timeout_ms) {
  if (is_corruption(e.code)) {
    return {Code::io_error, fmt::format("tuning DB {} is corrupted or not a SQLite database ({}); {}", path, e.message,
                                        kAdvice)};
  }
  if (e.code == SQLITE_BUSY || e.code == SQLITE_LOCKED) {
    return {Code::io_error, fmt::format("tuning DB {} stayed locked by another process for more than {} ms ({}); "
                                        "try again, or pass --db with another file",
                                        path, busy_timeout_ms, e.message)};
  }
  if (e.code == SQLITE_READONLY || e.code == SQLITE_CANTOPEN || e.code == SQLITE_PERM) {
    return {Code::io_error, fmt::format("tuning DB {} cannot be opened for this use ({}); check its permissions, or "
                                        "pass --db with another file or --no-db",
                                        path, e.message)};
  }
  if (e.code == SQLITE_FULL || e.code == SQLITE_IOERR) {
    // NOTE: a write that fails part-way (a full disk, a file-size limit, an I/O error) is rolled back by SQLite's
    // journal: the change is lost whole and the file keeps what it held (CliFaults.FullDiskDuringDbImport...).
    const std::string cause =
        e.system_errno != 0 ? fmt::format("{}: {}", e.message, std::strerror(e.system_errno)) : e.message;
    return {Code::io_error, fmt::format("tuning DB {} hit a disk error ({}); an unfinished change is rolled back "
                                        "whole, so the file holds what it held before; free space on its disk, or "
                                        "pass --db with another file",
                                        path, cause)};
  }
  return {Code::io_error, fmt::format("tuning DB {}: {}", path, e.message)};
}

std::string select_sql(int version) {
  // v2 added the measurement's quartiles and host load, v3 the measuring host and device index, v4 the config's
  // determinism (every earlier row is deterministic).
  const std::string_view measurement = version >= 2 ? "r.q1_ms, r.q3_ms, r.others_cores, r.spare_cores"
                                                   : "NULL, NULL, NULL, NULL";
  const std::string_view where = version >= 3 ? "r.host, r.device_index" : "NULL, NULL";
  const std::string_view deterministic = version >= 4 ? "r.deterministic" : "1";
  return fmt::format("{}       {}, {}, {}{}", kSelectColumns, measurement, where, deterministic, kSelectFrom);
}

// NOTE: a row that does not parse or validate was written by hand, by a broken tool or by an older build with
// looser checks. It is reported as that one row, never as a corrupted file: one bad row must not hide the others.
Row read_row(const sql::Stmt& s) {
  Row row;
  Record& r = row.record;
  auto take = [&row](auto parsed, std::string_view field, auto& into) {
    if (parsed) {
      into = *parsed;
    } else if (row.why.empty()) {
      row.why = fmt::format("{}: {}", field, parsed.status().message());
    }
  };
  r.id = s.i64(0);
  r.device.kind = s.text(1);
  r.device.name = s.text(2);
  r.device.arch = s.text(3);
  r.device.cores = int(s.i64(4));
  r.device.clock_mhz = int(s.i64(5));
  r.device.driver = s.text(6);
  r.device.toolkit = s.text(7);
  r.backend = s.text(8);
  r.family_version = s.i64(9);
  r.problem.m = s.i64(10);
  r.problem.n = s.i64(11);
  r.problem.k = s.i64(12);
  r.problem.batch = s.i64(13);
  take(parse_dtype(s.text(14)), "problem.input", r.problem.input);
  take(parse_dtype(s.text(15)), "problem.output", r.problem.output);
  take(parse_dtype(s.text(16)), "problem.accum", r.problem.accum);
  take(parse_layout(s.text(17)), "problem.layout", r.problem.layout);
  r.problem.align = int(s.i64(18));
  take(config_from_json(s.text(19), "config"), "config", r.config);
  r.time.median_ms = s.f64(20);
  r.time.min_ms = s.f64(21);
  r.time.max_ms = s.f64(22);
  r.time.reps = s.i64(23);
  r.time.q1_ms = s.opt_f64(32);
  r.time.q3_ms = s.opt_f64(33);
  r.time.others_cores = s.opt_f64(34);
  r.time.spare_cores = s.opt_f64(35);
  r.host = s.text(36);  // NULL reads as "": unknown
  r.device_index = s.opt_i64(37);
  r.deterministic = s.i64(38) != 0;
  r.tflops = s.f64(24);
  r.rel_error = s.f64(25);
  r.max_scaled_error = s.f64(26);
  r.tool_version = s.text(27);
  r.created_at = s.text(28);
  take(parse_source(s.text(29)), "source", r.source);
  row.hash = s.text(30);
  const std::string family = s.text(31);
  row.key = fmt::format("{} {} v{} {}x{}x{}{} {}->{} acc {} {} align {}{} on {}", r.backend, family, r.family_version,
                        s.i64(10), s.i64(11), s.i64(12), s.i64(13) != 1 ? fmt::format(" batch {}", s.i64(13)) : "",
                        s.text(14), s.text(15), s.text(16), s.text(17), s.i64(18),
                        r.deterministic ? "" : " nondeterministic", r.device.describe());
  if (row.why.empty() && r.config.family != family) {
    row.why = fmt::format("config.family: '{}' differs from the family '{}' the row is stored under",
                          r.config.family, family);
  }
  if (row.why.empty()) {
    if (auto e = validate_record(r)) row.why = fmt::format("{}: {}", e->field, e->why);
  }
  return row;
}

}  // namespace detail

std::string_view to_string(Upsert u) {
  switch (u) {
    case Upsert::inserted: return "inserted";
    case Upsert::replaced: return "replaced";
    case Upsert::kept: return "kept";
  }
  return "?";
}

std::string_view to_string(Hit h) {
  switch (h) {
    case Hit::exact: return "db-exact";
    case Hit::bucket: return "db-bucket";
    case Hit::arch: return "db-arch";
    case Hit::planner: return "planner";
  }
  return "?";
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return impl_->path; }
int Store::version() const { return impl_->version; }

std::string InvalidRow::describe() const { return fmt::format("record #{} ({}): {}", id, key, why); }

}  // namespace tileforge::db
