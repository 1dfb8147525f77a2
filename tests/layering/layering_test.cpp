// The layer map, checked on the sources: the generic layers (plan, tune, dispatch) name no kernel family and no
// chip architecture and reach backends only through their interfaces; each layer includes only the layers below it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "plan/kernel_family.hpp"

namespace tileforge {
namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(TILEFORGE_SOURCE_DIR) / "src";

std::vector<fs::path> sources_of(const std::string& layer) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(kSrc / layer)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".cuh")) out.push_back(e.path());
  }
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The generic layers: they iterate the family registry and read chip facts from the chip record.
const char* const kGeneric[] = {"plan", "tune", "dispatch"};

TEST(Layering, GenericLayersNameNoFamilyAndNoArch) {
  std::vector<std::string> names = plan::family_names();
  ASSERT_FALSE(names.empty()) << "no kernel family is registered";
  // Chip architectures as profiles spell them: NVIDIA sm_NN, AMD gfxNNN, x86-64 levels.
  const std::regex arch(R"((\bsm_[0-9]+)|(\bgfx[0-9]+)|(x86-64-v[0-9]))");
  for (const char* layer : kGeneric) {
    for (const fs::path& f : sources_of(layer)) {
      const std::string text = read(f);
      for (const std::string& name : names) {
        const std::regex word("(^|[^A-Za-z0-9_-])" + std::regex_replace(name, std::regex(R"([-.])"), R"(\$&)") +
                              "($|[^A-Za-z0-9_-])");
        EXPECT_FALSE(std::regex_search(text, word)) << f.lexically_relative(kSrc) << " names family " << name;
      }
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, arch)) << f.lexically_relative(kSrc) << " names arch " << m.str();
    }
  }
}

// "folder/..." of every #include "..." of a file.
std::set<std::string> included_paths(const fs::path& f) {
  std::set<std::string> out;
  const std::regex inc(R"(#include\s+"([^"]+)\")");
  const std::string text = read(f);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), inc); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// What each layer may include besides itself and the public API (include/tileforge). backends/backend.hpp and
// plan/kernel_family.hpp are the interfaces: "backends" below means any backend's folder.
const std::map<std::string, std::set<std::string>> kAllowed = {
    {"core", {}},
    {"hw", {"core"}},
    {"verify", {"core"}},
    {"jit", {"core", "hw"}},
    {"db", {"core", "hw", "backends/backend.hpp"}},
    {"plan", {"core", "hw", "backends/backend.hpp"}},
    {"backends", {"core", "hw", "verify", "jit", "plan", "common", "sm80", "sm90"}},
    {"dispatch", {"core", "hw", "jit", "db", "plan", "backends/backend.hpp"}},
    // The measurement protocol bench and tune share (timers, operand memory, the interleaved loop); its CUDA timer
    // uses the cuda backend's utility kernels.
    {"measure", {"core", "hw", "verify", "jit", "backends"}},
    {"tune", {"core", "hw", "verify", "jit", "db", "plan", "dispatch", "measure", "backends/backend.hpp"}},
    {"bench", {"core", "hw", "verify", "jit", "db", "plan", "dispatch", "measure", "backends"}},
    {"api", {"core", "hw", "verify", "dispatch", "backends/backend.hpp"}},
};

bool allowed(const std::set<std::string>& rules, const std::string& path) {
  for (const std::string& r : rules) {
    if (r.find('/') != std::string::npos ? path == r : path.rfind(r + "/", 0) == 0) return true;
  }
  return false;
}

TEST(Layering, EachLayerIncludesOnlyTheLayersBelowIt) {
  for (const auto& [layer, rules] : kAllowed) {
    for (const fs::path& f : sources_of(layer)) {
      for (const std::string& path : included_paths(f)) {
        if (path.rfind(layer + "/", 0) == 0 || path.rfind("tileforge/", 0) == 0) continue;
        if (path.find('/') == std::string::npos) continue;  // same-folder and generated headers
        EXPECT_TRUE(allowed(rules, path)) << f.lexically_relative(kSrc) << " includes " << path;
      }
    }
  }
}

TEST(Layering, EveryFolderOfTheLibraryIsALayerOfTheMap) {
  for (const auto& e : fs::directory_iterator(kSrc)) {
    if (!e.is_directory()) continue;
    EXPECT_TRUE(kAllowed.count(e.path().filename().string())) << e.path().filename();
  }
}

}  // namespace
}  // namespace tileforge
