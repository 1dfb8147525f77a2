// An output file that appears whole or not at all: written to a temporary file in the same folder, renamed on
// success, removed on failure or interruption.
#pragma once

#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace tileforge::bench {

class OutputFile {
 public:
  // Creates the temporary file next to `path` now, so that an unwritable folder is refused before a long run.
  static Expected<OutputFile> create(std::string_view path, std::string_view what = "--out");
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  // Writes `content`, flushes it to disk and renames it over `path`.
  Status commit(std::string_view content);
  const std::string& path() const { return path_; }

 private:
  OutputFile(std::string path, std::string temp, int fd, std::string what);
  void discard();

  std::string path_, temp_, what_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace tileforge::bench
