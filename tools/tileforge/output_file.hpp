// The CLI's --out writer, a file that appears whole or not at all: a regular file is written to a temporary file in the same folder,
// renamed on success, removed on failure or interruption; a device, a FIFO or "-" (stdout) is written in place.
#pragma once

#include <string>
#include <string_view>

#include "core/expected.hpp"
#include "core/output_path.hpp"

namespace tileforge::cli {

class OutputFile {
 public:
  // Creates the temporary file next to `path` (or opens the device or FIFO) now, so that an unwritable folder is
  // refused before a long run. The rule for each kind of path is core/output_path.hpp's.
  static Expected<OutputFile> create(std::string_view path, std::string_view what = "--out");
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  // Writes `content`, flushes it to disk and renames it over `path` (a regular file), or writes it to the device,
  // FIFO or stdout; every write, the flush and the close are checked.
  Status commit(std::string_view content);
  const std::string& path() const { return out_.path; }

 private:
  OutputFile(OutputPath out, std::string temp, int fd, std::string what);
  void discard();

  OutputPath out_;
  std::string temp_, what_;  // temp_: the temporary file while one is pending
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace tileforge::cli
