// `tileforge db`, what its subcommands share: finding and opening the DB, checking filters, describing records.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.hpp"
#include "core/envelope.hpp"
#include "db/exchange.hpp"
#include "db_verbs.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cli::db_verb {

namespace {

// The names this build knows, plus those present in the DB (records imported from a newer build), sorted.
std::vector<std::string> known_names(std::set<std::string> names) { return {names.begin(), names.end()}; }

// Checks the filter options and turns them into the store's filter; `records` is every record of the DB (empty
// when there is none), so that a name seen only in the DB is accepted.
Expected<db::ListFilter> filter_from(const FilterArgs& f, const std::vector<db::Record>& records) {
  db::ListFilter out;
  if (!f.device.empty()) {
    auto prefix = hash_prefix(f.device, "--device");
    if (!prefix) return prefix.status();
    out.device = *prefix;
  }
  if (!f.backend.empty()) {
    std::set<std::string> backends;
    for (Backend* b : all_backends())
      if (!b->native()) backends.insert(std::string(b->name()));
    for (const auto& r : records) backends.insert(r.backend);
    if (!backends.count(f.backend)) {
      return invalid_argument(fmt::format("--backend '{}' is not known (allowed: {})", f.backend,
                                          fmt::join(known_names(backends), ", ")));
    }
    out.backend = f.backend;
  }
  if (!f.family.empty()) {
    const std::vector<std::string> registered = plan::family_names();
    std::set<std::string> families(registered.begin(), registered.end());
    for (const auto& r : records) families.insert(r.family());
    if (!families.count(f.family)) {
      return invalid_argument(fmt::format("--family '{}' is not known (allowed: {})", f.family,
                                          fmt::join(known_names(families), ", ")));
    }
    out.family = f.family;
  }
  return out;
}

// One warning line per invalid row a reading verb left out, and what to do about them.
void warn_skipped(const db::Location& where, const std::vector<db::InvalidRow>& skipped) {
  for (const db::InvalidRow& bad : skipped) {
    std::fprintf(stderr, "tileforge: warning: tuning DB %s: skipped invalid %s\n", where.path.c_str(),
                 bad.describe().c_str());
  }
  if (!skipped.empty()) {
    std::fprintf(stderr,
                 "tileforge: warning: %zu invalid record%s skipped (never dispatched); `tileforge db check` lists "
                 "them, `tileforge db prune --invalid` removes them\n",
                 skipped.size(), skipped.size() == 1 ? "" : "s");
  }
}

Expected<Opened> open_for_reading(const db::Location& where) {
  Opened o;
  if (!file_exists(where.path)) return o;
  auto store = open_existing(where);
  if (!store) return store.status();
  auto all = store->list({}, &o.skipped);
  if (!all) return all.status();
  warn_skipped(where, o.skipped);
  o.all = std::move(*all);
  o.store = std::move(*store);
  return o;
}

std::vector<db::Record> filtered(const std::vector<db::Record>& all, const db::ListFilter& f) {
  std::vector<db::Record> out;
  for (const auto& r : all) {
    if (!f.device.empty() && !r.device.hash().starts_with(f.device)) continue;
    if (!f.backend.empty() && r.backend != f.backend) continue;
    if (!f.family.empty() && r.family() != f.family) continue;
    out.push_back(r);
  }
  return out;
}

}  // namespace

Expected<db::Location> location_from(const DbArgs& args) {
  auto request = db_request_from(args);
  if (!request) return request.status();
  return db::resolve_location(*request);
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

std::string no_db_yet(const db::Location& where) {
  return fmt::format("no tuning DB at {} yet (from {}); `tileforge tune` or `tileforge db import` writes one",
                     where.path, where.origin);
}

Expected<db::Store> open_existing(const db::Location& where) {
  auto store = db::Store::open(where.path);
  if (store) return store;
  db::OpenOptions ro;
  ro.access = db::Access::read_only;
  if (auto read_only = db::Store::open(where.path, ro); read_only) return read_only;
  return store.status();
}

Expected<std::string> hash_prefix(const std::string& text, const char* name) {
  std::string out;
  for (char c : text) out += char(std::tolower(static_cast<unsigned char>(c)));
  const bool hex = !out.empty() && out.size() <= 16 &&
                   out.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) {
    return invalid_argument(fmt::format("{} '{}' is not a device fingerprint hash or a prefix of one (allowed: 1 to 16 "
                                        "hex digits, as `tileforge db list` shows them)",
                                        name, text));
  }
  return out;
}

std::string params_text(const Config& c) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : c.params) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string version_note(const db::Record& r, const std::map<std::string, int64_t>& current) {
  auto it = current.find(r.family());
  if (it == current.end()) return "this build does not run this family";
  if (it->second == r.family_version) return "current";
  return fmt::format("stale: this build runs v{}; never dispatched, `db prune --stale-versions` removes it", it->second);
}

Expected<Selection> select_records(const DbArgs& db, const FilterArgs& filter) {
  auto where = location_from(db);
  if (!where) return where.status();
  auto opened = open_for_reading(*where);
  if (!opened) return opened.status();
  auto f = filter_from(filter, opened->all);
  if (!f) return f.status();
  Selection s{std::move(*where), std::move(*opened), {}};
  s.records = filtered(s.opened.all, *f);
  return s;
}

std::string spread_text(const db::Timing& t) {
  const auto share = t.iqr_share();
  const db::Quality q = t.quality();
  std::string text = share ? fmt::format("{:.3f}", *share) : "-";
  if (q.noisy) text += " noisy";
  if (q.busy) text += " busy";
  return text;
}

ojson record_json(const db::Record& r) {
  const ojson exported = ojson::parse(db::export_json({r}));
  ojson j;
  j["id"] = r.id;
  j["device_hash"] = r.device.hash();
  for (const auto& [key, value] : exported["records"][0].items()) j[key] = value;
  return j;
}

ojson envelope(std::string_view verb, const db::Location& where, bool exists) {
  ojson doc = tileforge::envelope<ojson>(verb);
  doc["environment"] = {{"tool_version", std::string(version())},
                        {"date", iso_date_now()},
                        {"db", where.path},
                        {"origin", where.origin},
                        {"exists", exists}};
  return doc;
}

}  // namespace tileforge::cli::db_verb
