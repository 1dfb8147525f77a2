// The triton family's compiler: probe, cache and subprocess (see triton_compiler.hpp).
#include "backends/cuda/triton/triton_compiler.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/content_hash.hpp"

extern char** environ;

namespace tileforge::cuda::triton {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view embedded_file(std::string_view name) {
  for (const auto& [n, text] : embedded::embedded_triton_sources()) {
    if (n == name) return text;
  }
  return {};
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The last `lines` lines of a compiler's output, for an error message.
std::string tail(const std::string& text, int lines) {
  std::size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n' || text[pos - 1] == ' ')) --pos;
  std::size_t end = pos;
  for (int i = 0; i < lines && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  return text.substr(pos == 0 ? 0 : pos + 1, end - (pos == 0 ? 0 : pos + 1));
}

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs argv[0] (looked up on PATH) with its output in files under `dir`; no shell.
Expected<RunResult> run(const std::vector<std::string>& argv, const fs::path& dir) {
  const fs::path out_path = dir / "stdout.txt", err_path = dir / "stderr.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return not_available(fmt::format("could not start {}: {}", argv[0], std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status(Code::internal, fmt::format("waitpid({}): {}", argv[0], std::strerror(errno)));
  }
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

fs::path triton_dir(const std::string& cache_dir) {
  return fs::path(cache_dir.empty() ? jit::default_cache_dir() : cache_dir) / "triton";
}

// gemm.py and compile.py written once into the cache (a folder named by their hash), since Triton reads a kernel's
// source from its file.
Expected<fs::path> helper_dir(const std::string& cache_dir) {
  const std::string_view gemm = embedded_file("gemm.py"), compile = embedded_file("compile.py");
  if (gemm.empty() || compile.empty()) return Status(Code::internal, "the triton family's Python files are not embedded");
  jit::ContentHash h;
  h.field(gemm).field(compile);
  const fs::path dir = triton_dir(cache_dir) / ("helper-" + h.hex().substr(0, 16));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return not_available(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  for (const auto& [name, text] : {std::pair{"gemm.py", gemm}, std::pair{"compile.py", compile}}) {
    const fs::path p = dir / name;
    if (fs::exists(p) && read_file(p) == text) continue;
    if (Status s = jit::write_file_atomic(p.string(), text); !s) return s;
  }
  return dir;
}

fs::path scratch_dir(const fs::path& root) {
  static std::atomic<unsigned> counter{0};
  return root / fmt::format("work-{}-{}", ::getpid(), counter++);
}

}  // namespace

bool Toolchain::has(const std::string& backend) const {
  return std::find(backends.begin(), backends.end(), backend) != backends.end();
}

Expected<Toolchain> toolchain() {
  static std::once_flag once;
  static Expected<Toolchain> result = Status(Code::internal, "not probed");
  std::call_once(once, [] {
    Toolchain t;
    const char* env = std::getenv("TILEFORGE_PYTHON");
    t.python = env && *env ? env : "python3";
    auto dir = helper_dir("");
    if (!dir) {
      result = dir.status();
      return;
    }
    const fs::path work = scratch_dir(*dir);
    std::error_code ec;
    fs::create_directories(work, ec);
    auto r = run({t.python, (*dir / "compile.py").string(), "--probe"}, work);
    fs::remove_all(work, ec);
    if (!r) {
      result = not_available(fmt::format("the triton family needs Python with Triton: {} (set TILEFORGE_PYTHON to "
                                         "an interpreter that imports triton)",
                                         r.status().message()));
      return;
    }
    if (r->exit_code != 0) {
      result = not_available(fmt::format("the triton family needs Python with Triton: `{} -c \"import triton\"` "
                                         "failed: {} (pip install triton, or set TILEFORGE_PYTHON)",
                                         t.python, tail(r->err, 1)));
      return;
    }
    try {
      const json j = json::parse(r->out);
      t.version = j.at("triton").get<std::string>();
      t.backends = j.at("backends").get<std::vector<std::string>>();
    } catch (const std::exception& e) {
      result = not_available(fmt::format("the triton family's probe printed what it cannot read: {}", e.what()));
      return;
    }
    int major = 0, minor = 0;
    std::sscanf(t.version.c_str(), "%d.%d", &major, &minor);
    if (major < 3 || (major == 3 && minor < 3)) {
      result = not_available(fmt::format("the triton family compiles through Triton 3.3 or later (ASTSource with "
                                         "constexprs and attrs); {} imports Triton {}",
                                         t.python, t.version));
      return;
    }
    result = std::move(t);
  });
  return result;
}

std::string request_json(const Request& r, const std::string& out) {
  json sig = json::object(), consts = json::object();
  // nlohmann's object sorts keys; the signature's order is the kernel's argument order, so it goes as pairs too.
  json order = json::array();
  for (const auto& [name, type] : r.signature) order.push_back(name);
  for (const auto& [name, type] : r.signature) sig[name] = type;
  for (const auto& [name, value] : r.constexprs) consts[name] = value;
  json divisible = json::array();
  for (const auto& [name, d] : r.divisible) divisible.push_back(json::array({name, d}));
  json j = {{"function", r.function},
            {"signature", sig},
            {"order", order},
            {"constexprs", consts},
            {"divisible", divisible},
            {"target", {{"backend", r.backend}, {"arch", r.backend == "cuda" ? json(std::atoi(r.arch.c_str())) : json(r.arch)},
                        {"warp_size", r.warp_size}}},
            {"num_warps", r.num_warps},
            {"num_stages", r.num_stages},
            {"out", out}};
  return j.dump();
}

std::string cache_key(const Request& r, const std::string& triton_version) {
  jit::ContentHash h;
  h.field("tileforge triton cache key 2");
  h.field(triton_version);
  h.field(embedded_file("gemm.py"));
  h.field(embedded_file("compile.py"));
  h.field(request_json(r, ""));
  return h.hex();
}

Expected<Binary> compile(const Request& r, const std::string& cache_dir) {
  auto tc = toolchain();
  if (!tc) return tc.status();
  const std::string want = r.backend == "cuda" ? "nvidia" : "amd";
  if (!tc->has(want)) {
    return not_available(fmt::format("Triton {} in {} has no {} backend", tc->version, tc->python, want));
  }
  const std::string key = cache_key(r, tc->version);
  const fs::path root = triton_dir(cache_dir);
  const fs::path entry = root / key;
  Binary b;
  b.key = key;
  auto load = [&](bool hit) -> Status {
    try {
      const json j = json::parse(read_file(entry.string() + ".json"));
      b.name = j.at("name").get<std::string>();
      b.kind = j.at("binary").get<std::string>();
      b.shared_bytes = j.at("shared").get<int>();
      b.static_shared_bytes = j.value("static_shared", 0);
      b.num_warps = j.at("num_warps").get<int>();
      b.registers = j.value("registers", -1);
      b.spill_bytes = j.value("spill_bytes", 0);
      b.global_scratch_bytes = j.value("global_scratch_size", 0);
      b.profile_scratch_bytes = j.value("profile_scratch_size", 0);
      b.wgmma = j.value("wgmma", false);
      b.triton_version = j.value("triton", "");
      b.compile_seconds = j.value("compile_seconds", 0.0);
    } catch (const std::exception& e) {
      return Status(Code::internal, fmt::format("triton cache entry {}.json: {}", entry.string(), e.what()));
    }
    b.data = read_file(entry.string() + ".bin");
    if (b.data.empty()) return Status(Code::internal, fmt::format("triton cache entry {}.bin is empty", entry.string()));
    b.cache_hit = hit;
    return Status();
  };
  std::error_code ec;
  if (fs::exists(entry.string() + ".json") && fs::exists(entry.string() + ".bin")) {
    if (Status s = load(true); s) return b;
  }
  auto dir = helper_dir(cache_dir);
  if (!dir) return dir.status();
  const fs::path work = scratch_dir(root);
  fs::create_directories(work, ec);
  if (ec) return not_available(fmt::format("cannot create {}: {}", work.string(), ec.message()));
  const fs::path req_path = work / "request.json";
  if (Status s = jit::write_file_atomic(req_path.string(), request_json(r, (work / "k").string())); !s) return s;
  auto ran = run({tc->python, (*dir / "compile.py").string(), req_path.string()}, work);
  if (!ran) {
    fs::remove_all(work, ec);
    return ran.status();
  }
  if (ran->exit_code != 0) {
    const std::string why = tail(ran->err, 3);
    fs::remove_all(work, ec);
    return Status(Code::compile_failed,
                  fmt::format("Triton {} failed to compile {} for {} {} (num_warps {}, num_stages {}): {}", tc->version,
                              r.function, r.backend, r.arch, r.num_warps, r.num_stages, why));
  }
  // The cache entry: binary first, metadata last, each replaced whole, so a reader that sees the metadata sees the
  // binary it describes.
  Status s = jit::write_file_atomic(entry.string() + ".bin", read_file(work / "k.bin"));
  if (s) s = jit::write_file_atomic(entry.string() + ".json", read_file(work / "k.json"));
  fs::remove_all(work, ec);
  if (!s) return s;
  if (Status l = load(false); !l) return l;
  return b;
}

}  // namespace tileforge::cuda::triton
