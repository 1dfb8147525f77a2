// Opening the tuning DB: refusing paths and files it must not use, read-only access, WAL, and schema migration.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "db/location.hpp"
#include "db/store.hpp"
#include "db/store_detail.hpp"

namespace tileforge::db {

namespace {

using detail::kAdvice;
using detail::kApplicationId;

// What the file header and catalogue say about whose file this is.
struct Header {
  int version = 0;          // PRAGMA user_version
  int64_t application = 0;  // PRAGMA application_id
  int64_t tables = 0;       // entries in sqlite_master
  // Another program's file: marked by another application id, or holding tables without any tileforge schema.
  bool foreign() const {
    return (application != 0 && application != kApplicationId) ||
           (version == 0 && application != kApplicationId && tables > 0);
  }
};

Header read_header(sqlite3* db) {
  Header h;
  h.version = int(sql::scalar_int(db, "PRAGMA user_version"));
  h.application = sql::scalar_int(db, "PRAGMA application_id");
  h.tables = sql::scalar_int(db, "SELECT count(*) FROM sqlite_master");
  return h;
}

Status foreign_status(const std::string& path, const Header& h) {
  return invalid_argument(fmt::format("{} is a SQLite database of another application ({}); it was left untouched: "
                                      "pass --db with another file, or --no-db",
                                      path,
                                      h.application != 0 ? fmt::format("application_id {:#x}", h.application)
                                                         : std::string("it has tables but no tileforge schema")));
}

// NOTE: SQLite answers SQLITE_BUSY to a journal-mode change at once, without the busy handler, while another
// connection holds a lock; several tuners opening a new file together hit that. Retry until the busy timeout.
std::string switch_to_wal(sqlite3* db, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int attempt = 0;; ++attempt) {
    try {
      sql::Stmt s(db, "PRAGMA journal_mode = WAL");
      return s.step() ? s.text(0) : std::string();
    } catch (const sql::Error& e) {
      if ((e.code != SQLITE_BUSY && e.code != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + attempt % 10));
  }
}

void migrate(sqlite3* db, const std::string& path, const std::vector<Migration>& steps, int* version) {
  for (const Migration& m : steps) {
    if (m.to_version <= *version) continue;
    sql::WriteTxn txn(db);
    // Another process may have migrated while this one waited for the lock: read again under it.
    const Header head = read_header(db);
    if (head.version >= m.to_version) {
      txn.commit();
      *version = head.version;
      continue;
    }
    if (head.foreign()) throw foreign_status(path, head);
    SqlExec exec = [db](std::string_view text) -> Status {
      try {
        sql::exec(db, text);
      } catch (const sql::Error& e) {
        return {Code::io_error, e.message};
      }
      return {};
    };
    if (Status s = m.apply(exec); !s) {
      throw Status{s.code(), fmt::format("tuning DB {}: migration to schema v{} ({}) failed: {}", path, m.to_version,
                                         m.what, s.message())};
    }
    sql::exec(db, fmt::format("PRAGMA user_version = {}; PRAGMA application_id = {};", m.to_version, kApplicationId));
    txn.commit();
    *version = m.to_version;
  }
}

std::string folder_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

bool writable(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }

bool non_empty_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

// Why this user cannot write the existing DB at `path`, or empty. SQLite's WAL journal writes PATH-wal and
// PATH-shm beside the file, so a folder that cannot be written counts too, unless both already exist writable.
std::string why_read_only(const std::string& path) {
  if (!writable(path)) return "the file is not writable by this user";
  const std::string dir = folder_of(path);
  if (!writable(dir) && !(writable(path + "-wal") && writable(path + "-shm"))) {
    return fmt::format("its folder {} is not writable by this user, and SQLite's journal creates files there", dir);
  }
  return {};
}

// "file:" URI of a path, for sqlite3_open_v2 with SQLITE_OPEN_URI: every byte but [A-Za-z0-9/._~-] %-encoded, and
// an empty authority before an absolute path (so that "//host/x" is not read as a host).
std::string file_uri(const std::string& path, std::string_view query) {
  std::string out = path.starts_with('/') ? "file://" : "file:";
  for (unsigned char c : path) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' ||
                       c == '.' || c == '_' || c == '~' || c == '-';
    out += plain ? std::string(1, char(c)) : fmt::format("%{:02X}", c);
  }
  return out + "?" + std::string(query);
}

// The refusals made before SQLite sees the path: an empty path, a directory, a missing file when reading only, a
// file this user may not write when writing; for writing, the missing folders are created.
Status check_path(const std::string& path, bool rw) {
  if (path.empty()) return invalid_argument("tuning DB path is empty (pass --db PATH, or --no-db)");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return Status{Code::io_error, fmt::format("tuning DB {} is a directory; pass --db with a file path", path)};
  }
  if (!exists && !rw) {
    return Status{Code::not_available, fmt::format("no tuning DB at {} yet (tune writes one)", path)};
  }
  if (rw && exists) {
    // Refused up front: SQLite would open such a file read-only without saying so, and fail at the first write.
    if (const std::string why = why_read_only(path); !why.empty()) {
      return Status{Code::io_error,
                    fmt::format("tuning DB {} is read-only ({}): it can be read (db list, show, export, check, and "
                                "dispatch in bench, verify and gemm()) but not written; to tune, import or prune, "
                                "make it writable or pass --db with another file",
                                path, why)};
    }
  }
  if (rw) {
    if (Status s = create_parent_dirs(path); !s) return s;
  }
  return {};
}

// sqlite3_open_v2 with the flags for this access; returns its result code (*db may be set even when it fails).
int open_connection(const std::string& path, bool rw, sqlite3** db) {
  int flags = rw ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
  std::string target = path;
  if (!rw && !writable(folder_of(path)) && !non_empty_file(path + "-wal")) {
    // NOTE: reading a WAL database needs its -shm file, which SQLite cannot create in a folder it may not write.
    // Without a -wal file beside it no writer has commits pending (a writer creates one first), so the file is
    // read as immutable: no -shm, no locks. With one, the plain read-only open reads it through its -shm.
    flags |= SQLITE_OPEN_URI;
    target = file_uri(path, "immutable=1");
  }
  return sqlite3_open_v2(target.c_str(), db, flags, nullptr);
}

// Throws a Status unless every page reads. quick_check reads every page (without the costlier index
// cross-checks): a truncated or overwritten file is refused here instead of failing halfway through a tuning run.
void check_integrity(sqlite3* db, const std::string& path) {
  sql::Stmt check(db, "PRAGMA quick_check");
  std::string first;
  if (check.step()) first = check.text(0);
  if (first != "ok") {
    throw Status{Code::io_error, fmt::format("tuning DB {} is corrupted (integrity check: {}); {}", path,
                                             first.empty() ? "no answer" : first, kAdvice)};
  }
}

// Makes the file ready for writers and brings its schema up to this build's; throws a Status or sql::Error.
void prepare_for_writes(sqlite3* db, const std::string& path, const OpenOptions& options,
                        const std::vector<Migration>& steps, int* version) {
  // WAL: readers never block the writer and one writer at a time commits; NORMAL sync is durable across
  // process crashes in WAL mode (a power cut may lose the last commits, never the file).
  const std::string mode = switch_to_wal(db, options.busy_timeout_ms);
  if (mode != "wal") {
    throw Status{Code::io_error, fmt::format("tuning DB {}: cannot switch to WAL journal mode (got '{}'); "
                                             "the file system may not support it: pass --db on a local disk",
                                             path, mode)};
  }
  sql::exec(db, "PRAGMA synchronous = NORMAL");
  migrate(db, path, steps, version);
}

// Checks the opened file (whose it is, its schema version, its pages) and, for writing, migrates it. Returns the
// schema version it is read with; throws a Status or sql::Error when it cannot be used.
int check_and_prepare(sqlite3* db, const std::string& path, const OpenOptions& options,
                      const std::vector<Migration>& steps) {
  const int known = steps.empty() ? 0 : steps.back().to_version;
  // The first read of the header: a file that is not a database fails here. One snapshot, so that a tuner
  // creating the schema meanwhile is seen either not at all or whole.
  Header head;
  {
    sql::ReadTxn snapshot(db);
    head = read_header(db);
  }
  int version = head.version;
  // Refused before anything is written: switching to WAL alone would rewrite another program's header.
  if (head.foreign()) throw foreign_status(path, head);
  if (version > known) {
    throw Status{Code::unsupported,
                 fmt::format("tuning DB {} has schema v{}, newer than this tileforge knows (v{}): it was written "
                             "by a newer version. Use that version, or pass --db with another file, or --no-db",
                             path, version, known)};
  }
  check_integrity(db, path);
  if (options.access == Access::read_write) {
    prepare_for_writes(db, path, options, steps, &version);
  } else if (version == 0) {
    throw Status{Code::not_available, fmt::format("tuning DB {} is empty (tune writes one)", path)};
  }
  // An older file opened read-only is read as it is (select_sql): each later version only added columns that
  // such rows leave unknown. Opening it for writing migrates it.
  return version;
}

}  // namespace

Expected<Store> Store::open(const std::string& path, const OpenOptions& options) {
  const std::vector<Migration>& steps = options.migrations ? *options.migrations : migrations();
  const bool rw = options.access == Access::read_write;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->busy_timeout_ms = options.busy_timeout_ms;

  if (Status s = check_path(path, rw); !s) return s;
  if (int rc = open_connection(path, rw, &impl->db); rc != SQLITE_OK) {
    return impl->error(sql::Error{rc & 0xff, impl->db ? sqlite3_errmsg(impl->db) : sqlite3_errstr(rc)});
  }
  sqlite3_busy_timeout(impl->db, options.busy_timeout_ms);
  sqlite3_extended_result_codes(impl->db, 0);

  try {
    impl->version = check_and_prepare(impl->db, path, options, steps);
  } catch (const sql::Error& e) {
    return impl->error(e);
  } catch (const Status& s) {
    return s;
  }
  return Store(std::move(impl));
}

}  // namespace tileforge::db
