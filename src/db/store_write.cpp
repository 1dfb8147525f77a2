// Writing the tuning DB: the best-median upsert of a record, and prune (by criteria, or of invalid rows).
#include <fmt/format.h>

#include "db/store.hpp"
#include "db/store_detail.hpp"

namespace tileforge::db {

namespace {

using detail::read_row;
using detail::Row;
using detail::select_sql;

// Binds the unique key's signature columns at ?first .. ?first+8 (m, n, k, batch, input, output, accum, layout,
// align).
void bind_signature(sql::Stmt& s, int first, const Signature& p) {
  s.bind_int(first, p.m).bind_int(first + 1, p.n).bind_int(first + 2, p.k).bind_int(first + 3, p.batch);
  s.bind_text(first + 4, to_string(p.input)).bind_text(first + 5, to_string(p.output));
  s.bind_text(first + 6, to_string(p.accum)).bind_text(first + 7, to_string(p.layout));
  s.bind_int(first + 8, p.align);
}

// Adds the record's device fingerprint unless it is stored already.
void store_device(sqlite3* db, const Record& r, const std::string& hash) {
  sql::Stmt s(db, "INSERT OR IGNORE INTO devices (hash, key, kind, name, arch, cores, clock_mhz, driver, toolkit) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  s.bind_text(1, hash).bind_text(2, r.device.key()).bind_text(3, r.device.kind).bind_text(4, r.device.name);
  s.bind_text(5, r.device.arch).bind_int(6, r.device.cores).bind_int(7, r.device.clock_mhz);
  s.bind_text(8, r.device.driver).bind_text(9, r.device.toolkit);
  s.run();
}

// What is stored under the record's key, as far as the upsert rule needs it (id 0: nothing).
struct Stored {
  int64_t id = 0;
  bool valid = false, clean = true;
  double median = 0;
};

Stored find_stored(sqlite3* db, const Record& r, const std::string& hash) {
  Stored old;
  sql::Stmt s(db, select_sql(schema_version()) +
                      " WHERE r.device = ?1 AND r.backend = ?2 AND r.family = ?3 AND r.family_version = ?4 AND "
                      "r.m = ?5 AND r.n = ?6 AND r.k = ?7 AND r.batch = ?8 AND r.input = ?9 AND r.output = ?10 AND "
                      "r.accum = ?11 AND r.layout = ?12 AND r.align = ?13 AND r.deterministic = ?14");
  s.bind_text(1, hash).bind_text(2, r.backend).bind_text(3, r.family()).bind_int(4, r.family_version);
  bind_signature(s, 5, r.problem);
  s.bind_int(14, r.deterministic ? 1 : 0);
  if (s.step()) {
    const Row row = read_row(s);
    old.id = row.record.id;
    old.valid = row.valid();
    old.clean = row.record.time.quality().clean();
    old.median = row.record.time.median_ms;
  }
  return old;
}

// Whether the stored row stays. An invalid stored row never blocks a valid result: a median of 0 would otherwise win
// every comparison. Nor does a noisy one block a clean result (dispatch passes noisy rows over), and a noisy result
// never replaces a clean row, however fast its median (a disturbed measurement is not evidence of a faster kernel).
// Between two of the same kind the faster median stays.
bool keeps_stored(const Stored& old, const Record& r, bool force) {
  if (old.id == 0 || !old.valid || force) return false;
  const bool new_clean = r.time.quality().clean();
  if (old.clean && !new_clean) return true;
  return old.clean == new_clean && !(r.time.median_ms < old.median);
}

// Binds ?1..?13 and ?36 key, ?14..?17 bucket, ?18..?32 and ?34..?35 value: the columns the INSERT and the UPDATE
// below share.
void bind_record(sql::Stmt& s, const Record& r, const std::string& hash) {
  const Signature b = r.problem.bucket();
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
  // ?33 is the UPDATE's row id. An unknown host is NULL, as in rows stored before v3.
  if (r.host.empty()) {
    s.bind_int(34, std::optional<int64_t>());
  } else {
    s.bind_text(34, r.host);
  }
  s.bind_int(35, r.device_index);
  s.bind_int(36, r.deterministic ? 1 : 0);
}

void insert_record(sqlite3* db, const Record& r, const std::string& hash) {
  sql::Stmt s(db, "INSERT INTO records (device, backend, family, family_version, m, n, k, batch, input, output, "
                  "accum, layout, align, bucket_m, bucket_n, bucket_k, bucket_batch, config, median_ms, min_ms, "
                  "max_ms, reps, tflops, rel_error, max_scaled_error, tool_version, created_at, source, q1_ms, "
                  "q3_ms, others_cores, spare_cores, host, device_index, deterministic) VALUES "
                  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                  "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?34, ?35, ?36)");
  bind_record(s, r, hash);
  s.run();
}

// The bucket is written too: a replaced invalid row may have been stored with a wrong one. The quartiles and
// host load are replaced with the rest of the measurement, NULL included: the old ones describe another run.
void replace_record(sqlite3* db, const Record& r, const std::string& hash, int64_t old_id) {
  sql::Stmt s(db, "UPDATE records SET config = ?18, median_ms = ?19, min_ms = ?20, max_ms = ?21, reps = ?22, "
                  "tflops = ?23, rel_error = ?24, max_scaled_error = ?25, tool_version = ?26, created_at = ?27, "
                  "source = ?28, q1_ms = ?29, q3_ms = ?30, others_cores = ?31, spare_cores = ?32, host = ?34, "
                  "device_index = ?35, "
                  "bucket_m = ?14, bucket_n = ?15, bucket_k = ?16, bucket_batch = ?17 "
                  "WHERE id = ?33 AND device = ?1 AND backend = ?2 AND family = ?3 AND "
                  "family_version = ?4 AND m = ?5 AND n = ?6 AND k = ?7 AND batch = ?8 AND input = ?9 AND "
                  "output = ?10 AND accum = ?11 AND layout = ?12 AND align = ?13 AND deterministic = ?36");
  bind_record(s, r, hash);
  s.bind_int(33, old_id);
  s.run();
  if (sqlite3_changes(db) != 1) {
    throw sql::Error{SQLITE_CORRUPT, fmt::format("record {} vanished while it was replaced", old_id)};
  }
}

// One upsert inside the caller's write transaction.
Upsert upsert_one(sqlite3* db, const Record& in, bool force) {
  Record r = in;
  if (r.created_at.empty()) r.created_at = iso_date_now();
  const std::string hash = r.device.hash();
  store_device(db, r, hash);
  const Stored old = find_stored(db, r, hash);
  if (keeps_stored(old, r, force)) return Upsert::kept;
  if (old.id == 0) {
    insert_record(db, r, hash);
    return Upsert::inserted;
  }
  replace_record(db, r, hash, old.id);
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

// Deletes the fingerprints no record refers to any more (after a prune), inside the caller's transaction.
void delete_orphan_devices(sqlite3* db) {
  sql::exec(db, "DELETE FROM devices WHERE hash NOT IN (SELECT DISTINCT device FROM records)");
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
    delete_orphan_devices(impl_->db);
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
    delete_orphan_devices(impl_->db);
    txn.commit();
    return out;
  } catch (const sql::Error& e) {
    return impl_->error(e);
  }
}

}  // namespace tileforge::db
