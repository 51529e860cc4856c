#include "server/asterisk_front.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "server/access_policy.h"
#include "server/asterisk_messages.h"
#include "server/call_handler.h"
#include "server/header_value.h"
#include "server/query_params.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

constexpr std::string_view kMediaProtocol = "media";

class AsteriskDialect final : public StreamDialect {
 public:
  AsteriskDialect(std::string format, bool media_protocol)
      : format_(std::move(format)), rate_hz_(asterisk_format(format_).sample_rate_hz), media_protocol_(media_protocol) {}
  TelephonyProvider provider() const override { return TelephonyProvider::kAsterisk; }
  std::string_view name() const override { return "Asterisk"; }
  StreamMessage parse(std::string_view text) const override { return parse_asterisk_message(text); }
  std::string check_format(const StreamStart& start) const override { return check_asterisk_format(start, format_); }
  void started(const StreamStart& start) override { json_ = start.control_format == "json"; }
  bool caller_track(std::string_view /*track*/) const override { return true; }  // one track: the caller's
  // The audio goes as it is, in a binary frame; the socket is the channel (no id in any command).
  std::string media(std::string_view /*stream_sid*/, std::string_view audio) const override {
    return std::string(audio);
  }
  std::string mark(std::string_view /*stream_sid*/, std::string_view name) const override {
    return asterisk_stop_buffering(name, json_);
  }
  std::string clear(std::string_view /*stream_sid*/) const override { return asterisk_command("FLUSH_MEDIA", json_); }
  std::string before_media() const override { return asterisk_command("START_MEDIA_BUFFERING", json_); }
  bool clear_drops_marks() const override { return true; }
  std::string_view subprotocol() const override { return media_protocol_ ? kMediaProtocol : std::string_view(); }
  // 20 ms frames of the channel's format (a byte a sample for G.711, two for slin): what the driver
  // queues as they are.
  std::size_t min_media_bytes() const override {
    return static_cast<std::size_t>(rate_hz_) / 50 * (format_ == "ulaw" || format_ == "alaw" ? 1 : 2);
  }
  bool exact_media() const override { return true; }
  char silence() const override { return static_cast<char>(format_ == "ulaw" ? 0xFF : format_ == "alaw" ? 0xD5 : 0); }
  bool binary_audio() const override { return true; }
  bool close_is_hangup() const override { return true; }
  std::string no_token() const override {
    return "no token: set websocket_client.conf's password to this server's --token (HTTP Basic authentication), "
           "or add v(token=...) to the dial string";
  }
  std::string wrong_token() const override { return "the connection's token is not this server's --token"; }
  std::string listen_only() const override {
    return "this connection is listen-only (/v1/telephony/asterisk/listen): nothing is played back; dial "
           "/v1/telephony/asterisk to speak";
  }
  std::string_view call_id_name() const override { return "channel_id"; }
  std::string_view stream_id_name() const override { return "connection_id"; }

 private:
  const std::string format_;
  const int rate_hz_;
  const bool media_protocol_;
  bool json_ = false;  // MEDIA_START came as JSON: so do the commands
};

}  // namespace

std::unique_ptr<StreamDialect> make_asterisk_dialect(std::string format, bool media_protocol) {
  return std::make_unique<AsteriskDialect>(std::move(format), media_protocol);
}

std::optional<Refusal> AsteriskEndpoint::parse(const Request& upgrade) {
  const std::string_view query = target_query(to_sv(upgrade.target()));
  const std::string_view authorization = to_sv(upgrade[boost::beast::http::field::authorization]);
  if (!token_ok(ctx_.config.token, authorization, query) && !basic_password_ok(ctx_.config.token, authorization)) {
    ctx_.metrics.count_error("unauthorized");
    return Refusal{401, "unauthorized",
                   "this server needs a token: set websocket_client.conf's password to the server's --token "
                   "(username any), or add v(token=...) to the dial string"};
  }
  const std::string_view protocols = to_sv(upgrade[boost::beast::http::field::sec_websocket_protocol]);
  media_protocol_ = list_has(protocols, kMediaProtocol);
  if (!protocols.empty() && !media_protocol_) {
    return Refusal{400, "bad_request",
                   fmt::format("the upgrade asks for the subprotocol(s) {}; chan_websocket's is \"media\" "
                               "(websocket_client.conf: protocols = media)", json_quoted(protocols))};
  }
  try {
    for (const auto& [key, value] : parse_query_string(query)) {
      if (key == "format") {
        format_ = value;
      } else if (key != "token") {
        parameters_.emplace_back(key, value);  // the dial string's v(name=value,...)
      }
    }
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  const AsteriskFormat format = asterisk_format(format_);
  if (format.encoding.empty()) {
    return Refusal{400, "bad_request",
                   "format must be ulaw, alaw, slin or slin16 (the dial string's c(...) codec; docs/TELEPHONY.md)"};
  }
  return telephony_call_request(ctx_, fmt::format("sample_rate={}&encoding={}", format.sample_rate_hz, format.encoding),
                                request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> AsteriskEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                         std::function<void()> on_events) {
  // Authorized on the upgrade (parse() refuses any other).
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand, make_asterisk_dialect(format_, media_protocol_),
                                                              listen_only_, /*authorized=*/true, std::string(),
                                                              std::move(parameters_)));
}

}  // namespace brisvox::server
