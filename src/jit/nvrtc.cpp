// Loads libnvrtc with dlopen, finds the toolkit headers beside it, and runs one compile to a cubin.
#include "jit/nvrtc.hpp"

#include <dlfcn.h>
#include <nvrtc.h>  // types only; the library is opened at run time
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tileforge::jit {

struct Nvrtc::Api {
  decltype(&::nvrtcGetErrorString) nvrtcGetErrorString = nullptr;
  decltype(&::nvrtcVersion) nvrtcVersion = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) nvrtcGetNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) nvrtcGetSupportedArchs = nullptr;
  decltype(&::nvrtcCreateProgram) nvrtcCreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) nvrtcCompileProgram = nullptr;
  decltype(&::nvrtcGetPTXSize) nvrtcGetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) nvrtcGetPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) nvrtcGetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) nvrtcGetCUBIN = nullptr;
  decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog = nullptr;
  decltype(&::nvrtcAddNameExpression) nvrtcAddNameExpression = nullptr;
  decltype(&::nvrtcGetLoweredName) nvrtcGetLoweredName = nullptr;
};

namespace {

namespace fs = std::filesystem;

std::atomic<uint64_t> g_compiles{0};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::vector<std::string> toolkit_roots() {
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  return roots;
}

// Library file names to try, in order, with the reason each was refused collected for the error message.
std::vector<std::string> library_candidates() {
  std::vector<std::string> c = {"libnvrtc.so.13", "libnvrtc.so.12"};
  for (const std::string& root : toolkit_roots())
    for (const char* dir : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"})
      for (const char* file : {"libnvrtc.so.13", "libnvrtc.so.12"})
        if (is_file(fs::path(root) / dir / file)) c.push_back((fs::path(root) / dir / file).string());
  return c;
}

// The loaded library's own directory, then the toolkit roots: the first include directory that has cuda_fp16.h.
std::string find_include_dir(const std::string& library_file) {
  std::vector<fs::path> dirs;
  if (!library_file.empty()) {
    std::error_code ec;
    fs::path lib = fs::weakly_canonical(library_file, ec);
    if (ec) lib = library_file;
    dirs.push_back(lib.parent_path().parent_path() / "include");
  }
  for (const std::string& root : toolkit_roots()) dirs.push_back(fs::path(root) / "include");
  for (const fs::path& d : dirs)
    if (is_file(d / "cuda_fp16.h")) return d.lexically_normal().string();
  return {};
}

template <class Fn>
bool bind(void* lib, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(lib, name));
  return out != nullptr;
}

std::string arch_name(int a) { return fmt::format("sm_{}", a); }

}  // namespace

uint64_t nvrtc_compile_count() { return g_compiles.load(); }

Expected<const Nvrtc*> Nvrtc::get() {
  static const Expected<Nvrtc*> loaded = []() -> Expected<Nvrtc*> {
    std::vector<std::string> candidates;
    const char* override_path = std::getenv("TILEFORGE_NVRTC_PATH");
    if (override_path && *override_path) {
      candidates.emplace_back(override_path);  // an explicit choice is not silently replaced by another library
    } else {
      candidates = library_candidates();
    }
    void* lib = nullptr;
    std::string opened;
    std::vector<std::string> why;
    for (const std::string& c : candidates) {
      dlerror();
      lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) {
        opened = c;
        break;
      }
      const char* e = dlerror();
      why.push_back(e ? e : c + ": dlopen failed");
    }
    if (!lib)
      return not_available(fmt::format("NVRTC not found (tried {}; set TILEFORGE_NVRTC_PATH or CUDA_HOME): {}",
                                       fmt::join(candidates, ", "), why.empty() ? "" : why.front()));
    static Api api;
    bool all = bind(lib, "nvrtcGetErrorString", api.nvrtcGetErrorString) && bind(lib, "nvrtcVersion", api.nvrtcVersion) &&
               bind(lib, "nvrtcGetNumSupportedArchs", api.nvrtcGetNumSupportedArchs) &&
               bind(lib, "nvrtcGetSupportedArchs", api.nvrtcGetSupportedArchs) &&
               bind(lib, "nvrtcCreateProgram", api.nvrtcCreateProgram) &&
               bind(lib, "nvrtcDestroyProgram", api.nvrtcDestroyProgram) &&
               bind(lib, "nvrtcCompileProgram", api.nvrtcCompileProgram) && bind(lib, "nvrtcGetPTXSize", api.nvrtcGetPTXSize) &&
               bind(lib, "nvrtcGetPTX", api.nvrtcGetPTX) && bind(lib, "nvrtcGetCUBINSize", api.nvrtcGetCUBINSize) &&
               bind(lib, "nvrtcGetCUBIN", api.nvrtcGetCUBIN) &&
               bind(lib, "nvrtcGetProgramLogSize", api.nvrtcGetProgramLogSize) &&
               bind(lib, "nvrtcGetProgramLog", api.nvrtcGetProgramLog) &&
               bind(lib, "nvrtcAddNameExpression", api.nvrtcAddNameExpression) &&
               bind(lib, "nvrtcGetLoweredName", api.nvrtcGetLoweredName);
    if (!all) return not_available(fmt::format("NVRTC at {} lacks an entry point tileforge needs (NVRTC 12 or later is needed)", opened));

    auto* n = new Nvrtc();  // lives for the whole process, as the library does
    n->api_ = &api;
    api.nvrtcVersion(&n->major_, &n->minor_);
    int count = 0;
    if (api.nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
      n->archs_.resize(std::size_t(count));
      api.nvrtcGetSupportedArchs(n->archs_.data());
    }
    Dl_info info{};
    std::string file = opened;
    if (dladdr(reinterpret_cast<void*>(api.nvrtcVersion), &info) && info.dli_fname) file = info.dli_fname;
    std::error_code ec;
    fs::path real = fs::weakly_canonical(file, ec);
    n->library_path_ = ec ? file : real.string();
    n->include_dir_ = find_include_dir(n->library_path_);
    struct stat st {};
    long long size = ::stat(n->library_path_.c_str(), &st) == 0 ? (long long)st.st_size : -1;
    n->identity_ = fmt::format("nvrtc {}.{} {} {} bytes", n->major_, n->minor_, n->library_path_, size);
    return n;
  }();
  if (!loaded) return loaded.status();
  return static_cast<const Nvrtc*>(loaded.value());
}

std::vector<std::string> Nvrtc::options_for(const CompileRequest& r) const {
  std::vector<std::string> o = {"--gpu-architecture=" + r.arch, "-std=c++17", "--ptxas-options=-v"};
  // NOTE: NVRTC 12.9+ keeps its own cache in the driver's compute cache (only where a driver is installed) and,
  // on a hit there, skips ptxas and returns an empty log: no registers, no spills. The kernel cache here already
  // keeps cubins, so NVRTC's is turned off to keep the report on every compile.
  if (major_ > 12 || (major_ == 12 && minor_ >= 9)) o.emplace_back("--no-cache");
  if (!include_dir_.empty()) o.push_back("-I" + include_dir_);
  if (r.line_info) o.emplace_back("-lineinfo");
  if (r.fast_math) o.emplace_back("--use_fast_math");
  o.insert(o.end(), r.options.begin(), r.options.end());
  return o;
}

Status Nvrtc::check_arch(std::string_view arch) const {
  // Only exact machine targets: a cubin is what gets cached and loaded; PTX targets would leave the driver to
  // finish the compile at load time, outside the cache.
  std::string_view digits = arch.starts_with("sm_") ? arch.substr(3) : std::string_view{};
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) digits.remove_suffix(1);
  int number = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') { number = 0; break; }
    number = number * 10 + (c - '0');
  }
  std::vector<std::string> names;
  for (int a : archs_) names.push_back(arch_name(a));
  if (number == 0 || digits.empty())
    return invalid_argument(fmt::format("target '{}' is not an exact GPU target (expected sm_XY or sm_XYa, e.g. sm_80, sm_90a)", arch));
  if (!archs_.empty() && std::find(archs_.begin(), archs_.end(), number) == archs_.end())
    return unsupported(fmt::format("NVRTC {}.{} cannot compile for {} (supported: {})", major_, minor_, arch, fmt::join(names, ", ")));
  return Status::Ok();
}

Expected<CompileOutput> Nvrtc::compile(const CompileRequest& r) const {
  if (Status s = check_arch(r.arch); !s) return s;
  const Api& api = *api_;
  auto fail = [&](nvrtcResult e, const char* what) {
    return Status(Code::internal, fmt::format("{} for '{}': {}", what, r.name, api.nvrtcGetErrorString(e)));
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<const char*> header_names, header_texts;
  for (const Header& h : r.headers) {
    header_names.push_back(h.name.c_str());
    header_texts.push_back(h.content.c_str());
  }
  std::string file_name = (r.name.empty() ? std::string("kernel") : r.name) + ".cu";
  nvrtcProgram prog = nullptr;
  if (nvrtcResult e = api.nvrtcCreateProgram(&prog, r.source.c_str(), file_name.c_str(), int(r.headers.size()),
                                             header_texts.data(), header_names.data());
      e != NVRTC_SUCCESS)
    return fail(e, "nvrtcCreateProgram");
  struct Destroy {
    const Api& api;
    nvrtcProgram& p;
    ~Destroy() { api.nvrtcDestroyProgram(&p); }
  } destroy{api, prog};

  for (const std::string& expr : r.name_expressions)
    if (nvrtcResult e = api.nvrtcAddNameExpression(prog, expr.c_str()); e != NVRTC_SUCCESS)
      return fail(e, "nvrtcAddNameExpression");

  std::vector<std::string> options = options_for(r);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  g_compiles.fetch_add(1);
  nvrtcResult compiled = api.nvrtcCompileProgram(prog, int(argv.size()), argv.data());

  CompileOutput out;
  std::size_t size = 0;
  if (api.nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
    out.log.resize(size);
    api.nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(size - 1);  // the size counts the terminating NUL
  }
  if (compiled == NVRTC_ERROR_COMPILATION) {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;  // ok = false: the source is wrong, the log says how
  }
  if (compiled != NVRTC_SUCCESS) return fail(compiled, "nvrtcCompileProgram");

  if (api.nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0)
    return Status(Code::internal, fmt::format("NVRTC produced no cubin for '{}' ({})", r.name, r.arch));
  out.cubin.resize(size);
  if (nvrtcResult e = api.nvrtcGetCUBIN(prog, out.cubin.data()); e != NVRTC_SUCCESS) return fail(e, "nvrtcGetCUBIN");
  // NOTE: NVRTC 12/13 keep the PTX of a cubin compile, so the dump needs no second compile.
  if (api.nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
    out.ptx.resize(size);
    if (api.nvrtcGetPTX(prog, out.ptx.data()) == NVRTC_SUCCESS) out.ptx.resize(size - 1); else out.ptx.clear();
  }
  for (const std::string& expr : r.name_expressions) {
    const char* lowered = nullptr;
    if (nvrtcResult e = api.nvrtcGetLoweredName(prog, expr.c_str(), &lowered); e != NVRTC_SUCCESS || !lowered)
      return fail(e, fmt::format("nvrtcGetLoweredName({})", expr).c_str());
    out.lowered_names[expr] = lowered;
  }
  out.report = parse_ptxas_report(out.log);
  out.ok = true;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<Header> headers_from(const std::vector<std::pair<std::string_view, std::string_view>>& files,
                                 std::string_view prefix) {
  std::vector<Header> out;
  out.reserve(files.size());
  for (const auto& [name, content] : files) out.push_back({std::string(prefix) + std::string(name), std::string(content)});
  return out;
}

}  // namespace tileforge::jit
