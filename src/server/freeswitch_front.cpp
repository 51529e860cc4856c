#include "server/freeswitch_front.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/access_policy.h"
#include "server/call_handler.h"
#include "server/freeswitch_messages.h"
#include "server/header_value.h"
#include "server/query_params.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

class FreeswitchDialect final : public StreamDialect {
 public:
  FreeswitchDialect(int rate_hz, std::string subprotocol) : rate_hz_(rate_hz), subprotocol_(std::move(subprotocol)) {}
  TelephonyProvider provider() const override { return TelephonyProvider::kFreeswitch; }
  std::string_view name() const override { return "FreeSWITCH"; }
  // The metadata is known by being the first text frame; the texts after it are DTMF or the
  // FreeSWITCH application's own.
  StreamMessage parse(std::string_view text) const override {
    return started_ ? parse_freeswitch_text(text) : parse_freeswitch_metadata(text, rate_hz_);
  }
  std::optional<StreamMessage> start_on_audio() const override { return freeswitch_start_without_metadata(rate_hz_); }
  // The module says nothing of its format: the url's rate is the call's.
  std::string check_format(const StreamStart& /*start*/) const override { return {}; }
  void started(const StreamStart& /*start*/) override { started_ = true; }
  bool caller_track(std::string_view /*track*/) const override { return true; }  // mono: the caller's
  std::string media(std::string_view /*stream_sid*/, std::string_view audio) const override {
    return freeswitch_play_audio_message(rate_hz_, audio);
  }
  // Never sent: the module echoes no mark (echoes_marks()).
  std::string mark(std::string_view /*stream_sid*/, std::string_view /*name*/) const override { return {}; }
  std::string clear(std::string_view /*stream_sid*/) const override { return freeswitch_kill_audio_message(); }
  std::size_t min_media_bytes() const override {
    return static_cast<std::size_t>(rate_hz_ / 1000 * FreeswitchEndpoint::kClipMs * 2);
  }
  bool exact_media() const override { return true; }
  bool binary_audio() const override { return true; }
  bool binary_media() const override { return false; }  // playAudio is JSON: the module drops binary frames
  bool echoes_marks() const override { return false; }
  std::string hangup() const override { return freeswitch_disconnect_message(); }
  // uuid_audio_fork's graceful-shutdown: the module stops its audio, sends an empty binary frame
  // "to flush any final responses" and waits for the server's close.
  bool empty_binary_is_stop() const override { return true; }
  // uuid_audio_fork's stop closes the socket with 1000, and so does the channel's hangup.
  bool close_is_hangup() const override { return true; }
  std::string_view subprotocol() const override { return subprotocol_; }
  std::string no_token() const override {
    return "no token: add ?token= to uuid_audio_fork's url, or a \"token\" key to its metadata";
  }
  std::string wrong_token() const override { return "the call's token is not this server's --token"; }
  std::string listen_only() const override {
    return "this connection is listen-only (/v1/telephony/freeswitch/listen): nothing is played back; point "
           "uuid_audio_fork at /v1/telephony/freeswitch to speak";
  }
  std::string_view call_id_name() const override { return "uuid"; }
  std::string_view stream_id_name() const override { return "websocket"; }

 private:
  const int rate_hz_;
  const std::string subprotocol_;
  bool started_ = false;
};

// A subprotocol name is an HTTP token (RFC 6455 4.1; RFC 9110 5.6.2).
bool is_subprotocol_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
  });
}

}  // namespace

std::unique_ptr<StreamDialect> make_freeswitch_dialect(int rate_hz, std::string subprotocol) {
  return std::make_unique<FreeswitchDialect>(rate_hz, std::move(subprotocol));
}

std::optional<Refusal> FreeswitchEndpoint::parse(const Request& upgrade) {
  const std::string_view query = target_query(to_sv(upgrade.target()));
  authorized_ = token_ok(ctx_.config.token, to_sv(upgrade[boost::beast::http::field::authorization]), query);
  // The module asks for one name, audio.drachtio.org unless its environment names another: the
  // first one asked for is answered, whatever it is called.
  const std::string_view protocols = to_sv(upgrade[boost::beast::http::field::sec_websocket_protocol]);
  if (!protocols.empty()) {
    subprotocol_ = std::string(trim_ows(protocols.substr(0, protocols.find(','))));
    if (!is_subprotocol_token(subprotocol_)) {
      return Refusal{400, "bad_request",
                     fmt::format("the upgrade's Sec-WebSocket-Protocol {} is not a list of names (mod_audio_fork "
                                 "asks for \"{}\")",
                                 json_quoted(protocols), kAudioForkProtocol)};
    }
  }
  if (auto refusal = read_l16_query(query, "/v1/telephony/freeswitch", " (the call's own values go in the metadata)",
                                    "uuid_audio_fork's sampling rate, 8k or 16k; docs/TELEPHONY.md", rate_hz_)) {
    return refusal;
  }
  return telephony_call_request(ctx_, fmt::format("sample_rate={}&encoding=pcm_s16le", rate_hz_), request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> FreeswitchEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                           std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand,
                                                              make_freeswitch_dialect(rate_hz_, subprotocol_),
                                                              listen_only_, authorized_));
}

}  // namespace brisvox::server
