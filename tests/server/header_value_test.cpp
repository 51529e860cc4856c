// The header-value helpers (server/header_value.h): a media type and its parameters as multipart
// and Vonage's content-types write them, and a comma-separated list as an upgrade's
// Sec-WebSocket-Protocol writes it.
#include <gtest/gtest.h>

#include "server/header_value.h"

namespace brisvox::server {
namespace {

TEST(HeaderValue, MediaTypeAndParameters) {
  EXPECT_EQ(media_type(" Audio/L16 ; rate=8000"), "audio/l16");
  EXPECT_EQ(header_param("audio/l16; Rate=8000; channels=1", "rate"), "8000");
  EXPECT_EQ(header_param(R"(multipart/form-data; boundary="a\"b")", "boundary"), "a\"b");
  EXPECT_EQ(header_param("audio/l16", "rate"), std::nullopt);
}

TEST(HeaderValue, AListHasAnElementOnlyWhenItIsOneExactly) {
  EXPECT_TRUE(list_has("audio.jambonz.org", "audio.jambonz.org"));
  EXPECT_TRUE(list_has("chat, audio.drachtio.org", "audio.drachtio.org"));
  EXPECT_TRUE(list_has(" media ,\tother", "media"));
  EXPECT_FALSE(list_has("audio.jambonz.org.evil", "audio.jambonz.org"));
  EXPECT_FALSE(list_has("xmedia", "media"));
  EXPECT_FALSE(list_has("", "media"));
  EXPECT_FALSE(list_has(",,", "media"));
}

}  // namespace
}  // namespace brisvox::server
