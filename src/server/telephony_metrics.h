// The server's figures of telephony calls (/v1/telephony/<provider>) for GET /metrics, per
// provider, beside the calls' own (call_metrics.h: every telephony call is a call too). Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "brisvox/latency_histogram.h"

namespace brisvox::server {

enum class TelephonyProvider { kTwilio, kTelnyx, kVonage, kAsterisk, kJambonz, kFreeswitch, kAudioSocket };
inline constexpr std::size_t kNumTelephonyProviders = 7;
std::string_view to_string(TelephonyProvider provider);
// The provider named `name` as to_string writes it ("twilio"); nullopt for another name.
std::optional<TelephonyProvider> telephony_provider(std::string_view name);

// Why a telephony call was ended by brisvox (the errors_total reasons).
enum class TelephonyError {
  kBadMessage,      // not a message of the provider's protocol (not JSON, bad base64, a bad field)
  kOutOfOrder,      // media before start, a second start, ...
  kBadMediaFormat,  // an audio format brisvox does not take from this provider
  kUnauthorized,    // no token, or a wrong one, in the provider's first message
  kAppUnavailable,  // the application was unreachable, refused, dropped or fell behind
  kAppBadMessage,   // the application sent a message that is not the call protocol's (answered, not ended)
  kCallLimit,       // refused on the upgrade: the provider's calls were at --max-calls
};
inline constexpr std::size_t kNumTelephonyErrors = 7;
std::string_view to_string(TelephonyError error);

struct ProviderMetrics {
  std::atomic<std::int64_t> calls_active{0};  // started (the provider's start message), not ended
  std::atomic<std::uint64_t> calls_total{0};
  std::atomic<std::uint64_t> clears{0};  // barge-ins and cancels sent as the provider's clear
  std::atomic<std::uint64_t> dtmf{0};
  std::array<std::atomic<std::uint64_t>, kNumTelephonyErrors> errors{};
  // The application's round trip: from the last turn_end or transcript sent to it to its speak.
  LatencyHistogram app_round_trip;

  void count(TelephonyError e) { errors[static_cast<std::size_t>(e)].fetch_add(1, std::memory_order_relaxed); }
};

struct TelephonyMetrics {
  std::array<ProviderMetrics, kNumTelephonyProviders> providers;
  ProviderMetrics& operator[](TelephonyProvider p) { return providers[static_cast<std::size_t>(p)]; }
};

// The brisvox_telephony_* series (Prometheus text format 0.0.4).
std::string render_telephony_metrics(const TelephonyMetrics& m);

}  // namespace brisvox::server
