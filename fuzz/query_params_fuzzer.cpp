// The query-string parsers of the audio endpoints (/v1/stream?..., POST /v1/vad?...) on arbitrary
// request targets.
//
// Invariants: target_path + '?' + target_query gives the target back; parse_query_string fails
// only with kInvalidArgument, never yields an empty key, and its result survives a round trip
// (every byte percent-encoded, parsed again: the same map); parse_audio_request fails only with
// kInvalidArgument, and what it accepts is a valid StreamConfig with the documented defaults
// (G.711 without sample_rate means 8000 Hz; a headerless POST body always has a rate).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "brisvox/error.h"
#include "fuzz_check.h"
#include "server/query_params.h"

namespace {

namespace server = brisvox::server;

std::string percent_encode_all(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : s) {
    out += '%';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

template <typename Parse>
void expect_invalid_argument_only(Parse parse) {
  try {
    parse();
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kInvalidArgument, "%s", e.what());
  }
}

void check_target_split(std::string_view target) {
  const std::string_view path = server::target_path(target);
  const std::string_view query = server::target_query(target);
  if (target.find('?') == std::string_view::npos) {
    FUZZ_CHECK(path == target && query.empty(), "split of a target without '?'");
  } else {
    FUZZ_CHECK(std::string(path) + "?" + std::string(query) == target, "path + '?' + query != target");
  }
}

void check_query_string(std::string_view query) {
  expect_invalid_argument_only([&] {
    const std::map<std::string, std::string> pairs = server::parse_query_string(query);
    std::string encoded;
    for (const auto& [key, value] : pairs) {
      FUZZ_CHECK(!key.empty(), "an empty key was accepted");
      encoded += (encoded.empty() ? "" : "&") + percent_encode_all(key) + "=" + percent_encode_all(value);
    }
    FUZZ_CHECK(server::parse_query_string(encoded) == pairs, "the parsed query does not survive a round trip");
  });
}

void check_audio_request(std::string_view query, server::AudioEndpoint endpoint) {
  expect_invalid_argument_only([&] {
    const server::AudioRequest r = server::parse_audio_request(query, endpoint);
    r.stream.validate();  // throws (and so fails the check above) if the parser let a bad value through
    const bool g711 = r.encoding == brisvox::SampleEncoding::kMulaw || r.encoding == brisvox::SampleEncoding::kAlaw;
    const bool headerless = endpoint == server::AudioEndpoint::kStream || r.encoding_given;
    if (headerless && !r.sample_rate_given) {
      FUZZ_CHECK(g711 || endpoint == server::AudioEndpoint::kStream,
                 "headerless POST body without a sample rate accepted");
      FUZZ_CHECK(r.stream.sample_rate_hz == (g711 ? 8000 : 16000), "default rate %d", r.stream.sample_rate_hz);
    }
    FUZZ_CHECK(endpoint != server::AudioEndpoint::kStream || r.name == "request", "name set on /v1/stream");
    FUZZ_CHECK(endpoint != server::AudioEndpoint::kTranscribe || r.stream.stt.has_value(), "/v1/transcribe without stt");
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  check_target_split(target);
  const std::string_view query = server::target_query(target).empty() ? target : server::target_query(target);
  check_query_string(query);
  check_audio_request(query, server::AudioEndpoint::kStream);
  check_audio_request(query, server::AudioEndpoint::kVad);
  check_audio_request(query, server::AudioEndpoint::kTranscribe);
  return 0;
}
