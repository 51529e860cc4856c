#include "server/twilio_front.h"

#include <fmt/format.h>

#include "server/access_policy.h"
#include "server/call_handler.h"
#include "server/query_params.h"
#include "server/twilio_messages.h"
#include "server/twilio_signature.h"

namespace brisvox::server {
namespace {

class TwilioDialect final : public StreamDialect {
 public:
  TelephonyProvider provider() const override { return TelephonyProvider::kTwilio; }
  std::string_view name() const override { return "Twilio"; }
  StreamMessage parse(std::string_view text) const override { return parse_twilio_message(text); }
  std::string check_format(const StreamStart& start) const override { return check_media_format(start); }
  // <Start><Stream track="both_tracks"> adds the outbound track; Twilio's media carry "inbound".
  bool caller_track(std::string_view track) const override { return track.empty() || track == "inbound"; }
  std::string media(std::string_view stream_sid, std::string_view audio) const override {
    return twilio_media_message(stream_sid, audio);
  }
  std::string mark(std::string_view stream_sid, std::string_view name) const override {
    return twilio_mark_message(stream_sid, name);
  }
  std::string clear(std::string_view stream_sid) const override { return twilio_clear_message(stream_sid); }
  std::string no_token() const override {
    return "no token: add <Parameter name=\"token\" value=\"...\"/> to the <Stream> (Twilio drops a query string "
           "from its url)";
  }
  std::string wrong_token() const override { return "the stream's token parameter is not this server's --token"; }
  std::string listen_only() const override {
    return "this stream is listen-only (<Start><Stream>): Twilio plays nothing back; use <Connect><Stream> and "
           "/v1/telephony/twilio to speak";
  }
  std::string_view call_id_name() const override { return "callSid"; }
  std::string_view stream_id_name() const override { return "streamSid"; }
};

}  // namespace

std::unique_ptr<StreamDialect> make_twilio_dialect() { return std::make_unique<TwilioDialect>(); }

std::optional<Refusal> TwilioEndpoint::parse(const Request& upgrade) {
  authorized_ = token_ok(ctx_.config.token, to_sv(upgrade[boost::beast::http::field::authorization]),
                         target_query(to_sv(upgrade.target())));
  if (const std::string& auth_token = ctx_.config.twilio_auth_token; !auth_token.empty()) {
    const std::string url = twilio_request_url(ctx_.config.public_url, to_sv(upgrade[boost::beast::http::field::host]),
                                               to_sv(upgrade.target()));
    if (!twilio_signature_valid(auth_token, url, to_sv(upgrade["X-Twilio-Signature"]))) {
      return Refusal{403, "twilio_signature",
                     upgrade["X-Twilio-Signature"].empty()
                         ? "no X-Twilio-Signature: this server takes Twilio Media Streams from Twilio only "
                           "(--twilio-auth-token)"
                         : fmt::format("X-Twilio-Signature does not sign {} with this server's --twilio-auth-token: "
                                       "is the Auth Token the account's, and --public-url the <Stream url>'s base?",
                                       url)};
    }
    authorized_ = true;  // Twilio's own: the signature stands for the server's token
  }
  // Twilio's audio is mu-law at 8000 Hz.
  return telephony_call_request(ctx_, "sample_rate=8000&encoding=mulaw", request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> TwilioEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                       std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand, make_twilio_dialect(), listen_only_,
                                                              authorized_));
}

}  // namespace brisvox::server
