// The kernel cache's content hash over xxHash's XXH3-128, compiled into this file alone (no libxxhash at run time).
#include "jit/content_hash.hpp"

#include <cstdint>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tileforge::jit {

struct ContentHash::State {
  XXH3_state_t xxh;
};

ContentHash::ContentHash() : state_(std::make_unique<State>()) { XXH3_128bits_reset(&state_->xxh); }

ContentHash::~ContentHash() = default;

ContentHash& ContentHash::update(std::string_view bytes) {
  XXH3_128bits_update(&state_->xxh, bytes.data(), bytes.size());
  return *this;
}

ContentHash& ContentHash::field(std::string_view text) {
  // The length as 8 little-endian bytes, so the key is the same on every host.
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  update(std::string_view(reinterpret_cast<const char*>(length), sizeof(length)));
  return update(text);
}

std::string ContentHash::hex() const {
  const XXH128_hash_t h = XXH3_128bits_digest(&state_->xxh);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string content_hash_hex(std::string_view bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace tileforge::jit
