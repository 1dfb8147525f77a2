// `tileforge db import` and `prune`: the subcommands that write the tuning DB.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.hpp"
#include "db/exchange.hpp"
#include "db_verbs.hpp"
#include "dispatch/dispatch.hpp"

namespace tileforge::cli::db_verb {

namespace {

// An ISO UTC time, or an age ("90d", "12h", "2w", "30m", "45s") counted back from now.
Expected<std::string> cutoff_from(const std::string& text) {
  if (db::is_iso_time(text)) return text;
  static const std::map<char, int64_t> unit = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
  const bool age = text.size() >= 2 && unit.count(text.back()) &&
                   text.find_first_not_of("0123456789") == text.size() - 1 && text.size() <= 10;
  if (!age) {
    return invalid_argument(fmt::format("--older-than '{}' is neither a UTC time nor an age (allowed: "
                                        "YYYY-MM-DDTHH:MM:SSZ, or a number with s, m, h, d or w such as 30d)",
                                        text));
  }
  const int64_t seconds = std::stoll(text.substr(0, text.size() - 1)) * unit.at(text.back());
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return iso_time(now - seconds);
}

// The DB a prune works on and where it is, or the exit code when there is none (nothing to prune) or it cannot be
// opened. A dry run only reads: it works on a DB this user may not write.
struct PruneTarget {
  db::Location where;
  std::optional<db::Store> store;
  int exit = 0;
};
PruneTarget prune_target(std::string_view verb, const PruneArgs& a) {
  PruneTarget t;
  auto where = location_from(a.db);
  if (!where) {
    t.exit = fail(verb, where.status());
    return t;
  }
  t.where = *where;
  std::optional<OutputFile> none;
  if (!file_exists(where->path)) {
    t.exit = emit(verb, none, no_db_yet(*where) + "; nothing to prune\n");
    return t;
  }
  auto store = a.dry_run ? open_existing(*where) : db::Store::open(where->path);
  if (!store) {
    t.exit = fail(verb, store.status());
    return t;
  }
  t.store.emplace(std::move(*store));
  return t;
}

// `db prune --invalid [--dry-run]`: every row validation refuses, listed as it goes.
int run_prune_invalid(const PruneArgs& a) {
  constexpr std::string_view verb = "db prune";
  PruneTarget t = prune_target(verb, a);
  if (!t.store) return t.exit;
  const db::Location* where = &t.where;
  std::optional<OutputFile> none;
  auto* store = &*t.store;
  auto rows = store->prune_invalid(a.dry_run);
  if (!rows) return fail(verb, rows.status());
  std::string out;
  for (const db::InvalidRow& bad : *rows) {
    out += fmt::format("{} {}\n", a.dry_run ? "would prune" : "pruned", bad.describe());
  }
  out += fmt::format("{} {} invalid record{} from {}\n", a.dry_run ? "would prune" : "pruned", rows->size(),
                     rows->size() == 1 ? "" : "s", where->path);
  return emit(verb, none, out);
}

// The store's filter from the criteria options, the time resolved; `prefix` gets the --device prefix, which names a
// fingerprint only once the DB is open (resolve_device).
Expected<db::PruneFilter> prune_filter_from(const PruneArgs& a, std::string& prefix) {
  db::PruneFilter filter;
  if (!a.older_than.empty()) {
    auto cutoff = cutoff_from(a.older_than);
    if (!cutoff) return cutoff.status();
    filter.older_than = *cutoff;
  }
  if (!a.device.empty()) {
    auto p = hash_prefix(a.device, "--device");
    if (!p) return p.status();
    prefix = *p;
  }
  if (a.stale_versions) filter.current = dispatch::current_family_versions();
  return filter;
}

// The one fingerprint hash a --device prefix names in this DB. A prefix must name exactly one fingerprint: pruning
// the wrong machine's records cannot be undone.
Expected<std::string> resolve_device(db::Store& store, const std::string& prefix, const PruneArgs& a,
                                     const db::Location& where) {
  auto devices = store.devices();
  if (!devices) return devices.status();
  std::vector<std::string> matches;
  for (const auto& d : *devices)
    if (d.hash.starts_with(prefix)) matches.push_back(d.hash);
  if (matches.size() != 1) {
    return invalid_argument(fmt::format(
        "--device {} {} (allowed: a hash or unique prefix of one of the fingerprints `tileforge db list` shows)",
        a.device,
        matches.empty() ? fmt::format("matches no fingerprint in {}", where.path)
                        : fmt::format("matches {} fingerprints: {}", matches.size(), fmt::join(matches, ", "))));
  }
  return matches.front();
}

// `db prune --dry-run`: names each record that would go, as db list shows it, so the criteria can be checked before
// they delete.
Expected<std::string> dry_run_text(db::Store& store, const db::PruneFilter& filter, const db::Location& where) {
  auto ids = store.prune_matches(filter);
  if (!ids) return ids.status();
  std::string out;
  for (int64_t id : *ids) {
    std::optional<db::InvalidRow> invalid;
    auto record = store.get(id, &invalid);
    if (!record || !*record) {
      out += fmt::format("would prune #{}\n", id);
      continue;
    }
    const db::Record& r = **record;
    out += fmt::format("would prune #{} {} {} {} v{} {} created {}{}\n", id, r.device.hash().substr(0, 8), r.backend,
                       r.family(), r.family_version, r.problem.key(), r.created_at,
                       invalid ? fmt::format(" (invalid: {})", invalid->why) : "");
  }
  out += fmt::format("would prune {} record{} from {}; nothing was deleted (--dry-run)\n", ids->size(),
                     ids->size() == 1 ? "" : "s", where.path);
  return out;
}

}  // namespace

int run_import(const ImportArgs& a) {
  constexpr std::string_view verb = "db import";
  auto where = location_from(a.db);
  if (!where) return fail(verb, where.status());
  std::error_code ec;
  if (std::filesystem::is_directory(a.file, ec)) {
    return fail(verb, invalid_argument(fmt::format("FILE {} is a directory (allowed: a JSON export file)", a.file)));
  }
  std::ifstream in(a.file, std::ios::binary);
  if (!in) {
    return fail(verb, Status(Code::io_error, fmt::format("FILE {}: cannot be read ({})", a.file,
                                                         std::error_code(errno, std::generic_category()).message())));
  }
  std::stringstream text;
  text << in.rdbuf();
  // The whole file is checked before the DB is created or opened, so a bad file leaves no DB behind.
  if (auto parsed = db::parse_export(text.str(), a.file); !parsed) return fail(verb, parsed.status());
  auto store = db::Store::open(where->path);
  if (!store) return fail(verb, store.status());
  auto summary = db::import_json(*store, text.str(), a.file, a.force);
  if (!summary) return fail(verb, summary.status());
  const std::string line =
      fmt::format("imported {} into {}: {} new, {} replaced, {} kept{}\n", a.file, where->path, summary->inserted,
                  summary->replaced, summary->kept,
                  a.force ? " (--force: the file's records replace stored ones)"
                          : summary->kept ? " (a stored record as fast or faster wins; --force replaces)" : "");
  std::optional<OutputFile> none;
  return emit(verb, none, line);
}

int run_prune(const PruneArgs& a) {
  constexpr std::string_view verb = "db prune";
  if (a.invalid) {
    if (!a.older_than.empty() || !a.device.empty() || a.stale_versions) {
      return fail(verb, invalid_argument("--invalid removes every invalid record and takes no other criterion "
                                         "(allowed with it: --dry-run, --db); nothing was deleted"));
    }
    return run_prune_invalid(a);
  }
  if (a.older_than.empty() && a.device.empty() && !a.stale_versions) {
    return fail(verb, invalid_argument("give at least one of --older-than, --device, --stale-versions, --invalid "
                                       "(all given must hold for a record to go); nothing was deleted"));
  }
  std::string prefix;
  auto filter = prune_filter_from(a, prefix);
  if (!filter) return fail(verb, filter.status());
  PruneTarget t = prune_target(verb, a);
  if (!t.store) return t.exit;
  const db::Location& where = t.where;
  std::optional<OutputFile> none;
  db::Store& store = *t.store;
  if (!prefix.empty()) {
    auto device = resolve_device(store, prefix, a, where);
    if (!device) return fail(verb, device.status());
    filter->device = *device;
  }
  filter->dry_run = a.dry_run;
  if (a.dry_run) {
    auto text = dry_run_text(store, *filter, where);
    if (!text) return fail(verb, text.status());
    return emit(verb, none, *text);
  }
  auto removed = store.prune(*filter);
  if (!removed) return fail(verb, removed.status());
  return emit(verb, none, fmt::format("{} {} record{} from {}\n", a.dry_run ? "would prune" : "pruned", *removed,
                                      *removed == 1 ? "" : "s", where.path));
}

}  // namespace tileforge::cli::db_verb
