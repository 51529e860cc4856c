#include "server/telnyx_front.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "server/access_policy.h"
#include "server/call_handler.h"
#include "server/query_params.h"

namespace brisvox::server {
namespace {

// The header Telnyx sends its streaming auth token in.
constexpr const char* kAuthHeader = "x-telnyx-streaming-auth-token";

class TelnyxDialect final : public StreamDialect {
 public:
  explicit TelnyxDialect(TelnyxFormat format) : format_(std::move(format)), l16_(format_.codec == "L16") {}
  TelephonyProvider provider() const override { return TelephonyProvider::kTelnyx; }
  std::string_view name() const override { return "Telnyx"; }
  StreamMessage parse(std::string_view text) const override {
    StreamMessage m = parse_telnyx_message(text);
    if (l16_ && m.ok && m.event == StreamEvent::kMedia) {
      // RTP carries whole samples: an odd payload is not L16, and would shift every sample after it.
      if (m.payload.size() % 2 != 0) {
        m.ok = false;
        m.error = fmt::format("an L16 media payload of {} bytes (16-bit samples come in pairs of bytes)",
                              m.payload.size());
      } else {
        m.payload = swap_l16(m.payload);
      }
    }
    return m;
  }
  std::string check_format(const StreamStart& start) const override {
    return check_telnyx_media_format(start, format_);
  }
  // media.track names the leg ("inbound", the caller; "outbound" with stream_track both_tracks).
  bool caller_track(std::string_view track) const override {
    return track.empty() || track == "inbound" || track == "inbound_track";
  }
  // Telnyx's frames back carry no stream_id: the socket is the stream.
  std::string media(std::string_view /*stream_sid*/, std::string_view audio) const override {
    return telnyx_media_message(l16_ ? swap_l16(audio) : std::string(audio));
  }
  std::string mark(std::string_view /*stream_sid*/, std::string_view name) const override {
    return telnyx_mark_message(name);
  }
  std::string clear(std::string_view /*stream_sid*/) const override { return telnyx_clear_message(); }
  // RTP mode takes 20 ms to 30 s of audio a media message; G.711 is a byte a sample, L16 two.
  std::size_t min_media_bytes() const override {
    return static_cast<std::size_t>(format_.sample_rate_hz) / 50 * (l16_ ? 2 : 1);
  }
  char silence() const override {
    return static_cast<char>(l16_ ? 0 : format_.codec == "PCMA" ? 0xD5 : 0xFF);
  }
  std::string no_token() const override {
    return "no token: set the stream's auth token to this server's --token (Telnyx sends it as "
           "x-telnyx-streaming-auth-token), add ?token= to the stream_url, or a <Parameter name=\"token\"> to a "
           "TeXML <Stream>";
  }
  std::string wrong_token() const override { return "the stream's token is not this server's --token"; }
  std::string listen_only() const override {
    return "this stream is listen-only (/v1/telephony/telnyx/listen): nothing is played back; stream to "
           "/v1/telephony/telnyx with stream_bidirectional_mode rtp to speak";
  }
  std::string_view call_id_name() const override { return "call_control_id"; }
  std::string_view stream_id_name() const override { return "stream_id"; }

 private:
  const TelnyxFormat format_;
  const bool l16_;  // big-endian on the wire, little-endian in the call
};

}  // namespace

std::unique_ptr<StreamDialect> make_telnyx_dialect(const TelnyxFormat& format) {
  return std::make_unique<TelnyxDialect>(format);
}

std::optional<Refusal> TelnyxEndpoint::parse(const Request& upgrade) {
  const std::string_view query = target_query(to_sv(upgrade.target()));
  authorized_ = token_ok(ctx_.config.token, to_sv(upgrade[boost::beast::http::field::authorization]), query);
  // Telnyx's header is checked with the tokens of its messages when start arrives (one place says
  // why a token was refused, and counts it).
  header_token_ = std::string(to_sv(upgrade[kAuthHeader]));
  try {
    for (const auto& [key, value] : parse_query_string(query)) {
      if (key == "codec") {
        format_.codec = value;
      } else if (key == "rate") {
        format_.sample_rate_hz = value == "8000" ? 8000 : value == "16000" ? 16000 : 0;
      } else if (key != "token") {
        return Refusal{400, "bad_request", fmt::format("unknown key \"{}\": /v1/telephony/telnyx takes codec, rate "
                                                       "and token", key)};
      }
    }
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  const std::string_view encoding = telnyx_call_encoding(format_.codec);
  if (encoding.empty() || format_.sample_rate_hz == 0) {
    return Refusal{400, "bad_request",
                   "codec must be PCMU, PCMA or L16 and rate 8000 or 16000 (the Telnyx stream's codec and rate; "
                   "docs/TELEPHONY.md)"};
  }
  return telephony_call_request(ctx_, fmt::format("sample_rate={}&encoding={}", format_.sample_rate_hz, encoding),
                                request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> TelnyxEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                       std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand, make_telnyx_dialect(format_),
                                                              listen_only_, authorized_, std::move(header_token_)));
}

}  // namespace brisvox::server
