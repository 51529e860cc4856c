// X-Twilio-Signature (twilio_signature.h) against the example of Twilio's "Webhooks security"
// page, and the URL a Media Stream's handshake is signed over.
#include "server/twilio_signature.h"

#include <gtest/gtest.h>

namespace brisvox::server {
namespace {

TEST(TwilioSignature, TheDocumentationsExample) {
  // Auth Token 12345, a POST to https://mycompany.com/myapp.php?foo=1&bar=2 with these parameters
  // (given unsorted: the signature sorts them).
  const std::string signature = twilio_signature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2",
                                                 {{"To", "+18005551212"},
                                                  {"Digits", "1234"},
                                                  {"CallSid", "CA1234567890ABCDE"},
                                                  {"From", "+12349013030"},
                                                  {"Caller", "+12349013030"}});
  EXPECT_EQ(signature, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
}

TEST(TwilioSignature, AHandshakeIsSignedOverItsUrlWithOrWithoutTheDefaultPort) {
  const std::string url = twilio_request_url("", "voice.example.com", "/v1/telephony/twilio");
  EXPECT_EQ(url, "wss://voice.example.com/v1/telephony/twilio");
  EXPECT_EQ(twilio_request_url("wss://proxy.example.com/", "10.0.0.5:8700", "/v1/telephony/twilio"),
            "wss://proxy.example.com/v1/telephony/twilio");
  const std::string signature = twilio_signature("token", url);
  EXPECT_TRUE(twilio_signature_valid("token", url, signature));
  EXPECT_FALSE(twilio_signature_valid("other", url, signature));
  EXPECT_FALSE(twilio_signature_valid("token", url, ""));
  EXPECT_FALSE(twilio_signature_valid("token", url, signature.substr(1)));
  EXPECT_FALSE(twilio_signature_valid("token", url + "/listen", signature));
  // Twilio's libraries accept the URL with the scheme's port added or removed.
  EXPECT_TRUE(twilio_signature_valid("token", "wss://voice.example.com:443/v1/telephony/twilio", signature));
  EXPECT_TRUE(twilio_signature_valid("token", url, twilio_signature("token", "wss://voice.example.com:443/v1/telephony/twilio")));
  EXPECT_FALSE(twilio_signature_valid("token", "wss://voice.example.com:8443/v1/telephony/twilio", signature));
  EXPECT_TRUE(twilio_signature_valid("token", "ws://[::1]/x", twilio_signature("token", "ws://[::1]:80/x")));
}

}  // namespace
}  // namespace brisvox::server
