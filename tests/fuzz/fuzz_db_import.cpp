// libFuzzer target: tuning-DB JSON import (`db import FILE`) into a fresh SQLite DB per input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "db/exchange.hpp"
#include "db/store.hpp"

using namespace tileforge;

namespace {

// One temporary folder per process, removed at exit; the DB in it is deleted before each input, so that every
// input is judged alone and a crash reproduces from its file. (SQLite's in-memory DBs cannot use WAL, which the
// store requires.)
const std::string& db_path() {
  static const std::string path = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "tileforge-fuzz-db-XXXXXX").string();
    if (!::mkdtemp(dir.data())) std::abort();
    static const std::string kept = dir;
    std::atexit([] { std::filesystem::remove_all(kept); });
    return dir + "/tune.db";
  }();
  return path;
}

void remove_db(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // As `db import` does: the whole file is checked before a DB is opened.
  auto parsed = db::parse_export(text, "fuzz.json");
  if (!parsed) return 0;

  const std::string& path = db_path();
  remove_db(path);
  auto store = db::Store::open(path);
  if (!store) __builtin_trap();  // a fresh file in a private folder must open
  // Twice: the second import meets every key already stored and takes the keep/replace path (forced or not by the
  // input's last byte, so both are reached).
  auto first = db::import_json(*store, text, "fuzz.json");
  if (!first) __builtin_trap();  // parse_export accepted it, so the import must too
  (void)db::import_json(*store, text, "fuzz.json", size > 0 && (data[size - 1] & 1));

  std::vector<db::InvalidRow> skipped;
  auto records = store->list({}, &skipped);
  if (!records) __builtin_trap();
  (void)store->check();
  (void)store->devices();
  for (const auto& r : *records) (void)store->get(r.id);
  // What `db export` writes must be importable elsewhere.
  if (!db::parse_export(db::export_json(*records), "fuzz export")) __builtin_trap();
  (void)db::export_triton(*records);
  return 0;
}
