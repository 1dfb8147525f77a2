// The kernel cache's content hash: XXH3-128 (xxHash, header-only) over length-prefixed fields, as hex digits.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tileforge::jit {

// NOTE: a 128-bit non-cryptographic hash is enough for a cache key: the inputs are the project's own sources and
// options, not an adversary's (anyone who can write the cache directory can write any cubin), and two of them collide
// by chance with probability ~n^2 / 2^129, far below a disk error for any number of kernels a cache holds.
class ContentHash {
 public:
  ContentHash();
  ~ContentHash();
  ContentHash(const ContentHash&) = delete;
  ContentHash& operator=(const ContentHash&) = delete;

  ContentHash& update(std::string_view bytes);
  // A length-prefixed field, so that ("ab","c") and ("a","bc") hash differently when fields are concatenated.
  ContentHash& field(std::string_view text);
  std::string hex() const;  // 32 lowercase hex digits; the object may be updated further afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// XXH3-128 of bytes as 32 lowercase hex digits.
std::string content_hash_hex(std::string_view bytes);

}  // namespace tileforge::jit
