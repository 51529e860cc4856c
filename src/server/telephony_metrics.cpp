#include "server/telephony_metrics.h"

#include <fmt/format.h>

#include <iterator>

#include "server/histogram_series.h"

namespace brisvox::server {
namespace {

// The application's round trip: 10 ms (a scripted reply) to 10 s (a language model's answer).
constexpr double kAppRoundTripBoundsS[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10};

}  // namespace

std::string_view to_string(TelephonyProvider provider) {
  switch (provider) {
    case TelephonyProvider::kTwilio: return "twilio";
    case TelephonyProvider::kTelnyx: return "telnyx";
    case TelephonyProvider::kVonage: return "vonage";
    case TelephonyProvider::kAsterisk: return "asterisk";
    case TelephonyProvider::kJambonz: return "jambonz";
    case TelephonyProvider::kFreeswitch: return "freeswitch";
    case TelephonyProvider::kAudioSocket: return "audiosocket";
  }
  return "unknown";
}

std::optional<TelephonyProvider> telephony_provider(std::string_view name) {
  for (std::size_t p = 0; p < kNumTelephonyProviders; ++p) {
    if (to_string(static_cast<TelephonyProvider>(p)) == name) return static_cast<TelephonyProvider>(p);
  }
  return std::nullopt;
}

std::string_view to_string(TelephonyError error) {
  switch (error) {
    case TelephonyError::kBadMessage: return "bad_message";
    case TelephonyError::kOutOfOrder: return "out_of_order";
    case TelephonyError::kBadMediaFormat: return "bad_media_format";
    case TelephonyError::kUnauthorized: return "unauthorized";
    case TelephonyError::kAppUnavailable: return "app_unavailable";
    case TelephonyError::kAppBadMessage: return "app_bad_message";
    case TelephonyError::kCallLimit: return "call_limit";
  }
  return "unknown";
}

std::string render_telephony_metrics(const TelephonyMetrics& m) {
  std::string out;
  auto it = std::back_inserter(out);
  const auto series = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    fmt::format_to(it, "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (std::size_t p = 0; p < kNumTelephonyProviders; ++p) {
      fmt::format_to(it, "{}{{provider=\"{}\"}} {}\n", name, to_string(static_cast<TelephonyProvider>(p)),
                     value(m.providers[p]));
    }
  };
  series("brisvox_telephony_calls", "gauge", "Telephony calls started and not ended, by provider.",
         [](const ProviderMetrics& p) { return p.calls_active.load(); });
  series("brisvox_telephony_calls_total", "counter", "Telephony calls started, by provider.",
         [](const ProviderMetrics& p) { return p.calls_total.load(); });
  series("brisvox_telephony_clears_total", "counter",
         "Barge-ins and cancels sent to the provider as its clear, by provider.",
         [](const ProviderMetrics& p) { return p.clears.load(); });
  series("brisvox_telephony_dtmf_total", "counter", "DTMF digits received, by provider.",
         [](const ProviderMetrics& p) { return p.dtmf.load(); });
  fmt::format_to(it, "# HELP brisvox_telephony_errors_total Telephony errors by provider and reason.\n"
                     "# TYPE brisvox_telephony_errors_total counter\n");
  for (std::size_t p = 0; p < kNumTelephonyProviders; ++p) {
    for (std::size_t e = 0; e < kNumTelephonyErrors; ++e) {
      fmt::format_to(it, "brisvox_telephony_errors_total{{provider=\"{}\",reason=\"{}\"}} {}\n",
                     to_string(static_cast<TelephonyProvider>(p)), to_string(static_cast<TelephonyError>(e)),
                     m.providers[p].errors[e].load());
    }
  }
  fmt::format_to(it, "# HELP brisvox_telephony_app_round_trip_seconds From the last turn_end or transcript sent to "
                     "a call's application to its speak, by provider.\n"
                     "# TYPE brisvox_telephony_app_round_trip_seconds histogram\n");
  for (std::size_t p = 0; p < kNumTelephonyProviders; ++p) {
    histogram_series(out, "brisvox_telephony_app_round_trip_seconds",
                     fmt::format("provider=\"{}\",", to_string(static_cast<TelephonyProvider>(p))),
                     m.providers[p].app_round_trip, kAppRoundTripBoundsS);
  }
  return out;
}

}  // namespace brisvox::server
