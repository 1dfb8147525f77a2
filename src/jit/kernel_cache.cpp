// Kernel cache entries: a header line, a JSON record (log, names, sizes, checksum) and the cubin, in one file
// written atomically, so an entry is either whole or absent and a damaged one is detected and replaced.
#include "jit/kernel_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "jit/content_hash.hpp"

namespace tileforge::jit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kMagic = "tileforge-kernel 1\n";

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// File-name-safe form of a kernel name.
std::string safe_name(std::string_view name) {
  std::string s;
  for (char c : name.substr(0, 80)) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return s.empty() ? "kernel" : s;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = std::move(ss).str();
  return !f.bad();
}

std::string unique_suffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ uint64_t(::getpid()) << 32 ^
                                          uint64_t(Clock::now().time_since_epoch().count()));
  return fmt::format("{}.{:016x}", ::getpid(), rng());
}

nlohmann::json report_json(const PtxasReport& r) {
  nlohmann::json fns = nlohmann::json::array();
  for (const auto& f : r.functions)
    fns.push_back({{"name", f.name}, {"arch", f.arch}, {"registers", f.registers}, {"barriers", f.barriers},
                   {"stack_frame_bytes", f.stack_frame_bytes}, {"spill_store_bytes", f.spill_store_bytes},
                   {"spill_load_bytes", f.spill_load_bytes}, {"smem_bytes", f.smem_bytes}});
  return {{"functions", fns}, {"warnings", r.warnings}};
}

std::string serialize(const CompiledKernel& k, const std::string& nvrtc_identity) {
  nlohmann::json meta = {
      {"key", k.key},
      {"name", k.name},
      {"arch", k.arch},
      {"nvrtc", nvrtc_identity},
      {"cubin_bytes", k.cubin.size()},
      {"cubin_xxh3_128", content_hash_hex(k.cubin)},
      {"lowered_names", k.lowered_names},
      {"compile_seconds", k.first_compile_seconds},
      {"created_unix", int64_t(std::time(nullptr))},
      {"report", report_json(k.report)},  // for people reading the entry; a hit re-parses the log
      {"log", k.log},
  };
  std::string text = meta.dump();
  std::string out;
  out.reserve(kMagic.size() + 24 + text.size() + k.cubin.size());
  out += kMagic;
  out += std::to_string(text.size());
  out += '\n';
  out += text;
  out += k.cubin;
  return out;
}

// Parses an entry; "" on success, else what is wrong with it.
std::string deserialize(std::string_view data, std::string_view key, CompiledKernel& k) {
  if (!data.starts_with(kMagic)) return "bad header";
  data.remove_prefix(kMagic.size());
  std::size_t nl = data.find('\n');
  if (nl == std::string_view::npos || nl > 20) return "bad record length";
  std::size_t meta_len = 0;
  for (char c : data.substr(0, nl)) {
    if (c < '0' || c > '9') return "bad record length";
    meta_len = meta_len * 10 + std::size_t(c - '0');
  }
  data.remove_prefix(nl + 1);
  if (meta_len > data.size()) return "truncated record";
  nlohmann::json meta = nlohmann::json::parse(data.substr(0, meta_len), nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object()) return "unreadable record";
  data.remove_prefix(meta_len);
  try {
    if (meta.at("key").get<std::string>() != key) return "key mismatch";
    std::size_t cubin_bytes = meta.at("cubin_bytes").get<std::size_t>();
    if (cubin_bytes != data.size()) return fmt::format("cubin is {} bytes, record says {}", data.size(), cubin_bytes);
    if (content_hash_hex(data) != meta.at("cubin_xxh3_128").get<std::string>()) return "cubin checksum mismatch";
    k.name = meta.at("name").get<std::string>();
    k.arch = meta.at("arch").get<std::string>();
    k.log = meta.at("log").get<std::string>();
    k.lowered_names = meta.at("lowered_names").get<std::map<std::string, std::string>>();
    k.first_compile_seconds = meta.value("compile_seconds", 0.0);
  } catch (const nlohmann::json::exception& e) {
    return std::string("bad record: ") + e.what();
  }
  k.cubin.assign(data);
  k.report = parse_ptxas_report(k.log);
  return {};
}

// The first lines that say "error", for the Status message (the whole log is in the file).
std::string first_errors(std::string_view log, int max_lines) {
  std::vector<std::string> lines;
  std::vector<std::string> any;
  while (!log.empty()) {
    std::size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (int(any.size()) < max_lines) any.emplace_back(line);
    if (line.find("error") != std::string_view::npos && int(lines.size()) < max_lines) lines.emplace_back(line);
  }
  return fmt::format("{}", fmt::join(lines.empty() ? any : lines, "\n"));
}

// True when the log says ptxas (NVRTC's assembler step) failed, rather than the C++ front end: its error lines
// start with "ptxas" ("ptxas fatal   : Ptx assembly aborted due to errors"). The -v report lines ("ptxas info")
// are in every successful log too, so only error and fatal lines count.
bool ptxas_failed(std::string_view log) {
  for (std::size_t at = log.find("ptxas"); at != std::string_view::npos; at = log.find("ptxas", at + 1)) {
    if (at != 0 && log[at - 1] != '\n') continue;
    std::string_view line = log.substr(at, log.find('\n', at) - at);
    if (line.find("error") != std::string_view::npos || line.find("fatal") != std::string_view::npos) return true;
  }
  return false;
}

// A cache that cannot be written costs a compile on every run and would otherwise go unnoticed (the note reaches
// only callers that read it), so it is said on stderr, once per directory and process.
void warn_cache_unwritable(const std::string& dir, const std::string& what) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (!said.insert(dir).second) return;
  std::fprintf(stderr,
               "tileforge: warning: kernel cache %s: %s; kernels are compiled again in every process until it can "
               "be written (free space there, or set TILEFORGE_CACHE_DIR to another folder)\n",
               dir.c_str(), what.c_str());
}

void dump(const std::string& dir, const CompileRequest& r, const std::vector<std::string>& options, const CompiledKernel& k,
          bool fresh) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string base = (fs::path(dir) / (safe_name(r.name) + "-" + k.key.substr(0, 16))).string();
  auto put = [](const std::string& path, std::string_view text) {
    std::ofstream f(path, std::ios::binary);
    f.write(text.data(), std::streamsize(text.size()));
  };
  put(base + ".cu", r.source);
  for (const Header& h : r.headers) {
    fs::path p = fs::path(base + ".headers") / fs::path(h.name).relative_path();
    fs::create_directories(p.parent_path(), ec);
    put(p.string(), h.content);
  }
  std::string log = fmt::format("// {} for {}, key {}\n// options: {}\n// {}\n{}", r.name, r.arch, k.key,
                                fmt::join(options, " "),
                                fresh ? "compiled now" : "cache hit: PTX not kept; empty the cache dir to dump it", k.log);
  put(base + ".log", log);
  if (!k.ptx.empty()) put(base + ".ptx", k.ptx);
  if (!k.cubin.empty()) put(base + ".cubin", k.cubin);
}

}  // namespace

std::string CompiledKernel::symbol(std::string_view kernel) const {
  auto it = lowered_names.find(std::string(kernel));
  return it != lowered_names.end() ? it->second : std::string(kernel);
}

std::string default_cache_dir() {
  if (const char* v = std::getenv("TILEFORGE_CACHE_DIR"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return (fs::path(v) / "tileforge" / "kernels").string();
  if (const char* v = std::getenv("HOME"); v && *v) return (fs::path(v) / ".cache" / "tileforge" / "kernels").string();
  std::error_code ec;
  return (fs::temp_directory_path(ec) / fmt::format("tileforge-kernels-{}", ::getuid())).string();
}

std::string cache_key(const CompileRequest& r, const Nvrtc& nvrtc) {
  ContentHash h;
  h.field("tileforge kernel cache key 2");
  h.field(nvrtc.identity());
  h.field(r.arch);
  h.field(r.source);
  // Headers in name order: the order they were listed in does not change what an #include finds.
  std::vector<const Header*> headers;
  for (const Header& x : r.headers) headers.push_back(&x);
  std::sort(headers.begin(), headers.end(), [](const Header* a, const Header* b) { return a->name < b->name; });
  h.field(std::to_string(headers.size()));
  for (const Header* x : headers) {
    h.field(x->name);
    h.field(x->content);
  }
  std::vector<std::string> options = nvrtc.options_for(r);
  h.field(std::to_string(options.size()));
  for (const std::string& o : options) h.field(o);
  h.field(std::to_string(r.name_expressions.size()));
  for (const std::string& e : r.name_expressions) h.field(e);
  return h.hex();
}

Expected<bool> inject_fault(std::string_view spec, CompileRequest& request) {
  const std::size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view only = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  if (kind != "nvrtc" && kind != "ptxas" && kind != "trap") {
    return invalid_argument(fmt::format("TILEFORGE_JIT_FAULT={}: unknown fault '{}' (allowed: nvrtc, ptxas or trap, "
                                        "optionally :TEXT to fault only kernels whose name contains TEXT)",
                                        spec, kind));
  }
  if (!only.empty() && request.name.find(only) == std::string::npos) return false;
  if (kind == "trap") {
    // Compiles, and faults when it runs: a trap at the top of the body of the kernel named as the request (or of
    // the source's first __global__ function). The CUDA context is lost with it, as with an illegal address.
    std::size_t at = request.source.find(request.name + "(");
    if (at == std::string::npos) at = request.source.find("__global__");
    const std::size_t body = at == std::string::npos ? at : request.source.find('{', at);
    if (body == std::string::npos) {
      return invalid_argument(fmt::format("TILEFORGE_JIT_FAULT={}: no kernel body found in the source of '{}'", spec,
                                          request.name));
    }
    request.source.insert(body + 1, " asm volatile(\"trap;\");");
  } else if (kind == "nvrtc") {
    request.source += "\n#error \"tileforge: compile fault injected by TILEFORGE_JIT_FAULT=nvrtc\"\n";
  } else {
    // Valid C++ that NVRTC turns into PTX, which ptxas then refuses: the assembler's own failure path.
    request.source +=
        "\nextern \"C\" __global__ void tileforge_injected_fault() { asm volatile(\"tileforge_injected_ptxas_fault;\"); }\n";
  }
  return true;
}

Status write_file_atomic(const std::string& path, std::string_view data) {
  fs::path final_path(path);
  fs::path dir = final_path.parent_path();
  std::string tmp = (dir / ("." + final_path.filename().string() + ".tmp." + unique_suffix())).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Code::io_error, fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(Code::io_error, fmt::format("cannot write {}: {}", tmp, std::strerror(e)));
    }
    done += std::size_t(n);
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Status(Code::io_error, fmt::format("cannot flush {}: {}", tmp, std::strerror(e)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Status(Code::io_error, fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(e)));
  }
  if (int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // makes the rename itself durable
    ::close(dfd);
  }
  return Status::Ok();
}

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {}

KernelCache& KernelCache::shared() {
  static KernelCache cache(default_cache_dir());
  return cache;
}

std::string KernelCache::entry_path(std::string_view key) const {
  return (fs::path(dir_) / (std::string(key) + ".tfk")).string();
}

KernelCache::Counters KernelCache::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

namespace {

// The failed compile's status: the first errors, and the whole log kept in a file (beside the cache, in the dump
// folder, or in the temporary folder) whose path the message gives.
Status compile_failure(const std::string& cache_dir, bool use_disk, const char* dump_dir, const Nvrtc& nvrtc,
                       const CompileRequest& request, const CompiledKernel& k) {
  // Keep the whole log where the user can read it; the message carries the first errors.
  std::string log_dir = use_disk ? (fs::path(cache_dir) / "failed").string()
                                 : (fs::temp_directory_path() / "tileforge-jit-failed").string();
  if (dump_dir && *dump_dir) log_dir = dump_dir;
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  std::string log_path = (fs::path(log_dir) / (safe_name(request.name) + "-" + k.key.substr(0, 16) + ".log")).string();
  std::string text = fmt::format("// {} for {}\n// options: {}\n{}\n", request.name, request.arch,
                                 fmt::join(nvrtc.options_for(request), " "), k.log);
  if (!write_file_atomic(log_path, text)) log_path = "(not written)";
  if (dump_dir && *dump_dir) dump(dump_dir, request, nvrtc.options_for(request), k, true);
  std::string hint = nvrtc.include_dir().empty() && k.log.find("cuda_") != std::string::npos
                         ? "\n(no CUDA include directory with cuda_fp16.h was found: set CUDA_HOME)"
                         : "";
  return Status(Code::compile_failed,
                fmt::format("{} '{}' for {} (log: {}):\n{}{}",
                            ptxas_failed(k.log) ? "ptxas (NVRTC's assembler step) could not assemble"
                                                : "NVRTC could not compile",
                            request.name, request.arch, log_path, first_errors(k.log, 12), hint));
}

}  // namespace

Expected<CompiledKernel> KernelCache::get(const CompileRequest& asked) {
  CompileRequest faulted;
  const CompileRequest* chosen = &asked;
  if (const char* spec = std::getenv("TILEFORGE_JIT_FAULT"); spec && *spec) {
    faulted = asked;
    auto applies = inject_fault(spec, faulted);
    if (!applies) return applies.status();
    if (*applies) chosen = &faulted;
  }
  const CompileRequest& request = *chosen;
  auto nv = Nvrtc::get();
  if (!nv) return nv.status();
  const Nvrtc& nvrtc = **nv;
  if (Status s = nvrtc.check_arch(request.arch); !s) return s;

  auto t0 = Clock::now();
  CompiledKernel k;
  k.key = cache_key(request, nvrtc);
  std::shared_ptr<std::mutex> key_mutex;
  {
    std::lock_guard lock(mutex_);
    auto& m = in_flight_[k.key];
    if (!m) m = std::make_shared<std::mutex>();
    key_mutex = m;
  }
  // Threads of this process asking for the same kernel wait for the first one's compile, then hit the cache.
  std::lock_guard key_lock(*key_mutex);

  const char* dump_dir = std::getenv("TILEFORGE_JIT_DUMP");
  bool use_disk = !dir_.empty();
  if (use_disk) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) {
      k.note = fmt::format("kernel cache {} unusable ({}); compiled without caching", dir_, ec.message());
      warn_cache_unwritable(dir_, fmt::format("unusable ({})", ec.message()));
      use_disk = false;
    }
  }
  std::string path = use_disk ? entry_path(k.key) : std::string();
  if (use_disk) {
    std::string data;
    if (read_file(path, data)) {
      std::string problem = deserialize(data, k.key, k);
      if (problem.empty()) {
        k.cache_hit = true;
        k.entry_path = path;
        k.lookup_seconds = seconds_since(t0);
        {
          std::lock_guard lock(mutex_);
          ++counters_.hits;
        }
        if (dump_dir && *dump_dir) dump(dump_dir, request, nvrtc.options_for(request), k, false);
        return k;
      }
      // A damaged entry (a crash before fsync on an old kernel, a full disk, a foreign file) is removed and
      // rebuilt rather than trusted or reported as an error.
      ::unlink(path.c_str());
      std::string key = std::move(k.key);
      k = CompiledKernel{};
      k.key = std::move(key);
      k.note = fmt::format("replaced a damaged cache entry {} ({})", path, problem);
      std::lock_guard lock(mutex_);
      ++counters_.corrupt_entries;
    }
  }
  k.lookup_seconds = seconds_since(t0);
  {
    std::lock_guard lock(mutex_);
    ++counters_.misses;
  }

  auto out = nvrtc.compile(request);
  if (!out) return out.status();
  k.name = request.name;
  k.arch = request.arch;
  k.log = std::move(out->log);
  k.compile_seconds = k.first_compile_seconds = out->seconds;
  if (!out->ok) return compile_failure(dir_, use_disk, dump_dir, nvrtc, request, k);
  k.cubin = std::move(out->cubin);
  k.ptx = std::move(out->ptx);
  k.report = std::move(out->report);
  k.lowered_names = std::move(out->lowered_names);
  if (dump_dir && *dump_dir) dump(dump_dir, request, nvrtc.options_for(request), k, true);

  if (use_disk) {
    auto ts = Clock::now();
    if (Status s = write_file_atomic(path, serialize(k, nvrtc.identity())); s) {
      k.entry_path = path;
    } else {
      k.note += (k.note.empty() ? "" : "; ") + ("not cached: " + s.message());
      warn_cache_unwritable(dir_, fmt::format("'{}' not cached ({})", request.name, s.message()));
      std::lock_guard lock(mutex_);
      ++counters_.store_failures;
    }
    k.store_seconds = seconds_since(ts);
  }
  return k;
}

}  // namespace tileforge::jit
