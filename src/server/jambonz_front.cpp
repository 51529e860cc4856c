#include "server/jambonz_front.h"

#include <fmt/format.h>

#include "server/access_policy.h"
#include "server/call_handler.h"
#include "server/header_value.h"
#include "server/jambonz_messages.h"
#include "server/query_params.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

class JambonzDialect final : public StreamDialect {
 public:
  JambonzDialect(int rate_hz, std::string subprotocol) : rate_hz_(rate_hz), subprotocol_(std::move(subprotocol)) {}
  TelephonyProvider provider() const override { return TelephonyProvider::kJambonz; }
  std::string_view name() const override { return "jambonz"; }
  // The preamble has neither "type" nor "event": it is known by being the first text frame.
  StreamMessage parse(std::string_view text) const override {
    return preamble_read_ ? parse_jambonz_message(text) : parse_jambonz_preamble(text);
  }
  std::string check_format(const StreamStart& start) const override {
    return check_jambonz_media_format(start, rate_hz_);
  }
  void started(const StreamStart& /*start*/) override { preamble_read_ = true; }
  bool caller_track(std::string_view /*track*/) const override { return true; }  // mono: the caller's
  // The audio goes as it is, in a binary frame (jambonz takes any length; it holds a split sample).
  std::string media(std::string_view /*stream_sid*/, std::string_view audio) const override {
    return std::string(audio);
  }
  std::string mark(std::string_view /*stream_sid*/, std::string_view name) const override {
    return jambonz_mark_message(name);
  }
  std::string clear(std::string_view /*stream_sid*/) const override { return jambonz_kill_audio_message(); }
  bool binary_audio() const override { return true; }
  // jambonz closes with 1000 when the caller hangs up (and on maxLength, finishOnKey).
  bool close_is_hangup() const override { return true; }
  std::string_view subprotocol() const override { return subprotocol_; }
  std::string no_token() const override {
    return "no token: set the listen verb's wsAuth password to this server's --token, add a \"token\" key to its "
           "metadata, or add ?token= to its url";
  }
  std::string wrong_token() const override { return "the call's token is not this server's --token"; }
  std::string listen_only() const override {
    return "this connection is listen-only (/v1/telephony/jambonz/listen): nothing is played back; point the "
           "verb at /v1/telephony/jambonz with bidirectionalAudio streaming to speak";
  }
  std::string_view call_id_name() const override { return "callSid"; }
  std::string_view stream_id_name() const override { return "websocket"; }

 private:
  const int rate_hz_;
  const std::string subprotocol_;
  bool preamble_read_ = false;
};

}  // namespace

std::unique_ptr<StreamDialect> make_jambonz_dialect(int rate_hz, std::string subprotocol) {
  return std::make_unique<JambonzDialect>(rate_hz, std::move(subprotocol));
}

std::optional<Refusal> JambonzEndpoint::parse(const Request& upgrade) {
  const std::string_view query = target_query(to_sv(upgrade.target()));
  const std::string_view authorization = to_sv(upgrade[boost::beast::http::field::authorization]);
  authorized_ = token_ok(ctx_.config.token, authorization, query) || basic_password_ok(ctx_.config.token, authorization);
  const std::string_view protocols = to_sv(upgrade[boost::beast::http::field::sec_websocket_protocol]);
  if (list_has(protocols, kJambonzProtocol)) {
    subprotocol_ = std::string(kJambonzProtocol);
  } else if (list_has(protocols, kDrachtioProtocol)) {
    subprotocol_ = std::string(kDrachtioProtocol);
  } else if (!protocols.empty()) {
    return Refusal{400, "bad_request",
                   fmt::format("the upgrade asks for the subprotocol(s) {}; jambonz's are \"{}\" and \"{}\"",
                               json_quoted(protocols), kJambonzProtocol, kDrachtioProtocol)};
  }
  if (auto refusal = read_l16_query(query, "/v1/telephony/jambonz", " (the call's own values go in the verb's metadata)",
                                    "the listen verb's sampleRate and bidirectionalAudio.sampleRate; docs/TELEPHONY.md",
                                    rate_hz_)) {
    return refusal;
  }
  return telephony_call_request(ctx_, fmt::format("sample_rate={}&encoding=pcm_s16le", rate_hz_), request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> JambonzEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                        std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand, make_jambonz_dialect(rate_hz_, subprotocol_),
                                                              listen_only_, authorized_));
}

}  // namespace brisvox::server
