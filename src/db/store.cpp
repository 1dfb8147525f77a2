// The Store: opening (read-only too), best-median upsert, list/show/check/prune of validated rows, the lookup chain.
#include "db/store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "core/parse.hpp"
#include "db/location.hpp"
#include "db/sqlite.hpp"

namespace tileforge::db {

namespace {

// 'TFDB': marks the file as ours, so that another application's SQLite file is never taken over.
constexpr int64_t kApplicationId = 0x54464442;

constexpr std::string_view kAdvice = "move it away or pass --no-db (tileforge then plans without it)";

bool is_corruption(int code) { return code == SQLITE_CORRUPT || code == SQLITE_NOTADB; }

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
  return {Code::io_error, fmt::format("tuning DB {}: {}", path, e.message)};
}

// The columns every record query reads, in the order read_row expects.
constexpr std::string_view kSelect = R"sql(
SELECT r.id, d.kind, d.name, d.arch, d.cores, d.clock_mhz, d.driver, d.toolkit,
       r.backend, r.family_version, r.m, r.n, r.k, r.batch, r.input, r.output, r.accum, r.layout, r.align,
       r.config, r.median_ms, r.min_ms, r.max_ms, r.reps, r.tflops, r.rel_error, r.max_scaled_error,
       r.tool_version, r.created_at, r.source, r.device, r.family,
       r.q1_ms, r.q3_ms, r.others_cores, r.spare_cores
FROM records r JOIN devices d ON d.hash = r.device
)sql";
// The same from a v1 file opened read-only (dispatch never migrates): v2 only added the measurement's quartiles
// and host load, which such rows do not know.
constexpr std::string_view kSelectV1 = R"sql(
SELECT r.id, d.kind, d.name, d.arch, d.cores, d.clock_mhz, d.driver, d.toolkit,
       r.backend, r.family_version, r.m, r.n, r.k, r.batch, r.input, r.output, r.accum, r.layout, r.align,
       r.config, r.median_ms, r.min_ms, r.max_ms, r.reps, r.tflops, r.rel_error, r.max_scaled_error,
       r.tool_version, r.created_at, r.source, r.device, r.family,
       NULL, NULL, NULL, NULL
FROM records r JOIN devices d ON d.hash = r.device
)sql";
std::string select_sql(int version) { return std::string(version >= 2 ? kSelect : kSelectV1); }

// One row as read: the record as far as its columns parse, and why it is not usable (empty when it is).
struct Row {
  Record record;
  std::string hash;  // the device column
  std::string key;   // what the row is stored under, from the raw columns (for messages about a bad row)
  std::string why;   // "field: reason"

  bool valid() const { return why.empty(); }
  InvalidRow invalid() const { return {record.id, key, why}; }
};

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
  r.tflops = s.f64(24);
  r.rel_error = s.f64(25);
  r.max_scaled_error = s.f64(26);
  r.tool_version = s.text(27);
  r.created_at = s.text(28);
  take(parse_source(s.text(29)), "source", r.source);
  row.hash = s.text(30);
  const std::string family = s.text(31);
  row.key = fmt::format("{} {} v{} {}x{}x{}{} {}->{} acc {} {} align {} on {}", r.backend, family, r.family_version,
                        s.i64(10), s.i64(11), s.i64(12), s.i64(13) != 1 ? fmt::format(" batch {}", s.i64(13)) : "",
                        s.text(14), s.text(15), s.text(16), s.text(17), s.i64(18), r.device.describe());
  if (row.why.empty() && r.config.family != family) {
    row.why = fmt::format("config.family: '{}' differs from the family '{}' the row is stored under",
                          r.config.family, family);
  }
  if (row.why.empty()) {
    if (auto e = validate_record(r)) row.why = fmt::format("{}: {}", e->field, e->why);
  }
  return row;
}

// Binds the unique key's signature columns at ?first .. ?first+8 (m, n, k, batch, input, output, accum, layout,
// align).
void bind_signature(sql::Stmt& s, int first, const Signature& p) {
  s.bind_int(first, p.m).bind_int(first + 1, p.n).bind_int(first + 2, p.k).bind_int(first + 3, p.batch);
  s.bind_text(first + 4, to_string(p.input)).bind_text(first + 5, to_string(p.output));
  s.bind_text(first + 6, to_string(p.accum)).bind_text(first + 7, to_string(p.layout));
  s.bind_int(first + 8, p.align);
}

std::string where_here(const Fingerprint& f) {
  if (f.kind == "gpu") return "this GPU";
  if (f.kind == "cpu") return "this CPU";
  return "this device";
}

std::string summary(const Record& r) {
  return fmt::format("{} v{}, median {:.4g} ms, {:.4g} TFLOP/s, {}", r.family(), r.family_version, r.time.median_ms,
                     r.tflops, r.source == Source::tuned ? "tuned " + r.created_at : "imported");
}

}  // namespace

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
  Status error(const sql::Error& e) const { return sql_status(path, e, busy_timeout_ms); }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return impl_->path; }
int Store::version() const { return impl_->version; }

// ---- opening ---------------------------------------------------------------------------------------------------

namespace {

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

}  // namespace

Expected<Store> Store::open(const std::string& path, const OpenOptions& options) {
  const std::vector<Migration>& steps = options.migrations ? *options.migrations : migrations();
  const int known = steps.empty() ? 0 : steps.back().to_version;
  const bool rw = options.access == Access::read_write;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->busy_timeout_ms = options.busy_timeout_ms;

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

  int flags = rw ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
  std::string target = path;
  if (!rw && !writable(folder_of(path)) && !non_empty_file(path + "-wal")) {
    // NOTE: reading a WAL database needs its -shm file, which SQLite cannot create in a folder it may not write.
    // Without a -wal file beside it no writer has commits pending (a writer creates one first), so the file is
    // read as immutable: no -shm, no locks. With one, the plain read-only open reads it through its -shm.
    flags |= SQLITE_OPEN_URI;
    target = file_uri(path, "immutable=1");
  }
  if (int rc = sqlite3_open_v2(target.c_str(), &impl->db, flags, nullptr); rc != SQLITE_OK) {
    return impl->error(sql::Error{rc & 0xff, impl->db ? sqlite3_errmsg(impl->db) : sqlite3_errstr(rc)});
  }
  sqlite3_busy_timeout(impl->db, options.busy_timeout_ms);
  sqlite3_extended_result_codes(impl->db, 0);

  try {
    sqlite3* db = impl->db;
    // The first read of the header: a file that is not a database fails here. One snapshot, so that a tuner
    // creating the schema meanwhile is seen either not at all or whole.
    Header head;
    {
      sql::ReadTxn snapshot(db);
      head = read_header(db);
    }
    int version = head.version;
    // Refused before anything is written: switching to WAL alone would rewrite another program's header.
    if (head.foreign()) return foreign_status(path, head);
    if (version > known) {
      return Status{Code::unsupported,
                    fmt::format("tuning DB {} has schema v{}, newer than this tileforge knows (v{}): it was written "
                                "by a newer version. Use that version, or pass --db with another file, or --no-db",
                                path, version, known)};
    }
    {
      // quick_check reads every page (without the costlier index cross-checks): a truncated or overwritten file
      // is refused here instead of failing halfway through a tuning run.
      sql::Stmt check(db, "PRAGMA quick_check");
      std::string first;
      if (check.step()) first = check.text(0);
      if (first != "ok") {
        return Status{Code::io_error, fmt::format("tuning DB {} is corrupted (integrity check: {}); {}", path,
                                                  first.empty() ? "no answer" : first, kAdvice)};
      }
    }
    if (rw) {
      // WAL: readers never block the writer and one writer at a time commits; NORMAL sync is durable across
      // process crashes in WAL mode (a power cut may lose the last commits, never the file).
      const std::string mode = switch_to_wal(db, options.busy_timeout_ms);
      if (mode != "wal") {
        return Status{Code::io_error, fmt::format("tuning DB {}: cannot switch to WAL journal mode (got '{}'); "
                                                  "the file system may not support it: pass --db on a local disk",
                                                  path, mode)};
      }
      sql::exec(db, "PRAGMA synchronous = NORMAL");
      migrate(db, path, steps, &version);
    } else if (version == 0) {
      return Status{Code::not_available, fmt::format("tuning DB {} is empty (tune writes one)", path)};
    }
    // An older file opened read-only is read as it is (select_sql): each later version only added columns that
    // such rows leave unknown. Opening it for writing migrates it.
    impl->version = version;
  } catch (const sql::Error& e) {
    return impl->error(e);
  } catch (const Status& s) {
    return s;
  }
  return Store(std::move(impl));
}

// ---- writing ---------------------------------------------------------------------------------------------------

namespace {

Upsert upsert_one(sqlite3* db, const Record& in, bool force) {
  Record r = in;
  if (r.created_at.empty()) r.created_at = iso_date_now();
  const std::string hash = r.device.hash();
  {
    sql::Stmt s(db, "INSERT OR IGNORE INTO devices (hash, key, kind, name, arch, cores, clock_mhz, driver, toolkit) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    s.bind_text(1, hash).bind_text(2, r.device.key()).bind_text(3, r.device.kind).bind_text(4, r.device.name);
    s.bind_text(5, r.device.arch).bind_int(6, r.device.cores).bind_int(7, r.device.clock_mhz);
    s.bind_text(8, r.device.driver).bind_text(9, r.device.toolkit);
    s.run();
  }
  int64_t old_id = 0;
  bool old_valid = false, old_clean = true;
  double old_median = 0;
  {
    sql::Stmt s(db, std::string(kSelect) +
                        " WHERE r.device = ?1 AND r.backend = ?2 AND r.family = ?3 AND r.family_version = ?4 AND "
                        "r.m = ?5 AND r.n = ?6 AND r.k = ?7 AND r.batch = ?8 AND r.input = ?9 AND r.output = ?10 AND "
                        "r.accum = ?11 AND r.layout = ?12 AND r.align = ?13");
    s.bind_text(1, hash).bind_text(2, r.backend).bind_text(3, r.family()).bind_int(4, r.family_version);
    bind_signature(s, 5, r.problem);
    if (s.step()) {
      const Row old = read_row(s);
      old_id = old.record.id;
      old_valid = old.valid();
      old_clean = old.record.time.quality().clean();
      old_median = old.record.time.median_ms;
    }
  }
  // An invalid stored row never blocks a valid result: a median of 0 would otherwise win every comparison. Nor
  // does a noisy one block a clean result (dispatch passes noisy rows over), and a noisy result never replaces a
  // clean row, however fast its median (a disturbed measurement is not evidence of a faster kernel). Between two
  // of the same kind the faster median stays.
  if (old_id != 0 && old_valid && !force) {
    const bool new_clean = r.time.quality().clean();
    if (old_clean && !new_clean) return Upsert::kept;
    if (old_clean == new_clean && !(r.time.median_ms < old_median)) return Upsert::kept;
  }

  const Signature b = r.problem.bucket();
  auto bind_value = [&](sql::Stmt& s) {
    // ?1..?13 key, ?14..?17 bucket, ?18..?32 value
    s.bind_text(1, hash).bind_text(2, r.backend).bind_text(3, r.family()).bind_int(4, r.family_version);
    bind_signature(s, 5, r.problem);
    s.bind_int(14, b.m).bind_int(15, b.n).bind_int(16, b.k).bind_int(17, b.batch);
    s.bind_text(18, config_to_json(r.config));
    s.bind_double(19, r.time.median_ms).bind_double(20, r.time.min_ms).bind_double(21, r.time.max_ms);
    s.bind_int(22, r.time.reps).bind_double(23, r.tflops).bind_double(24, r.rel_error);
    s.bind_double(25, r.max_scaled_error).bind_text(26, r.tool_version).bind_text(27, r.created_at);
    s.bind_text(28, to_string(r.source));
    s.bind_double(29, r.time.q1_ms).bind_double(30, r.time.q3_ms);
    s.bind_double(31, r.time.others_cores).bind_double(32, r.time.spare_cores);
  };
  if (old_id == 0) {
    sql::Stmt s(db, "INSERT INTO records (device, backend, family, family_version, m, n, k, batch, input, output, "
                    "accum, layout, align, bucket_m, bucket_n, bucket_k, bucket_batch, config, median_ms, min_ms, "
                    "max_ms, reps, tflops, rel_error, max_scaled_error, tool_version, created_at, source, q1_ms, "
                    "q3_ms, others_cores, spare_cores) VALUES "
                    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                    "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32)");
    bind_value(s);
    s.run();
    return Upsert::inserted;
  }
  // The bucket is written too: a replaced invalid row may have been stored with a wrong one. The quartiles and
  // host load are replaced with the rest of the measurement, NULL included: the old ones describe another run.
  sql::Stmt s(db, "UPDATE records SET config = ?18, median_ms = ?19, min_ms = ?20, max_ms = ?21, reps = ?22, "
                  "tflops = ?23, rel_error = ?24, max_scaled_error = ?25, tool_version = ?26, created_at = ?27, "
                  "source = ?28, q1_ms = ?29, q3_ms = ?30, others_cores = ?31, spare_cores = ?32, "
                  "bucket_m = ?14, bucket_n = ?15, bucket_k = ?16, bucket_batch = ?17 "
                  "WHERE id = ?33 AND device = ?1 AND backend = ?2 AND family = ?3 AND "
                  "family_version = ?4 AND m = ?5 AND n = ?6 AND k = ?7 AND batch = ?8 AND input = ?9 AND "
                  "output = ?10 AND accum = ?11 AND layout = ?12 AND align = ?13");
  bind_value(s);
  s.bind_int(33, old_id);
  s.run();
  if (sqlite3_changes(db) != 1) {
    throw sql::Error{SQLITE_CORRUPT, fmt::format("record {} vanished while it was replaced", old_id)};
  }
  return Upsert::replaced;
}

Status checked(const Record& r, std::string_view what) {
  if (auto e = validate_record(r)) {
    return invalid_argument(fmt::format("{} ({} on {}): field {} {}", what, r.problem.key(), r.backend, e->field,
                                        e->why));
  }
  return {};
}

}  // namespace

Expected<Upsert> Store::upsert(const Record& record, bool force) {
  if (Status s = checked(record, "record"); !s) return s;
  std::lock_guard lock(impl_->mu);
  try {
    sql::WriteTxn txn(impl_->db);
    const Upsert u = upsert_one(impl_->db, record, force);
    txn.commit();
    return u;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

Expected<std::vector<Upsert>> Store::upsert_all(const std::vector<Record>& records, bool force) {
  for (std::size_t i = 0; i < records.size(); ++i)
    if (Status s = checked(records[i], fmt::format("record {}", i)); !s) return s;
  std::lock_guard lock(impl_->mu);
  try {
    std::vector<Upsert> out;
    out.reserve(records.size());
    sql::WriteTxn txn(impl_->db);
    for (const Record& r : records) out.push_back(upsert_one(impl_->db, r, force));
    txn.commit();
    return out;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

namespace {

// The WHERE clause of prune's filter, and its values bound in the same order.
std::string prune_where(const PruneFilter& f) {
  std::string where = "1";
  int next = 1;
  if (!f.older_than.empty()) where += fmt::format(" AND created_at < ?{}", next++);
  if (!f.device.empty()) where += fmt::format(" AND device = ?{}", next++);
  if (!f.current.empty()) {
    std::string any;
    for (std::size_t i = 0; i < f.current.size(); ++i) {
      any += fmt::format("{}(family = ?{} AND family_version < ?{})", i ? " OR " : "", next, next + 1);
      next += 2;
    }
    where += " AND (" + any + ")";
  }
  return where;
}

void bind_prune(sql::Stmt& s, const PruneFilter& f) {
  int i = 1;
  if (!f.older_than.empty()) s.bind_text(i++, f.older_than);
  if (!f.device.empty()) s.bind_text(i++, f.device);
  for (const auto& [family, version] : f.current) {
    s.bind_text(i++, family);
    s.bind_int(i++, version);
  }
}

Status check_prune_filter(const PruneFilter& f) {
  if (f.older_than.empty() && f.device.empty() && f.current.empty()) {
    return invalid_argument("prune needs at least one criterion (older than a time, a device, or current family "
                            "versions); nothing was deleted");
  }
  if (!f.older_than.empty() && !is_iso_time(f.older_than)) {
    return invalid_argument(fmt::format("prune: time '{}' is not YYYY-MM-DDTHH:MM:SSZ (UTC)", f.older_than));
  }
  return {};
}

}  // namespace

Expected<int64_t> Store::prune(const PruneFilter& f) {
  if (Status s = check_prune_filter(f); !s) return s;
  if (f.dry_run) {
    auto ids = prune_matches(f);
    if (!ids) return ids.status();
    return int64_t(ids->size());
  }
  std::lock_guard lock(impl_->mu);
  try {
    sql::WriteTxn txn(impl_->db);
    sql::Stmt s(impl_->db, "DELETE FROM records WHERE " + prune_where(f));
    bind_prune(s, f);
    s.run();
    const int64_t deleted = sqlite3_changes(impl_->db);
    sql::exec(impl_->db, "DELETE FROM devices WHERE hash NOT IN (SELECT DISTINCT device FROM records)");
    txn.commit();
    return deleted;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

Expected<std::vector<int64_t>> Store::prune_matches(const PruneFilter& f) const {
  if (Status s = check_prune_filter(f); !s) return s;
  std::lock_guard lock(impl_->mu);
  try {
    // Only reads (so a dry run works on a read-only DB too).
    sql::Stmt s(impl_->db, "SELECT id FROM records WHERE " + prune_where(f) + " ORDER BY id");
    bind_prune(s, f);
    std::vector<int64_t> ids;
    while (s.step()) ids.push_back(s.i64(0));
    return ids;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

Expected<std::vector<InvalidRow>> Store::prune_invalid(bool dry_run) {
  if (dry_run) return check();  // only reads (so it works on a read-only DB too)
  std::lock_guard lock(impl_->mu);
  try {
    // One write transaction: the rows judged invalid are the rows deleted, whatever another writer does meanwhile.
    sql::WriteTxn txn(impl_->db);
    std::vector<InvalidRow> out;
    {
      sql::Stmt s(impl_->db, select_sql(impl_->version) + " ORDER BY r.id");
      while (s.step()) {
        const Row row = read_row(s);
        if (!row.valid()) out.push_back(row.invalid());
      }
    }
    for (const InvalidRow& bad : out) {
      sql::Stmt del(impl_->db, "DELETE FROM records WHERE id = ?1");
      del.bind_int(1, bad.id);
      del.run();
    }
    sql::exec(impl_->db, "DELETE FROM devices WHERE hash NOT IN (SELECT DISTINCT device FROM records)");
    txn.commit();
    return out;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

// ---- reading ---------------------------------------------------------------------------------------------------

std::string InvalidRow::describe() const { return fmt::format("record #{} ({}): {}", id, key, why); }

Expected<std::vector<Record>> Store::list(const ListFilter& f, std::vector<InvalidRow>* skipped) const {
  std::string where = " WHERE 1";
  if (!f.device.empty()) where += " AND substr(r.device, 1, length(?1)) = ?1";
  if (!f.backend.empty()) where += " AND r.backend = ?2";
  if (!f.family.empty()) where += " AND r.family = ?3";
  if (!f.arch.empty()) where += " AND d.arch = ?4";
  std::lock_guard lock(impl_->mu);
  try {
    sql::Stmt s(impl_->db, select_sql(impl_->version) + where +
                               " ORDER BY r.device, r.backend, r.family, r.m, r.n, r.k, r.batch, r.id");
    if (!f.device.empty()) s.bind_text(1, f.device);
    if (!f.backend.empty()) s.bind_text(2, f.backend);
    if (!f.family.empty()) s.bind_text(3, f.family);
    if (!f.arch.empty()) s.bind_text(4, f.arch);
    std::vector<Record> out;
    while (s.step()) {
      Row row = read_row(s);
      if (row.valid()) {
        out.push_back(std::move(row.record));
      } else if (skipped) {
        skipped->push_back(row.invalid());
      }
    }
    return out;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

Expected<std::optional<Record>> Store::get(int64_t id, std::optional<InvalidRow>* invalid) const {
  std::lock_guard lock(impl_->mu);
  try {
    sql::Stmt s(impl_->db, select_sql(impl_->version) + " WHERE r.id = ?1");
    s.bind_int(1, id);
    if (!s.step()) return std::optional<Record>();
    Row row = read_row(s);
    if (!row.valid()) {
      if (!invalid) {
        return invalid_argument(fmt::format("{} is invalid; `tileforge db prune --invalid` removes it",
                                            row.invalid().describe()));
      }
      *invalid = row.invalid();
    }
    return std::optional<Record>(std::move(row.record));
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

Expected<std::vector<InvalidRow>> Store::check() const {
  std::lock_guard lock(impl_->mu);
  try {
    sql::Stmt s(impl_->db, select_sql(impl_->version) + " ORDER BY r.id");
    std::vector<InvalidRow> out;
    while (s.step()) {
      const Row row = read_row(s);
      if (!row.valid()) out.push_back(row.invalid());
    }
    return out;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

Expected<std::vector<DeviceSummary>> Store::devices() const {
  std::lock_guard lock(impl_->mu);
  try {
    sql::Stmt s(impl_->db, "SELECT d.hash, d.kind, d.name, d.arch, d.cores, d.clock_mhz, d.driver, d.toolkit, "
                           "(SELECT count(*) FROM records r WHERE r.device = d.hash) FROM devices d "
                           "ORDER BY d.arch, d.name, d.hash");
    std::vector<DeviceSummary> out;
    while (s.step()) {
      DeviceSummary d;
      d.hash = s.text(0);
      d.device = {s.text(1), s.text(2), s.text(3), int(s.i64(4)), int(s.i64(5)), s.text(6), s.text(7)};
      d.records = s.i64(8);
      out.push_back(std::move(d));
    }
    return out;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

// ---- lookup ----------------------------------------------------------------------------------------------------

Expected<LookupResult> Store::lookup(const LookupRequest& req) const {
  if (req.families.empty()) {
    return invalid_argument("lookup needs the kernel families the backend runs, with their current versions");
  }
  if (Status s = req.problem.validate(); !s) return s;
  const Signature want = signature_of(req.problem);
  const Signature bucket = want.bucket();
  const std::string mine = req.device.hash();

  std::vector<Record> all;
  std::vector<std::string> hashes;
  std::vector<InvalidRow> invalid;
  {
    std::lock_guard lock(impl_->mu);
    try {
      // Every record of this backend in the problem's bucket, on any device; the architecture rule is applied below
      // so that the reason can say how many records of other architectures were left out.
      sql::Stmt s(impl_->db, select_sql(impl_->version) +
                                 " WHERE r.backend = ?1 AND r.input = ?2 AND r.output = ?3 AND r.accum = ?4 AND "
                                 "r.layout = ?5 AND r.align = ?6 AND r.bucket_m = ?7 AND r.bucket_n = ?8 AND "
                                 "r.bucket_k = ?9 AND r.bucket_batch = ?10");
      s.bind_text(1, req.backend).bind_text(2, to_string(want.input)).bind_text(3, to_string(want.output));
      s.bind_text(4, to_string(want.accum)).bind_text(5, to_string(want.layout)).bind_int(6, want.align);
      s.bind_int(7, bucket.m).bind_int(8, bucket.n).bind_int(9, bucket.k).bind_int(10, bucket.batch);
      while (s.step()) {
        Row row = read_row(s);
        // An invalid row is never dispatched: a median of 0 would otherwise sort first in every tier.
        if (!row.valid()) {
          invalid.push_back(row.invalid());
          continue;
        }
        all.push_back(std::move(row.record));
        hashes.push_back(std::move(row.hash));
      }
    } catch (const sql::Error& e) {
      return impl_->error(e);
    }
  }

  // Partition: the four tiers in fallback order; other architectures and other family versions are counted only.
  struct Candidate {
    const Record* r;
    bool here;
    double distance;
  };
  std::vector<Candidate> tiers[4];  // exact here, bucket here, exact on arch, bucket on arch
  int other_arch = 0, other_version = 0, other_family = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Record& r = all[i];
    if (r.device.arch != req.device.arch) {
      ++other_arch;
      continue;
    }
    auto fam = req.families.find(r.family());
    if (fam == req.families.end()) {
      ++other_family;
      continue;
    }
    if (fam->second != r.family_version) {
      ++other_version;
      continue;
    }
    const bool here = hashes[i] == mine;
    const bool exact = r.problem == want;
    tiers[(here ? 0 : 2) + (exact ? 0 : 1)].push_back({&r, here, log_distance(r.problem, want)});
  }

  // Deterministic orders (docs/TUNING-DB.md): nearest shape, then the device most like this one, then the faster
  // record, then plain keys so that equal records still sort one way.
  auto shape_key = [](const Record& r) {
    return std::tuple(r.problem.m, r.problem.n, r.problem.k, r.problem.batch);
  };
  auto likeness = [&](const Record& r) {
    return std::tuple(r.device.name == req.device.name ? 0 : 1, std::abs(r.device.cores - req.device.cores),
                      std::abs(r.device.clock_mhz - req.device.clock_mhz));
  };
  auto tail = [&](const Candidate& c) {
    return std::tuple(c.r->time.median_ms, shape_key(*c.r), c.r->device.hash(), c.r->family(), c.r->id);
  };
  std::sort(tiers[0].begin(), tiers[0].end(),
            [&](const Candidate& a, const Candidate& b) { return tail(a) < tail(b); });
  std::sort(tiers[1].begin(), tiers[1].end(), [&](const Candidate& a, const Candidate& b) {
    return std::tuple(a.distance, tail(a)) < std::tuple(b.distance, tail(b));
  });
  std::sort(tiers[2].begin(), tiers[2].end(), [&](const Candidate& a, const Candidate& b) {
    return std::tuple(likeness(*a.r), tail(a)) < std::tuple(likeness(*b.r), tail(b));
  });
  std::sort(tiers[3].begin(), tiers[3].end(), [&](const Candidate& a, const Candidate& b) {
    return std::tuple(a.distance, likeness(*a.r), tail(a)) < std::tuple(b.distance, likeness(*b.r), tail(b));
  });

  LookupResult out;
  out.invalid = std::move(invalid);
  const Hit hits[4] = {Hit::exact, Hit::bucket, Hit::arch, Hit::arch};
  for (int t = 0; t < 4; ++t) {
    for (const Candidate& c : tiers[t]) {
      if (req.accept) {
        if (Support s = req.accept(*c.r); !s) {
          out.rejected.push_back(
              fmt::format("record {} ({} {}): {}", c.r->id, c.r->problem.shape(), c.r->config.describe(), s.reason));
          continue;
        }
      }
      const Record& r = *c.r;
      out.source = hits[t];
      const std::string where =
          c.here ? where_here(req.device)
                 : fmt::format("{}, another fingerprint of {}", r.device.describe(), req.device.arch);
      const std::string for_shape = r.problem == want ? "" : fmt::format(" for {}", want.shape());
      out.reason = fmt::format("{}: {} tuned on {}{} ({})", to_string(out.source), r.problem.shape(), where, for_shape,
                               summary(r));
      out.record = r;
      return out;
    }
  }
  out.source = Hit::planner;
  std::string skipped;
  auto note = [&](int count, std::string_view what) {
    if (count > 0) skipped += fmt::format("{}{} {}", skipped.empty() ? "; left out: " : ", ", count, what);
  };
  note(other_arch, "of another architecture");
  note(other_family, "of a family this backend does not run here");
  note(other_version, "of another family version");
  note(int(out.rejected.size()), "refused by the backend");
  if (!out.invalid.empty()) {
    note(int(out.invalid.size()), fmt::format("invalid (record #{}: {}; `tileforge db check` lists them)",
                                              out.invalid[0].id, out.invalid[0].why));
  }
  out.reason = fmt::format("planner: no record for {} on {} ({} or another {} device) in the tuning DB{}", want.key(),
                           req.backend, where_here(req.device), req.device.arch, skipped);
  return out;
}

// ---- dispatch --------------------------------------------------------------------------------------------------

DispatchDb open_for_dispatch(const std::string& path, bool enabled) {
  DispatchDb out;
  if (!enabled) {
    out.note = "tuning DB disabled (--no-db)";
    return out;
  }
  OpenOptions o;
  o.access = Access::read_only;
  auto store = Store::open(path, o);
  if (!store) {
    out.note = store.status().message();
    return out;
  }
  out.store = std::move(store).value();
  return out;
}

std::function<Support(const Record&)> legal_in(ParamSpace space) {
  return [space = std::move(space)](const Record& r) {
    if (Status s = space.check(r.config); !s) return Support::no(s.message());
    return Support::yes();
  };
}

LookupResult lookup_or_plan(const DispatchDb& db, const LookupRequest& request) {
  LookupResult out;
  if (!db.store) {
    out.reason = fmt::format("planner: {}", db.note.empty() ? "no tuning DB" : db.note);
    return out;
  }
  auto r = db.store->lookup(request);
  if (!r) {
    out.reason = fmt::format("planner: tuning DB lookup failed: {}", r.status().message());
    return out;
  }
  return std::move(r).value();
}

}  // namespace tileforge::db
