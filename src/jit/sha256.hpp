// SHA-256 (FIPS 180-4), written here so that the kernel cache's keys need no crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tileforge::jit {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, std::size_t size);
  Sha256& update(std::string_view text) { return update(text.data(), text.size()); }
  // A length-prefixed field, so that ("ab","c") and ("a","bc") hash differently when fields are concatenated.
  Sha256& field(std::string_view text);
  std::array<uint8_t, 32> digest();  // finishes; the object must not be updated afterwards
  std::string hex();                 // digest() as 64 lowercase hex digits

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  std::size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace tileforge::jit
