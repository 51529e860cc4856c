#include "server/vonage_front.h"

#include <fmt/format.h>

#include "server/access_policy.h"
#include "server/call_handler.h"
#include "server/query_params.h"
#include "server/vonage_messages.h"

namespace brisvox::server {
namespace {

class VonageDialect final : public StreamDialect {
 public:
  explicit VonageDialect(int rate_hz) : rate_hz_(rate_hz) {}
  TelephonyProvider provider() const override { return TelephonyProvider::kVonage; }
  std::string_view name() const override { return "Vonage"; }
  StreamMessage parse(std::string_view text) const override { return parse_vonage_message(text); }
  std::string check_format(const StreamStart& start) const override {
    return check_vonage_media_format(start, rate_hz_);
  }
  bool caller_track(std::string_view /*track*/) const override { return true; }  // one track: the caller's
  // The audio goes as it is, in a binary frame; the socket is the stream (no id in any message).
  std::string media(std::string_view /*stream_sid*/, std::string_view audio) const override {
    return std::string(audio);
  }
  std::string mark(std::string_view /*stream_sid*/, std::string_view name) const override {
    return vonage_notify_message(name);
  }
  std::string clear(std::string_view /*stream_sid*/) const override { return vonage_clear_message(); }
  // Vonage plays frames of 20 ms of 16-bit samples, no other size: 320 bytes at 8 kHz, 640 at 16.
  std::size_t min_media_bytes() const override { return static_cast<std::size_t>(rate_hz_) / 50 * 2; }
  bool exact_media() const override { return true; }
  bool binary_audio() const override { return true; }
  bool close_is_hangup() const override { return true; }
  std::string no_token() const override {
    return "no token: add a \"token\" key with this server's --token to the NCCO endpoint's headers, set the "
           "endpoint's authorization to \"Bearer TOKEN\", or add ?token= to its uri";
  }
  std::string wrong_token() const override { return "the call's token is not this server's --token"; }
  std::string listen_only() const override {
    return "this connection is listen-only (/v1/telephony/vonage/listen): nothing is played back; connect the "
           "call to /v1/telephony/vonage to speak";
  }
  std::string_view call_id_name() const override { return "call"; }
  std::string_view stream_id_name() const override { return "websocket"; }

 private:
  const int rate_hz_;
};

}  // namespace

std::unique_ptr<StreamDialect> make_vonage_dialect(int rate_hz) {
  return std::make_unique<VonageDialect>(rate_hz);
}

std::optional<Refusal> VonageEndpoint::parse(const Request& upgrade) {
  const std::string_view query = target_query(to_sv(upgrade.target()));
  authorized_ = token_ok(ctx_.config.token, to_sv(upgrade[boost::beast::http::field::authorization]), query);
  if (auto refusal = read_l16_query(query, "/v1/telephony/vonage", "",
                                    "the rate of the NCCO endpoint's content-type, audio/l16;rate=N; docs/TELEPHONY.md",
                                    rate_hz_)) {
    return refusal;
  }
  return telephony_call_request(ctx_, fmt::format("sample_rate={}&encoding=pcm_s16le", rate_hz_), request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> VonageEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                       std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand, make_vonage_dialect(rate_hz_),
                                                              listen_only_, authorized_));
}

}  // namespace brisvox::server
