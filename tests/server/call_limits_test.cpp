// --max-calls (server_config.h, parse_call_limits): PROVIDER=N per provider, and what is wrong with
// an entry named in the error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "brisvox/error.h"
#include "server/server_config.h"

namespace brisvox::server {
namespace {

TEST(CallLimits, EachProviderNamedGetsItsLimitAndTheOthersNone) {
  const auto limits = parse_call_limits({"twilio=50", "jambonz=4"});
  EXPECT_EQ(limits[static_cast<std::size_t>(TelephonyProvider::kTwilio)], 50);
  EXPECT_EQ(limits[static_cast<std::size_t>(TelephonyProvider::kJambonz)], 4);
  EXPECT_EQ(limits[static_cast<std::size_t>(TelephonyProvider::kVonage)], 0);
  EXPECT_EQ(parse_call_limits({}), (std::array<int, kNumTelephonyProviders>{}));
}

TEST(CallLimits, ABadEntryIsRefusedNamingIt) {
  for (const std::string bad : {"twilio", "twilio=", "twilio=0", "twilio=-1", "twilio=1e3", "twilio=100001",
                                "twilio=5x", "skype=5", "=5", "Twilio=5", ""}) {
    try {
      (void)parse_call_limits({bad});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--max-calls"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
    }
  }
  try {
    (void)parse_call_limits({"vonage=2", "vonage=3"});
    ADD_FAILURE() << "a provider named twice was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
  }
  ServerConfig config;
  config.max_calls = {"asterisk=x"};
  EXPECT_THROW(config.validate(), Error);
}

}  // namespace
}  // namespace brisvox::server
