// The kernel cache's content hash: its known value (so keys stay the same across builds), streaming and fields.
#include <gtest/gtest.h>

#include <string>

#include "jit/content_hash.hpp"

namespace tileforge::jit {
namespace {

TEST(ContentHash, KnownValueKeepsKeysStableAcrossBuilds) {
  // XXH3-128 of no bytes, as xxHash's own tool prints it (high half first): a change of byte order or of the
  // algorithm would silently give every cached kernel a new key.
  EXPECT_EQ(content_hash_hex(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(content_hash_hex("abc").size(), 32u);
  EXPECT_NE(content_hash_hex("abc"), content_hash_hex("abd"));
}

TEST(ContentHash, StreamedUpdatesMatchOneShot) {
  const std::string text(300, 'x');
  for (std::size_t cut : {0u, 1u, 63u, 64u, 65u, 128u, 240u, 241u, 299u}) {
    ContentHash h;
    h.update(std::string_view(text).substr(0, cut)).update(std::string_view(text).substr(cut));
    EXPECT_EQ(h.hex(), content_hash_hex(text)) << "cut at " << cut;
  }
}

TEST(ContentHash, FieldsAreLengthPrefixed) {
  EXPECT_NE(ContentHash().field("ab").field("c").hex(), ContentHash().field("a").field("bc").hex());
  EXPECT_NE(ContentHash().field("").field("a").hex(), ContentHash().field("a").field("").hex());
  EXPECT_EQ(ContentHash().field("a").field("b").hex(), ContentHash().field("a").field("b").hex());
}

}  // namespace
}  // namespace tileforge::jit
