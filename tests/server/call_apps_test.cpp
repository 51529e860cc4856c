// --call-app (app_url.h, parse_call_apps): one unnamed URL and NAME=URL entries, the application a
// call's "app" parameter picks, and what is wrong with an entry, named in the error; the telephony
// metrics' app round trip as a Prometheus histogram (histogram_series.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "brisvox/error.h"
#include "server/app_url.h"
#include "server/server_config.h"
#include "server/telephony_metrics.h"

namespace brisvox::server {
namespace {

TEST(CallApps, OneUrlDrivesEveryCall) {
  const CallApps apps = parse_call_apps({"ws://127.0.0.1:9000/calls"});
  std::string why;
  const AppUrl* app = apps.pick("", why);
  ASSERT_NE(app, nullptr) << why;
  EXPECT_EQ(app->port, "9000");
  EXPECT_EQ(app->target, "/calls");
  // With no names configured, a call's own "app" parameter does not matter.
  EXPECT_EQ(apps.pick("sales", why), app);
  EXPECT_TRUE(parse_call_apps({}).empty());
}

TEST(CallApps, ACallsAppParameterPicksItsNamedApplication) {
  const CallApps apps =
      parse_call_apps({"sales=ws://10.0.0.1:9001/", "ws://10.0.0.1:9000/", "support.eu=ws://[::1]:9002/x?y=1"});
  std::string why;
  ASSERT_NE(apps.pick("sales", why), nullptr) << why;
  EXPECT_EQ(apps.pick("sales", why)->port, "9001");
  ASSERT_NE(apps.pick("support.eu", why), nullptr) << why;
  EXPECT_EQ(apps.pick("support.eu", why)->host, "::1");
  EXPECT_EQ(apps.pick("support.eu", why)->target, "/x?y=1");
  EXPECT_EQ(apps.pick("", why)->port, "9000");
  // Where names are configured, a name is matched exactly.
  EXPECT_EQ(apps.pick("Sales", why), nullptr);
  EXPECT_NE(why.find("\"Sales\""), std::string::npos) << why;
  EXPECT_NE(why.find("named: sales, support.eu"), std::string::npos) << why;
}

TEST(CallApps, WithoutAnUnnamedUrlACallMustNameOne) {
  const CallApps apps = parse_call_apps({"sales=ws://127.0.0.1:9001/"});
  std::string why;
  EXPECT_EQ(apps.pick("", why), nullptr);
  EXPECT_NE(why.find("names no application"), std::string::npos) << why;
  EXPECT_NE(why.find("sales"), std::string::npos) << why;
}

TEST(CallApps, ABadEntryIsRefusedNamingIt) {
  const std::vector<std::vector<std::string>> bad = {
      {"http://127.0.0.1:9000/"},       {"sales=http://127.0.0.1:9000/"}, {"=ws://127.0.0.1:9000/"},
      {"sa les=ws://127.0.0.1:9000/"},  {"sales=ws://127.0.0.1:0/"},      {std::string(65, 'a') + "=ws://h:1/"},
      {"ws://a:1/", "ws://b:2/"},       {"x=ws://a:1/", "x=ws://b:2/"},   {"sales="},
  };
  for (const auto& entries : bad) {
    try {
      (void)parse_call_apps(entries);
      ADD_FAILURE() << "accepted '" << entries.back() << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--call-app"), std::string::npos) << e.what();
    }
  }
}

TEST(CallApps, AudioSocketNeedsAnUnnamedUrl) {
  ServerConfig config;
  config.audiosocket_port = 0;
  config.call_apps = {"sales=ws://127.0.0.1:9001/"};
  try {
    config.validate();
    ADD_FAILURE() << "an AudioSocket port with only named applications was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unnamed --call-app"), std::string::npos) << e.what();
  }
  config.call_apps.push_back("ws://127.0.0.1:9000/");
  EXPECT_NO_THROW(config.validate());
}

TEST(TelephonyMetrics, TheAppRoundTripIsAHistogramPerProvider) {
  TelephonyMetrics m;
  m[TelephonyProvider::kTwilio].app_round_trip.record(80e3);    // 80 ms
  m[TelephonyProvider::kTwilio].app_round_trip.record(1.2e6);   // 1.2 s
  const std::string text = render_telephony_metrics(m);
  const auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
  };
  has("# TYPE brisvox_telephony_app_round_trip_seconds histogram");
  has("brisvox_telephony_app_round_trip_seconds_bucket{provider=\"twilio\",le=\"0.05\"} 0");
  has("brisvox_telephony_app_round_trip_seconds_bucket{provider=\"twilio\",le=\"0.1\"} 1");
  has("brisvox_telephony_app_round_trip_seconds_bucket{provider=\"twilio\",le=\"1.5\"} 2");
  has("brisvox_telephony_app_round_trip_seconds_bucket{provider=\"twilio\",le=\"+Inf\"} 2");
  has("brisvox_telephony_app_round_trip_seconds_count{provider=\"twilio\"} 2");
  has("brisvox_telephony_app_round_trip_seconds_count{provider=\"audiosocket\"} 0");
}

}  // namespace
}  // namespace brisvox::server
