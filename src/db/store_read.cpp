// Reading the tuning DB: list, get, check and devices, each skipping (and reporting) rows that do not validate.
#include <fmt/format.h>

#include "db/store.hpp"
#include "db/store_detail.hpp"

namespace tileforge::db {

using detail::read_row;
using detail::Row;
using detail::select_sql;

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

}  // namespace tileforge::db
